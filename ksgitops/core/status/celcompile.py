"""What makes a StatusCollector expression valid CEL for ksgitops: it compiles, reads only the
variables a binding has (inventory, obj, returned), calls only the standard functions the library
implements, and nests comprehensions at most MAX_NESTING deep. Pure; the CEL library is loaded on
first use."""
from __future__ import annotations

import functools
import re
from typing import Any

VARIABLES = ("inventory", "obj", "returned")
# CEL's standard functions that the library implements (tests/test_collect.py calls each one).
# Operators (`_+_`, `!_`, `-_`, `@in`, ...) are always allowed; macros (has, all, exists,
# exists_one, map, filter) do not appear as functions.
FUNCTIONS = frozenset({
    "size", "contains", "startsWith", "endsWith", "matches",
    "int", "uint", "double", "string", "bytes", "type", "dyn", "duration", "timestamp",
    "getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getHours", "getMinutes", "getSeconds", "getMilliseconds",
})
# Identifiers an expression may use besides VARIABLES: type names (`type(x) == int`).
TYPE_NAMES = frozenset({"int", "uint", "double", "bool", "string", "bytes", "list", "map",
                        "null_type", "type"})
MAX_NESTING = 3  # comprehensions inside comprehensions inside comprehensions
_MACROS = "all|exists_one|exists|map|filter"  # CEL's comprehension macros, the only calls that bind a name
_MACRO_CALL = re.compile(rf"\.\s*(?:{_MACROS})\s*$")
_COMPREHENSION = re.compile(rf"\.\s*(?:{_MACROS})\s*\(\s*([A-Za-z_]\w*)\s*,")
_PARSE_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")


def cel_library() -> Any:
    """The CEL binding, imported on first use (it loads a native library; most runs need none)."""
    import cel  # ~240 ms of start-up (python -X importtime)
    return cel


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str) -> tuple[Any, str]:
    """(program, "") or (None, why it is not a valid StatusCollector expression)."""
    try:
        program = cel_library().compile(text)
    except Exception as exc:  # noqa: BLE001 - the library raises ValueError; be safe with any
        match = _PARSE_ERROR.search(str(exc))
        if match:
            line, column, message = match.groups()
            return None, f"invalid CEL: {line}:{column}: {message.strip()}"
        return None, f"invalid CEL: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    depth = comprehension_depth(text)
    if depth > MAX_NESTING:
        return None, (f"comprehensions nest {depth} deep (at most {MAX_NESTING}: each level multiplies the "
                      "work, and a deeper one could run for hours)")
    bound = set(_COMPREHENSION.findall(text))
    unknown = sorted(set(program.variables()) - set(VARIABLES) - bound - TYPE_NAMES)
    if unknown:
        return None, (f"undeclared reference to {', '.join(repr(u) for u in unknown)} "
                      f"(expressions see {', '.join(VARIABLES)})")
    functions = sorted(f for f in program.functions() if f[:1] not in "_!-@" and f not in FUNCTIONS)
    if functions:
        return None, (f"unknown function {', '.join(repr(f) for f in functions)} "
                      "(CEL's standard library only)")
    return program, ""


def comprehension_depth(text: str) -> int:
    """How deep comprehension macros (all, exists, exists_one, map, filter) nest in `text`:
    the work of an expression grows as the product of the list sizes at each level. String
    literals are skipped; the parentheses of other calls do not count."""
    deepest, stack, i = 0, [], 0
    while i < len(text):
        char = text[i]
        if char in "'\"":
            i = _string_end(text, i)
            continue
        if char == "(":
            stack.append(bool(_MACRO_CALL.search(text, 0, i)))
            deepest = max(deepest, sum(stack))
        elif char == ")" and stack:
            stack.pop()
        i += 1
    return deepest


def _string_end(text: str, start: int) -> int:
    """The index after the string literal that opens at `start` (triple-quoted ones too)."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        i += 1
    return i
