"""Where things start in a JSON text orjson has read (it keeps no positions): the document after
leading blank lines, each element of an array, each item of a `List`.

Found by walking the text with the standard library's C scanner, which decodes each element
skipped once: a List's lines cost about one `json.loads` more than orjson's reading, where
composing the text as YAML nodes cost ~100× orjson. A text the walk cannot follow raises
ValueError (callers keep the document's line).
"""
from __future__ import annotations

import json
import re
from typing import Iterable

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def first(text: str, at: int = 0) -> int:
    """The offset of the first character at or after `at` that is not JSON whitespace."""
    return _WS.match(text, at).end()  # type: ignore[union-attr]  # matches the empty string


def elements(text: str, at: int) -> list[int]:
    """Offsets of the elements of the array at offset `at`."""
    try:
        return _array(text, at)[0]
    except (IndexError, RecursionError):
        raise ValueError("not followed") from None


def items(text: str, at: int) -> list[int]:
    """Offsets of the elements of the `items` array of the object at offset `at` (its last
    `items` member, as a reader that lets a later key win takes)."""
    try:
        return _items(text, at)
    except (IndexError, RecursionError):
        raise ValueError("not followed") from None


def _items(text: str, at: int) -> list[int]:
    if text[at] != "{":
        raise ValueError("not an object")
    found: list[int] | None = None
    i = first(text, at + 1)
    if text[i] == "}":
        raise ValueError("no items")
    while True:
        if text[i] != '"':
            raise ValueError("not a key")
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = first(text, i)
        if text[i] != ":":
            raise ValueError("no colon")
        i = first(text, i + 1)
        if key == "items" and text[i] == "[":
            found, i = _array(text, i)
        else:
            i = _DECODER.raw_decode(text, i)[1]
        i = first(text, i)
        if text[i] == "}":
            break
        if text[i] != ",":
            raise ValueError("no comma")
        i = first(text, i + 1)
    if found is None:
        raise ValueError("no items")
    return found


def lines(text: str, offsets: Iterable[int]) -> list[int]:
    """The line of each offset (offsets in increasing order), line breaks counted as YAML's reader
    counts them (a lone CR, NEL and the Unicode separators too), as the lines of values found in
    the composed text are."""
    breaks = [c for c in _OTHER_BREAKS if c in text]
    out, line, done = [], 1, 0
    for at in offsets:
        line += text.count("\n", done, at) + sum(text.count(c, done, at) for c in breaks)
        if breaks and breaks[0] == "\r":
            line -= text.count("\r\n", done, at)
        done = at
        out.append(line)
    return out


def line(text: str, at: int) -> int:
    return lines(text, [at])[0]


_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")  # "\r" first


def _array(text: str, at: int) -> tuple[list[int], int]:
    """(offsets of the elements of the array at `at`, the offset after it)."""
    if text[at] != "[":
        raise ValueError("not an array")
    found: list[int] = []
    i = first(text, at + 1)
    if text[i] == "]":
        return found, i + 1
    while True:
        found.append(i)
        i = first(text, _DECODER.raw_decode(text, i)[1])
        if text[i] == "]":
            return found, i + 1
        if text[i] != ",":
            raise ValueError("no comma")
        i = first(text, i + 1)


__all__ = ["first", "elements", "items", "lines", "line"]
