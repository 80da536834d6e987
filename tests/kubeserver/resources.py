"""What the loopback API server serves: resource types (built-ins plus CRD-defined ones), the
registry of them and the discovery documents describing it."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

VERSION_INFO = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-kubeserver", "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2024-08-13T00:00:00Z", "goVersion": "go1.22.5",
                "compiler": "gc", "platform": "linux/amd64"}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CRD_PLURAL = ("apiextensions.k8s.io", "customresourcedefinitions")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    status: bool = False            # has a /status subresource
    custom: bool = False            # defined by a CRD

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gr(self) -> tuple[str, str]:
        """Group and plural: the storage key, the same for every served version."""
        return (self.group, self.plural)

    @property
    def returns_deleted(self) -> bool:
        """DELETE answers with the object (not a Status), as the real registries do for these."""
        return self.custom or self.gr in {("", "namespaces"), ("", "pods"), ("", "services")}

    def names(self) -> set[str]:
        return {self.plural, self.kind.lower(), *self.short_names}


def _builtin(gv: str, kind: str, plural: str, namespaced: bool, short: str = "", status: bool = False):
    group, _, version = gv.rpartition("/")
    return ResourceType(group, version, kind, plural, namespaced, tuple(short.split()), status)


BUILTINS = [
    _builtin("v1", "Namespace", "namespaces", False, "ns", True),
    _builtin("v1", "ConfigMap", "configmaps", True, "cm"),
    _builtin("v1", "Secret", "secrets", True),
    _builtin("v1", "Service", "services", True, "svc", True),
    _builtin("v1", "Pod", "pods", True, "po", True),
    _builtin("v1", "ServiceAccount", "serviceaccounts", True, "sa"),
    _builtin("v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc", True),
    _builtin("v1", "Event", "events", True, "ev"),
    _builtin("apps/v1", "Deployment", "deployments", True, "deploy", True),
    _builtin("apps/v1", "ReplicaSet", "replicasets", True, "rs", True),
    _builtin("apps/v1", "StatefulSet", "statefulsets", True, "sts", True),
    _builtin("apps/v1", "DaemonSet", "daemonsets", True, "ds", True),
    _builtin("batch/v1", "Job", "jobs", True, "", True),
    _builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions",
             False, "crd crds", True),
    _builtin("networking.k8s.io/v1", "Ingress", "ingresses", True, "ing", True),
    _builtin("rbac.authorization.k8s.io/v1", "Role", "roles", True),
    _builtin("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", True),
    _builtin("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", False),
    _builtin("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", False),
]


def version_priority(version: str) -> tuple:
    """Kubernetes version ordering: GA before beta before alpha, higher numbers first."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0, version)
    return ({None: 0, "beta": 1, "alpha": 2}[m[2]], -int(m[1]), -int(m[3] or 0), version)


class Registry:
    """The served resource types, keyed by (group, version, plural)."""

    def __init__(self) -> None:
        self.types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in BUILTINS:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        self.types[(rt.group, rt.version, rt.plural)] = rt

    def remove_gr(self, group: str, plural: str) -> None:
        for key in [k for k, rt in self.types.items() if rt.gr == (group, plural)]:
            del self.types[key]

    def find(self, group: str, version: str | None, name: str) -> ResourceType | None:
        """By plural, kind (any case), singular or short name; any version when version is None."""
        candidates = [rt for rt in self.types.values() if rt.group == group
                      and (version is None or rt.version == version)]
        for rt in sorted(candidates, key=lambda r: version_priority(r.version)):
            if name in rt.names() or name.lower() == rt.kind.lower():
                return rt
        return None

    def versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rt in self.types.values():
            if rt.version not in groups.setdefault(rt.group, []):
                groups[rt.group].append(rt.version)
        return {g: sorted(vs, key=version_priority) for g, vs in groups.items()}

    def api_group(self, group: str) -> dict:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.versions()[group]]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": versions,
                "preferredVersion": versions[0]}

    def group_list(self) -> dict:
        groups = [self.api_group(g) for g in self.versions() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict | None:
        served = [rt for rt in self.types.values() if (rt.group, rt.version) == (group, version)]
        if not served:
            return None
        resources = []
        for rt in served:
            resources.append({"name": rt.plural, "singularName": rt.kind.lower(), "namespaced": rt.namespaced,
                              "kind": rt.kind, "verbs": VERBS, "shortNames": list(rt.short_names)})
            if rt.status:
                resources.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                                  "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": served[0].api_version,
                "resources": resources}

