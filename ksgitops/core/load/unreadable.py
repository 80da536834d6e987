"""Why a generated YAML file does not read: `(line, what is wrong)`, never quoting the file (a base
copy may be a Secret's). Shared by the rooms that read generated files back: place (placement
records) and emit (mailbox files, readback.py)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .parse import ParsedFile

_CONFLICT = re.compile(rb"^(<<<<<<<|>>>>>>>)( |$)", re.MULTILINE)
_QUOTED = re.compile(r"""\s*('[^']*'|"[^"]*")""")
_WORDY = re.compile(r"[^\W_]")


def why_yaml(path: str, data: bytes) -> tuple[int, str]:
    """(line, what is wrong) of a YAML file that is not one mapping."""
    found = common_trouble(data)
    if found:
        return found
    parsed = parsed_file(path, data)
    if parsed.problems:
        first = parsed.problems[0]
        return first.origin.line, unquoted(first.message)
    if len(parsed.docs) > 1:
        return parsed.docs[1][0], f"{len(parsed.docs)} documents where reconcile writes one"
    return 1, "not one YAML mapping, as reconcile writes it"


def parsed_file(path: str, data: bytes) -> ParsedFile:
    """parse.py's reading, with its checks and located findings. Imported here: ~9 ms of the
    start-up of every command rendering a mailbox (the sync agent's), for files that rarely need it."""
    from .parse import parse_file
    return parse_file(path, data)


def unquoted(message: str) -> str:
    """A parser's message without what it quotes of the file (a Secret's, maybe); quoted syntax
    (`expected ',' or ']'`) stays."""
    return _QUOTED.sub(lambda m: "" if _WORDY.search(m.group(1)) else m.group(0), message)


def common_trouble(data: bytes) -> tuple[int, str] | None:
    """What is wrong with a file of any format: nothing in it, or a merge's conflict markers."""
    if not data.strip():
        return 1, "the file is empty"
    marker = _CONFLICT.search(data)
    if marker:
        return data[: marker.start()].count(b"\n") + 1, "a merge left its conflict markers (`<<<<<<<`, `>>>>>>>`) in it"
    return None


__all__ = ["why_yaml", "parsed_file", "unquoted", "common_trouble"]
