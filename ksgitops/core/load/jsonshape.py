"""Whether a parsed document is plain JSON (what kustomize and the API server read), and where it
is not: keys that are no strings, NaN and infinities, integers beyond 2^53, nesting beyond 100
levels, values of other types. Errors name the field path, and for YAML the line of that field.
"""
from __future__ import annotations

import math
from typing import Any

import yaml

INT_LIMIT = 2 ** 53  # kustomize reads numbers as float64: larger integers would change on the way
BEYOND_INT_LIMIT = "integer beyond ±2^53 would lose precision in kustomize and JSON readers (quote it)"

FieldPath = tuple["str | int | None", ...]  # keys and indices; None: a key that is no string


def shape_error(doc: Any) -> tuple[str, FieldPath] | None:
    """What makes the document no JSON object, and where: (message, field path)."""
    if not isinstance(doc, dict):
        return f"document is not a mapping (found {type(doc).__name__})", ()
    try:
        return _value_error(doc, 0, ())
    except RecursionError:
        return "document nesting is too deep", ()


def _value_error(value: Any, depth: int, at: FieldPath) -> tuple[str, FieldPath] | None:
    if depth > 100:
        return "document nesting is deeper than 100 levels", at
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"map key {key!r} is not a string (quote it)", (*at, None)
            error = _value_error(item, depth + 1, (*at, key))
            if error:
                return error
    elif isinstance(value, list):
        for i, item in enumerate(value):
            error = _value_error(item, depth + 1, (*at, i))
            if error:
                return error
    elif isinstance(value, float) and not math.isfinite(value):
        return "NaN and infinite numbers are not JSON (quote them to keep them as text)", at
    elif isinstance(value, int) and not isinstance(value, bool) and not -INT_LIMIT <= value <= INT_LIMIT:
        return BEYOND_INT_LIMIT, at
    elif not isinstance(value, (str, int, float, bool)) and value is not None:
        return f"value of type {type(value).__name__} is not JSON (use a plain string)", at
    return None


def located(message: str, at: FieldPath) -> str:
    """The message, after the field it concerns (`spec.ports[0].port: ...`)."""
    where = ""
    for step in at:
        if isinstance(step, int):
            where += f"[{step}]"
        elif step is not None:
            where += f".{step}" if where else step
    return f"{where}: {message}" if where else message


_STR_TAG = "tag:yaml.org,2002:str"


def line_of(node: yaml.Node | None, at: FieldPath) -> int:
    """The line of the node at a field path (a step of None: the mapping's first key that is no
    string); as deep as the nodes can be followed (a merge key hides where a value came from)."""
    line = 0
    for step in at:
        if isinstance(node, yaml.MappingNode) and step is None:
            keys = [k for k, _ in node.value if not (isinstance(k, yaml.ScalarNode) and k.tag == _STR_TAG)]
            node = keys[0] if keys else None
        elif isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value
                         if isinstance(k, yaml.ScalarNode) and k.tag == _STR_TAG and k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        else:
            node = None
        if node is None:
            break
        line = node.start_mark.line + 1
    return line
