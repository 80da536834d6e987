"""A small, fast, deterministic RFC 6902 diff (base -> final) emitting only add/remove/replace.

Rules: map keys are compared in sorted order (removed -> `remove`, added -> `add`, present in
both -> recurse); lists of equal length recurse per index, lists of different length get one
`replace` of the whole list; changed scalars and any type change (including bool vs int and
int vs float, which Python's `==` would conflate) get a `replace`. Kustomize applies these
patches later, so no `move`/`copy`/`test` ops are ever emitted.
"""
from __future__ import annotations

from typing import Any

__all__ = ["make_patch", "escape_pointer", "unescape_pointer", "copy_json"]


def escape_pointer(token: str) -> str:
    """Escape one JSON-pointer reference token (RFC 6901): `~` -> `~0`, `/` -> `~1`."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_pointer(token: str) -> str:
    """The name one JSON-pointer reference token stands for (RFC 6901): `~1` -> `/`, then `~0` -> `~`."""
    return token.replace("~1", "/").replace("~0", "~")


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-like value (dicts and lists rebuilt, scalars shared); faster than
    copy.deepcopy."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def _kind(value: Any) -> type:
    """The JSON type of a value: dict, list, or the exact scalar type."""
    if isinstance(value, dict):
        return dict
    if isinstance(value, list):
        return list
    return type(value)


def _diff_dict(a: dict[str, Any], b: dict[str, Any], path: str, ops: list[dict[str, Any]]) -> None:
    """Append the ops turning map `a` into map `b`, keys in sorted order."""
    for key in sorted(a.keys() | b.keys(), key=str):
        sub = f"{path}/{escape_pointer(str(key))}"
        if key not in b:
            ops.append({"op": "remove", "path": sub})
        elif key not in a:
            ops.append({"op": "add", "path": sub, "value": copy_json(b[key])})
        else:
            _diff(a[key], b[key], sub, ops)


def _diff(a: Any, b: Any, path: str, ops: list[dict[str, Any]]) -> None:
    """Append the ops turning `a` into `b` at JSON pointer `path`."""
    if a is b:  # shared subtrees (see params.expand_shared) are equal by construction
        return
    kind = _kind(a)
    if kind is not _kind(b):
        ops.append({"op": "replace", "path": path, "value": copy_json(b)})
    elif kind is dict:
        _diff_dict(a, b, path, ops)
    elif kind is list and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}/{i}", ops)
    elif kind is list or a != b or (kind is float and repr(a) != repr(b)):  # 0.0 vs -0.0
        ops.append({"op": "replace", "path": path, "value": copy_json(b)})


def make_patch(base: Any, final: Any) -> list[dict[str, Any]]:
    """RFC 6902 ops turning `base` into `final` (see the module docstring); [] when equal.

    The ops' values are fresh copies: mutating `final` later does not change the patch.
    """
    ops: list[dict[str, Any]] = []
    _diff(base, final, "", ops)
    return ops
