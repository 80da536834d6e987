"""What an EdgePlacement selects: downsync clauses, upsync sets, and the never-downsynced objects.

Downsync (DESIGN §2): a clause matches an object when all six criteria hold: `apiGroup` (absent or
null matches any group), `resources`, `namespaces`, `namespaceSelectors`, `objectNames` and
`labelSelectors` (each: empty matches all). A cluster-scoped object has namespace "": `namespaces`
admits it only when empty or containing "*" (a "" entry does not count, as DESIGN and KubeStellar's
API doc say), and `namespaceSelectors` test it against empty labels. Scope comes from the kind table,
so a stray `metadata.namespace` on a cluster-scoped object is ignored. Clauses combine by OR. An
object matching any upsync set of the placement is not downsynced (upsync wins), and some objects
are never downsynced at all.

Upsync sets (KubeStellar's UpsyncSet): `apiGroup` is a plain string ("" = core) compared exactly;
for `resources`, `namespaces` and `names`, `"*"` matches all and an empty list matches nothing;
`namespaces` is ignored for cluster-scoped objects. (KubeStellar v0.14's `upsyncMatches` looked up
the namespace and the name in `resources`; here each is looked up in its own list.)

`placement_spec` returns a normalized v2alpha1 spec with exactly these keys:
`locationSelectors`, `downsync`, `upsync` (lists), `wantSingletonReportedState` (bool) and
`statusCollectors` (list). It is a deep copy; malformed (non-list) values become empty lists, which
validation reports separately.

v1alpha1 conversion (`apiVersion: edge.kubestellar.io/v1alpha1`):
- `locationSelectors` and `upsync` are carried over unchanged (same types in both versions).
- `namespaceSelector` (one LabelSelector) becomes one clause
  `{namespaceSelectors: [sel], _scope: "Namespaced"}`: every namespaced object whose Namespace's
  labels match `sel`. The `_scope` marker keeps cluster-scoped objects out: they are tested against
  empty labels, so a `{}` selector would otherwise admit them all. The Namespace objects themselves
  are cluster-scoped, so they are not matched; the mailbox still gets them as implied Namespaces.
  An absent or null `namespaceSelector` selects no namespaced objects (a nil selector matches
  nothing), while `{}` selects all namespaces (Kubernetes semantics for an empty selector).
- each `nonNamespacedObjects[i]` entry (`apiGroup` plain string, "" = core; `resources`;
  `resourceNames`; optionally `labelSelectors`; for v1alpha1 an object is in the set when its name is
  listed OR its labels match) becomes up to two clauses, both with `apiGroup` set (default "") and
  `_scope: "Cluster"` (only cluster-scoped objects): one with `objectNames` = `resourceNames` and one
  with `labelSelectors`. In v1alpha1 empty `resources`/`resourceNames` lists match nothing, whereas an
  empty v2alpha1 list matches everything, so an entry with no resources yields no clause and an empty
  name list (or selector list) yields no clause for that half.
- Converted clauses carry `_source`, the field path they came from (e.g.
  `spec.nonNamespacedObjects[0].resourceNames`), used by `explain` instead of `spec.downsync[i]`.
The private keys `_scope` and `_source` are never taken from user input: they are stripped from
v2alpha1 clauses.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..kinds import KindInfo, KindTable, is_control
from ..model import Obj
from .selectors import any_matches, selector_error

V1ALPHA1 = "edge.kubestellar.io/v1alpha1"
SCOPE = "_scope"
SOURCE = "_source"
NAMESPACED = "Namespaced"
CLUSTER = "Cluster"
_PRIVATE = (SCOPE, SOURCE)

NsLabels = Mapping[str, Mapping[str, str]]


# --- normalization --------------------------------------------------------------------------

def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _v2_clause(clause: Any) -> Any:
    if not isinstance(clause, dict):
        return copy.deepcopy(clause)
    return {k: copy.deepcopy(v) for k, v in clause.items() if k not in _PRIVATE}


def _namespace_clause(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    sel = spec.get("namespaceSelector")
    if sel is None:
        return []
    return [{"namespaceSelectors": [copy.deepcopy(sel)], SCOPE: NAMESPACED, SOURCE: "spec.namespaceSelector"}]


def _non_namespaced_clauses(i: int, entry: Any) -> list[dict[str, Any]]:
    if not isinstance(entry, dict) or not _list(entry.get("resources")):
        return []
    group = entry.get("apiGroup") or ""
    base = {"apiGroup": group, "resources": copy.deepcopy(entry["resources"]), SCOPE: CLUSTER}
    path = f"spec.nonNamespacedObjects[{i}]"
    out = []
    names = _list(entry.get("resourceNames"))
    if names:
        out.append({**base, "objectNames": copy.deepcopy(names), SOURCE: f"{path}.resourceNames"})
    selectors = _list(entry.get("labelSelectors"))
    if selectors:
        out.append({**copy.deepcopy(base), "labelSelectors": copy.deepcopy(selectors),
                    SOURCE: f"{path}.labelSelectors"})
    return out


def _v1alpha1_downsync(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    clauses = _namespace_clause(spec)
    for i, entry in enumerate(_list(spec.get("nonNamespacedObjects"))):
        clauses.extend(_non_namespaced_clauses(i, entry))
    return clauses


def placement_spec(placement: Obj) -> dict[str, Any]:
    """The normalized v2alpha1 spec of an EdgePlacement (v1alpha1 converted; see the module doc)."""
    spec = placement.spec
    if placement.api_version == V1ALPHA1:
        downsync = _v1alpha1_downsync(spec)
    else:
        downsync = [_v2_clause(c) for c in _list(spec.get("downsync"))]
    return {
        "locationSelectors": copy.deepcopy(_list(spec.get("locationSelectors"))),
        "downsync": downsync,
        "upsync": copy.deepcopy(_list(spec.get("upsync"))),
        "wantSingletonReportedState": spec.get("wantSingletonReportedState") is True,
        "statusCollectors": copy.deepcopy(_list(spec.get("statusCollectors"))),
    }


# --- the six downsync criteria --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Subject:
    """The facts about one object that the criteria test."""

    group: str
    resource: str
    namespaced: bool
    namespace: str
    name: str
    labels: Mapping[str, str]
    ns_labels: Mapping[str, str]


def _subject(obj: Obj, info: KindInfo, ns_labels: NsLabels) -> _Subject:
    namespace = obj.namespace if info.namespaced else ""
    labels = obj.labels if isinstance(obj.labels, Mapping) else {}
    nsl = (ns_labels.get(namespace) or {}) if namespace else {}
    return _Subject(obj.group, info.resource, info.namespaced, namespace, obj.name, labels, nsl)


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
    return _empty_or_contains(c.get("namespaces"), "*")  # only [] or "*" admit cluster-scoped objects


def _why_namespaces(c: Mapping[str, Any], s: _Subject) -> str:
    if not s.namespaced:
        return (f"namespaces {c.get('namespaces')!r} do not include \"*\", which a cluster-scoped object "
                "needs (its namespace is \"\")")
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
    """True when `obj` satisfies all six criteria of the downsync clause (DESIGN §2)."""
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


_NEVER_SECRET_TYPES = frozenset({"kubernetes.io/service-account-token", "bootstrap.kubernetes.io/token"})


def _never_reason(obj: Obj) -> str | None:
    if is_control(obj):
        return f"{obj.kind} is a control kind"
    if obj.group != "":
        return None
    if obj.kind == "ServiceAccount" and obj.name == "default":
        return "the ServiceAccount named default is created by every namespace"
    if obj.kind == "ConfigMap" and obj.name == "kube-root-ca.crt":
        return "the ConfigMap kube-root-ca.crt is created by every cluster"
    if obj.kind == "Secret" and obj.body.get("type") in _NEVER_SECRET_TYPES:
        return f"a Secret of type {obj.body.get('type')} is created by its cluster"
    return None


def never_downsynced(obj: Obj) -> bool:
    """System objects every cluster makes for itself, and control kinds: never downsynced."""
    return _never_reason(obj) is not None


# --- selection ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placed:
    """An object a placement downsyncs, and the index of the first clause that matched it."""

    obj: Obj
    clause: int


def _first_clause(clauses: Sequence[Any], obj: Obj, info: KindInfo, ns_labels: NsLabels) -> int | None:
    for i, clause in enumerate(clauses):
        if clause_matches(clause, obj, info, ns_labels):
            return i
    return None


def _placed(spec: Mapping[str, Any], obj: Obj, kinds: KindTable, ns_labels: NsLabels) -> Placed | None:
    if never_downsynced(obj):
        return None
    info = kinds.lookup(obj.group, obj.kind)
    if info is None or upsync_matches(spec.get("upsync") or [], obj, info):
        return None
    index = _first_clause(_list(spec.get("downsync")), obj, info, ns_labels)
    return None if index is None else Placed(obj, index)


def select(spec: Mapping[str, Any], workload: Sequence[Obj], kinds: KindTable,
           ns_labels: NsLabels) -> list[Placed]:
    """The objects of `workload` that the (normalized) spec downsyncs, sorted by identity.

    Skips never-downsynced objects, upsync-matched objects and unknown kinds (reported elsewhere).
    """
    placed = (_placed(spec, obj, kinds, ns_labels) for obj in workload)
    return sorted((p for p in placed if p is not None), key=lambda p: p.obj.ref)


def clause_label(clause: Any, index: int) -> str:
    """How `explain` names a clause: its v1alpha1 source field, else `spec.downsync[index]`."""
    if isinstance(clause, dict) and isinstance(clause.get(SOURCE), str):
        return f"{clause[SOURCE]} (v1alpha1)"
    return f"spec.downsync[{index}]"


def _clause_lines(clauses: list[Any], obj: Obj, info: KindInfo, ns_labels: NsLabels) -> list[str]:
    if not clauses:
        return ["the placement has no downsync clauses, so it downsyncs nothing"]
    lines = []
    for i, clause in enumerate(clauses):
        why = clause_mismatch(clause, obj, info, ns_labels)
        lines.append(f"{clause_label(clause, i)}: " + ("matches" if why is None else f"does not match: {why}"))
    return lines


def explain_object(spec: Mapping[str, Any], obj: Obj, kinds: KindTable, ns_labels: NsLabels) -> list[str]:
    """Why the placement does (not) downsync `obj`: one line per clause, then what overrides them."""
    info = kinds.lookup(obj.group, obj.kind)
    if info is None:
        return [f"kind {obj.kind!r} of apiVersion {obj.api_version!r} is unknown (no built-in entry, CRD "
                "or RepoConfig kinds entry), so no clause can select it"]
    lines = _clause_lines(_list(spec.get("downsync")), obj, info, ns_labels)
    reason = _never_reason(obj)
    if reason:
        lines.append(f"never downsynced: {reason}")
    index = _upsync_index(spec.get("upsync"), obj, info)
    if index is not None:
        lines.append(f"spec.upsync[{index}] matches it and upsync wins over downsync, so it is not downsynced")
    return lines


def namespace_labels(workload: Sequence[Obj]) -> dict[str, dict[str, str]]:
    """Labels of the core/v1 Namespace objects of a WDS, by Namespace name."""
    out: dict[str, dict[str, str]] = {}
    for obj in workload:
        if obj.group == "" and obj.kind == "Namespace" and obj.name:
            labels = obj.labels
            out[obj.name] = dict(labels) if isinstance(labels, Mapping) else {}
    return out


# --- selector validation --------------------------------------------------------------------

def _selector_list_problems(path: str, selectors: Any) -> list[str]:
    if selectors is None:
        return []
    if not isinstance(selectors, list):
        return [f"{path}: must be a list of label selectors"]
    problems = []
    for i, sel in enumerate(selectors):
        err = "must be a label selector, not null" if sel is None else selector_error(sel)
        if err:
            problems.append(f"{path}[{i}]: {err}")
    return problems


def _clause_selector_problems(path: str, clause: Any) -> list[str]:
    if not isinstance(clause, dict):
        return []
    return (_selector_list_problems(f"{path}.namespaceSelectors", clause.get("namespaceSelectors"))
            + _selector_list_problems(f"{path}.labelSelectors", clause.get("labelSelectors")))


def _list_field_problems(spec: Mapping[str, Any], field: str) -> list[str]:
    problems: list[str] = []
    for i, clause in enumerate(_list(spec.get(field))):
        problems += _clause_selector_problems(f"spec.{field}[{i}]", clause)
    return problems


def selector_problems(placement: Obj) -> list[str]:
    """Invalid label selectors anywhere in the placement, each prefixed by its field path."""
    spec = placement.spec
    problems = _selector_list_problems("spec.locationSelectors", spec.get("locationSelectors"))
    problems += _list_field_problems(spec, "downsync")
    err = selector_error(spec.get("namespaceSelector"))
    if err:
        problems.append(f"spec.namespaceSelector: {err}")
    problems += _list_field_problems(spec, "nonNamespacedObjects")
    return problems
