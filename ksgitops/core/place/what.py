"""What an EdgePlacement selects: downsync clauses, upsync sets, what never reaches a WEC, and the
CustomResourceDefinitions that come along.

Downsync (KubeStellar v0.14.2 pkg/placement/what-resolver.go `downsyncMatches`): a clause matches
an object when all six criteria hold: `apiGroup` (absent or null matches any group), `resources`,
`namespaces`, `namespaceSelectors`, `objectNames` and `labelSelectors` (each: empty matches all).
A cluster-scoped object has namespace "": `namespaces` admits it when empty or containing "*" or ""
(the code compares "" as any other name, though the API doc names only "*"), and
`namespaceSelectors` test it against empty labels. Scope comes from the kind table, so a stray `metadata.namespace` on a
cluster-scoped object is ignored. A Namespace's labels are those of the Namespace object in the
same WDS, plus `kubernetes.io/metadata.name: <name>`, which the API server puts on every Namespace
(so a Namespace missing from the WDS has that label only). Clauses combine by OR. An object
matching any upsync set of the placement is not downsynced (upsync wins), except under a
converted v1alpha1 spec (its clauses carry `_scope`): KubeStellar v0.7.0's what-resolver never read
`upsync`. A converted clause's `_namespaceGate` (`edgeplacement.py`) is one more criterion, for
Namespaces only: v0.7 placed a Namespace only when `namespaceSelector` selected it.

Upsync sets (KubeStellar's UpsyncSet): `apiGroup` is a plain string ("" = core) compared exactly;
for `resources`, `namespaces` and `names`, `"*"` matches all and an empty list matches nothing;
`namespaces` is ignored for cluster-scoped objects. (KubeStellar v0.14's `upsyncMatches` looked up
the namespace and the name in `resources`; here each is looked up in its own list.)

Never downsynced, whatever the clauses say: control kinds, the kinds and groups KubeStellar keeps
off the edge and the objects every cluster makes for itself (`delivery.py`).

Comes along (what-resolver.go v0.13+, `getPartsLocked` and its `definers`): when a placement
places custom resources whose CustomResourceDefinition is in the same WDS, that CRD goes with them
to the same WECs, even if no clause names it; it is recorded as placed by the pseudo-clause
`ALONG`. A CRD a clause places is placed by that clause only.

The spec's normalization and the v1alpha1 conversion are in `edgeplacement.py`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from msgspec import Struct

from ...kinds import KindInfo, KindTable, is_control
from ...model import Obj, ref_order
from ..load.offedge import kind_off_edge
from .delivery import system_object
from .edgeplacement import (CLUSTER, NAMESPACED, NS_GATE, SCOPE, SOURCE, V1ALPHA1, as_list, clause_label,
                            placement_spec)
from ..load.selectors import any_matches, matches
from .selectorcheck import selector_problems

NsLabels = Mapping[str, Mapping[str, str]]
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
ALONG = -1  # Placed.clause of a CustomResourceDefinition that came along with its custom resources
_list = as_list


# --- the six downsync criteria --------------------------------------------------------------

class _Subject(Struct, frozen=True):
    """The facts about one object that the criteria test."""

    group: str
    resource: str
    namespaced: bool
    namespace: str
    name: str
    labels: Mapping[str, str]
    ns_labels: Mapping[str, str]


def _is_namespace(obj: Obj) -> bool:
    return obj.group == "" and obj.kind == "Namespace"


def _own_labels(obj: Obj) -> Mapping[str, str]:
    """The labels an object has in the WDS's API server: a Namespace also has its name label."""
    labels = obj.labels if isinstance(obj.labels, Mapping) else {}
    if _is_namespace(obj) and obj.name:
        return {**labels, NAMESPACE_NAME_LABEL: obj.name}
    return labels


def _subject(obj: Obj, info: KindInfo, ns_labels: NsLabels) -> _Subject:
    namespace = obj.namespace if info.namespaced else ""
    nsl: Mapping[str, str] = {}
    if namespace:
        nsl = ns_labels.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}
    return _Subject(obj.group, info.resource, info.namespaced, namespace, obj.name, _own_labels(obj), nsl)


def _empty_or_contains(values: Any, item: str) -> bool:
    values = values or []
    if not isinstance(values, list):
        return False
    return not values or "*" in values or item in values


def _group_text(group: Any) -> str:
    return '"" (core)' if group == "" else repr(group)


def _ok_scope(c: Mapping[str, Any], s: _Subject) -> bool:
    scope = c.get(SCOPE)
    return scope is None or (scope == NAMESPACED) == s.namespaced


def _why_scope(c: Mapping[str, Any], s: _Subject) -> str:
    if c.get(SCOPE) == NAMESPACED:
        return ("this v1alpha1 namespaceSelector clause admits only namespaced objects, "
                "and the object is cluster-scoped")
    return ("this v1alpha1 nonNamespacedObjects clause admits only cluster-scoped objects, "
            "and the object is namespaced")


def _ok_group(c: Mapping[str, Any], s: _Subject) -> bool:
    return c.get("apiGroup") is None or c.get("apiGroup") == s.group


def _why_group(c: Mapping[str, Any], s: _Subject) -> str:
    return f"apiGroup {_group_text(c.get('apiGroup'))} is not the object's group {_group_text(s.group)}"


def _ok_resources(c: Mapping[str, Any], s: _Subject) -> bool:
    return _empty_or_contains(c.get("resources"), s.resource)


def _why_resources(c: Mapping[str, Any], s: _Subject) -> str:
    return f"resources {c.get('resources')!r} include neither \"*\" nor the object's resource {s.resource!r}"


def _ok_namespaces(c: Mapping[str, Any], s: _Subject) -> bool:
    if s.namespaced:
        return _empty_or_contains(c.get("namespaces"), s.namespace)
    return _empty_or_contains(c.get("namespaces"), "")  # [], "*" or "" admit cluster-scoped objects


def _why_namespaces(c: Mapping[str, Any], s: _Subject) -> str:
    if not s.namespaced:
        return (f"namespaces {c.get('namespaces')!r} include neither \"*\" nor \"\", the namespace of a "
                "cluster-scoped object")
    return f"namespaces {c.get('namespaces')!r} include neither \"*\" nor the object's namespace {s.namespace!r}"


def _ok_namespace_selectors(c: Mapping[str, Any], s: _Subject) -> bool:
    sels = c.get("namespaceSelectors")
    return not sels or any_matches(sels, s.ns_labels)


def _why_namespace_selectors(c: Mapping[str, Any], s: _Subject) -> str:
    if not s.namespaced:
        return "no namespaceSelector matches the empty labels a cluster-scoped object is tested against"
    return f"no namespaceSelector matches the labels {dict(s.ns_labels)!r} of Namespace {s.namespace!r}"


def _ok_object_names(c: Mapping[str, Any], s: _Subject) -> bool:
    return _empty_or_contains(c.get("objectNames"), s.name)


def _why_object_names(c: Mapping[str, Any], s: _Subject) -> str:
    return f"objectNames {c.get('objectNames')!r} include neither \"*\" nor the object's name {s.name!r}"


def _ok_label_selectors(c: Mapping[str, Any], s: _Subject) -> bool:
    sels = c.get("labelSelectors")
    return not sels or any_matches(sels, s.labels)


def _why_label_selectors(c: Mapping[str, Any], s: _Subject) -> str:
    return f"no labelSelector matches the object's labels {dict(s.labels)!r}"


def _gated(c: Mapping[str, Any], s: _Subject) -> bool:
    return NS_GATE in c and s.group == "" and s.resource == "namespaces"


def _ok_namespace_gate(c: Mapping[str, Any], s: _Subject) -> bool:
    return not _gated(c, s) or matches(c[NS_GATE], s.labels)


def _why_namespace_gate(c: Mapping[str, Any], s: _Subject) -> str:
    return (f"a v1alpha1 placement places a Namespace only when its spec.namespaceSelector selects it, "
            f"and it does not select the labels {dict(s.labels)!r} of Namespace {s.name!r}")


_Check = Callable[[Mapping[str, Any], _Subject], bool]
_Why = Callable[[Mapping[str, Any], _Subject], str]
_CRITERIA: tuple[tuple[_Check, _Why], ...] = (
    (_ok_scope, _why_scope),
    (_ok_group, _why_group),
    (_ok_resources, _why_resources),
    (_ok_namespaces, _why_namespaces),
    (_ok_namespace_selectors, _why_namespace_selectors),
    (_ok_object_names, _why_object_names),
    (_ok_label_selectors, _why_label_selectors),
    (_ok_namespace_gate, _why_namespace_gate),
)


def clause_mismatch(clause: Any, obj: Obj, info: KindInfo, ns_labels: NsLabels) -> str | None:
    """The first criterion of `clause` that `obj` fails, as a sentence; None when the clause matches."""
    if not isinstance(clause, dict):
        return "the clause is not a map, so it matches nothing"
    subject = _subject(obj, info, ns_labels)
    for ok, why in _CRITERIA:
        if not ok(clause, subject):
            return why(clause, subject)
    return None


def clause_matches(clause: Any, obj: Obj, info: KindInfo, ns_labels: NsLabels) -> bool:
    """True when `obj` satisfies all six criteria of the downsync clause (docs/REFERENCE.md, "Downsync clauses")."""
    if not isinstance(clause, dict):
        return False
    subject = _subject(obj, info, ns_labels)
    return all(ok(clause, subject) for ok, _ in _CRITERIA)


# --- upsync and the never-downsynced objects -------------------------------------------------

def _star_or_contains(values: Any, item: str) -> bool:
    """UpsyncSet list semantics: "*" matches all, an empty (or absent) list matches nothing."""
    return isinstance(values, list) and ("*" in values or item in values)


def _upsync_set_matches(upsync_set: Any, obj: Obj, info: KindInfo) -> bool:
    if not isinstance(upsync_set, dict):
        return False
    if (upsync_set.get("apiGroup") or "") != obj.group:
        return False
    if not _star_or_contains(upsync_set.get("resources"), info.resource):
        return False
    if info.namespaced and not _star_or_contains(upsync_set.get("namespaces"), obj.namespace):
        return False
    return _star_or_contains(upsync_set.get("names"), obj.name)


def _upsync_index(upsync_sets: Any, obj: Obj, info: KindInfo) -> int | None:
    for i, upsync_set in enumerate(_list(upsync_sets)):
        if _upsync_set_matches(upsync_set, obj, info):
            return i
    return None


def upsync_matches(upsync_sets: list[Any], obj: Obj, info: KindInfo) -> bool:
    """True when `obj` is in any of the UpsyncSets (KubeStellar semantics, bug fixed)."""
    return _upsync_index(upsync_sets, obj, info) is not None


def upsync_wins(spec: Mapping[str, Any]) -> bool:
    """Whether the spec's upsync sets unselect what its clauses select: not for a converted
    v1alpha1 spec (see the module doc)."""
    return not any(isinstance(c, dict) and SCOPE in c for c in _list(spec.get("downsync")))


def never_reason(obj: Obj, info: KindInfo | None) -> str | None:
    """Why `obj` never reaches a WEC whatever the clauses say, or None (see the module doc)."""
    if is_control(obj):
        return f"{obj.kind} is a control kind"
    return (kind_off_edge(obj.group, obj.kind, info.resource if info is not None else None)
            or system_object(obj.group, obj.kind, obj.name, obj.body))


def never_downsynced(obj: Obj, kinds: KindTable | None = None) -> bool:
    """Control kinds, kinds kept off the edge, objects every cluster makes: never downsynced."""
    info = kinds.lookup(obj.group, obj.kind) if kinds is not None else None
    return never_reason(obj, info) is not None


# --- selection ------------------------------------------------------------------------------

class Placed(Struct, frozen=True):
    """An object a placement downsyncs, and the index of the first clause that matched it
    (`ALONG` for a CustomResourceDefinition that came along with its custom resources)."""

    obj: Obj
    clause: int


def _first_clause(clauses: Sequence[Any], obj: Obj, info: KindInfo, ns_labels: NsLabels) -> int | None:
    for i, clause in enumerate(clauses):
        if clause_matches(clause, obj, info, ns_labels):
            return i
    return None


def _placed(spec: Mapping[str, Any], obj: Obj, kinds: KindTable, ns_labels: NsLabels,
            upsync_first: bool) -> Placed | None:
    info = kinds.lookup(obj.group, obj.kind)
    if info is None or never_reason(obj, info) is not None:
        return None
    if upsync_first and upsync_matches(spec.get("upsync") or [], obj, info):
        return None
    index = _first_clause(_list(spec.get("downsync")), obj, info, ns_labels)
    return None if index is None else Placed(obj, index)


def _is_crd(obj: Obj) -> bool:
    return obj.group == "apiextensions.k8s.io" and obj.kind == "CustomResourceDefinition"


def defined_kind(crd: Obj) -> tuple[str, str] | None:
    """(group, kind) of the custom resources a CustomResourceDefinition defines."""
    names = crd.spec.get("names")
    group, kind = crd.spec.get("group"), names.get("kind") if isinstance(names, dict) else None
    return (group, kind) if isinstance(group, str) and isinstance(kind, str) else None


def crd_definers(workload: Sequence[Obj]) -> dict[tuple[str, str], Obj]:
    """The CustomResourceDefinitions of a WDS by the (group, kind) they define."""
    found: dict[tuple[str, str], Obj] = {}
    for obj in workload:
        defined = defined_kind(obj) if _is_crd(obj) else None
        if defined is not None:
            found.setdefault(defined, obj)
    return found


def _along(placed: list[Placed], workload: Sequence[Obj]) -> list[Placed]:
    """The CRDs (of the WDS) of the placed custom resources that no clause placed."""
    definers = crd_definers(workload)
    if not definers:
        return []
    chosen = {id(p.obj) for p in placed}
    along: dict[int, Placed] = {}
    for p in placed:
        crd = definers.get((p.obj.group, p.obj.kind))
        if crd is not None and id(crd) not in chosen:
            along.setdefault(id(crd), Placed(crd, ALONG))
    return list(along.values())


def select(spec: Mapping[str, Any], workload: Sequence[Obj], kinds: KindTable,
           ns_labels: NsLabels) -> list[Placed]:
    """The objects of `workload` that the (normalized) spec downsyncs, plus the CRDs that come
    along, sorted by identity. Skips never-downsynced objects, upsync-matched objects and unknown
    kinds (reported elsewhere)."""
    first = upsync_wins(spec)
    placed = [p for p in (_placed(spec, obj, kinds, ns_labels, first) for obj in workload) if p is not None]
    placed += _along(placed, workload)
    return sorted(placed, key=lambda p: ref_order(p.obj.ref))


def _clause_lines(clauses: list[Any], obj: Obj, info: KindInfo, ns_labels: NsLabels) -> list[str]:
    if not clauses:
        return ["the placement has no downsync clauses, so it downsyncs nothing"]
    lines = []
    for i, clause in enumerate(clauses):
        why = clause_mismatch(clause, obj, info, ns_labels)
        lines.append(f"{clause_label(clause, i)}: " + ("matches" if why is None else f"does not match: {why}"))
    return lines


def along_line(crd: Obj) -> str:
    """The explain sentence for a CustomResourceDefinition that came along."""
    defined = defined_kind(crd)
    kind = defined[1] if defined else "custom resource"
    return (f"comes along: it defines the {kind} objects this placement places, and a placed custom "
            "resource brings its CustomResourceDefinition from the same WDS")


def explain_object(spec: Mapping[str, Any], obj: Obj, kinds: KindTable, ns_labels: NsLabels) -> list[str]:
    """Why the placement does (not) downsync `obj`: one line per clause, then what overrides them."""
    info = kinds.lookup(obj.group, obj.kind)
    reason = never_reason(obj, info)
    if info is None:
        lines = [f"kind {obj.kind!r} of apiVersion {obj.api_version!r} is unknown (no built-in entry, CRD "
                 "or RepoConfig kinds entry), so no clause can select it"]
        return lines + ([f"never downsynced: {reason}"] if reason else [])
    lines = _clause_lines(_list(spec.get("downsync")), obj, info, ns_labels)
    if reason:
        lines.append(f"never downsynced: {reason}")
    index = _upsync_index(spec.get("upsync"), obj, info)
    if index is not None and upsync_wins(spec):
        lines.append(f"spec.upsync[{index}] matches it and upsync wins over downsync, so it is not downsynced")
    elif index is not None:
        lines.append(f"spec.upsync[{index}] matches it, but a v1alpha1 placement's upsync does not stop its "
                     "downsync (KubeStellar v0.7)")
    return lines


def namespace_labels(workload: Sequence[Obj]) -> dict[str, Mapping[str, str]]:
    """Labels of the core/v1 Namespace objects of a WDS, by Namespace name, as its API server has
    them (with `kubernetes.io/metadata.name`)."""
    return {obj.name: _own_labels(obj) for obj in workload if _is_namespace(obj) and obj.name}


__all__ = [
    "ALONG", "CLUSTER", "NAMESPACED", "NAMESPACE_NAME_LABEL", "SCOPE", "SOURCE", "V1ALPHA1", "Placed",
    "along_line", "clause_label", "clause_matches", "clause_mismatch", "crd_definers", "defined_kind",
    "explain_object", "namespace_labels", "never_downsynced", "never_reason", "placement_spec", "select",
    "selector_problems", "upsync_matches", "upsync_wins",
]
