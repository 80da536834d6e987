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


# Every kind Kubernetes 1.29 on serves as a resource of its own (the resources of the Kubernetes
# Python client for release 1.37, each with its scope and plural), those only created or only
# read included: a clause may name them, and delivery.py keeps the ones that never reach a WEC off.
_add("", True, "ConfigMap:configmaps", "Secret:secrets", "Service:services", "Pod:pods",
     "ServiceAccount:serviceaccounts", "Endpoints:endpoints", "PersistentVolumeClaim:persistentvolumeclaims",
     "ReplicationController:replicationcontrollers", "LimitRange:limitranges",
     "ResourceQuota:resourcequotas", "PodTemplate:podtemplates", "Event:events", "Binding:bindings")
_add("", False, "Namespace:namespaces", "PersistentVolume:persistentvolumes", "Node:nodes",
     "ComponentStatus:componentstatuses")
_add("apps", True, "Deployment:deployments", "ReplicaSet:replicasets", "StatefulSet:statefulsets",
     "DaemonSet:daemonsets", "ControllerRevision:controllerrevisions")
_add("batch", True, "Job:jobs", "CronJob:cronjobs")
_add("autoscaling", True, "HorizontalPodAutoscaler:horizontalpodautoscalers")
_add("policy", True, "PodDisruptionBudget:poddisruptionbudgets")
_add("networking.k8s.io", True, "Ingress:ingresses", "NetworkPolicy:networkpolicies")
_add("networking.k8s.io", False, "IngressClass:ingressclasses", "IPAddress:ipaddresses", "ServiceCIDR:servicecidrs")
_add("discovery.k8s.io", True, "EndpointSlice:endpointslices")
_add("events.k8s.io", True, "Event:events")
_add("rbac.authorization.k8s.io", True, "Role:roles", "RoleBinding:rolebindings")
_add("rbac.authorization.k8s.io", False, "ClusterRole:clusterroles", "ClusterRoleBinding:clusterrolebindings")
_add("storage.k8s.io", False, "StorageClass:storageclasses", "CSIDriver:csidrivers", "CSINode:csinodes",
     "VolumeAttachment:volumeattachments", "VolumeAttributesClass:volumeattributesclasses")
_add("storage.k8s.io", True, "CSIStorageCapacity:csistoragecapacities")
_add("storagemigration.k8s.io", False, "StorageVersionMigration:storageversionmigrations")
_add("scheduling.k8s.io", False, "PriorityClass:priorityclasses")
_add("scheduling.k8s.io", True, "Workload:workloads", "PodGroup:podgroups", "CompositePodGroup:compositepodgroups")
_add("node.k8s.io", False, "RuntimeClass:runtimeclasses")
_add("coordination.k8s.io", True, "Lease:leases", "LeaseCandidate:leasecandidates")
_add("apiextensions.k8s.io", False, "CustomResourceDefinition:customresourcedefinitions")
_add("apiregistration.k8s.io", False, "APIService:apiservices")
_add("admissionregistration.k8s.io", False,
     "MutatingWebhookConfiguration:mutatingwebhookconfigurations",
     "ValidatingWebhookConfiguration:validatingwebhookconfigurations",
     "ValidatingAdmissionPolicy:validatingadmissionpolicies",
     "ValidatingAdmissionPolicyBinding:validatingadmissionpolicybindings",
     "MutatingAdmissionPolicy:mutatingadmissionpolicies",
     "MutatingAdmissionPolicyBinding:mutatingadmissionpolicybindings")
_add("certificates.k8s.io", False, "CertificateSigningRequest:certificatesigningrequests",
     "ClusterTrustBundle:clustertrustbundles")
_add("certificates.k8s.io", True, "PodCertificateRequest:podcertificaterequests")
_add("flowcontrol.apiserver.k8s.io", False, "FlowSchema:flowschemas",
     "PriorityLevelConfiguration:prioritylevelconfigurations")
_add("resource.k8s.io", True, "ResourceClaim:resourceclaims", "ResourceClaimTemplate:resourceclaimtemplates")
_add("resource.k8s.io", False, "DeviceClass:deviceclasses", "DeviceTaintRule:devicetaintrules",
     "ResourceSlice:resourceslices", "ResourcePoolStatusRequest:resourcepoolstatusrequests")
_add("internal.apiserver.k8s.io", False, "StorageVersion:storageversions")
_add("lifecycle.k8s.io", True, "Eviction:evictions", "EvictionRequest:evictionrequests")
_add("authentication.k8s.io", False, "TokenReview:tokenreviews", "SelfSubjectReview:selfsubjectreviews")
_add("authorization.k8s.io", True, "LocalSubjectAccessReview:localsubjectaccessreviews")
_add("authorization.k8s.io", False, "SelfSubjectAccessReview:selfsubjectaccessreviews",
     "SelfSubjectRulesReview:selfsubjectrulesreviews", "SubjectAccessReview:subjectaccessreviews")
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

# The versions some Kubernetes release from 1.29 on serves the built-in kinds above at, by group
# (an alpha version too: a cluster may enable it). Gone by 1.29: every beta version of the
# groups served at v1 alone (batch/v1beta1 CronJob in 1.25, autoscaling/v2beta2 in 1.26,
# flowcontrol.apiserver.k8s.io/v1beta2 in 1.29).
SERVED_VERSIONS: dict[str, tuple[str, ...]] = {
    "": ("v1",), "apps": ("v1",), "batch": ("v1",), "autoscaling": ("v1", "v2"), "policy": ("v1",),
    "networking.k8s.io": ("v1",), "discovery.k8s.io": ("v1",), "events.k8s.io": ("v1",),
    "rbac.authorization.k8s.io": ("v1",), "storage.k8s.io": ("v1",), "scheduling.k8s.io": ("v1",),
    "node.k8s.io": ("v1",), "coordination.k8s.io": ("v1",), "apiextensions.k8s.io": ("v1",),
    "apiregistration.k8s.io": ("v1",), "admissionregistration.k8s.io": ("v1",), "certificates.k8s.io": ("v1",),
    "flowcontrol.apiserver.k8s.io": ("v1", "v1beta3"), "storagemigration.k8s.io": ("v1", "v1alpha1", "v1beta1"),
    "resource.k8s.io": ("v1", "v1alpha2", "v1alpha3", "v1beta1", "v1beta2"),
    "internal.apiserver.k8s.io": ("v1alpha1",), "lifecycle.k8s.io": ("v1alpha1",),
    "authentication.k8s.io": ("v1",), "authorization.k8s.io": ("v1",),
}
_ALPHA_BETA_GA = ("v1", "v1alpha1", "v1beta1")
# Kinds served at other versions than the rest of their group
_KIND_VERSIONS: dict[tuple[str, str], tuple[str, ...]] = {
    **{("admissionregistration.k8s.io", kind): _ALPHA_BETA_GA for kind in (
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding")},
    ("authentication.k8s.io", "SelfSubjectReview"): _ALPHA_BETA_GA,
    ("certificates.k8s.io", "ClusterTrustBundle"): _ALPHA_BETA_GA,
    ("certificates.k8s.io", "PodCertificateRequest"): _ALPHA_BETA_GA,
    ("coordination.k8s.io", "LeaseCandidate"): ("v1alpha1", "v1alpha2", "v1beta1"),
    ("networking.k8s.io", "IPAddress"): _ALPHA_BETA_GA,
    ("networking.k8s.io", "ServiceCIDR"): _ALPHA_BETA_GA,
    ("storage.k8s.io", "VolumeAttributesClass"): _ALPHA_BETA_GA,
    ("resource.k8s.io", "DeviceClass"): ("v1", "v1alpha3", "v1beta1", "v1beta2"),
    ("resource.k8s.io", "DeviceTaintRule"): ("v1", "v1alpha3", "v1beta2"),
    ("resource.k8s.io", "ResourcePoolStatusRequest"): ("v1alpha3",),
    ("scheduling.k8s.io", "Workload"): ("v1alpha1", "v1alpha3", "v1beta1"),
    ("scheduling.k8s.io", "PodGroup"): ("v1alpha3", "v1beta1"),
    ("scheduling.k8s.io", "CompositePodGroup"): ("v1alpha3",),
}
# Built-in kinds no Kubernetes release serves any more: (group, kind) -> (the release that removed
# it, "" for an alpha API dropped along the way; what took its place, "" when nothing did)
REMOVED_KINDS: dict[tuple[str, str], tuple[str, str]] = {
    ("policy", "PodSecurityPolicy"): ("1.25", "Pod Security Admission (the label pod-security.kubernetes.io/enforce "
                                              "on a Namespace)"),
    ("extensions", "PodSecurityPolicy"): ("1.25", "Pod Security Admission (the label pod-security.kubernetes.io/"
                                                  "enforce on a Namespace)"),
    ("settings.k8s.io", "PodPreset"): ("1.20", ""),
    ("auditregistration.k8s.io", "AuditSink"): ("1.19", ""),
    ("admissionregistration.k8s.io", "InitializerConfiguration"): ("1.14", "admission webhooks"),
    ("networking.k8s.io", "ClusterCIDR"): ("1.29", ""),
    ("resource.k8s.io", "ResourceClass"): ("", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaimParameters"): ("", ""),
    ("resource.k8s.io", "ResourceClassParameters"): ("", ""),
    ("resource.k8s.io", "PodSchedulingContext"): ("", ""),
}
# Kinds Kubernetes serves that share a name with one above in another group: policy/v1 Eviction,
# the body of a Pod's eviction subresource
SAME_NAME_SERVED = frozenset({("policy", "Eviction")})


def builtin_versions(group: str, kind: str) -> tuple[str, ...]:
    """The versions Kubernetes serves the built-in kind (group, kind) at; () for any other kind."""
    if (group, kind) not in _BUILTIN or group in CONTROL_GROUPS:
        return ()
    return _KIND_VERSIONS.get((group, kind)) or SERVED_VERSIONS.get(group, ())


_PATH_SEGMENT_BUILTINS = frozenset({
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    # a rule of their own that takes names no DNS-1123 subdomain is, all of them path segments: an
    # IP address (`2001:db8::1`), a signer name's prefix (`example.com:signer:name`), group.resource
    ("networking.k8s.io", "IPAddress"), ("certificates.k8s.io", "ClusterTrustBundle"),
    ("internal.apiserver.k8s.io", "StorageVersion"),
    # requests never stored, and alpha kinds whose rule may change: no more than the path-segment rule
    ("authentication.k8s.io", "TokenReview"), ("authentication.k8s.io", "SelfSubjectReview"),
    ("authorization.k8s.io", "SubjectAccessReview"), ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"), ("authorization.k8s.io", "LocalSubjectAccessReview"),
    ("lifecycle.k8s.io", "Eviction"), ("lifecycle.k8s.io", "EvictionRequest"), ("scheduling.k8s.io", "Workload"),
    ("scheduling.k8s.io", "PodGroup"), ("scheduling.k8s.io", "CompositePodGroup"),
    ("resource.k8s.io", "ResourcePoolStatusRequest"),
})


def name_error(group: str, kind: str, name: str) -> str | None:
    """None when the API server accepts `name` for an object of (group, kind); else why not.

    Kubernetes v1.29 pkg/apis/core/validation (Namespace: DNS-1123 label; Service: DNS-1035 label;
    most other built-in kinds: DNS-1123 subdomain), pkg/apis/rbac/validation (ValidateRBACName:
    path segment), pkg/apis/certificates/validation (any name; the storage key's path-segment rule
    remains), pkg/apis/flowcontrol/validation (DNS-1123 subdomain); the kinds of a rule of their
    own in `_PATH_SEGMENT_BUILTINS` get only the path-segment rule; apiextensions-apiserver's
    custom resource strategy (path segment: every kind not built in, KubeStellar's included)."""
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
        return builtin_versions(group, kind)

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
