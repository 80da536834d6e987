"""Generated mailbox files read back (render, diff, status): a base copy, its patch, the SyncerConfig.

They are reconcile's own output, but they sit in git, where a hand edit or a merge that left its
`<<<<<<<` markers may put anything in them. What does not read as what reconcile writes raises
`Unreadable`: an error at the file's line saying what is wrong, never quoting the file (a base
copy may be a Secret's). Reading takes the fast path; only a failure is looked at again, to say why.
"""
from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer
import orjson

from ...model import KsgitopsError, Origin, Problem, Severity
from ..load import jsonlines
from ..load.unreadable import common_trouble, parsed_file, unquoted, why_yaml
from ..serialize import load_yaml

REWRITE = "a generated file: `ksgitops reconcile` writes it anew, unless an error keeps it as it stands"


class Unreadable(KsgitopsError):
    """A generated file that does not read as what reconcile writes there (exit 2)."""

    def __init__(self, path: str, line: int, what: str) -> None:
        self.path, self.line, self.what = path, line, what
        super().__init__(self.problem())

    def __reduce__(self) -> tuple[Any, ...]:
        return Unreadable, (self.path, self.line, self.what)

    def problem(self, path: str | None = None, severity: Severity = "error") -> Problem:
        """The finding, at `path` when the file was read under another name (status reads blobs)."""
        return Problem(Origin(path or self.path, self.line), f"{self.what} ({REWRITE})", severity)


def failure_text(exc: BaseException) -> str:
    """What a failed rendering says of its cause: where and why for a file that does not read,
    else the error's type (never a file's text: it may be a Secret's)."""
    return f"{exc.path}:{exc.line}: {exc.what}" if isinstance(exc, Unreadable) else type(exc).__name__


def read_object(path: str, data: bytes) -> dict[str, Any]:
    """A base copy: one mapping with an apiVersion, a kind and metadata, as reconcile writes it."""
    doc = _mapping(path, data)
    if doc is not None and isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str) \
            and isinstance(doc.get("metadata"), dict):
        return doc
    if doc is not None:
        raise Unreadable(path, 1, "not an object: apiVersion, kind or metadata missing or of the wrong type")
    raise Unreadable(path, *why_yaml(path, data))


def read_mapping(path: str, data: bytes) -> dict[str, Any]:
    """A generated YAML file of one mapping (the SyncerConfig)."""
    doc = _mapping(path, data)
    if doc is None:
        raise Unreadable(path, *why_yaml(path, data))
    return doc


def read_patch(path: str, data: bytes) -> list[Any]:
    """A patch file: an RFC 6902 JSON list of operations."""
    try:
        ops = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise Unreadable(path, *_why_json(data, e)) from None
    if not isinstance(ops, list):
        raise Unreadable(path, _op_line(data, None), "not a JSON patch: a list of operations")
    for at, op in enumerate(ops):
        if not isinstance(op, dict):
            raise Unreadable(path, _op_line(data, at), f"not a JSON patch: item {at + 1} is no operation")
    return ops


_PATCH_ERRORS = (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError,
                 KeyError, IndexError, AttributeError, RecursionError)
_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})


def patched(path: str, body: dict[str, Any], ops: list[Any], data: bytes) -> dict[str, Any]:
    """`body` (the caller's own: changed in place) with the operations of patch file `path`, read
    from `data` (where a failing operation is found). One operation at a time, to tell which fails:
    as fast as one call for all (jsonpatch applies them one by one)."""
    at, turned = 0, None
    try:
        for at, op in enumerate(ops):
            found = jsonpatch.apply_patch(body, [op], in_place=True)
            if not isinstance(found, dict) and isinstance(body, dict):
                turned = at
            body = found
    except _PATCH_ERRORS:  # their messages may quote the object: never shown
        raise Unreadable(path, _op_line(data, at), f"{_operation(ops, at)} does not apply to the base copy") from None
    if not isinstance(body, dict):
        at = turned if turned is not None else len(ops) - 1
        raise Unreadable(path, _op_line(data, at), f"{_operation(ops, at)} replaces the whole object by something else")
    return body


def rendered(folder: str, rel: str, data: bytes, patch: bytes | None) -> dict[str, Any]:
    """The object `objects/<rel>.yaml` of a mailbox as the WEC receives it (its patch applied);
    `folder` (the mailbox's, "": none) names the files in what is raised."""
    where = f"{folder}/" if folder else ""
    body = read_object(f"{where}objects/{rel}.yaml", data)  # a new object each time: patched in place
    if patch is None:
        return body
    path = f"{where}patches/{rel}.json"
    return patched(path, body, read_patch(path, patch), patch)


def _mapping(path: str, data: bytes) -> dict[str, Any] | None:
    if b"&" in data and b"*" in data and parsed_file(path, data).problems:
        return None  # aliases, maybe a billion laughs: bounded as in the sources, else not read
    try:
        doc = load_yaml(data)
    except Exception:  # noqa: BLE001 - why_yaml says what is wrong
        return None
    return doc if isinstance(doc, dict) else None


def _operation(ops: list[Any], at: int) -> str:
    """`operation 2 of 3 (remove)`: which one, never a path or a value (they may name a Secret's)."""
    name = ops[at].get("op") if isinstance(ops[at], dict) else None
    return f"operation {at + 1} of {len(ops)}" + (f" ({name})" if name in _OPS else "")


def _op_line(data: bytes, at: int | None) -> int:
    """The line of operation `at` of a patch file (None: the line its document starts at); 1 when
    the text cannot be followed. Read again, only for a patch that fails."""
    text = data.decode("utf-8", "replace")
    start = jsonlines.first(text)
    if at is None:
        return jsonlines.line(text, start)
    try:
        return jsonlines.line(text, jsonlines.elements(text, start)[at])
    except (ValueError, IndexError):
        return 1


def _why_json(data: bytes, error: orjson.JSONDecodeError) -> tuple[int, str]:
    found = common_trouble(data)
    if found:
        return found
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return data[: e.start].count(b"\n") + 1, "file is not valid UTF-8"
    return int(getattr(error, "lineno", 0) or 1), f"malformed JSON: {unquoted(error.msg)}"


__all__ = ["REWRITE", "Unreadable", "read_object", "read_mapping", "read_patch", "patched", "rendered"]
