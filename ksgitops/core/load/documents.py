"""A multi-document YAML file read document by document, so that reading it again after an edit
parses and converts only the documents whose text changed (one Location edited in a file of a
hundred WECs: one document of two hundred).

The file is cut where a line starts with `---` (a document start: YAML lets nothing else begin
with it at the first column) into pieces read on their own: YAML documents share nothing (an
alias names an anchor of its own document; the composer forgets anchors between documents). A
piece whose text was in the file's last reading (`before`) takes that reading's documents and
problems, their lines moved to where the piece now starts. Whatever could make the pieces read
differently from the whole sends the file through `read_source` whole, which says where and why:
a directive line (`%`), a piece that fails to parse, a lone `\\r`, NEL or Unicode line separator
(libyaml counts them as line breaks), a byte order mark past the start, a file too large, not
UTF-8 or nested too deep.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from msgspec.structs import replace

from ...model import Origin, Problem
from .convert import FindingsMemo, converted, read_source
from .parse import MAX_FILE_BYTES, ParsedFile, nesting_error, parse_yaml_documents

_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|\Z)", re.MULTILINE)
_LONE_CR = re.compile(r"\r(?!\n)")

Piece = tuple[tuple[tuple[int, dict[str, Any]], ...], tuple[Problem, ...], tuple[Problem, ...]]


def read_by_document(path: str, data: bytes, memo: FindingsMemo | None = None,
                     before: ParsedFile | None = None) -> ParsedFile:
    """read_source's reading of `data`, made of its documents' (`pieces` set when it has several)."""
    cut = _cut(path, data)
    if cut is None:
        return read_source(path, data, memo)
    known = _pieces_of(before)
    docs: list[tuple[int, dict[str, Any]]] = []
    parse_problems: list[Problem] = []
    convert_problems: list[Problem] = []
    index = []
    for start, text in cut:
        digest = hashlib.blake2b(text.encode(), digest_size=16).digest()
        piece = known.get(digest) or _read_piece(path, text, memo)
        if piece is None:
            return read_source(path, data, memo)
        piece_docs, piece_parse, piece_convert = piece
        docs.extend((line + start - 1, body) for line, body in piece_docs)
        parse_problems.extend(_moved(piece_parse, start - 1, path))
        convert_problems.extend(_moved(piece_convert, start - 1, path))
        index.append((digest, start, len(piece_docs), len(piece_parse), len(piece_convert)))
    return ParsedFile(tuple(docs), tuple(parse_problems + convert_problems), tuple(index))


def _cut(path: str, data: bytes) -> list[tuple[int, str]] | None:
    """(first line, text) of each piece; None: read the file whole."""
    if path.endswith(".json") or len(data) > MAX_FILE_BYTES or b"\n---" not in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _reads_differently_in_pieces(text) or nesting_error(text):
        return None
    offsets = [m.start() for m in _DOCUMENT_START.finditer(text) if m.start()]
    if not offsets:
        return None
    pieces, line, at = [], 1, 0
    for offset in offsets + [len(text)]:
        piece = text[at:offset]
        pieces.append((line, piece))
        line += piece.count("\n")
        at = offset
    return pieces


def _reads_differently_in_pieces(text: str) -> bool:
    """A directive line, a lone `\r`, NEL or a Unicode line separator, or a byte order mark past
    the start. Substring searches, each at memchr's speed: one regex of all of them scanned a
    fleet's inventory file (47 KB) in 3 ms, most of the reading of a file where one Location was relabelled."""
    return (text.startswith("%") or "\n%" in text or ("\r" in text and _LONE_CR.search(text) is not None)
            or "\x85" in text or "\u2028" in text or "\u2029" in text or text.find("\ufeff", 1) != -1)


def _read_piece(path: str, text: str, memo: FindingsMemo | None) -> Piece | None:
    parsed = parse_yaml_documents(path, text, "&" in text)
    if parsed.problems and not parsed.docs:
        return None  # fatal: the whole file's reading tells where
    return parsed.docs, parsed.problems, converted(path, parsed.docs, memo)


def _pieces_of(before: ParsedFile | None) -> dict[bytes, Piece]:
    """The pieces of the file's last reading, with lines counted from each piece's start."""
    if before is None or not before.pieces:
        return {}
    known: dict[bytes, Piece] = {}
    doc_at, parse_at = 0, 0
    convert_at = sum(piece[3] for piece in before.pieces)
    for digest, start, n_docs, n_parse, n_convert in before.pieces:
        back = 1 - start
        known.setdefault(digest, (
            tuple((line + back, body) for line, body in before.docs[doc_at:doc_at + n_docs]),
            _moved(before.problems[parse_at:parse_at + n_parse], back),
            _moved(before.problems[convert_at:convert_at + n_convert], back)))
        doc_at, parse_at, convert_at = doc_at + n_docs, parse_at + n_parse, convert_at + n_convert
    return known


def _moved(problems: Any, by: int, path: str | None = None) -> tuple[Problem, ...]:
    """`problems` with their lines moved `by`, anchored at `path` (the same bytes may have been read
    at another path before)."""
    moved = []
    for p in problems:
        line = p.origin.line + by if p.origin.line else 0
        moved.append(replace(p, origin=Origin(path or p.origin.path, line)))
    return tuple(moved)
