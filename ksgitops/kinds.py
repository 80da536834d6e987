"""Kind -> resource mapping: the built-in Kubernetes table, CRDs found in the repo, RepoConfig extras.

A downsync clause names resources (plural, lowercase); objects name kinds. An unknown kind is a
validation error: we never guess a plural.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from .model import Obj


@dataclass(frozen=True, slots=True)
class KindInfo:
    resource: str
    namespaced: bool


_BUILTIN: dict[tuple[str, str], KindInfo] = {}


def _add(group: str, namespaced: bool, *pairs: str) -> None:
    for pair in pairs:
        kind, resource = pair.split(":")
        _BUILTIN[(group, kind)] = KindInfo(resource, namespaced)


_add("", True, "ConfigMap:configmaps", "Secret:secrets", "Service:services", "Pod:pods",
     "ServiceAccount:serviceaccounts", "Endpoints:endpoints", "PersistentVolumeClaim:persistentvolumeclaims",
     "ReplicationController:replicationcontrollers", "LimitRange:limitranges",
     "ResourceQuota:resourcequotas", "PodTemplate:podtemplates", "Event:events")
_add("", False, "Namespace:namespaces", "PersistentVolume:persistentvolumes", "Node:nodes")
_add("apps", True, "Deployment:deployments", "ReplicaSet:replicasets", "StatefulSet:statefulsets",
     "DaemonSet:daemonsets", "ControllerRevision:controllerrevisions")
_add("batch", True, "Job:jobs", "CronJob:cronjobs")
_add("autoscaling", True, "HorizontalPodAutoscaler:horizontalpodautoscalers")
_add("policy", True, "PodDisruptionBudget:poddisruptionbudgets")
_add("networking.k8s.io", True, "Ingress:ingresses", "NetworkPolicy:networkpolicies")
_add("networking.k8s.io", False, "IngressClass:ingressclasses")
_add("discovery.k8s.io", True, "EndpointSlice:endpointslices")
_add("rbac.authorization.k8s.io", True, "Role:roles", "RoleBinding:rolebindings")
_add("rbac.authorization.k8s.io", False, "ClusterRole:clusterroles", "ClusterRoleBinding:clusterrolebindings")
_add("storage.k8s.io", False, "StorageClass:storageclasses", "CSIDriver:csidrivers",
     "VolumeAttachment:volumeattachments")
_add("scheduling.k8s.io", False, "PriorityClass:priorityclasses")
_add("node.k8s.io", False, "RuntimeClass:runtimeclasses")
_add("coordination.k8s.io", True, "Lease:leases")
_add("apiextensions.k8s.io", False, "CustomResourceDefinition:customresourcedefinitions")
_add("apiregistration.k8s.io", False, "APIService:apiservices")
_add("admissionregistration.k8s.io", False,
     "MutatingWebhookConfiguration:mutatingwebhookconfigurations",
     "ValidatingWebhookConfiguration:validatingwebhookconfigurations")
_add("certificates.k8s.io", False, "CertificateSigningRequest:certificatesigningrequests")
# ksgitops / KubeStellar control kinds (never workload, but they still have resources)
_add("edge.kubestellar.io", False, "SyncTarget:synctargets", "Location:locations",
     "EdgePlacement:edgeplacements", "SinglePlacementSlice:singleplacementslices")
_add("edge.kubestellar.io", True, "Customizer:customizers", "SyncerConfig:syncerconfigs")
_add("space.kubestellar.io", False, "SpaceProviderDesc:spaceproviderdescs")
_add("space.kubestellar.io", True, "Space:spaces")
_add("control.kubestellar.io", False, "StatusCollector:statuscollectors")
_add("control.kubestellar.io", True, "CombinedStatus:combinedstatuses")
_add("ksgitops.kubestellar.io", False, "RepoConfig:repoconfigs")

CONTROL_KINDS = frozenset({
    "EdgePlacement", "Customizer", "SinglePlacementSlice", "SyncerConfig", "SyncTarget", "Location",
    "Space", "SpaceProviderDesc", "StatusCollector", "RepoConfig",
})
CONTROL_GROUPS = frozenset({"edge.kubestellar.io", "space.kubestellar.io", "control.kubestellar.io",
                            "ksgitops.kubestellar.io"})


def is_control(obj: Obj) -> bool:
    return obj.kind in CONTROL_KINDS and obj.group in CONTROL_GROUPS


class KindTable:
    """Lookups of (group, kind) -> KindInfo; built once per snapshot."""

    def __init__(self, extra: dict[tuple[str, str], KindInfo] | None = None) -> None:
        self._table = dict(_BUILTIN)
        self._extra: dict[tuple[str, str], KindInfo] = {}
        for (group, kind), info in (extra or {}).items():
            self.add(group, kind, info)

    def digest(self) -> str:
        """Changes whenever a lookup could answer differently (CRDs, RepoConfig kinds)."""
        return repr(sorted(self._extra.items()))

    def lookup(self, group: str, kind: str) -> KindInfo | None:
        return self._table.get((group, kind))

    def add(self, group: str, kind: str, info: KindInfo) -> None:
        self._table[(group, kind)] = info
        self._extra[(group, kind)] = info

    def add_crds(self, objs: Iterable[Obj]) -> None:
        """Register every CustomResourceDefinition found in the repo."""
        for obj in objs:
            if obj.kind != "CustomResourceDefinition" or obj.group != "apiextensions.k8s.io":
                continue
            spec = obj.spec
            names = spec.get("names") or {}
            kind, plural = names.get("kind"), names.get("plural")
            if isinstance(kind, str) and isinstance(plural, str) and isinstance(spec.get("group"), str):
                self.add(spec["group"], kind, KindInfo(plural, spec.get("scope", "Namespaced") != "Cluster"))
