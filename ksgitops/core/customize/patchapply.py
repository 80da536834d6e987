"""An RFC 6902 patch applied without copying what it leaves alone: the result shares every
untouched part with the document (which is never changed), where `jsonpatch` needs a deep copy
first. Status judges thousands of patched objects a run (an expand-parameters Deployment has a
patch per WEC), and a copy of each was most of the cost.

Only what this module can vouch for is applied: `add`, `remove` and `replace` through plain
dicts and lists, at a path that exists as jsonpatch requires. For anything else (another
operation, a malformed patch, a path that does not resolve, the document's root) it answers
None and the caller asks jsonpatch, which then applies it or raises as it always did. Where it
answers, its result equals jsonpatch's, keys in the same order.
"""
from __future__ import annotations

import re
from typing import Any

from .jsonpath import MAX_INDEX_DIGITS

_OPS = ("add", "remove", "replace")
_INVALID_ESCAPE = re.compile(r"~[^01]|~\Z")  # jsonpointer refuses these
_INDEX = re.compile(r"0|[1-9][0-9]*")  # a list index as jsonpointer reads one
_ATOMS = frozenset({str, int, float, bool, type(None)})


class _Unsure(Exception):
    pass


def tree_shaped(doc: Any) -> bool:
    """Whether `doc` holds only JSON values, no container twice (YAML's aliases share one): then
    `patched(doc, ...)` equals jsonpatch applied to `serialize.plain_copy(doc)`, which keeps an
    alias shared, so that a change through one of its places shows in the others."""
    seen: set[int] = set()
    todo = [doc]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is dict or kind is list:
            if id(node) in seen:
                return False
            seen.add(id(node))
            todo.extend(node.values() if kind is dict else node)
        elif kind not in _ATOMS:
            return False
    return True


def patched(doc: Any, patch: Any) -> Any | None:
    """`doc` with `patch` applied, sharing what the patch leaves alone; None when jsonpatch must
    say. For a `doc` that is not `tree_shaped`, jsonpatch's answer may differ."""
    steps = _steps(patch)
    if steps is None:
        return None
    made: dict[int, Any] = {}  # id -> container made here (held, so no id is reused), changed in place
    try:
        for kind, parts, value in steps:
            doc = _at(doc, parts, kind, value, made)
    except _Unsure:
        return None
    return doc


def _steps(patch: Any) -> list[tuple[str, list[str], Any]] | None:
    """(operation, path parts, value) of each operation, or None when one is not plainly valid."""
    if type(patch) is not list:
        return None
    steps = []
    for op in patch:
        if type(op) is not dict or op.get("op") not in _OPS or type(op.get("path")) is not str:
            return None
        kind, path = op["op"], op["path"]
        if kind != "remove" and "value" not in op:
            return None
        if not path.startswith("/") or ("~" in path and _INVALID_ESCAPE.search(path)):
            return None
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
        steps.append((kind, parts, op.get("value")))
    return steps


def _own(node: Any, made: dict[int, Any]) -> Any:
    """`node` if made here, else a shallow copy of it (made here from now on)."""
    if id(node) in made:
        return node
    copy = dict(node) if type(node) is dict else list(node)
    made[id(copy)] = copy
    return copy


def _at(node: Any, parts: list[str], kind: str, value: Any, made: dict[int, Any]) -> Any:
    """`node` (owned or copied) with the operation applied at `parts` below it."""
    part, last = parts[0], len(parts) == 1
    if type(node) is dict:
        if not last:
            if part not in node:
                raise _Unsure
            child = _at(node[part], parts[1:], kind, value, made)
            node = _own(node, made)
            node[part] = child
            return node
        if (kind != "add" and part not in node) or (kind == "replace" and part == "-"):
            raise _Unsure  # jsonpatch refuses to replace at "-", even a mapping's key
        node = _own(node, made)
        if kind == "remove":
            del node[part]
        else:
            node[part] = value
        return node
    if type(node) is not list:
        raise _Unsure
    if last and kind == "add" and part == "-":
        node = _own(node, made)
        node.append(value)
        return node
    if not _INDEX.fullmatch(part) or len(part) > MAX_INDEX_DIGITS:
        raise _Unsure
    index = int(part)
    if index > len(node) or (index == len(node) and not (last and kind == "add")):
        raise _Unsure
    if not last:
        child = _at(node[index], parts[1:], kind, value, made)
        node = _own(node, made)
        node[index] = child
        return node
    node = _own(node, made)
    if kind == "add":
        node.insert(index, value)
    elif kind == "remove":
        del node[index]
    else:
        node[index] = value
    return node


__all__ = ["patched", "tree_shaped"]
