"""Customizer replacement paths: KubeStellar's JSONPath grammar, and replacement at every match.

Grammar (KubeStellar v0.14.2 pkg/jsonpath/parser.go and lexer.go): `$` followed by selectors:
- `.name`     a map key (see below for which characters a dotted name may hold);
- `.N`        a list index (decimal), the same as `[N]`;
- `.*`, `[*]` every child of a map or a list;
- `['k']`, `["k"]`, `['a','b']`  one or several map keys, as JavaScript string literals;
- `[N]`, `[1,3]`  one or several list indices;
- `[start:end:step]`  a slice of a list, every part optional (`[:2]`, `[1:]`, `[::2]`);
- `..`        the node itself and every descendant, then the rest of the path (`$...name`,
  `$..['name']`, `$..*`, and, as an extension, `$..name`).

Differences from KubeStellar, each where KubeStellar would fail or misbehave: a dotted name may
hold any character but `.`, `[`, `]`, quotes, `*`, `,`, `:` and white space (KubeStellar takes
only JavaScript identifiers, so `.app-name` fails to parse there); `..` must be followed by a
selector (a bare `..` would select the whole object); a slice step must be positive (0 loops
forever in KubeStellar); octal escapes in strings are rejected. A path of `$` alone is rejected.

Replacement (pkg/jsonpath/eval.go `Apply` with `definite` true, as pkg/customize/customize.go
calls it): the value is put at every place the path selects. A path is *definite* up to a step when
every selector before it is a name, a list of names, or a single index; then its last step may add
a new map key. Every other step selects only what exists: an index beyond the end, a key missing
before the last step, or a name applied to a list or a scalar selects nothing. (KubeStellar would
add such a missing intermediate key with a null value; here it selects nothing.) The places are
found in the object as it was before the replacement, so a replacement never selects inside a
value it has just put.

Bounds: finding the places visits at most MAX_VISITS nodes (each `..` and each list of indices
multiplies the work: `$..*..*..*` on a deep object, or `[0,0,0,0]` repeated, would take hours), and
`replace_all` may be told how many places it may fill; beyond either, the path is a PathError. So
is a path of more than MAX_STEPS selectors (each is a level of the search's recursion), an index
of more than MAX_INDEX_DIGITS digits, and a quoted name holding a lone surrogate (an escaped
pair is the one character it spells, as in JavaScript).
"""
from __future__ import annotations

import re
from typing import Any, Iterator, Union

from msgspec import Struct

from .patchdiff import copy_json

__all__ = ["PathError", "Name", "Slice", "Every", "Recurse", "Choice", "Path",
           "parse_path", "format_path", "replace_all"]


MAX_VISITS = 1_000_000
MAX_STEPS = 200  # selectors in one path: each is a level of the search's recursion
MAX_INDEX_DIGITS = 18  # an index beyond any list (and within what int() reads)


class PathError(ValueError):
    """A path that does not parse, or that selects beyond the bounds."""


class _Visits:
    def __init__(self) -> None:
        self.left = MAX_VISITS

    def take(self, count: int = 1) -> None:
        self.left -= count
        if self.left < 0:
            raise PathError(f"the path visits more than {MAX_VISITS:,} places in the object (each '..' and "
                            "each list of indices multiplies them); make it more specific")


class Name(Struct, frozen=True):
    key: str


class Slice(Struct, frozen=True):
    start: int
    stop: int | None
    step: int = 1

    @property
    def single(self) -> bool:
        return self.stop == self.start + 1 and self.step == 1


class Every(Struct, frozen=True):
    pass


class Recurse(Struct, frozen=True):
    pass


class Choice(Struct, frozen=True):
    """`[a, b, ...]`: several names or several indices."""

    items: tuple[Union[Name, Slice], ...]


Selector = Union[Name, Slice, Every, Recurse, Choice]
Path = tuple[Selector, ...]

_PLAIN = re.compile(r"[^.\[\]'\"*,:\s]+")
_DIGITS = re.compile(r"[0-9]+")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


# --- parsing --------------------------------------------------------------------------------

class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, expected: str) -> PathError:
        return PathError(f"invalid path {self.text!r} at offset {self.pos}: expected {expected}")

    def peek(self, ahead: int = 0) -> str:
        i = self.pos + ahead
        return self.text[i] if i < len(self.text) else ""

    def take(self, char: str, expected: str) -> None:
        if self.peek() != char:
            raise self.fail(expected)
        self.pos += 1

    def path(self) -> Path:
        if not self.text.startswith("$"):
            raise PathError(f"invalid path {self.text!r}: must start with '$'")
        self.pos = 1
        steps: list[Selector] = []
        while self.pos < len(self.text):
            steps.extend(self.selector())
            if len(steps) > MAX_STEPS:
                raise PathError(f"invalid path: more than {MAX_STEPS} steps")
        if not steps:
            raise PathError(f"invalid path {self.text!r}: it selects the whole object")
        return tuple(steps)

    def selector(self) -> list[Selector]:
        if self.peek() == "[":
            return [self.bracket()]
        if self.peek() != ".":
            raise self.fail("'.' or '['")
        self.pos += 1
        if self.peek() != ".":
            return [self.dotted()]
        self.pos += 1
        if self.peek() == "":
            raise self.fail("a selector after '..' (a bare '..' would select the whole object)")
        if self.peek() in ".[":
            return [Recurse()]
        return [Recurse(), self.dotted()]

    def dotted(self) -> Selector:
        if self.peek() == "*":
            self.pos += 1
            return Every()
        m = _PLAIN.match(self.text, self.pos)
        if m is None:
            raise self.fail("a name, an index or '*' after '.'")
        self.pos = m.end()
        word = m.group()
        if not _DIGITS.fullmatch(word):
            return Name(word)
        index = self.index(word)
        return Slice(index, index + 1)

    def bracket(self) -> Selector:
        self.take("[", "'['")
        if self.peek() == "*":
            self.pos += 1
            self.take("]", "']'")
            return Every()
        if self.peek() in ("'", '"'):
            return self.names()
        return self.numbers()

    def names(self) -> Selector:
        items: list[Name | Slice] = [Name(self.string())]
        while self.peek() == ",":
            self.pos += 1
            if self.peek() not in ("'", '"'):
                raise self.fail("a quoted name after ','")
            items.append(Name(self.string()))
        self.take("]", "',' or ']'")
        return items[0] if len(items) == 1 else Choice(tuple(items))

    def string(self) -> str:
        quote = self.peek()
        self.pos += 1
        out: list[str] = []
        while True:
            char = self.peek()
            if char == "":
                raise self.fail(f"a closing {quote}")
            self.pos += 1
            if char == quote:
                return self.characters("".join(out))
            out.append(self.escape() if char == "\\" else char)

    def characters(self, name: str) -> str:
        """`name` with each escaped surrogate pair made the one character it spells (as in
        JavaScript); a lone surrogate is no character that a key can hold (nor JSON write)."""
        try:
            return name.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError:
            raise PathError(f"invalid path {self.text!r}: a lone surrogate (\\ud800-\\udfff) is no character") from None

    def escape(self) -> str:
        """The character(s) a JavaScript escape sequence stands for (the backslash is consumed)."""
        char = self.peek()
        self.pos += 1
        if char in _ESCAPES and not (char == "0" and self.peek().isdigit()):
            return _ESCAPES[char]
        if char == "x":
            return chr(self.hex_digits(2))
        if char == "u":
            return self.unicode_escape()
        if char in "\n\u2028\u2029":
            return ""  # a line continuation
        if char == "" or char.isdigit():
            self.pos -= 1
            raise self.fail("an escape sequence (octal escapes are not supported)")
        return char

    def unicode_escape(self) -> str:
        if self.peek() != "{":
            return chr(self.hex_digits(4))
        end = self.text.find("}", self.pos)
        digits = self.text[self.pos + 1:end] if end > 0 else ""
        if not re.fullmatch(r"[0-9a-fA-F]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
            raise self.fail("a code point in \\u{...}")
        self.pos = end + 1
        return chr(int(digits, 16))

    def hex_digits(self, count: int) -> int:
        digits = self.text[self.pos:self.pos + count]
        if not re.fullmatch(f"[0-9a-fA-F]{{{count}}}", digits):
            raise self.fail(f"{count} hexadecimal digits")
        self.pos += count
        return int(digits, 16)

    def integer(self) -> int | None:
        m = _DIGITS.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return self.index(m.group())

    def index(self, digits: str) -> int:
        if len(digits) > MAX_INDEX_DIGITS:
            raise PathError(f"invalid path: an index of more than {MAX_INDEX_DIGITS} digits")
        return int(digits)

    def numbers(self) -> Selector:
        first = self.integer()
        if self.peek() == ":":
            return self.slice(first or 0)
        if first is None:
            raise self.fail("'*', a quoted name, an index or a slice")
        items: list[Name | Slice] = [Slice(first, first + 1)]
        while self.peek() == ",":
            self.pos += 1
            index = self.integer()
            if index is None:
                raise self.fail("an index after ','")
            items.append(Slice(index, index + 1))
        self.take("]", "',' or ']'")
        return items[0] if len(items) == 1 else Choice(tuple(items))

    def slice(self, start: int) -> Selector:
        self.take(":", "':'")
        stop = self.integer()
        step = 1
        if self.peek() == ":":
            self.pos += 1
            given = self.integer()
            if given == 0:
                raise self.fail("a positive step")
            step = 1 if given is None else given
        self.take("]", "']'")
        return Slice(start, stop, step)


def parse_path(text: str) -> Path:
    """Parse a replacement path (see the module doc); PathError when it does not parse."""
    return _Parser(text).path()


# --- formatting -----------------------------------------------------------------------------

def _quote(key: str) -> str:
    return "'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _format(sel: Selector) -> str:
    if isinstance(sel, Name):
        plain = _PLAIN.fullmatch(sel.key) and not _DIGITS.fullmatch(sel.key)
        return f".{sel.key}" if plain else f"[{_quote(sel.key)}]"
    if isinstance(sel, Slice):
        if sel.single:
            return f"[{sel.start}]"
        stop = "" if sel.stop is None else str(sel.stop)
        return f"[{sel.start}:{stop}:{sel.step}]"
    if isinstance(sel, Every):
        return ".*"
    if isinstance(sel, Recurse):
        return ".."
    inner = [_quote(i.key) if isinstance(i, Name) else str(i.start) for i in sel.items]
    return "[" + ",".join(inner) + "]"


def format_path(path: Path) -> str:
    """The canonical text of a parsed path (parse_path gives it back)."""
    return "$" + "".join(_format(sel) for sel in path)


# --- replacement ----------------------------------------------------------------------------

Place = tuple[Any, Any]  # (container, key or index)


def _children(node: Any) -> Iterator[Place]:
    if isinstance(node, dict):
        yield from ((node, k) for k in node)
    elif isinstance(node, list):
        yield from ((node, i) for i in range(len(node)))


def _descendants(node: Any) -> Iterator[Any]:
    """`node` and every node below it, parents first (iterative: objects may nest deeply)."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed([c[k] for c, k in _children(current)]))


def _step(node: Any, sel: Selector, definite: bool) -> Iterator[Place]:
    """The places one selector picks in `node`: (container, key) pairs."""
    if isinstance(sel, Name):
        if isinstance(node, dict) and (definite or sel.key in node):
            yield node, sel.key
    elif isinstance(sel, Slice):
        if isinstance(node, list):
            stop = len(node) if sel.stop is None else min(sel.stop, len(node))
            yield from ((node, i) for i in range(sel.start, stop, sel.step))
    elif isinstance(sel, Every):
        yield from _children(node)
    elif isinstance(sel, Choice):
        for item in sel.items:
            yield from _step(node, item, definite)


def _keeps_definite(sel: Selector) -> bool:
    """Whether the path stays definite after this selector (eval.go's rule)."""
    if isinstance(sel, Name):
        return True
    if isinstance(sel, Slice):
        return sel.single
    if isinstance(sel, Choice):
        return all(_keeps_definite(item) for item in sel.items)
    return False


def _places(node: Any, path: Path, definite: bool, out: list[Place], visits: _Visits) -> None:
    """Append to `out` the places `path` selects below `node`. Only the last step may name a map
    key that does not exist yet, and only while the path is definite."""
    sel, rest = path[0], path[1:]
    visits.take()
    if isinstance(sel, Recurse):
        for below in _descendants(node):
            visits.take()
            if rest:
                _places(below, rest, False, out, visits)
        return
    if not rest:
        found = list(_step(node, sel, definite))
        visits.take(len(found))
        out.extend(found)
        return
    definite = definite and _keeps_definite(sel)
    for container, key in _step(node, sel, False):
        _places(container[key], rest, definite, out, visits)


def replace_all(doc: Any, path: Path, value: Any, max_places: int | None = None) -> int:
    """Put a copy of `value` at every place `path` selects in `doc` (in place, see the module
    doc); returns how many places that was (0: the path selects nothing). More than `max_places`
    places is a PathError, raised before anything is replaced."""
    if not path:
        raise PathError("an empty path would replace the whole object")
    places: list[Place] = []
    _places(doc, path, True, places, _Visits())
    if max_places is not None and len(places) > max_places:
        raise PathError(f"the path selects {len(places):,} places: putting the value at each would grow the "
                        "object beyond its bounds")
    for container, key in places:
        container[key] = copy_json(value)
    return len(places)
