"""A small in-memory Kubernetes API server on loopback, for tests.

It speaks enough of the Kubernetes REST protocol (discovery, CRUD, patches including server-side
apply, the /status subresource, watch) that the real `kubernetes` client works against it
unchanged. The layers, top to bottom:

- `ResourceType` and `Registry`: what is served (built-ins plus CRD-defined types) and the
  discovery documents describing it.
- Pure helpers: label/field selectors, merge and JSON patches, field paths for managedFields.
- `Store`: objects, resourceVersions, generation, managedFields, finalizers and the event log that
  watches read; one lock guards everything.
- `Api`: REST routing, (method, path, query, headers, body) -> (code, document or event stream).
- `KubeServer`: HTTP plumbing, kubeconfig, test knobs and the Python-side handle for tests.

Not supported: authentication/authorization (any token works), protobuf and Table output,
aggregated discovery (the plain format is always served, clients fall back to it), admission
(but NamespaceLifecycle), validation against OpenAPI schemas, defaulting, graceful deletion and
propagation policies, bookmarks, watch of a single object by URL (use
fieldSelector=metadata.name=...), and lists inside server-side apply are atomic.

Controllers: none by default (nothing sets a Deployment's status unless a test does, and deleting
a Namespace removes it and its contents at once). `KubeServer(controllers=True)` runs stand-ins of
a real cluster's (tests/kubecontrollers.py): workloads get ReplicaSets, Pods and a status a moment
after each change, and a deleted Namespace stays Terminating until they have emptied it, as on a
real cluster. `python tests/kubeserver.py --kubeconfig FILE [--controllers]` serves one in a
process of its own (see `main`).
"""
from __future__ import annotations

import argparse
import base64
import bisect
import copy
import json
import re
import secrets
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml

MISSING = object()
VERSION_INFO = {"major": "1", "minor": "31", "gitVersion": "v1.31.0-kubeserver", "gitCommit": "0" * 40,
                "gitTreeState": "clean", "buildDate": "2024-08-13T00:00:00Z", "goVersion": "go1.22.5",
                "compiler": "gc", "platform": "linux/amd64"}
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
CRD_PLURAL = ("apiextensions.k8s.io", "customresourcedefinitions")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# Resource types and discovery

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


# ---------------------------------------------------------------------------------------------
# Errors

class ApiError(Exception):
    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict:
        doc = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            doc["details"] = self.details
        return doc


def name_of(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def details(rt: ResourceType, name: str, **extra: Any) -> dict:
    return {"name": name, "group": rt.group, "kind": rt.plural, **extra}


def not_found(rt: ResourceType, name: str) -> ApiError:
    resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
    return ApiError(404, "NotFound", f'{resource} "{name}" not found', details(rt, name))


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


# ---------------------------------------------------------------------------------------------
# Selectors

_REQUIREMENT = re.compile(r"""\s*(?:
    !\s*(?P<absent>[\w./-]+)
  | (?P<key>[\w./-]+)\s*(?: (?P<op>==|=|!=)\s*(?P<value>[\w.-]*)
                          | \s(?P<set>in|notin)\s*\((?P<values>[^)]*)\) )?
  )\s*(?:,|$)""", re.VERBOSE)


def label_selector(text: str) -> Callable[[dict], bool]:
    """A predicate on a labels dict: =, ==, !=, in, notin, exists, !exists."""
    tests: list[Callable[[dict], bool]] = []
    pos = 0
    while pos < len(text):
        m = _REQUIREMENT.match(text, pos)
        if not m or m.end() == pos:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        pos = m.end()
        if m["absent"]:
            tests.append(lambda labels, k=m["absent"]: k not in labels)
        elif m["op"] in ("=", "=="):
            tests.append(lambda labels, k=m["key"], v=m["value"]: labels.get(k) == v)
        elif m["op"] == "!=":
            tests.append(lambda labels, k=m["key"], v=m["value"]: labels.get(k) != v)
        elif m["set"]:
            values = {v.strip() for v in m["values"].split(",")}
            present = m["set"] == "in"
            tests.append(lambda labels, k=m["key"], vs=values, p=present:
                         (k in labels and labels[k] in vs) == p)
        else:
            tests.append(lambda labels, k=m["key"]: k in labels)
    return lambda labels: all(t(labels) for t in tests)


def field_selector(text: str) -> Callable[[dict], bool]:
    """metadata.name and metadata.namespace with =, == or !=."""
    tests = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        m = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise bad_request(f"invalid field selector: {term!r}")
        if m[1] not in ("metadata.name", "metadata.namespace"):
            raise bad_request(f'field label not supported: "{m[1]}"')
        name, equal = m[1].split(".")[1], m[2] != "!="
        tests.append(lambda meta, f=name, eq=equal, v=m[3]: (meta.get(f, "") == v) == eq)
    return lambda meta: all(t(meta) for t in tests)


# ---------------------------------------------------------------------------------------------
# Patches and field paths

def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used for strategic merge and for apply: lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path and not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _container(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    node = doc
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, tokens[-1]


def json_patch(doc: dict, ops: list) -> dict:
    """RFC 6902: add, remove, replace, move, copy, test. Failures are 422 Invalid."""
    doc = copy.deepcopy(doc)

    def resolve(tokens):
        node = doc
        for t in tokens:
            node = node[int(t)] if isinstance(node, list) else node[t]
        return node

    def remove(tokens):
        parent, last = _container(doc, tokens)
        return parent.pop(int(last) if isinstance(parent, list) else last)

    def add(tokens, value):
        parent, last = _container(doc, tokens)
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), value)
        else:
            parent[last] = value

    for op in ops:
        try:
            name, tokens = op["op"], _pointer(op["path"])
            if not tokens:
                raise ApiError(422, "Invalid", "patching the whole document is not supported")
            if name == "test":
                if resolve(tokens) != op.get("value"):
                    raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
            elif name == "remove":
                remove(tokens)
            elif name == "add":
                add(tokens, copy.deepcopy(op["value"]))
            elif name == "replace":
                remove(tokens)
                add(tokens, copy.deepcopy(op["value"]))
            elif name in ("move", "copy"):
                source = _pointer(op["from"])
                value = remove(source) if name == "move" else copy.deepcopy(resolve(source))
                add(tokens, value)
            else:
                raise ApiError(422, "Invalid", f"unknown JSON patch operation {name!r}")
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in "
                                           f"our request: JSON patch {op!r} failed ({e!r})") from None
    return doc


Path_ = tuple[str, ...]
_UNTRACKED_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                   "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName", "selfLink"}


def leaf_paths(obj: Any, prefix: Path_ = ()) -> set[Path_]:
    """Paths to non-map values and empty maps; lists count as single (atomic) values."""
    if not isinstance(obj, dict) or not obj:
        return {prefix} if prefix else set()
    return {p for k, v in obj.items() for p in leaf_paths(v, prefix + (k,))}


def tracked_paths(obj: dict, status: bool | None) -> set[Path_]:
    """Field paths that managedFields tracks: status only (True), all but status (False) or all (None)."""
    paths = {p for p in leaf_paths(obj) if p[0] not in ("apiVersion", "kind")
             and not (p[0] == "metadata" and (len(p) == 1 or p[1] in _UNTRACKED_META))}
    return paths if status is None else {p for p in paths if (p[0] == "status") == status}


def get_path(obj: Any, path: Path_) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


def del_path(obj: dict, path: Path_) -> None:
    """Remove a field and the maps it leaves empty (never metadata itself)."""
    parents = [obj]
    for key in path[:-1]:
        parents.append(parents[-1].get(key) if isinstance(parents[-1], dict) else None)
    if not isinstance(parents[-1], dict):
        return
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth] == {} and path[:depth] != ("metadata",):
            parents[depth - 1].pop(path[depth - 1], None)


def fields_v1(paths: set[Path_]) -> dict:
    tree: dict = {}
    for path in paths:
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def from_fields_v1(tree: dict, prefix: Path_ = ()) -> set[Path_]:
    children = {k: v for k, v in tree.items() if k.startswith("f:")}
    if not children:
        return {prefix} if prefix else set()
    return {p for k, v in children.items() for p in from_fields_v1(v, prefix + (k[2:],))}


Owner = tuple[str, str, str]     # (manager, operation, subresource)


def owners_of(obj: dict) -> dict[Owner, set[Path_]]:
    return {(e.get("manager", ""), e.get("operation", "Update"), e.get("subresource", "")):
            from_fields_v1(e.get("fieldsV1") or {}) for e in obj["metadata"].get("managedFields") or []}


# ---------------------------------------------------------------------------------------------
# Status validation the API server does for workload kinds (Kubernetes pkg/apis/apps/validation:
# ValidateReplicaSetStatus, ValidateDeploymentStatus): counts are never negative, none exceeds
# `replicas`, and no more replicas are available than ready.

_REPLICA_COUNTS = {("apps", "replicasets"): ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
                   ("apps", "deployments"): ("updatedReplicas", "readyReplicas", "availableReplicas")}


def _check_replica_counts(rt: ResourceType, name: str, status: dict) -> None:
    counts = _REPLICA_COUNTS.get(rt.gr)
    if counts is None:
        return
    value = lambda key: status.get(key) or 0
    problems = [(key, "must be greater than or equal to 0") for key in ("replicas", "observedGeneration", *counts)
                if value(key) < 0]
    problems += [(key, "cannot be greater than status.replicas") for key in counts if value(key) > value("replicas")]
    if value("availableReplicas") > value("readyReplicas"):
        problems.append(("availableReplicas", "cannot be greater than readyReplicas"))
    if problems:
        detail = ", ".join(f"status.{key}: Invalid value: {value(key)}: {why}" for key, why in problems)
        raise ApiError(422, "Invalid", f'{rt.kind}.{rt.group} "{name}" is invalid: [{detail}]')


# ---------------------------------------------------------------------------------------------
# Storage and semantics

@dataclass
class Event:
    rv: int
    type: str
    gr: tuple[str, str]
    obj: dict


class Store:
    """Objects keyed by (group, plural, namespace, name), a global resourceVersion, an event log."""

    def __init__(self, terminate_namespaces: bool = False) -> None:
        self.terminate_namespaces = terminate_namespaces  # DELETE marks a Namespace; a controller removes it
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.registry = Registry()
        self.objects: dict[tuple[str, str, str, str], dict] = {}
        self.events: list[Event] = []
        self.rv = 0
        self.closed = False
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(self.registry.find("", "v1", "namespaces"), None, {"metadata": {"name": ns}}, "kubeserver")

    # ----- reading

    @staticmethod
    def key(rt: ResourceType, ns: str | None, name: str) -> tuple[str, str, str, str]:
        return (rt.group, rt.plural, ns or "", name)

    @staticmethod
    def out(rt: ResourceType, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = rt.api_version
        return obj

    def current(self, rt: ResourceType, ns: str | None, name: str) -> dict:
        obj = self.objects.get(self.key(rt, ns, name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def read(self, rt: ResourceType, ns: str | None, name: str) -> dict:
        with self.lock:
            return self.out(rt, self.current(rt, ns, name))

    def select(self, rt: ResourceType, ns: str | None, labels: str = "", fields: str = "") -> list[dict]:
        by_labels, by_fields = label_selector(labels), field_selector(fields)
        with self.lock:
            return [self.out(rt, obj) for (g, p, o_ns, _), obj in sorted(self.objects.items())
                    if (g, p) == rt.gr and (ns is None or o_ns == ns)
                    and by_labels(obj["metadata"].get("labels") or {}) and by_fields(obj["metadata"])]

    # ----- writing

    def create(self, rt: ResourceType, ns: str | None, body: dict, manager: str | None,
               dry: bool = False, owners: dict[Owner, set[Path_]] | None = None, raw: bool = False) -> dict:
        with self.lock:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            self._check_type(rt, obj)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise ApiError(422, "Invalid", f"{rt.kind} is invalid: metadata.name: Required value: "
                                                   "name or generateName is required")
                meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
            name = meta["name"]
            if "/" in name or name in (".", ".."):
                raise ApiError(422, "Invalid", f'{rt.kind} "{name}" is invalid: metadata.name: Invalid value')
            ns = self._check_namespace(rt, ns, obj)
            if self.key(rt, ns, name) in self.objects:
                resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
                raise ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', details(rt, name))
            for key in ("resourceVersion", "managedFields", "deletionTimestamp"):
                meta.pop(key, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
            if rt.status and not raw:
                obj.pop("status", None)
            if rt.gr == ("", "namespaces"):
                obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
                obj.setdefault("status", {"phase": "Active"})
            if rt.gr == ("", "pods") and not raw:
                obj["status"] = {"phase": "Pending"}  # as the pod registry's PrepareForCreate sets it
            if rt.gr == CRD_PLURAL:
                self._check_crd(obj)
            if owners is None:
                owners = {(manager, "Update", ""): tracked_paths(obj, None)} if manager else {}
            self._set_owners(rt, obj, owners, {})
            return self._commit(rt, None, obj, dry)

    def update(self, rt: ResourceType, ns: str | None, name: str, body: dict, sub: str, manager: str | None,
               dry: bool = False, owners: dict[Owner, set[Path_]] | None = None) -> dict:
        """Replace `name` with body. sub: "" (main resource), "status", or "raw" (test handle: keep all)."""
        with self.lock:
            old = self.current(rt, ns, name)
            new = copy.deepcopy(body)
            meta = new.setdefault("metadata", {})
            self._check_type(rt, new)
            if meta.get("name", name) != name or (rt.namespaced and meta.get("namespace", ns) != ns):
                raise bad_request(f"the name of the object ({meta.get('name')}) does not match the name "
                                  f"on the URL ({name})")
            if meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {rt.plural} "{name}": the '
                               "object has been modified; please apply your changes to the latest version "
                               "and try again", details(rt, name))
            if sub == "status":
                new = {**copy.deepcopy(old), "status": new.get("status")}
                _check_replica_counts(rt, name, new.get("status") or {})
            elif rt.status and sub != "raw":
                new["status"] = copy.deepcopy(old.get("status"))
            if new.get("status") is None:
                new.pop("status", None)
            for key in _UNTRACKED_META - {"name", "namespace", "generateName", "resourceVersion"}:
                if key in old["metadata"]:
                    new["metadata"][key] = old["metadata"][key]
                else:
                    new["metadata"].pop(key, None)
            new["metadata"].update(name=name, resourceVersion=old["metadata"]["resourceVersion"])
            if ns:
                new["metadata"]["namespace"] = ns
            spec = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status", "apiVersion")}
            if spec(new) != spec(old):
                new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
            if rt.gr == CRD_PLURAL:
                self._check_crd(new)
            if owners is None:
                owners = self._update_owners(old, new, manager, rt.status and sub != "raw", sub) \
                    if manager else owners_of(old)
            self._set_owners(rt, new, owners, owners_of(old), old)
            if old["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                    not (rt.gr == ("", "namespaces") and (new.get("spec") or {}).get("finalizers")):
                return self._remove(rt, old, dry)
            strip = lambda o: {**o, "metadata": {**o["metadata"], "managedFields": [
                {k: v for k, v in e.items() if k != "time"} for e in o["metadata"].get("managedFields", [])]}}
            if strip(new) == strip(old):
                return self.out(rt, old)    # no-op writes change nothing, like a real server
            return self._commit(rt, old, new, dry)

    def apply(self, rt: ResourceType, ns: str | None, name: str, config: dict, sub: str, manager: str,
              force: bool, dry: bool = False) -> tuple[int, dict]:
        """Server-side apply: merge config in, owning its fields; drop fields this manager no longer sets."""
        with self.lock:
            if not isinstance(config, dict):
                raise bad_request("apply patch must be an object")
            self._check_type(rt, config, required=True)
            if config.get("metadata", {}).get("name", name) != name:
                raise bad_request(f"the name of the object ({config['metadata']['name']}) does not match "
                                  f"the name on the URL ({name})")
            only_status = True if sub == "status" else (False if rt.status else None)
            if only_status is False:
                config = {k: v for k, v in config.items() if k != "status"}
            fields = tracked_paths(config, only_status)
            me: Owner = (manager, "Apply", sub)
            old = self.objects.get(self.key(rt, ns, name))
            if old is None:
                if sub:
                    raise not_found(rt, name)
                body = merge_patch(config, {"metadata": {"name": name}})
                return 201, self.create(rt, ns, body, None, dry, owners={me: fields})
            owners = owners_of(old)
            conflicts = {(who, p) for who, paths in owners.items() if who != me
                         for p in paths & fields if get_path(old, p) != get_path(config, p)}
            if conflicts and not force:
                listing = "; ".join(f'conflict with "{who[0]}"'
                                    f'{" using " + old["apiVersion"] if who[1] == "Update" else ""}: .{".".join(p)}'
                                    for who, p in sorted(conflicts))
                raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s): {listing}",
                               details(rt, name, causes=[{"reason": "FieldManagerConflict", "field": ".".join(p),
                                                          "message": f'conflict with "{who[0]}"'}
                                                         for who, p in sorted(conflicts)]))
            for who, p in conflicts:
                owners[who].discard(p)
            others = set().union(*(paths for who, paths in owners.items() if who != me))
            result = copy.deepcopy(old)
            for p in owners.get(me, set()) - fields - others:
                del_path(result, p)
            owners[me] = fields
            result = merge_patch(result, config)
            return 200, self.update(rt, ns, name, result, sub or "", None, dry, owners=owners)

    def delete(self, rt: ResourceType, ns: str | None, name: str, options: dict, dry: bool = False) -> dict:
        with self.lock:
            obj = self.current(rt, ns, name)
            pre = options.get("preconditions") or {}
            for key in ("uid", "resourceVersion"):
                if pre.get(key) and pre[key] != obj["metadata"].get(key):
                    raise ApiError(409, "Conflict", f"Precondition failed: {key} in precondition: {pre[key]}, "
                                   f"{key} in object meta: {obj['metadata'].get(key)}")
            if rt.gr == ("", "namespaces") and self.terminate_namespaces:
                return self._terminate(rt, obj, dry)
            if rt.gr == ("", "namespaces"):
                for (g, p, o_ns, o_name), child in list(self.objects.items()):
                    if o_ns == name and not dry:
                        self._remove(self.registry.find(g, None, p), child, dry)
                gone = self._remove(rt, obj, dry)
                gone["metadata"]["deletionTimestamp"] = now()
                gone["status"] = {"phase": "Terminating"}
                return gone
            if obj["metadata"].get("finalizers"):
                if obj["metadata"].get("deletionTimestamp"):
                    return self.out(rt, obj)
                marked = copy.deepcopy(obj)
                marked["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
                return self._commit(rt, obj, marked, dry)
            gone = self._remove(rt, obj, dry)
            if rt.returns_deleted:
                return gone
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": details(rt, name, uid=obj["metadata"]["uid"])}

    # ----- internals

    def _terminate(self, rt: ResourceType, namespace: dict, dry: bool) -> dict:
        """DELETE of a Namespace on a real server (pkg/registry/core/namespace/storage/storage.go):
        marked Terminating; the namespace controller empties and removes it."""
        if namespace["metadata"].get("deletionTimestamp"):
            return self.out(rt, namespace)
        marked = copy.deepcopy(namespace)
        marked["metadata"]["deletionTimestamp"] = now()
        marked["status"] = {"phase": "Terminating"}
        return self._commit(rt, namespace, marked, dry)

    def _check_type(self, rt: ResourceType, obj: dict, required: bool = False) -> None:
        if not isinstance(obj.get("metadata", {}), dict):
            raise bad_request("metadata must be an object")
        if required and not (obj.get("apiVersion") and obj.get("kind")):
            raise bad_request("apiVersion and kind must be set")
        if obj.get("apiVersion") not in (None, rt.api_version) or obj.get("kind") not in (None, rt.kind):
            raise bad_request(f"the API version and kind in the data ({obj.get('apiVersion')}, {obj.get('kind')}) "
                              f"do not match the expected ({rt.api_version}, {rt.kind})")
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        if not (rt.status or rt.custom):
            # ConfigMap, Secret, RBAC kinds...: no status field in their schema, and the API server
            # drops fields its schema does not know (field validation "Warn", the default since 1.27)
            obj.pop("status", None)

    def _check_namespace(self, rt: ResourceType, ns: str | None, obj: dict) -> str | None:
        meta = obj["metadata"]
        if not rt.namespaced:
            meta.pop("namespace", None)
            return None
        ns = ns or meta.get("namespace")
        if not ns or meta.get("namespace", ns) != ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = ns
        namespace = self.objects.get(("", "namespaces", "", ns))
        if namespace is None:
            raise not_found(self.registry.find("", "v1", "namespaces"), ns)
        if namespace["metadata"].get("deletionTimestamp"):  # the NamespaceLifecycle admission plugin
            raise ApiError(403, "Forbidden", f'{rt.plural} "{name_of(obj)}" is forbidden: unable to create new '
                           f"content in namespace {ns} because it is being terminated",
                           details(rt, name_of(obj), causes=[{"reason": "NamespaceTerminating",
                                                               "message": f"namespace {ns} is being terminated",
                                                               "field": "metadata.namespace"}]))
        return ns

    def _check_crd(self, crd: dict) -> None:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if not (spec.get("group") and names.get("plural") and names.get("kind") and spec.get("versions")):
            raise ApiError(422, "Invalid", "CustomResourceDefinition is invalid: spec.group, spec.names.plural, "
                                           "spec.names.kind and spec.versions are required")
        for i, v in enumerate(spec["versions"]):
            if not ((v.get("schema") or {}).get("openAPIV3Schema")):
                raise ApiError(422, "Invalid", f"CustomResourceDefinition is invalid: spec.versions[{i}].schema."
                                               "openAPIV3Schema: Required value: schemas are required")
        if crd["metadata"]["name"] != f"{names['plural']}.{spec['group']}":
            raise ApiError(422, "Invalid", "CustomResourceDefinition is invalid: metadata.name: must be "
                                           "spec.names.plural+\".\"+spec.group")
        if not any(c.get("type") == "Established" for c in (crd.get("status") or {}).get("conditions", [])):
            storage = [v["name"] for v in spec["versions"] if v.get("storage")] or [spec["versions"][0]["name"]]
            condition = lambda kind: {"type": kind, "status": "True", "reason": kind,
                                      "message": "", "lastTransitionTime": now()}
            crd["status"] = {"conditions": [condition("NamesAccepted"), condition("Established")],
                             "acceptedNames": names, "storedVersions": storage}

    def _sync_crd(self, old: dict | None, new: dict | None) -> None:
        """Serve the versions of a created or changed CRD; stop serving (and drop objects) when deleted."""
        if old:
            names, group = old["spec"]["names"], old["spec"]["group"]
            self.registry.remove_gr(group, names["plural"])
            if new is None:
                for key, obj in list(self.objects.items()):
                    if key[:2] == (group, names["plural"]):
                        del self.objects[key]
                        self._log("DELETED", (group, names["plural"]), obj)
        if new:
            spec = new["spec"]
            for v in spec["versions"]:
                if v.get("served", True):
                    self.registry.add(ResourceType(
                        spec["group"], v["name"], spec["names"]["kind"], spec["names"]["plural"],
                        spec.get("scope", "Namespaced") == "Namespaced", tuple(spec["names"].get("shortNames", [])),
                        "status" in (v.get("subresources") or {}), custom=True))

    def _update_owners(self, old: dict, new: dict, manager: str, has_status: bool, sub: str) -> dict:
        """An update takes the fields it changed from their owners; removed fields are owned by nobody."""
        owners = owners_of(old)
        scope = (sub == "status") if has_status else None
        changed = {p for p in tracked_paths(new, scope) if get_path(old, p) != get_path(new, p)}
        for paths in owners.values():
            paths -= changed
        me = (manager, "Update", sub if sub == "status" else "")
        owners[me] = owners.get(me, set()) | changed
        return owners

    def _set_owners(self, rt: ResourceType, obj: dict, owners: dict, before: dict, old: dict | None = None) -> None:
        previous = {(e["manager"], e["operation"], e.get("subresource", "")): e
                    for e in (old or {}).get("metadata", {}).get("managedFields") or []}
        entries = []
        for who, paths in sorted(owners.items()):
            paths = {p for p in paths if get_path(obj, p) is not MISSING}
            if not paths:
                continue
            entry = {"manager": who[0], "operation": who[1], "apiVersion": rt.api_version, "time": now(),
                     "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}
            if who[2]:
                entry["subresource"] = who[2]
            if who in previous and before.get(who) == paths:
                entry["time"] = previous[who]["time"]
            entries.append(entry)
        obj["metadata"]["managedFields"] = entries
        if not entries:
            del obj["metadata"]["managedFields"]

    def _commit(self, rt: ResourceType, old: dict | None, new: dict, dry: bool) -> dict:
        if dry:
            return self.out(rt, new)
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        key = self.key(rt, new["metadata"].get("namespace"), new["metadata"]["name"])
        self.objects[key] = new
        self._log("MODIFIED" if old else "ADDED", rt.gr, new, bump=False)
        if rt.gr == CRD_PLURAL:
            self._sync_crd(old, new)
        return self.out(rt, new)

    def _remove(self, rt: ResourceType, obj: dict, dry: bool) -> dict:
        if not dry:
            del self.objects[self.key(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"])]
            self._log("DELETED", rt.gr, obj)
            if rt.gr == CRD_PLURAL:
                self._sync_crd(obj, None)
        return self.out(rt, obj)

    def _log(self, kind: str, gr: tuple[str, str], obj: dict, bump: bool = True) -> None:
        if bump:
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append(Event(self.rv, kind, gr, copy.deepcopy(obj)))
        self.changed.notify_all()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.changed.notify_all()

    def watch(self, rt: ResourceType, ns: str | None, query: dict) -> Iterator[dict]:
        """Validate now, then stream events (initial ADDEDs when resourceVersion is unset or "0")."""
        by_labels = label_selector(query.get("labelSelector", ""))
        by_fields = field_selector(query.get("fieldSelector", ""))
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
            since = int(query.get("resourceVersion") or 0)
        except ValueError:
            raise bad_request("invalid resourceVersion or timeoutSeconds") from None
        wanted = lambda o: ((ns is None or o["metadata"].get("namespace") == ns)
                            and by_labels(o["metadata"].get("labels") or {}) and by_fields(o["metadata"]))
        with self.lock:
            initial = [] if since else [o for o in self.select(rt, ns) if wanted(o)]
            since = since or self.rv

        def stream() -> Iterator[dict]:
            nonlocal since
            deadline = time.monotonic() + timeout
            for obj in initial:
                yield {"type": "ADDED", "object": obj}
            while True:
                with self.lock:
                    start = bisect.bisect_right(self.events, since, key=lambda e: e.rv)
                    fresh = [e for e in self.events[start:] if e.gr == rt.gr]
                    if not fresh and not self.closed and time.monotonic() < deadline:
                        self.changed.wait(max(0.0, deadline - time.monotonic()))
                        continue
                    if self.events:
                        since = max(since, self.events[-1].rv)
                for e in fresh:
                    if wanted(e.obj):
                        yield {"type": e.type, "object": self.out(rt, e.obj)}
                if self.closed or time.monotonic() >= deadline:
                    return
        return stream()


# ---------------------------------------------------------------------------------------------
# REST routing

PATCH_TYPES = ("application/apply-patch+yaml", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/json-patch+json")


@dataclass
class Route:
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store

    def handle(self, method: str, path: str, query: dict, headers: dict, body: bytes) -> tuple[int, Any]:
        """(status code, JSON document) or (200, iterator of watch events)."""
        try:
            parts = [unquote(p) for p in path.strip("/").split("/") if p]
            discovery = self.discovery(parts)
            if discovery is not None:
                if method != "GET":
                    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
                return 200, discovery
            with self.store.lock:
                return self.dispatch(method, self.route(parts), query, headers, body)
        except ApiError as e:
            return e.code, e.status()
        except Exception as e:  # noqa: BLE001 -- a bug here, or input we do not handle: answer like a real server would
            return 500, ApiError(500, "InternalError", f"kubeserver: {e!r}").status()

    def discovery(self, parts: list[str]) -> dict | None:
        registry = self.store.registry
        with self.store.lock:
            if parts == ["version"]:
                return VERSION_INFO
            if parts == ["api"]:
                return {"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
            if parts == ["apis"]:
                return registry.group_list()
            if len(parts) == 2 and parts[0] == "apis" and parts[1] in registry.versions():
                return registry.api_group(parts[1])
            if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
                found = registry.resource_list("" if parts[0] == "api" else parts[1], parts[-1])
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return found
        return None

    def route(self, parts: list[str]) -> Route:
        missing = ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(parts) >= 3 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise missing
        find = lambda plural: self.store.registry.types.get((group, version, plural))
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and find(rest[2]) and find(rest[2]).namespaced:
            ns, rest = rest[1], rest[2:]
        rt = find(rest[0])
        if rt is None or len(rest) > 3 or (rt.namespaced and ns is None and len(rest) > 1):
            raise missing
        sub = rest[2] if len(rest) == 3 else ""
        if sub and not (sub == "status" and rt.status):
            raise missing
        return Route(rt, ns, rest[1] if len(rest) > 1 else None, sub)

    def dispatch(self, method: str, r: Route, query: dict, headers: dict, body: bytes) -> tuple[int, Any]:
        store, rt = self.store, r.rt
        dry = query.get("dryRun") == "All"
        manager = query.get("fieldManager") or headers.get("user-agent", "unknown").split("/")[0]
        if r.name is None:
            if method == "GET" and query.get("watch") in ("true", "1"):
                return 200, store.watch(rt, r.namespace, query)
            if method == "GET":
                return 200, self.listing(rt, r.namespace, query)
            if method == "POST" and (r.namespace or not rt.namespaced):
                return 201, store.create(rt, r.namespace, self.parse(body), manager, dry)
            if method == "DELETE":
                items = store.select(rt, r.namespace, query.get("labelSelector", ""), query.get("fieldSelector", ""))
                for o in items:
                    store.delete(rt, o["metadata"].get("namespace"), o["metadata"]["name"], {}, dry)
                return 200, {"apiVersion": rt.api_version, "kind": f"{rt.kind}List",
                             "metadata": {"resourceVersion": str(store.rv)}, "items": items}
        elif method == "GET":
            return 200, store.read(rt, r.namespace, r.name)
        elif method == "PUT":
            return 200, store.update(rt, r.namespace, r.name, self.parse(body), r.sub, manager, dry)
        elif method == "DELETE":
            return 200, store.delete(rt, r.namespace, r.name, self.parse(body) if body.strip() else {}, dry)
        elif method == "PATCH":
            return self.patch(r, query, headers.get("content-type", "").split(";")[0].strip(), body, manager, dry)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def listing(self, rt: ResourceType, ns: str | None, query: dict) -> dict:
        items = self.store.select(rt, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        meta: dict = {"resourceVersion": str(self.store.rv)}
        if query.get("continue"):
            after = json.loads(base64.urlsafe_b64decode(query["continue"]))
            items = [o for o in items if [o["metadata"].get("namespace", ""), o["metadata"]["name"]] > after]
        limit = int(query.get("limit") or 0)
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps([last.get("namespace", ""), last["name"]]).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {"apiVersion": rt.api_version, "kind": f"{rt.kind}List", "metadata": meta, "items": items}

    def patch(self, r: Route, query: dict, ctype: str, body: bytes, manager: str, dry: bool) -> tuple[int, Any]:
        if ctype not in PATCH_TYPES:
            raise ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                           f'accepted media types include: {", ".join(PATCH_TYPES)}')
        if ctype == "application/apply-patch+yaml":
            if not query.get("fieldManager"):
                raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
            config = self.parse(body, yaml_ok=True)
            return self.store.apply(r.rt, r.namespace, r.name, config, r.sub, query["fieldManager"],
                                    query.get("force") == "true", dry)
        patch = self.parse(body)
        current = self.store.read(r.rt, r.namespace, r.name)
        if ctype == "application/json-patch+json":
            if not isinstance(patch, list):
                raise bad_request("JSON patch must be a list of operations")
            result = json_patch(current, patch)
        else:
            if not isinstance(patch, dict):
                raise bad_request("merge patch must be an object")
            result = merge_patch(current, patch)
        return 200, self.store.update(r.rt, r.namespace, r.name, result, r.sub, manager, dry)

    @staticmethod
    def parse(body: bytes, yaml_ok: bool = False) -> Any:
        try:
            return json.loads(body)
        except ValueError:
            if yaml_ok:
                try:
                    return yaml.safe_load(body)
                except yaml.YAMLError:
                    pass
            raise bad_request("the request body is not valid JSON" + (" or YAML" if yaml_ok else "")) from None


# ---------------------------------------------------------------------------------------------
# HTTP server and the test-facing handle

@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes = field(repr=False, default=b"")

    def json(self) -> Any:
        return Api.parse(self.body, yaml_ok=True)


def take_request(handler: BaseHTTPRequestHandler, knobs: Any) -> LoggedRequest | None:
    """Read one request and log it with `knobs.log`, after `knobs.delay` seconds; None when
    `knobs.unreachable`: the connection is then closed without an answer (the client sees a
    dropped connection)."""
    body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    if knobs.unreachable:
        handler.close_connection = True
        return None
    if knobs.delay:
        time.sleep(knobs.delay)
    url = urlsplit(handler.path)
    request = LoggedRequest(handler.command, url.path, dict(parse_qsl(url.query, keep_blank_values=True)),
                            handler.headers.get("Content-Type", ""), body)
    knobs.log(request)
    return request


def write_chunk(out: Any, data: bytes) -> None:
    """One chunk of a chunked HTTP/1.1 body, sent at once (watch events must not wait in a buffer)."""
    out.write(b"%x\r\n%s\r\n" % (len(data), data))
    out.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else Nagle + delayed ACK cost ~40 ms per request
    server: _HttpServer

    def log_message(self, *args) -> None:
        pass

    def _serve(self) -> None:
        kube = self.server.kube
        request = take_request(self, kube)
        if request is None:
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if kube.fail_status:
            code, doc = kube.fail_status, ApiError(kube.fail_status, "ServiceUnavailable" if kube.fail_status == 503
                                                   else "InternalError", "injected failure").status()
        else:
            code, doc = kube.api.handle(self.command, request.path, request.query, headers, request.body)
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            if isinstance(doc, dict):
                data = json.dumps(doc).encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in doc:
                write_chunk(self.wfile, json.dumps(event).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    kube: KubeServer


class KubeServer:
    """A loopback Kubernetes API server; `controllers=True` runs stand-ins of a cluster's controllers
    (tests/kubecontrollers.py). Knobs: `unreachable` (connections are closed without an answer),
    `delay` (seconds before each answer), `fail_status` (answer every request with that code, e.g. 503)."""

    def __init__(self, controllers: bool = False) -> None:
        self.store = Store(terminate_namespaces=controllers)
        self.api = Api(self.store)
        if controllers:
            from kubecontrollers import Controllers
            self.controllers: Controllers | None = Controllers(self.store)
        else:
            self.controllers = None
        self.requests: list[LoggedRequest] = []
        self.unreachable = False
        self.delay = 0.0
        self.fail_status: int | None = None
        self._httpd: _HttpServer | None = None
        self._lock = threading.Lock()

    # ----- lifecycle

    def start(self, port: int = 0) -> Self:
        if self.controllers:
            self.controllers.start()
        self._httpd = _HttpServer(("127.0.0.1", port), _Handler)
        self._httpd.kube = self
        # a short poll: stop() (shutdown) waits for the serving loop to notice, up to one poll
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name=f"kubeserver-{self.port}", daemon=True).start()
        return self

    def stop(self) -> None:
        self.store.close()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, context: str = "loopback") -> dict:
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": context, "cluster": {"server": self.url}}],
                "users": [{"name": context, "user": {"token": "kubeserver-dummy-token"}}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
                "current-context": context}

    def write_kubeconfig(self, path: Path, context: str = "loopback") -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.kubeconfig(context), sort_keys=False))
        return path

    # ----- request log

    def log(self, request: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def requests_matching(self, method: str | None = None, path: str | None = None) -> list[LoggedRequest]:
        """Logged requests with that method and/or exact path."""
        with self._lock:
            return [r for r in self.requests if method in (None, r.method) and path in (None, r.path)]

    # ----- direct access for tests (no HTTP; same semantics, status kept as given)

    def resource_type(self, group: str, version: str, kind_or_plural: str) -> ResourceType:
        rt = self.store.registry.find(group, version, kind_or_plural)
        if rt is None:
            raise KeyError(f"no resource {kind_or_plural!r} in {group or 'core'}/{version}")
        return rt

    def put(self, obj: dict) -> dict:
        """Create or replace obj (apiVersion and kind required), status included; returns it as stored."""
        group, _, version = obj["apiVersion"].rpartition("/")
        rt = self.resource_type(group, version, obj["kind"])
        meta = obj.get("metadata", {})
        ns = meta.get("namespace") if rt.namespaced else None
        with self.store.lock:
            if self.store.objects.get(self.store.key(rt, ns, meta.get("name", ""))):
                return self.store.update(rt, ns, meta["name"], obj, "raw", None)
            return self.store.create(rt, ns, obj, None, raw=True)

    def get(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str) -> dict | None:
        try:
            return self.store.read(self.resource_type(group, version, kind_or_plural), namespace, name)
        except ApiError:
            return None

    def objects(self, group: str, version: str, kind_or_plural: str, namespace: str | None = None) -> list[dict]:
        return self.store.select(self.resource_type(group, version, kind_or_plural), namespace)

    def set_status(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str,
                   status: dict) -> dict:
        rt = self.resource_type(group, version, kind_or_plural)
        return self.store.update(rt, namespace, name, {"status": status}, "status", "kubeserver")

    def delete(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str) -> None:
        self.store.delete(self.resource_type(group, version, kind_or_plural), namespace, name, {})

    @property
    def resource_version(self) -> int:
        return self.store.rv


# ---------------------------------------------------------------------------------------------
# A server of its own: `python tests/kubeserver.py --kubeconfig FILE`

def main(argv: list[str] | None = None) -> None:
    """Serve one KubeServer in this process until SIGTERM or SIGINT; write a kubeconfig for it
    (atomically, once it listens) and print its URL. Tests then reach it only through the API, as
    they would a real cluster (KSGITOPS_TEST_KUBECONFIG=FILE)."""
    parser = argparse.ArgumentParser(prog="kubeserver", description=main.__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write its kubeconfig")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--context", default="kubeserver", help="context name in the kubeconfig")
    parser.add_argument("--controllers", action="store_true",
                        help="run stand-ins of a cluster's controllers (tests/kubecontrollers.py)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = KubeServer(controllers=args.controllers).start(args.port)
    try:
        partial = args.kubeconfig.with_name(args.kubeconfig.name + ".partial")
        server.write_kubeconfig(partial, args.context).replace(args.kubeconfig)
        print(server.url, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
