"""Reading a mailbox's `reported/` folder: reported-state documents (docs/REFERENCE.md,
"Reported state"), checked, never fatal.

A transport writes `reported/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml` with
`{object: {apiVersion, kind, namespace, name, generation}, status: {...}, reportedAt}`
(schema/reported.json). Whatever is wrong with one file (bad YAML, wrong shape, a path that does not
name an object, an identity that disagrees with the path) is a warning at `file:line`, and that
file is skipped: a broken report must never stop the summary of the others. Pure: no I/O.
"""
from __future__ import annotations

import re
from typing import Any

import orjson

from ...model import Origin, Problem
from ...names import rel_path
from ..load.parse import ParsedFile, parse_file, parse_json, plain_json
from ..load.schemas import validate_reported

REPORT_SUFFIXES = (".yaml", ".yml", ".json")



def parse_report(name: str, path: str, data: bytes) -> tuple[str, Origin, dict[str, Any]] | list[Problem]:
    """One report file: (rel, origin, document), or the warnings that say why it is skipped."""
    rel, error = _rel(name)
    if error:
        return [_warn(Origin(path), error)]
    parsed = _parse(path, data)
    if parsed.problems:
        return [_warn(p.origin, p.message) for p in parsed.problems]
    if len(parsed.docs) != 1:
        line = parsed.docs[1][0] if parsed.docs else 0
        return [_warn(Origin(path, line), f"reported state: a report file holds exactly one "
                                          f"document, found {len(parsed.docs)}")]
    line, doc = parsed.docs[0]
    origin = Origin(path, line)
    found = [] if _plainly_valid(doc) else validate_reported(doc, origin)
    if not found:
        mismatch = _identity_mismatch(rel, doc)
        found = [Problem(origin, f"reported state: {mismatch}")] if mismatch else []
    if found:
        return [_warn(p.origin, p.message) for p in found]
    return rel, origin, doc


def dump_report(doc: dict[str, Any]) -> bytes:
    """How ksgitops' transports write a report: JSON (which is YAML), indented, keys sorted. Any
    YAML is accepted; JSON is what summarizing 200k reports quickly needs (orjson, ~1 µs)."""
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def load_report(data: bytes) -> dict[str, Any]:
    """The document of a report already checked valid by `parse_report`."""
    return _parse("reported", data).docs[0][1]


def read_document(data: bytes) -> dict[str, Any] | None:
    """The one document of a report file, unchecked; None when it is not one mapping."""
    parsed = _parse("reported", data)
    return parsed.docs[0][1] if not parsed.problems and len(parsed.docs) == 1 else None


def _parse(path: str, data: bytes) -> ParsedFile:
    """JSON first when the text looks like it (the transports' format), else YAML."""
    plain = plain_json(data)
    if plain is not None:
        return ParsedFile(((1, plain),), ())
    if data[:1] == b"{":
        parsed = parse_json(path, data)
        if not parsed.problems:
            return parsed
    return parse_file(path, data)


_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z")
_IDENTITY = {"apiVersion", "kind", "namespace", "name", "generation"}
_REPORT = {"object", "status", "reportedAt"}


def _plainly_valid(doc: Any) -> bool:
    """A fast check that accepts only what schema/reported.json accepts; when it says no, the
    schema runs and says why (so the messages are the schema's). Exact types: parsed JSON and
    YAML hold no subclasses (anything else goes to the schema)."""
    if type(doc) is not dict or not doc.keys() <= _REPORT:
        return False
    identity, at = doc.get("object"), doc.get("reportedAt")
    if type(identity) is not dict or type(at) is not str or not identity.keys() <= _IDENTITY:
        return False
    api_version, kind, name = identity.get("apiVersion"), identity.get("kind"), identity.get("name")
    if type(api_version) is not str or type(kind) is not str or type(name) is not str or \
            not (api_version and kind and name):
        return False
    if "namespace" in identity and type(identity["namespace"]) is not str:
        return False
    generation = identity.get("generation", 0)
    if type(generation) is not int or generation < 0:
        return False
    return ("status" not in doc or type(doc["status"]) is dict) and _TIME.match(at) is not None


def _rel(name: str) -> tuple[str, str]:
    if not name.endswith(REPORT_SUFFIXES):
        return "", "reported state: not a .yaml, .yml or .json file, skipped"
    rel = name.rsplit(".", 1)[0]
    parts = rel.split("/")
    if len(parts) != 4 or not all(parts):
        return "", ("reported state: the path must be <group|core>/<resource>/<namespace|_cluster>/<name>"
                    " below reported/, skipped")
    return rel, ""


def _identity_mismatch(rel: str, doc: dict[str, Any]) -> str:
    """The report's object must be the one its path names (namespace and name; the path's group
    must be the apiVersion's)."""
    group, resource, namespace, name = rel.split("/")
    identity = doc["object"]
    api_group = str(identity["apiVersion"]).rpartition("/")[0]
    expected = rel_path(api_group, resource, str(identity.get("namespace") or ""), str(identity["name"]))
    if expected != rel:
        return "object does not match the file's path (group, namespace and name must agree), skipped"
    return ""


def _warn(origin: Origin, message: str) -> Problem:
    return Problem(origin, message, "warning")


__all__ = ["parse_report", "dump_report", "load_report", "read_document"]
