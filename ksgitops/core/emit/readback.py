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
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise Unreadable(path, 1, "not a JSON patch: a list of operations")
    return ops


_PATCH_ERRORS = (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, ValueError,
                 KeyError, IndexError, AttributeError, RecursionError)


def patched(path: str, body: dict[str, Any], ops: list[Any]) -> dict[str, Any]:
    """`body` (the caller's own: changed in place) with the operations of patch file `path`."""
    try:
        found = jsonpatch.apply_patch(body, ops, in_place=True)
    except _PATCH_ERRORS:  # their messages may quote the object: never shown
        raise Unreadable(path, 1, "its operations do not apply to the base copy") from None
    if not isinstance(found, dict):
        raise Unreadable(path, 1, "its operations replace the whole object by something else")
    return found


def rendered(folder: str, rel: str, data: bytes, patch: bytes | None) -> dict[str, Any]:
    """The object `objects/<rel>.yaml` of a mailbox as the WEC receives it (its patch applied);
    `folder` (the mailbox's, "": none) names the files in what is raised."""
    where = f"{folder}/" if folder else ""
    body = read_object(f"{where}objects/{rel}.yaml", data)  # a new object each time: patched in place
    if patch is None:
        return body
    path = f"{where}patches/{rel}.json"
    return patched(path, body, read_patch(path, patch))


def _mapping(path: str, data: bytes) -> dict[str, Any] | None:
    if b"&" in data and b"*" in data and parsed_file(path, data).problems:
        return None  # aliases, maybe a billion laughs: bounded as in the sources, else not read
    try:
        doc = load_yaml(data)
    except Exception:  # noqa: BLE001 - why_yaml says what is wrong
        return None
    return doc if isinstance(doc, dict) else None


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
