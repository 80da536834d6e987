"""Reading a mailbox's `reported/` folder: reported-state documents (docs/REFERENCE.md,
"Reported state"), checked, never fatal.

A transport writes `reported/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml` with
`{object: {apiVersion, kind, namespace, name, generation}, status: {...}, reportedAt}`
(schema/reported.json). Whatever is wrong with one file (bad YAML, wrong shape, a path that does not
name an object, an identity that disagrees with the path) is a warning at `file:line`, and that
file is not judged (`unread_message`: what its object's row says instead): a broken report must
never stop the summary of the others. Pure: no I/O.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, NamedTuple

import orjson

from ...model import Origin, Problem
from ...names import rel_path
from ..load.parse import ParsedFile, parse_file, parse_json, plain_json
from ..load.schemas import validate_reported

REPORT_SUFFIXES = (".yaml", ".yml", ".json")



def parse_report(name: str, path: str, data: bytes) -> tuple[str, Origin, dict[str, Any]] | list[Problem]:
    """One report file: (rel, origin, document), or the warnings that say why it is skipped."""
    return _checked(name, path, data)[0]


def _checked(name: str, path: str, data: bytes
             ) -> tuple[tuple[str, Origin, dict[str, Any]] | list[Problem], bool]:
    """parse_report's answer, and whether it came the plain way: JSON read by orjson, valid
    without the schema's help (so the answer follows from the bytes alone, ReportReader)."""
    rel, error = _rel(name)
    if error:
        return [_warn(Origin(path), error)], False
    plain = plain_json(data)
    parsed = ParsedFile(((1, plain),), ()) if plain is not None else _parse_further(path, data)
    if parsed.problems:
        return _warnings(rel, parsed.problems), False
    if len(parsed.docs) != 1:
        line = parsed.docs[1][0] if parsed.docs else 0
        return [_warn(Origin(path, line), f"reported state: a report file holds exactly one "
                                          f"document, found {len(parsed.docs)}")], False
    line, doc = parsed.docs[0]
    origin = Origin(path, line)
    plainly = _plainly_valid(doc)
    found = [] if plainly else validate_reported(doc, origin)
    if not found:
        mismatch = _identity_mismatch(rel, doc)
        found = [Problem(origin, f"reported state: {mismatch}")] if mismatch else []
    if found:
        return _warnings(rel, found), False
    return (rel, origin, doc), plain is not None and plainly


class Checked(NamedTuple):
    """A valid report: the object it reports on (`rel`), its document, and its shape: reports of
    one shape (>= 0) differ in `reportedAt` only; -1: a shape of its own."""

    rel: str
    doc: dict[str, Any]
    shape: int


class ReportReader:
    """parse_report, once per shape: a WEC's agent reports an object as every other WEC's does,
    but at another time (166k reports of a fleet held 249 shapes), so a report whose bytes equal
    an earlier valid one's but for the `reportedAt` value is that report at another time.

    The bytes say it without parsing when the report is JSON without a backslash (no escapes, so
    the one `"reportedAt"` in it is the top-level key, its value the text between the quotes)
    and both values are times `_plainly_valid` accepts with no long digit runs (so plain_json
    reads both alike). Shapes kept are bounded (`most`): a fleet whose reports all differ costs
    a lookup per report, not their documents held."""

    def __init__(self, most: int = 4096) -> None:
        self._shapes: dict[tuple[str, bytes], tuple[str, dict[str, Any], int]] = {}
        self._times: dict[bytes, str] = {}
        self._most = most
        self._made = 0

    def _masked(self, data: bytes) -> tuple[bytes, str] | None:
        if len(self._times) >= self._most:
            self._times.clear()
        return _masked(data, self._times)

    def read(self, name: str, path: str, data: bytes) -> Checked | list[Problem]:
        masked = self._masked(data)
        if masked is not None:
            known = self._shapes.get((name, masked[0]))
            if known is not None:
                return Checked(known[0], {**known[1], "reportedAt": masked[1]}, known[2])
        found, plain = _checked(name, path, data)
        if isinstance(found, list):
            return found
        rel, _, doc = found
        if masked is None or not plain:
            return Checked(rel, doc, -1)
        if len(self._shapes) >= self._most:
            self._shapes.clear()
        shape = self._made
        self._made += 1
        self._shapes[(name, masked[0])] = (rel, doc, shape)
        return Checked(rel, doc, shape)


_AT_KEY = b'"reportedAt"'
_AT_FIELD = b'"reportedAt": "'
_PLAIN_TIME = re.compile(rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})")


def _masked(data: bytes, times: dict[bytes, str]) -> tuple[bytes, str] | None:
    """(the bytes without the reportedAt value, that value) when ReportReader may tell a report's
    shape from its bytes; None when it may not. `times`: values seen valid (an agent reports many
    objects at one time), bounded by the caller."""
    start = data.find(_AT_FIELD)
    if start < 0 or data[:1] != b"{" or b"\\" in data or data.count(_AT_KEY) != 1:
        return None
    begin = start + len(_AT_FIELD)
    end = data.find(b'"', begin)
    if end < 0:
        return None
    value = data[begin:end]
    time = times.get(value)
    if time is None:
        if _PLAIN_TIME.fullmatch(value) is None:
            return None
        time = times[value] = value.decode("ascii")
    return data[:begin] + data[end:], time


def report_rel(name: str) -> str:
    """The object a report file stands for by its path below reported/ ("" when the path names none)."""
    return _rel(name)[0]


UNREAD = "the WEC's report does not read"
_GOT = re.compile(r" \(got .*\Z", re.S)  # a schema message's quote of the value it got
_QUOTED = re.compile(r"""\s*(?:'[^'\n]*'|"[^"\n]*")""")  # a parser's quote of the text it met


def unread_message(name: str, problems: list[Problem]) -> str:
    """A row's message for the object whose report `name` (below reported/) does not read, from
    the warnings that say why: where (the mailbox's `reported/` file and line) and the first reason,
    without the values it quotes (a Secret's report may hold anything)."""
    first = min(problems, key=lambda p: (p.origin.line, p.message))
    what = _unquoted(first.message.removeprefix("reported state: ").removesuffix(", skipped"))
    where = f"reported/{name}" + (f":{first.origin.line}" if first.origin.line else "")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{UNREAD}: {where}: {what}{more}"


def _unquoted(message: str) -> str:
    """`message` without the values it quotes."""
    return _QUOTED.sub(_one_character, _GOT.sub("", message))


def _one_character(quote: re.Match[str]) -> str:
    """A quote of one character stays (`expected ',' or ']'`): only syntax, never a value."""
    return quote[0] if len(quote[0].strip()) <= 3 else ""


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
    return ParsedFile(((1, plain),), ()) if plain is not None else _parse_further(path, data)


def _parse_further(path: str, data: bytes) -> ParsedFile:
    """_parse for what plain_json could not read."""
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


def _warnings(rel: str, problems: Iterable[Problem]) -> list[Problem]:
    """`problems` of the report on `rel` as warnings; a Secret's report (its path names one) has
    none of the values it holds quoted, as its object's row does not (`unread_message`)."""
    secret = rel.startswith("core/secrets/")
    return [_warn(p.origin, _unquoted(p.message) if secret else p.message) for p in problems]


__all__ = ["parse_report", "report_rel", "unread_message", "UNREAD", "dump_report", "load_report", "read_document",
           "Checked", "ReportReader"]
