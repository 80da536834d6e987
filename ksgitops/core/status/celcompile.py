"""What makes a StatusCollector expression valid CEL for ksgitops: it stays within cel-go's parser
limits (checked before the CEL library sees it), compiles, reads only the variables a binding has
(inventory, obj, returned), calls only the standard functions the library implements, and nests
comprehensions at most MAX_NESTING deep, over few list and map literal elements. Pure; the CEL
library is loaded on first use."""
from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import re
import sys
from typing import Any

from . import celscan

VARIABLES = ("inventory", "obj", "returned")
# CEL's standard functions that the library implements (tests/test_collect_compile.py calls each one).
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
# cel-go's parser limits (KubeStellar evaluates StatusCollectors with cel-go), lowered where the
# library fails earlier: it panics, overflows its stack or takes minutes (docs/REFERENCE.md,
# "StatusCollector").
MAX_SIZE = 60_000  # code points; cel-go 100,000, but the library panics on an error past column 65,535
MAX_DEPTH = 250  # cel-go's recursion limit; the library's stack overflows near 18,000 chained operators
MAX_BAD_CHARACTERS = 100  # cel-go stops at 100 syntax errors; the library reports each, slower as lines grow
MAX_WORK = 1_000_000  # Kubernetes' cost limit for one evaluation of a CEL expression
_MACROS = "|".join(sorted(celscan.MACROS, key=len, reverse=True))  # the only calls that bind a name
_COMPREHENSION = re.compile(rf"\.\s*(?:{_MACROS})\s*\(\s*([A-Za-z_]\w*)\s*,")
_PARSE_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
_LIBRARY_ERROR = re.compile(r'OtherError\(ParseError \{.*?msg: "([^"]*)".*\}\)')


_LIBRARY: list[Any] = []


def cel_library() -> Any:
    """The CEL binding, loaded on first use (a native library; most runs need none). The package's
    `__init__` also imports its interactive shell (prompt_toolkit and more: 0.15-0.24 s of every
    `status` and `validate` with a StatusCollector), so its native module is loaded alone (0.03 s),
    under the name the package gives it: an `import cel` later reuses it."""
    if not _LIBRARY:
        _LIBRARY.append(_native_module() or _package())
    return _LIBRARY[0]


def _package() -> Any:
    import cel  # the whole package, its shell included
    return cel


def _native_module() -> Any:
    """The package's native module `cel.cel` without the package's `__init__` (None: not found)."""
    loaded = sys.modules.get("cel.cel")
    if loaded is not None:
        return loaded
    try:
        package = importlib.util.find_spec("cel")
        for folder in (package.submodule_search_locations or []) if package is not None else []:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = os.path.join(folder, "cel" + suffix)
                if os.path.isfile(path):
                    spec = importlib.util.spec_from_file_location("cel.cel", path)
                    assert spec is not None and spec.loader is not None
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    if hasattr(module, "compile") and hasattr(module, "Context"):
                        sys.modules["cel.cel"] = module
                        return module
    except Exception:  # noqa: BLE001 - any surprise: the package's own import
        return None
    return None


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str) -> tuple[Any, str]:
    """(program, "") or (None, why it is not a valid StatusCollector expression)."""
    if len(text) > MAX_SIZE:
        return None, f"invalid CEL: {len(text):,} characters (at most {MAX_SIZE:,})"
    tokens = celscan.tokens(text)
    error = _beyond_parser_limits(text, tokens)
    if error:
        return None, error
    try:
        program = cel_library().compile(text)
    except BaseException as exc:  # noqa: BLE001 - the library raises ValueError, or panics
        if not isinstance(exc, Exception) and not is_panic(exc):
            raise
        if is_panic(exc):
            return None, "invalid CEL: the CEL library failed on it (a panic)"
        match = _PARSE_ERROR.search(str(exc))
        if match:
            line, column, message = match.groups()
            message = _LIBRARY_ERROR.sub(r"\1", message.strip())  # the library's own nesting limit
            return None, f"invalid CEL: {line}:{column}: {message}"
        return None, f"invalid CEL: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    error = _too_much_work(tokens)
    if error:
        return None, error
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


def _beyond_parser_limits(text: str, tokens: list[celscan.Token]) -> str:
    """Why cel-go would refuse `text` before parsing it, or "": too many characters no token starts
    with, or too deep a nesting."""
    bad = [t for t in tokens if t.kind == "bad"]
    if len(bad) > MAX_BAD_CHARACTERS:
        line = text.count("\n", 0, bad[0].pos) + 1
        column = bad[0].pos - text.rfind("\n", 0, bad[0].pos)
        return (f"invalid CEL: {line}:{column}: Syntax error: {len(bad):,} characters no CEL token starts with, "
                f"the first {bad[0].text!r} (at most {MAX_BAD_CHARACTERS})")
    depth = celscan.nesting_depth(tokens)
    if depth > MAX_DEPTH:
        return (f"invalid CEL: brackets, chained operators and selections nest {depth:,} deep "
                f"(at most {MAX_DEPTH})")
    return ""


def _too_much_work(tokens: list[celscan.Token]) -> str:
    """Why evaluating the expression could take hours, or "": comprehensions nest too deep, or
    iterate and build too many literal elements (each level multiplies the work)."""
    depth = celscan.comprehension_depth(tokens)
    if depth > MAX_NESTING:
        return (f"comprehensions nest {depth} deep (at most {MAX_NESTING}: each level multiplies the "
                "work, and a deeper one could run for hours)")
    elements = celscan.literal_elements(tokens)
    if depth and elements > most_literal_elements(depth):
        return (f"list and map literals hold {elements:,} elements, with comprehensions nesting {depth} deep "
                f"(at most {most_literal_elements(depth):,}: the work can grow as the number of elements to the "
                f"power {depth + 1})")
    return ""


def most_literal_elements(depth: int) -> int:
    """The most elements list and map literals may hold with comprehensions nesting `depth` deep:
    each comprehension may iterate over all of them, and each step build them all again, so the
    work is bounded by their number to the power depth + 1, which stays within MAX_WORK."""
    n = round(MAX_WORK ** (1 / (depth + 1)))
    return n if n ** (depth + 1) <= MAX_WORK else n - 1


def is_panic(exc: BaseException) -> bool:
    """The CEL library's Rust panic, which it raises as a BaseException (pyo3's PanicException)."""
    return type(exc).__name__ == "PanicException"


def comprehension_depth(text: str) -> int:
    """How deep comprehension macros (all, exists, exists_one, map, filter) nest in `text`:
    the work of an expression grows as the product of the list sizes at each level. String
    literals are skipped; the parentheses of other calls do not count."""
    return celscan.comprehension_depth(celscan.tokens(text))
