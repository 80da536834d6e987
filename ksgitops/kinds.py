"""Kind -> resource mapping: the built-in Kubernetes table, CRDs found in the repo, RepoConfig extras.

A downsync clause names resources (plural, lowercase); objects name kinds. We never guess a
plural: an object of a kind none of these describes is loaded (its scope is whether it has
`metadata.namespace`) with one warning per kind, and no clause can place it.

Also: which rule the API server checks an object's name with (`name_error`).
"""
from __future__ import annotations

from typing import Any, Iterable

from msgspec import Struct

from .model import Obj
from .names import dns1035_label_error, dns1123_label_error, dns1123_subdomain_error, path_segment_name_error


class KindInfo(Struct, frozen=True):
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
_add("edge.kubestellar.io", False, "SyncerConfig:syncerconfigs")  # its CRD says scope: Cluster
_add("edge.kubestellar.io", True, "Customizer:customizers")
_add("space.kubestellar.io", False, "SpaceProviderDesc:spaceproviderdescs")
_add("space.kubestellar.io", True, "Space:spaces")
_add("control.kubestellar.io", False, "StatusCollector:statuscollectors")
_add("control.kubestellar.io", True, "CombinedStatus:combinedstatuses")
_add("ksgitops.kubestellar.io", False, "RepoConfig:repoconfigs")

CONTROL_KINDS = frozenset({
    "EdgePlacement", "Customizer", "SinglePlacementSlice", "SyncerConfig", "SyncTarget", "Location",
    "Space", "SpaceProviderDesc", "StatusCollector", "RepoConfig",
    # written by `ksgitops status`; never delivered: KubeStellar keeps its whole control group off
    # the WECs (v0.29 pkg/binding/binding-controller.go, excludedGroups)
    "CombinedStatus",
})
CONTROL_GROUPS = frozenset({"edge.kubestellar.io", "space.kubestellar.io", "control.kubestellar.io",
                            "ksgitops.kubestellar.io"})

# The versions Kubernetes 1.29 to 1.31 serves the built-in kinds above at, by group: the beta
# versions of all of them were removed by 1.26 (batch/v1beta1 CronJob in 1.25, autoscaling/v2beta2 in 1.26).
SERVED_VERSIONS: dict[str, tuple[str, ...]] = {
    "": ("v1",), "apps": ("v1",), "batch": ("v1",), "autoscaling": ("v1", "v2"), "policy": ("v1",),
    "networking.k8s.io": ("v1",), "discovery.k8s.io": ("v1",), "rbac.authorization.k8s.io": ("v1",),
    "storage.k8s.io": ("v1",), "scheduling.k8s.io": ("v1",), "node.k8s.io": ("v1",),
    "coordination.k8s.io": ("v1",), "apiextensions.k8s.io": ("v1",), "apiregistration.k8s.io": ("v1",),
    "admissionregistration.k8s.io": ("v1",), "certificates.k8s.io": ("v1",),
}
# Kinds Kubernetes serves that share a name with one above in another group
SAME_NAME_SERVED = frozenset({("events.k8s.io", "Event")})


_PATH_SEGMENT_BUILTINS = frozenset({
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
})


def name_error(group: str, kind: str, name: str) -> str | None:
    """None when the API server accepts `name` for an object of (group, kind); else why not.

    Kubernetes v1.29 pkg/apis/core/validation (Namespace: DNS-1123 label; Service: DNS-1035 label;
    most other built-in kinds: DNS-1123 subdomain), pkg/apis/rbac/validation (ValidateRBACName:
    path segment), pkg/apis/certificates/validation (any name; the storage key's path-segment rule
    remains), apiextensions-apiserver's custom resource strategy (path segment: every kind not
    built in, KubeStellar's included)."""
    if (group, kind) == ("", "Namespace"):
        return dns1123_label_error(name)
    if (group, kind) == ("", "Service"):
        return dns1035_label_error(name)
    if (group, kind) in _BUILTIN and group not in CONTROL_GROUPS and (group, kind) not in _PATH_SEGMENT_BUILTINS:
        return dns1123_subdomain_error(name)
    return path_segment_name_error(name)


def api_version_error(api_version: str) -> str | None:
    """None when `api_version` is `[group/]version` with a DNS-1123 subdomain group and a DNS-1123
    label version (the only shapes the API server serves; a group also becomes a folder name)."""
    group, sep, version = api_version.rpartition("/")
    if (sep and not group) or (group and dns1123_subdomain_error(group)) or dns1123_label_error(version):
        return f"apiVersion {api_version!r} is not <group>/<version> or <version> (e.g. apps/v1, v1)"
    return None


def is_control(obj: Obj) -> bool:
    return obj.kind in CONTROL_KINDS and obj.group in CONTROL_GROUPS


class KindTable:
    """Lookups of (group, kind) -> KindInfo; built once per snapshot."""

    def __init__(self, extra: dict[tuple[str, str], KindInfo] | None = None,
                 versions: dict[tuple[str, str], tuple[str, ...]] | None = None) -> None:
        self._table = dict(_BUILTIN)
        self._extra: dict[tuple[str, str], KindInfo] = {}
        self._versions = dict(versions or {})  # (group, kind) -> the versions its CRDs serve
        for (group, kind), info in (extra or {}).items():
            self.add(group, kind, info)

    def __reduce__(self) -> tuple[Any, ...]:
        return (KindTable, (self._extra, self._versions))  # the built-in table is the code's, not the pickle's

    def digest(self) -> str:
        """Changes whenever a lookup could answer differently (CRDs, RepoConfig kinds): what every
        mailbox's input digest holds. The served versions are left to `checks_digest`: they feed
        one warning, and a CRD's new version must not rebuild the fleet."""
        return repr(sorted(self._extra.items()))

    def checks_digest(self) -> str:
        """`digest` and the versions CRDs serve: what the per-object checks depend on."""
        text = self.digest()
        return text + repr(sorted(self._versions.items())) if self._versions else text

    def lookup(self, group: str, kind: str) -> KindInfo | None:
        return self._table.get((group, kind))

    def served(self, group: str, kind: str) -> tuple[str, ...]:
        """The versions an API server serves (group, kind) at, as far as ksgitops knows: its CRDs'
        in the repo, Kubernetes' for a built-in kind; () when it cannot tell."""
        found = self._versions.get((group, kind))
        if found is not None:
            return found
        return SERVED_VERSIONS.get(group, ()) if (group, kind) in _BUILTIN else ()

    def is_builtin(self, group: str, kind: str) -> bool:
        """A Kubernetes kind of the built-in table (not KubeStellar's), not redefined by a CRD or RepoConfig."""
        return (group, kind) in _BUILTIN and group not in CONTROL_GROUPS and (group, kind) not in self._extra

    def kinds_in(self, group: str) -> list[str]:
        """Every kind of `group` the table holds, sorted."""
        return sorted(kind for g, kind in self._table if g == group)

    def entries(self) -> list[tuple[tuple[str, str], KindInfo]]:
        """Every ((group, kind), info), sorted."""
        return sorted(self._table.items(), key=lambda item: item[0])

    def add(self, group: str, kind: str, info: KindInfo) -> None:
        self._table[(group, kind)] = info
        self._extra[(group, kind)] = info

    def add_crds(self, objs: Iterable[Obj]) -> None:
        """Register every CustomResourceDefinition found in the repo."""
        for obj in objs:
            if obj.kind != "CustomResourceDefinition" or obj.group != "apiextensions.k8s.io":
                continue
            found = crd_kind(obj)
            if found is not None:
                self.add(*found)
                versions = crd_versions(obj)
                if versions:
                    key = found[:2]
                    self._versions[key] = tuple(sorted({*self._versions.get(key, ()), *versions}))


def crd_kind(crd: Obj) -> tuple[str, str, KindInfo] | None:
    """(group, kind, info) a CustomResourceDefinition declares; None when it declares no usable
    one (its group must be a DNS-1123 subdomain with at least one dot and its plural a DNS-1123
    label, as the API server requires: they become folder names, and a group without a dot such as
    `core` would share the core group's folder)."""
    spec = crd.spec
    names = spec.get("names")
    names = names if isinstance(names, dict) else {}
    group, kind, plural = spec.get("group"), names.get("kind"), names.get("plural")
    if not (isinstance(group, str) and isinstance(kind, str) and kind and isinstance(plural, str)):
        return None
    if dns1123_subdomain_error(group) or "." not in group or dns1123_label_error(plural):
        return None
    return group, kind, KindInfo(plural, spec.get("scope", "Namespaced") != "Cluster")


def crd_versions(crd: Obj) -> tuple[str, ...]:
    """The versions a CustomResourceDefinition serves: `spec.versions` not marked `served: false`,
    and v1beta1's `spec.version`."""
    spec = crd.spec
    versions = spec.get("versions")
    found = {v.get("name") for v in versions if isinstance(v, dict) and v.get("served") is not False} \
        if isinstance(versions, list) else set()
    found.add(spec.get("version"))
    return tuple(sorted(v for v in found if isinstance(v, str) and v))


def builtin_groups_of(kind: str) -> list[str]:
    """The groups of the built-in kinds named `kind` (KubeStellar's and ksgitops' aside), sorted."""
    return sorted(g for g, k in _BUILTIN if k == kind and g not in CONTROL_GROUPS)
