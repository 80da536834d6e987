"""`%(key)` parameter expansion, as in KubeStellar's Customizer and expand-parameters annotation.

Syntax, scanned left to right in one pass (expanded text is never re-scanned):

- `%(key)` is replaced by `params[key]`; a key is any non-empty text without `(` or `)`, in
  practice a Kubernetes label/annotation key such as `env` or `example.com/zone-id`;
- `%%` is a literal `%` (so `%%(env)` is the literal text `%(env)`);
- a `%` followed by neither `(` nor `%` is kept as is (`100%` stays `100%`);
- `%(` without a well-formed `key)` after it (`%(env`, `%()`, `%(a(b)`) is an error.

Expansion applies to string leaves only, never to map keys.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ParamError", "referenced_keys", "expand_string", "expand_leaves", "failing_leaf", "split_template"]

_TOKEN = re.compile(r"%%|%\(([^()]*)\)|%\(")


class ParamError(ValueError):
    """A parameter reference that cannot be expanded; `key` names the missing key, if any."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _string_leaves(value: Any) -> list[str]:
    """Every string leaf of a JSON-like value (map keys excluded), depth first."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return out


def referenced_keys(value: Any) -> frozenset[str]:
    """Keys of the well-formed `%(key)` references in any string leaf of `value` (not map keys)."""
    keys: set[str] = set()
    for text in _string_leaves(value):
        if "%" in text:
            keys.update(m.group(1) for m in _TOKEN.finditer(text) if m.group(1))
    return frozenset(keys)


def _substitute(match: re.Match[str], params: Mapping[str, str]) -> str:
    """The replacement text for one `%%` / `%(key)` token; raises ParamError on a bad one."""
    if match.group(0) == "%%":
        return "%"
    key = match.group(1)
    if key is None:
        raise ParamError(f"malformed parameter reference at offset {match.start()}: expected %(key)")
    if not key:  # the text itself is never quoted: it may be Secret data
        raise ParamError(f"empty parameter name %() at offset {match.start()}")
    try:
        return params[key]
    except KeyError:
        raise ParamError(f"parameter {key!r} is not defined (no such Location label or "
                         f"annotation)", key=key) from None


def expand_string(text: str, params: Mapping[str, str]) -> str:
    """Expand `%(key)` from `params` and `%%` to `%` in `text` (see the module docstring).

    A lone `%` not followed by `(` or `%` stays as is. A missing key raises ParamError naming it.
    """
    if "%" not in text:
        return text
    return _TOKEN.sub(lambda m: _substitute(m, params), text)


def split_template(text: str) -> tuple[tuple[str, str | None], ...] | None:
    """`text` as (literal, key) pieces, expanded by joining each literal and the value of its key
    (None: the piece ends there); None when a reference is malformed (expand_string says how)."""
    pieces: list[tuple[str, str | None]] = []
    start = 0
    for match in _TOKEN.finditer(text):
        key = match.group(1)
        if match.group(0) != "%%" and not key:
            return None
        literal = text[start:match.start()]
        if key is None:  # %%
            pieces.append((literal + "%", None))
        else:
            pieces.append((literal, key))
        start = match.end()
    pieces.append((text[start:], None))
    return tuple(pieces)


def expand_leaves(value: Any, params: Mapping[str, str]) -> Any:
    """A new JSON-like structure with every string leaf expanded; map keys are left alone.

    Dicts and lists are always rebuilt (tuples become lists), so the result shares nothing
    mutable with `value`.
    """
    if isinstance(value, str):
        return expand_string(value, params)
    if isinstance(value, dict):
        return {k: expand_leaves(v, params) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [expand_leaves(v, params) for v in value]
    return value


def failing_leaf(value: Any, params: Mapping[str, str], at: tuple[str | int, ...] = ()
                 ) -> tuple[str | int, ...] | None:
    """The path of the first string leaf (in expand_leaves' order) whose expansion fails, or None."""
    if isinstance(value, str):
        try:
            expand_string(value, params)
        except ParamError:
            return at
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    for step, item in items:
        found = failing_leaf(item, params, (*at, step))
        if found is not None:
            return found
    return None


def expand_shared(value: Any, params: Mapping[str, str]) -> Any:
    """Like expand_leaves, but every subtree without a changed string is returned as is (shared
    with `value`): cheap to build and cheap to diff by identity. Treat the result as read-only."""
    if isinstance(value, str):
        return expand_string(value, params)
    if isinstance(value, dict):
        # the hot path of a full reconcile (an object per WEC): leaves without `%` cost one test
        changed: dict[str, Any] | None = None
        for key, item in value.items():
            if isinstance(item, str):
                if "%" not in item:
                    continue
                new = expand_string(item, params)
            elif isinstance(item, (dict, list)):
                new = expand_shared(item, params)
            else:
                continue
            if new is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = new
        return value if changed is None else changed
    if isinstance(value, list):
        elements = [expand_shared(v, params) if isinstance(v, (str, dict, list)) else v for v in value]
        return value if all(e is v for e, v in zip(elements, value)) else elements
    return value
