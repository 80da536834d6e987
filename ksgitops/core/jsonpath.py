"""The JSONPath subset used by Customizer replacement paths, and KubeStellar's "definite" set.

Accepted syntax: `$` followed by any mix of
- `.key`   a dotted segment (any text without `.`, `[`, `]` or quotes; `*` is rejected);
- `[N]`    a list index (non-negative decimal);
- `['key']` / `["key"]`  a quoted map key (may hold dots, slashes...; `\\` escapes a quote or `\\`).

`parse_path` keeps dotted segments as `str` (even numeric ones) and bracket indices as `int`:
`set_path` treats a decimal `str` as an index when the container is a list and as a key when it
is a map; an `int` step only indexes lists.
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["PathError", "Step", "parse_path", "format_path", "set_path"]

Step = str | int

_DOTTED = re.compile(r"\.([^.\[\]'\"]+)")
_INDEX = re.compile(r"\[(\d+)\]")
_QUOTED = re.compile(r"""\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]""")
_UNESCAPE = re.compile(r"\\(.)")


class PathError(ValueError):
    """A path that does not parse, or that does not resolve in a document."""


def _next_step(path: str, pos: int) -> tuple[Step, int]:
    """Parse the step starting at `pos`; returns it and the position after it."""
    if m := _DOTTED.match(path, pos):
        if m.group(1) == "*":
            raise PathError(f"invalid path {path!r}: wildcards are not supported")
        return m.group(1), m.end()
    if m := _INDEX.match(path, pos):
        return int(m.group(1)), m.end()
    if m := _QUOTED.match(path, pos):
        raw = m.group(1) if m.group(1) is not None else m.group(2)
        return _UNESCAPE.sub(r"\1", raw), m.end()
    raise PathError(f"invalid path {path!r} at offset {pos}: expected .key, [index] or ['key']")


def parse_path(path: str) -> tuple[Step, ...]:
    """Parse `$.a.b.0.c`, `$.a[0]`, `$['k']`, `$["k.with.dots"]` (mixed) into steps."""
    if not path.startswith("$"):
        raise PathError(f"invalid path {path!r}: must start with '$'")
    steps: list[Step] = []
    pos = 1
    while pos < len(path):
        step, pos = _next_step(path, pos)
        steps.append(step)
    if not steps:
        raise PathError(f"invalid path {path!r}: it selects the whole object")
    return tuple(steps)


def _format_step(step: Step) -> str:
    """One step in path syntax, such that parse_path gives it back."""
    if isinstance(step, int):
        return f"[{step}]"
    if step != "*" and _DOTTED.fullmatch("." + step):
        return "." + step
    return "['" + step.replace("\\", "\\\\").replace("'", "\\'") + "']"


def format_path(steps: tuple[Step, ...] | list[Step]) -> str:
    """The canonical path text for `steps` (inverse of parse_path)."""
    return "$" + "".join(_format_step(s) for s in steps)


def _describe(node: Any) -> str:
    """A short name for what a step was applied to, for error messages."""
    if node is None:
        return "null"
    return {dict: "a map", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(node), "a number" if isinstance(node, (int, float)) else type(node).__name__)


def _fail(steps: tuple[Step, ...], i: int, why: str) -> PathError:
    """A PathError naming the failing step (1-based) of the path."""
    return PathError(f"{format_path(steps)}: step {i + 1} ({_format_step(steps[i])}): {why}")


def _list_index(node: list[Any], steps: tuple[Step, ...], i: int) -> int:
    """The in-range list index that step `i` denotes on `node`."""
    step = steps[i]
    if isinstance(step, str) and not (step.isascii() and step.isdigit()):
        raise _fail(steps, i, f"{step!r} is not an index, but the value here is a list")
    index = int(step)
    if index >= len(node):
        raise _fail(steps, i, f"index {index} out of range (list has {len(node)} items)")
    return index


def _map_key(node: Any, steps: tuple[Step, ...], i: int, must_exist: bool) -> str:
    """The map key that step `i` denotes on `node` (which must be a map)."""
    step = steps[i]
    if not isinstance(node, dict):
        raise _fail(steps, i, f"cannot step into {_describe(node)}")
    if isinstance(step, int):
        raise _fail(steps, i, "list index applied to a map (use .key or ['key'])")
    if must_exist and step not in node:
        raise _fail(steps, i, f"no key {step!r} (the path must exist up to its last step)")
    return step


def set_path(doc: Any, steps: tuple[Step, ...], value: Any) -> None:
    """Set `value` at `steps` in `doc`, in place, with KubeStellar's "definite" semantics.

    Every step but the last must resolve to an existing map or list; the last step may add a
    new map key or replace an existing map value or list element (an out-of-range index fails).
    """
    if not steps:
        raise PathError("empty path: cannot replace the whole object")
    node = doc
    last = len(steps) - 1
    for i in range(last):
        if isinstance(node, list):
            node = node[_list_index(node, steps, i)]
        else:
            node = node[_map_key(node, steps, i, must_exist=True)]
    if isinstance(node, list):
        node[_list_index(node, steps, last)] = value
    else:
        node[_map_key(node, steps, last, must_exist=False)] = value
