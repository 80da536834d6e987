"""Invalid label selectors anywhere in an EdgePlacement (v2alpha1 or v1alpha1), each prefixed by
its field path."""
from __future__ import annotations

from typing import Any, Mapping

from ...model import Obj
from ..load.selectors import selector_error
from .edgeplacement import as_list as _list


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


__all__ = ["selector_problems"]
