"""Kubernetes LabelSelectors: validation and matching, with Kubernetes' own semantics.

- A selector is a map with optional `matchLabels` (label key -> value) and `matchExpressions`
  (list of `{key, operator, values}`; operator In | NotIn | Exists | DoesNotExist). All
  requirements must hold (AND).
- `None` (a nil selector) matches nothing; `{}` matches everything.
- `NotIn` matches an object that lacks the key (as in Kubernetes).
- A selector that fails `selector_error` matches nothing (as KubeStellar skipped selectors that did
  not convert); validation reports it separately, with the field path.
- `selector_error(None)` is None: a nil selector is well-formed, it just selects nothing. Callers
  that require a selector (e.g. list entries) check for None themselves.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

import orjson

from ...names import is_dns1123_subdomain

_NAME_MAX = 63
_PREFIX_MAX = 253
_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_NAME_RULE = ("alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric "
              "character, at most 63 characters")

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_SELECTOR_FIELDS = frozenset({"matchLabels", "matchExpressions"})
_EXPRESSION_FIELDS = frozenset({"key", "operator", "values"})


def _name_part_error(name: str, what: str) -> str | None:
    if not name:
        return f"{what} must not be empty"
    if len(name) > _NAME_MAX:
        return f"{what} {name!r} is longer than {_NAME_MAX} characters"
    if not _NAME.match(name):
        return f"{what} {name!r} is invalid: use {_NAME_RULE}"
    return None


def _prefix_error(prefix: str) -> str | None:
    if not prefix:
        return "label key prefix must not be empty"
    if len(prefix) > _PREFIX_MAX:
        return f"label key prefix {prefix!r} is longer than {_PREFIX_MAX} characters"
    if not is_dns1123_subdomain(prefix):
        return f"label key prefix {prefix!r} is not a DNS-1123 subdomain (lowercase letters, digits, '-' and '.')"
    return None


def label_key_error(key: Any) -> str | None:
    """None when `key` is a valid label key: an optional DNS-1123 subdomain prefix and '/', then a name."""
    if not isinstance(key, str):
        return f"label key {key!r} must be a string"
    parts = key.split("/")
    if len(parts) > 2:
        return f"label key {key!r} has more than one '/'"
    if len(parts) == 2:
        return _prefix_error(parts[0]) or _name_part_error(parts[1], "label key name")
    return _name_part_error(key, "label key")


def label_value_error(value: Any) -> str | None:
    """None when `value` is a valid label value: empty, or a name of at most 63 characters."""
    if not isinstance(value, str):
        return f"label value {value!r} must be a string"
    if value == "":
        return None
    return _name_part_error(value, "label value")


def _match_labels_error(match_labels: Any) -> str | None:
    if match_labels is None:
        return None
    if not isinstance(match_labels, dict):
        return "matchLabels must be a map of label key to value"
    for key, value in match_labels.items():
        err = label_key_error(key) or label_value_error(value)
        if err:
            return f"matchLabels: {err}"
    return None


def _values_error(operator: str, values: Any) -> str | None:
    if values is not None and not isinstance(values, list):
        return "values must be a list of strings"
    values = values or []
    if operator in ("In", "NotIn") and not values:
        return f"operator {operator} needs at least one value"
    if operator in ("Exists", "DoesNotExist") and values:
        return f"operator {operator} takes no values"
    for value in values:
        err = label_value_error(value)
        if err:
            return err
    return None


def _expression_error(expr: Any) -> str | None:
    if not isinstance(expr, dict):
        return "must be a map with key, operator and values"
    unknown = sorted(str(k) for k in expr if k not in _EXPRESSION_FIELDS)
    if unknown:
        return f"unknown field(s) {', '.join(unknown)}"
    if "key" not in expr:
        return "key is required"
    err = label_key_error(expr["key"])
    if err:
        return err
    operator = expr.get("operator")
    if operator not in OPERATORS:
        return f"operator {operator!r} is not one of {', '.join(OPERATORS)}"
    return _values_error(operator, expr.get("values"))


def _match_expressions_error(exprs: Any) -> str | None:
    if exprs is None:
        return None
    if not isinstance(exprs, list):
        return "matchExpressions must be a list"
    for i, expr in enumerate(exprs):
        err = _expression_error(expr)
        if err:
            return f"matchExpressions[{i}]: {err}"
    return None


def selector_error(sel: Any) -> str | None:
    """None when `sel` is a well-formed LabelSelector (or None), else what is wrong with it."""
    if sel is None:
        return None
    if not isinstance(sel, dict):
        return "a label selector must be a map with matchLabels and/or matchExpressions"
    unknown = sorted(str(k) for k in sel if k not in _SELECTOR_FIELDS)
    if unknown:
        return f"unknown field(s) {', '.join(unknown)} (a label selector has matchLabels and matchExpressions)"
    return _match_labels_error(sel.get("matchLabels")) or _match_expressions_error(sel.get("matchExpressions"))


def _requirement_holds(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expr["key"], expr["operator"]
    values = expr.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


_VALIDITY: dict[bytes, bool] = {}


def _is_valid(sel: Any) -> bool:
    """selector_error(sel) is None, memoized by content: selectors are few, matches are many."""
    try:
        key = orjson.dumps(sel, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return selector_error(sel) is None
    valid = _VALIDITY.get(key)
    if valid is None:
        if len(_VALIDITY) > 100_000:
            _VALIDITY.clear()
        valid = _VALIDITY[key] = selector_error(sel) is None
    return valid


def matches(sel: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """True when `labels` satisfy the selector: None matches nothing, `{}` everything, invalid nothing."""
    if sel is None or not _is_valid(sel):
        return False
    labels = labels if isinstance(labels, Mapping) else {}
    for key, value in (sel.get("matchLabels") or {}).items():
        if key not in labels or labels[key] != value:
            return False
    return all(_requirement_holds(e, labels) for e in sel.get("matchExpressions") or [])


def any_matches(selectors: list[Any] | None, labels: Mapping[str, str] | None) -> bool:
    """OR over `selectors`; an empty list matches nothing (callers decide what empty means)."""
    if not isinstance(selectors, list):
        return False
    return any(matches(sel, labels) for sel in selectors)


def matcher(selectors: list[Any] | None) -> Callable[[Mapping[str, str] | None], bool]:
    """any_matches(selectors, ·) for many label sets: a selector reads only the labels it names, so
    the answer is worked out once per distinct (value or absence) of those labels."""
    if not isinstance(selectors, list):
        return lambda labels: False
    try:
        keys = list(dict.fromkeys(key for sel in selectors if isinstance(sel, dict) for key in _named_keys(sel)))
    except TypeError:  # a key YAML made unhashable: no shortcut
        return lambda labels: any_matches(selectors, labels)
    answers: dict[Any, bool] = {}
    first = keys[0] if len(keys) == 1 else None

    def match(labels: Mapping[str, str] | None) -> bool:
        if type(labels) is not dict:  # the usual case first: isinstance of an ABC costs more than the rest
            labels = labels if isinstance(labels, Mapping) else {}
        try:  # one named label (the usual selector) is its own key: no tuple to build per label set
            seen = labels.get(first, _ABSENT) if first is not None else tuple(labels.get(key, _ABSENT) for key in keys)
            found = answers.get(seen)
        except TypeError:  # an unhashable label value
            return any_matches(selectors, labels)
        if found is None:
            found = answers[seen] = any_matches(selectors, labels)
        return found
    return match


_ABSENT = object()


def _named_keys(sel: Mapping[str, Any]) -> list[Any]:
    match_labels = sel.get("matchLabels")
    exprs = sel.get("matchExpressions")
    return [*(match_labels if isinstance(match_labels, dict) else ()),
            *(e["key"] for e in (exprs if isinstance(exprs, list) else ()) if isinstance(e, dict) and "key" in e)]


def _requirement_text(expr: Mapping[str, Any]) -> str:
    values = expr.get("values") or []
    return f"{expr['key']} {expr['operator']}" + (f" {list(values)!r}" if values else "")


def selector_mismatch(sel: Any, labels: Mapping[str, str] | None) -> str | None:
    """Why `labels` fail the selector, as a phrase (the first requirement that fails); None when
    the selector matches. For `explain`: same rules as `matches`."""
    if sel is None:
        return "a null selector selects nothing"
    error = selector_error(sel)
    if error:
        return f"the selector is invalid ({error}), so it selects nothing"
    labels = labels if isinstance(labels, Mapping) else {}
    for key, value in (sel.get("matchLabels") or {}).items():
        if key not in labels:
            return f"matchLabels wants {key}={value} and there is no label {key}"
        if labels[key] != value:
            return f"matchLabels wants {key}={value} and the label is {key}={labels[key]}"
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        if not _requirement_holds(expr, labels):
            have = f"{expr['key']}={labels[expr['key']]}" if expr["key"] in labels else f"no label {expr['key']}"
            return f"matchExpressions[{i}] ({_requirement_text(expr)}) fails: {have}"
    return None
