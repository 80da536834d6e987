"""An EdgePlacement's spec, normalized: v2alpha1 as it is, v1alpha1 converted to v2alpha1 clauses.

`placement_spec` returns a normalized v2alpha1 spec with exactly these keys:
`locationSelectors`, `downsync`, `upsync` (lists), `wantSingletonReportedState` (bool) and
`statusCollectors` (list). It is a deep copy; malformed (non-list) values become empty lists, which
validation reports separately.

v1alpha1 (`apiVersion: edge.kubestellar.io/v1alpha1`), as KubeStellar v0.7.0's
pkg/apis/edge/v1alpha1/edge-placement.go defines it and pkg/placement/what-resolver.go
(`whatMatches`, `setByMatch`) applies it:
- `locationSelectors` and `upsync` are carried over unchanged (same types in both versions).
- `namespaceSelector` is one LabelSelector held by value, so an absent or null one is the empty
  selector, which selects **every** Namespace. It becomes one clause
  `{namespaceSelectors: [sel], _scope: "Namespaced"}`: every namespaced object whose Namespace's
  labels match `sel` (v0.7 placed whole namespaces). The `_scope` marker keeps cluster-scoped
  objects out: they are tested against empty labels, so a `{}` selector would otherwise admit them
  all. The Namespace objects themselves are cluster-scoped, so this clause does not match them: as
  in v0.7, a Namespace's own labels and annotations go only when `nonNamespacedObjects` selects
  it; otherwise the mailbox gets an implied Namespace. A Namespace that `namespaceSelector` does not
  select goes nowhere, even when `nonNamespacedObjects` names it (`setByMatch` drops a Namespace
  whose namespace is not placed): each clause that could match Namespaces (core group, resources
  `namespaces` or `"*"`) carries `_namespaceGate`, the namespaceSelector a Namespace must also match.
- each `nonNamespacedObjects[i]` entry (`apiGroup` a plain string, "" = core, compared exactly;
  `resources`; `resourceNames`; `labelSelectors`; an object is in the set when its name is listed
  OR its labels match a selector) becomes up to two clauses, both with `apiGroup` set and
  `_scope: "Cluster"` (v0.7 watched only cluster-scoped resources): one with `objectNames` =
  `resourceNames` and one with `labelSelectors`. In v0.7 `"*"` means all only when it is the only
  entry of `resources` or `resourceNames` (elsewhere it is a literal name, which no object has),
  and an empty list matches nothing; so an entry with no resources yields no clause, and an empty
  name list (or selector list) yields no clause for that half.
- Converted clauses carry `_source`, the field path they came from (e.g.
  `spec.nonNamespacedObjects[0].resourceNames`), used by `explain` instead of `spec.downsync[i]`.
The private keys `_scope`, `_source` and `_namespaceGate` are never taken from user input: they are
stripped from v2alpha1 clauses. v0.7 gave upsync no precedence over downsync (its what-resolver never
reads `upsync`), so `what.py` does not let the upsync sets of a converted spec (its clauses carry
`_scope`) unselect anything.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

from ...model import Obj

V1ALPHA1 = "edge.kubestellar.io/v1alpha1"
SCOPE = "_scope"
SOURCE = "_source"
NAMESPACED = "Namespaced"
CLUSTER = "Cluster"
NS_GATE = "_namespaceGate"
_PRIVATE = (SCOPE, SOURCE, NS_GATE)


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _v2_clause(clause: Any) -> Any:
    if not isinstance(clause, dict):
        return copy.deepcopy(clause)
    return {k: copy.deepcopy(v) for k, v in clause.items() if k not in _PRIVATE}


def _namespace_selector(spec: Mapping[str, Any]) -> Any:
    sel = spec.get("namespaceSelector")
    return {} if sel is None else copy.deepcopy(sel)


def _namespace_clause(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"namespaceSelectors": [_namespace_selector(spec)], SCOPE: NAMESPACED, SOURCE: "spec.namespaceSelector"}


def _v1_names(value: Any) -> list[Any]:
    """A v1alpha1 resources/resourceNames list as a v2alpha1 one: `"*"` alone means all; among
    other entries it is a literal name, which no resource or object has."""
    values = as_list(value)
    if values == ["*"]:
        return values
    return [v for v in values if v != "*"]


def _non_namespaced_clauses(i: int, entry: Any, gate: Any) -> list[dict[str, Any]]:
    if not isinstance(entry, dict):
        return []
    resources = _v1_names(entry.get("resources"))
    if not resources:
        return []
    base = {"apiGroup": entry.get("apiGroup") or "", "resources": resources, SCOPE: CLUSTER}
    if base["apiGroup"] == "" and (resources == ["*"] or "namespaces" in resources):
        base[NS_GATE] = gate
    path = f"spec.nonNamespacedObjects[{i}]"
    out = []
    names = _v1_names(entry.get("resourceNames"))
    if names:
        out.append({**copy.deepcopy(base), "objectNames": names, SOURCE: f"{path}.resourceNames"})
    selectors = as_list(entry.get("labelSelectors"))
    if selectors:
        out.append({**copy.deepcopy(base), "labelSelectors": copy.deepcopy(selectors),
                    SOURCE: f"{path}.labelSelectors"})
    return out


def _v1alpha1_downsync(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    clauses = [_namespace_clause(spec)]
    for i, entry in enumerate(as_list(spec.get("nonNamespacedObjects"))):
        clauses.extend(_non_namespaced_clauses(i, entry, _namespace_selector(spec)))
    return clauses


def placement_spec(placement: Obj) -> dict[str, Any]:
    """The normalized v2alpha1 spec of an EdgePlacement (v1alpha1 converted; see the module doc)."""
    spec = placement.spec
    if placement.api_version == V1ALPHA1:
        downsync = _v1alpha1_downsync(spec)
    else:
        downsync = [_v2_clause(c) for c in as_list(spec.get("downsync"))]
    return {
        "locationSelectors": copy.deepcopy(as_list(spec.get("locationSelectors"))),
        "downsync": downsync,
        "upsync": copy.deepcopy(as_list(spec.get("upsync"))),
        "wantSingletonReportedState": spec.get("wantSingletonReportedState") is True,
        "statusCollectors": copy.deepcopy(as_list(spec.get("statusCollectors"))),
    }


def clause_label(clause: Any, index: int) -> str:
    """How `explain` names a clause: its v1alpha1 source field, else `spec.downsync[index]`."""
    if isinstance(clause, dict) and isinstance(clause.get(SOURCE), str):
        return f"{clause[SOURCE]} (v1alpha1)"
    return f"spec.downsync[{index}]"


__all__ = ["placement_spec", "clause_label", "as_list", "V1ALPHA1", "SCOPE", "SOURCE", "NAMESPACED", "CLUSTER",
           "NS_GATE"]
