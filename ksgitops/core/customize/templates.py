"""An expand-parameters object's templated strings, found once: its patch for one WEC's parameters
without rebuilding the object or diffing it.

`customize()` then `make_patch()` expand every string leaf of a copy and walk both trees; a fleet
does that once per (object, parameter values), thousands of times for the same object. Only the
string leaves holding `%` can change, so the patch is the `replace` of each of those whose
expansion differs, in the order the diff visits them (map keys sorted by `str`, list items by
index). Anything the fast path does not vouch for byte for byte — a parameter error, an expansion
touching the object's identity, a label holding `%` that stays as it was, an object past the
growth budget — answers None, and the caller takes the general path, which reports it. The labels
an expansion changed are the caller's to check (`label_values`).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

from .customizer import Budget, OverBudget, Recorder
from .params import ParamError, expand_string, split_template
from .patchdiff import escape_pointer

__all__ = ["Templates", "find_templates", "label_values", "LABELS"]

_IDENTITY = ("/apiVersion", "/kind", "/metadata/name", "/metadata/namespace")
_INSIDE_IDENTITY = tuple(f"{pointer}/" for pointer in _IDENTITY)  # a map or list there: load refuses it
LABELS = "/metadata/labels/"


class Templates(Struct, frozen=True):
    """(JSON pointer, text, its pieces) of every string leaf holding `%`, in the diff's order (the
    pieces: params.split_template, None when malformed)."""

    leaves: tuple[tuple[str, str, tuple[tuple[str, str | None], ...] | None], ...]

    def patch(self, params: Mapping[str, str], budget: int) -> list[dict[str, Any]] | None:
        """The RFC 6902 ops `make_patch(body, expanded body)` gives, or None: take the general path."""
        ops: list[dict[str, Any]] = []
        charged = Recorder(params, Budget(budget))  # a large value put many times stops early
        for pointer, text, pieces in self.leaves:
            try:
                new = expand_string(text, charged) if pieces is None else "".join(
                    [literal if key is None else literal + charged[key] for literal, key in pieces])
            except (KeyError, ParamError, OverBudget):
                return None
            if new != text:
                if pointer in _IDENTITY or pointer.startswith(_INSIDE_IDENTITY):
                    return None
                ops.append({"op": "replace", "path": pointer, "value": new})
            elif pointer.startswith(LABELS):
                return None
        return ops


def label_values(ops: list[dict[str, Any]]) -> list[str]:
    """The new value of each label an expansion changed."""
    return [op["value"] for op in ops if op["path"].startswith(LABELS)]


def find_templates(body: dict[str, Any]) -> Templates | None:
    """The object's templates; None when it holds something the diff treats apart (a tuple, a map
    key that is no string): the general path serves it."""
    leaves: list[tuple[str, str, tuple[tuple[str, str | None], ...] | None]] = []
    return Templates(tuple(leaves)) if _walk(body, "", leaves) else None


def _walk(value: Any, path: str, out: list[tuple[str, str, tuple[tuple[str, str | None], ...] | None]]) -> bool:
    if isinstance(value, str):
        if "%" in value:
            out.append((path, value, split_template(value)))
        return True
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return False
        return all([_walk(value[k], f"{path}/{escape_pointer(k)}", out) for k in sorted(value)])
    if isinstance(value, list):
        return all([_walk(item, f"{path}/{i}", out) for i, item in enumerate(value)])
    return not isinstance(value, tuple)
