"""Warnings for EdgePlacement clauses that KubeStellar's CRD accepts but that surely do not say what
was meant: each says what the clause matches (often nothing) and the form that works.

KubeStellar v0.14.2 pkg/placement/what-resolver.go (downsyncMatches, upsyncMatches) compares
`apiGroup` with the object's group and `resources` with the object's resource (lowercase plural)
as plain strings, so a kind name, a singular, kubectl's `deployments.apps` form or `apiGroup: core`
match nothing; `namespaces` is compared with the object's namespace, so "" matches nothing (a
cluster-scoped object is matched by "*" or an empty list); a clause without criteria matches every
object. A label selector that does not convert (metav1.LabelSelectorAsSelector) matches nothing.
"""
from __future__ import annotations

from typing import Any, Iterable

from ...kinds import KindTable
from ...model import Obj
from ...names import dns1123_label_error, dns1123_subdomain_error
from .jsonshape import FieldPath, located
from .selectors import selector_error

MATCHES_NOTHING = "it matches nothing"

Oddity = tuple[str, FieldPath]  # `<field path>: <what is odd>`, and that field (validate.py gives its line)


def clause_warnings(placement: Obj, kinds: KindTable) -> list[Oddity]:
    """Every odd clause of an EdgePlacement (v1alpha1 or v2alpha1)."""
    spec = placement.spec
    known = _Known(kinds)
    found: list[Oddity] = []
    for i, clause in _dicts(spec.get("downsync")):
        found += _downsync_warnings(("spec", "downsync", i), clause, known)
    for i, entry in _dicts(spec.get("nonNamespacedObjects")):
        path: FieldPath = ("spec", "nonNamespacedObjects", i)
        found += (_group_warnings(path, entry.get("apiGroup"))
                  or _resource_warnings(path, entry.get("apiGroup") or "", entry.get("resources"), known, strict=True))
    for i, upsync in _dicts(spec.get("upsync")):
        path = ("spec", "upsync", i)
        found += (_group_warnings(path, upsync.get("apiGroup"))
                  or _resource_warnings(path, upsync.get("apiGroup") or "", upsync.get("resources"), known, strict=False))
    return found + selector_warnings(placement)


def _said(at: FieldPath, text: str) -> Oddity:
    return located(text, at), at


def _dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _downsync_warnings(path: FieldPath, clause: dict[str, Any], known: "_Known") -> list[Oddity]:
    if not any(clause.get(k) for k in ("resources", "namespaces", "namespaceSelectors", "objectNames",
                                       "labelSelectors")) and clause.get("apiGroup") is None:
        return [_said(path, "the clause has no criteria: it matches every workload object of this space "
                            "(KubeStellar's CRD also requires apiGroup); name an apiGroup and resources")]
    group = clause.get("apiGroup")
    found = _group_warnings(path, group)  # a group that matches nothing makes its resources moot
    found = found or _resource_warnings(path, group, clause.get("resources"), known, strict=True)
    return found + _namespace_warnings(path, clause.get("namespaces"))


def _group_warnings(path: FieldPath, group: Any) -> list[Oddity]:
    if not isinstance(group, str) or group == "":
        return []
    at = (*path, "apiGroup")
    if group == "core":
        return [_said(at, f"'core' is not the core group but a group named core: {MATCHES_NOTHING}; "
                          "write apiGroup: \"\" for the core group (ConfigMaps, Secrets, ...)")]
    if "/" in group:
        return [_said(at, f"{group!r} holds a version: {MATCHES_NOTHING}; write apiGroup: {group.split('/')[0]!r}")]
    if dns1123_subdomain_error(group):
        return [_said(at, f"{group!r} is not an API group name: {MATCHES_NOTHING}")]
    return []


def _resource_warnings(path: FieldPath, group: Any, resources: Any, known: "_Known", strict: bool) -> list[Oddity]:
    if not isinstance(resources, list):
        return []
    found = []
    for j, resource in enumerate(resources):
        if not isinstance(resource, str) or resource == "*" or known.is_resource(group, resource):
            continue
        hint = known.hint(group, resource)
        at = (*path, "resources", j)
        if hint:
            found.append(_said(at, hint))
        elif strict:
            kcp = ("; kcp's APIBindings stay in KubeStellar's mailbox workspace and never reach a WEC, so "
                   "ksgitops needs no entry for them" if (group, resource) == ("apis.kcp.io", "apibindings") else "")
            found.append(_said(at, f"{resource!r} is no resource ksgitops knows "
                                   f"(built-in, CRD in the repo or RepoConfig kinds): {MATCHES_NOTHING} here{kcp}"))
    return found


def _namespace_warnings(path: FieldPath, namespaces: Any) -> list[Oddity]:
    if not isinstance(namespaces, list):
        return []
    found = []
    for j, namespace in enumerate(namespaces):
        at = (*path, "namespaces", j)
        if namespace == "":
            found.append(_said(at, "\"\" matches only cluster-scoped objects (their namespace is \"\" to "
                                   "KubeStellar's code; its API documentation admits them by \"*\" or an empty "
                                   "list): write \"*\", or leave namespaces empty"))
        elif isinstance(namespace, str) and namespace != "*" and dns1123_label_error(namespace):
            found.append(_said(at, f"{namespace!r} is not a namespace name: {MATCHES_NOTHING}"))
    return found


class _Known:
    """The resources and kinds the kind table knows, for the checks and their suggestions."""

    def __init__(self, kinds: KindTable) -> None:
        self.by_group: dict[str, set[str]] = {}
        self.kinds: dict[str, list[tuple[str, str]]] = {}  # lowercase kind -> [(group, resource)]
        for (group, kind), info in kinds.entries():
            self.by_group.setdefault(group, set()).add(info.resource)
            self.kinds.setdefault(kind.lower(), []).append((group, info.resource))

    def is_resource(self, group: Any, resource: str) -> bool:
        if isinstance(group, str):
            return resource in self.by_group.get(group, ())
        return any(resource in found for found in self.by_group.values())

    def hint(self, group: Any, resource: str) -> str:
        """What the entry probably meant: a kind or singular, or kubectl's resource.group form."""
        candidates = [r for g, r in self.kinds.get(resource.lower(), ()) if not isinstance(group, str) or g == group]
        if candidates:
            what = "a kind" if resource[:1].isupper() else "a singular"
            return f"{resource!r} is {what}, not a resource (lowercase plural): {MATCHES_NOTHING}; write {candidates[0]}"
        name, dot, rest = resource.partition(".")
        if dot and name in self.by_group.get(rest, ()):
            return (f"{resource!r} is kubectl's resource.group form, which KubeStellar does not read: "
                    f"{MATCHES_NOTHING}; write apiGroup: {rest} and resources: [{name}]")
        return ""


def selector_warnings(obj: Obj) -> list[Oddity]:
    """Label selectors that do not convert, anywhere in an EdgePlacement or Location: each
    matches nothing."""
    spec = obj.spec
    found = []
    for path, selector in _selectors(spec):
        error = selector_error(selector) if selector is not None else None
        if error:
            found.append(_said(path, f"{error}: the selector matches nothing"))
    return found


def _selectors(spec: dict[str, Any]) -> Iterable[tuple[FieldPath, Any]]:
    if "instanceSelector" in spec:
        yield ("spec", "instanceSelector"), spec["instanceSelector"]
    if "namespaceSelector" in spec:
        yield ("spec", "namespaceSelector"), spec["namespaceSelector"]
    yield from _listed(("spec", "locationSelectors"), spec.get("locationSelectors"))
    for field in ("downsync", "nonNamespacedObjects"):
        for i, clause in _dicts(spec.get(field)):
            for name in ("namespaceSelectors", "labelSelectors"):
                yield from _listed(("spec", field, i, name), clause.get(name))


def _listed(path: FieldPath, selectors: Any) -> Iterable[tuple[FieldPath, Any]]:
    if isinstance(selectors, list):
        for i, selector in enumerate(selectors):
            yield (*path, i), selector
