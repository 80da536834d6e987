"""JSON merge patches (RFC 7386, also used for strategic merge and apply) and JSON patches
(RFC 6902)."""
from __future__ import annotations

import copy
from typing import Any

from .errors import ApiError


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (also used for strategic merge and for apply: lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path and not path.startswith("/"):
        raise ApiError(422, "Invalid", f"invalid JSON pointer {path!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")[1:]]


def _container(doc: Any, tokens: list[str]) -> tuple[Any, str]:
    node = doc
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, tokens[-1]


def json_patch(doc: dict, ops: list) -> dict:
    """RFC 6902: add, remove, replace, move, copy, test. Failures are 422 Invalid."""
    doc = copy.deepcopy(doc)

    def resolve(tokens):
        node = doc
        for t in tokens:
            node = node[int(t)] if isinstance(node, list) else node[t]
        return node

    def remove(tokens):
        parent, last = _container(doc, tokens)
        return parent.pop(int(last) if isinstance(parent, list) else last)

    def add(tokens, value):
        parent, last = _container(doc, tokens)
        if isinstance(parent, list):
            parent.insert(len(parent) if last == "-" else int(last), value)
        else:
            parent[last] = value

    for op in ops:
        try:
            name, tokens = op["op"], _pointer(op["path"])
            if not tokens:
                raise ApiError(422, "Invalid", "patching the whole document is not supported")
            if name == "test":
                if resolve(tokens) != op.get("value"):
                    raise ApiError(422, "Invalid", f"test operation failed at {op['path']}")
            elif name == "remove":
                remove(tokens)
            elif name == "add":
                add(tokens, copy.deepcopy(op["value"]))
            elif name == "replace":
                remove(tokens)
                add(tokens, copy.deepcopy(op["value"]))
            elif name in ("move", "copy"):
                source = _pointer(op["from"])
                value = remove(source) if name == "move" else copy.deepcopy(resolve(source))
                add(tokens, value)
            else:
                raise ApiError(422, "Invalid", f"unknown JSON patch operation {name!r}")
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as e:
            raise ApiError(422, "Invalid", f"the server rejected our request due to an error in "
                                           f"our request: JSON patch {op!r} failed ({e!r})") from None
    return doc

