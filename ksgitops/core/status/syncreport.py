"""What `ksgitops sync` reports about applying a mailbox, and how status judges it. Pure.

**Mailbox revision.** The git id of the tree holding only what a WEC receives from its mailbox:
`kustomization.yaml`, `syncerconfig.yaml`, `objects/` and `patches/` (not `space.yaml`,
`reported/` or `upsynced/`). From a commit it costs four entry lookups (the ids are in the tree);
from files, their git blob ids; both give the same id, so the agent (reading a commit), status over
git and status over a work tree agree, and the revision changes exactly when what the WEC receives
may change.

**Sync report** (`reported/sync.yaml`, schema/syncreport.json), written by the agent each cycle into
its mailbox's reports: the revision it last applied and when, the errors of its last cycle (per
object, or for the whole mailbox when nothing could be applied: the revision then stays the one
applied before), and the objects it found drifted since it applied that revision. Times change only
when the outcome does, so a steady WEC commits nothing. No object data, ever: errors are the API
server's one-line messages (none for Secrets), drift names fields, never values.

**State** per WEC: Unknown (no sync report: nothing applies this mailbox, or only `collect` reads
it), Failed (the last cycle had errors), OutOfSync (the revision applied is not the latest),
Synced.
"""
from __future__ import annotations

import re
from enum import Enum
from typing import Any, Iterable, Mapping, NamedTuple

import orjson
from msgspec import Struct, field
from msgspec.structs import replace

from ...model import Origin, Problem
from .gitobjects import BLOB_MODE, TREE_MODE, blob_id, files_tree_id, tree_id
from .reported import read_document
from ..load.schemas import validate_document

SYNC_FILE = "sync.yaml"  # below reported/: never an object's report (those are four folders deep)
API_VERSION = "ksgitops.kubestellar.io/v1alpha1"
KIND = "SyncReport"
SCHEMA = "syncreport.json"
REVISION_FILES = ("kustomization.yaml", "syncerconfig.yaml")
REVISION_FOLDERS = ("objects", "patches")
FIELD_LIMIT = 20  # drifted fields named per object; the rest are counted


class SyncState(str, Enum):
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


# --- the revision ----------------------------------------------------------------------------------

def revision_of(ids: Mapping[str, str]) -> str:
    """The revision from the ids (hex) of a mailbox's entries by name; absent ones ("") left out."""
    entries = [(name, BLOB_MODE, ids[name]) for name in REVISION_FILES if ids.get(name)]
    entries += [(name, TREE_MODE, ids[name]) for name in REVISION_FOLDERS if ids.get(name)]
    return tree_id(entries)


def mailbox_revision(files: Mapping[str, Any]) -> str:
    """The revision of a mailbox given as nested files ({name: bytes | {...}})."""
    ids = {}
    for name in REVISION_FILES:
        value = files.get(name)
        ids[name] = blob_id(value) if isinstance(value, bytes) else ""
    for name in REVISION_FOLDERS:
        value = files.get(name)
        ids[name] = files_tree_id(value) if isinstance(value, Mapping) else ""
    return revision_of(ids)


# --- the report --------------------------------------------------------------------------------------

class ObjectId(NamedTuple):
    api_version: str
    kind: str
    namespace: str
    name: str

    def as_json(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out

    def __str__(self) -> str:
        group = self.api_version.rpartition("/")[0]
        kind = f"{self.kind}.{group}" if group else self.kind
        return f"{kind} {self.namespace}/{self.name}" if self.namespace else f"{kind} {self.name}"


class SyncError(Struct, frozen=True, order=True):
    path: str  # "" for the whole mailbox
    message: str
    obj: ObjectId | None = None
    since: str = ""


class Drift(Struct, frozen=True, order=True):
    path: str
    obj: ObjectId
    change: str  # Modified | Deleted
    fields: tuple[str, ...] = ()
    detected_at: str = ""


class SyncReport(Struct, frozen=True):
    mailbox: str
    revision: str = ""
    commit: str = ""
    applied_at: str = ""
    errors: tuple[SyncError, ...] = ()
    drifted: tuple[Drift, ...] = field(default=())

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": self.mailbox}}
        for key, value in (("revision", self.revision), ("commit", self.commit), ("appliedAt", self.applied_at)):
            if value:
                doc[key] = value
        if self.errors:
            doc["errors"] = [_error_doc(e) for e in self.errors]
        if self.drifted:
            doc["drifted"] = [_drift_doc(d) for d in self.drifted]
        return doc


def _error_doc(error: SyncError) -> dict[str, Any]:
    doc: dict[str, Any] = {"message": error.message}
    if error.path:
        doc["path"] = error.path
    if error.obj is not None:
        doc["object"] = error.obj.as_json()
    if error.since:
        doc["since"] = error.since
    return doc


def _drift_doc(drift: Drift) -> dict[str, Any]:
    doc: dict[str, Any] = {"path": drift.path, "object": drift.obj.as_json(), "change": drift.change,
                           "detectedAt": drift.detected_at}
    if drift.fields:
        doc["fields"] = list(drift.fields)
    return doc


def dump_sync_report(report: SyncReport) -> bytes:
    """JSON (which is YAML), indented, keys sorted: like the transports' object reports."""
    return orjson.dumps(report.to_doc(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def parse_sync_report(path: str, data: bytes) -> SyncReport | list[Problem]:
    """A sync report file, or the warnings that say why it is not used (the WEC counts as Unknown)."""
    doc = read_document(data)
    origin = Origin(path, 1)
    if doc is None:
        return [Problem(origin, "sync report: not one YAML or JSON mapping, ignored", "warning")]
    found = validate_document(SCHEMA, doc, origin, "sync report")
    if found:
        return [Problem(p.origin, f"{p.message}, ignored", "warning") for p in found]
    return SyncReport(
        str(doc["metadata"]["name"]), str(doc.get("revision", "")), str(doc.get("commit", "")),
        str(doc.get("appliedAt", "")),
        tuple(sorted(SyncError(str(e.get("path", "")), str(e["message"]), _object(e.get("object")),
                               str(e.get("since", ""))) for e in doc.get("errors") or [])),
        tuple(sorted(Drift(str(d["path"]), _object(d["object"]) or ObjectId("", "", "", ""), str(d["change"]),
                           tuple(str(f) for f in d.get("fields") or []), str(d["detectedAt"]))
                     for d in doc.get("drifted") or [])))


def _object(doc: Any) -> ObjectId | None:
    if not isinstance(doc, dict):
        return None
    return ObjectId(str(doc["apiVersion"]), str(doc["kind"]), str(doc.get("namespace") or ""), str(doc["name"]))


def sync_state(report: SyncReport | None, latest: str) -> SyncState:
    if report is None:
        return SyncState.UNKNOWN
    if report.failed:
        return SyncState.FAILED
    return SyncState.SYNCED if report.revision == latest else SyncState.OUT_OF_SYNC


# --- building the next report (the agent) -------------------------------------------------------------

def applied_report(previous: SyncReport | None, mailbox: str, revision: str, commit: str, now: str,
                   errors: Iterable[SyncError], drifted: Iterable[Drift], present: set[str]) -> SyncReport:
    """The report after a cycle that applied `revision`: drift found earlier for the same revision
    stays listed (objects still in the mailbox), times and the commit stay while the outcome does."""
    errors = _keep_since(previous, sorted(errors), now)
    found = {d.path: d for d in previous.drifted if d.path in present} \
        if previous is not None and previous.revision == revision else {}
    found.update({d.path: d for d in drifted})
    same = previous is not None and previous.revision == revision and \
        [(e.path, e.message) for e in previous.errors] == [(e.path, e.message) for e in errors]
    if same:
        assert previous is not None
        commit, now = previous.commit, previous.applied_at
    return SyncReport(mailbox, revision, commit, now, tuple(errors), tuple(sorted(found.values())))


def failed_report(previous: SyncReport | None, mailbox: str, message: str, now: str) -> SyncReport:
    """The report after a cycle that could apply nothing: what was applied before, and why not now."""
    base = previous if previous is not None else SyncReport(mailbox)
    return replace(base, errors=tuple(_keep_since(previous, [SyncError("", message)], now)))


def _keep_since(previous: SyncReport | None, errors: list[SyncError], now: str) -> list[SyncError]:
    before = {(e.path, e.message): e.since for e in previous.errors} if previous is not None else {}
    return [replace(e, since=before.get((e.path, e.message)) or now) for e in errors]


def steady_objects(previous: SyncReport | None, revision: str, old: Mapping[str, Any] | None,
                   new: Mapping[str, Any], rels: Iterable[str]) -> set[str]:
    """The objects (mailbox rels) the agent receives as it last applied them: any difference on the
    WEC is then drift. `old` holds the mailbox files of the revision last applied (None: unknown);
    objects whose last apply failed are left out (the WEC may hold an older version)."""
    if previous is None or not previous.revision:
        return set()
    failed = {e.path for e in previous.errors if e.path}
    if previous.revision == revision:
        return {rel for rel in rels if rel not in failed}
    if old is None:
        return set()
    return {rel for rel in rels if rel not in failed and _file(old, "objects", f"{rel}.yaml") is not None
            and all(_file(old, part, f"{rel}{ext}") == _file(new, part, f"{rel}{ext}")
                    for part, ext in (("objects", ".yaml"), ("patches", ".json")))}


def _file(files: Mapping[str, Any], *path: str) -> bytes | None:
    node: Any = files
    for part in "/".join(path).split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node if isinstance(node, bytes) else None


# --- drift: which fields differ -----------------------------------------------------------------------

# Set by the API server, or absent from LIST items (apiVersion, kind): never the agent's fields.
_IGNORED = {("apiVersion",), ("kind",), ("metadata", "managedFields"), ("metadata", "resourceVersion"),
            ("metadata", "generation"), ("status",)}
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")


def changed_fields(before: Any, after: Any, limit: int = FIELD_LIMIT) -> list[str]:
    """Paths (`spec.replicas`, `data["index.html"]`, `spec.containers[0].image`) where two versions
    of an object differ, server-maintained fields left out; at most `limit`, then "... and N more".
    Paths only: never a value."""
    found: list[str] = []
    _diff(before, after, (), found)
    found.sort()
    if len(found) > limit:
        found[limit:] = [f"... and {len(found) - limit} more"]
    return found


def _diff(a: Any, b: Any, path: tuple[Any, ...], out: list[str]) -> None:
    if path in _IGNORED:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in set(a) | set(b):
            if key not in a or key not in b:
                if (*path, key) not in _IGNORED:
                    out.append(_text((*path, key)))
            else:
                _diff(a[key], b[key], (*path, key), out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, (*path, i), out)
    elif a != b or type(a) is not type(b):
        out.append(_text(path))


def _text(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN.match(str(part)):
            text += f".{part}" if text else str(part)
        else:
            text += "[" + orjson.dumps(str(part)).decode() + "]"
    return text or "(the object)"


__all__ = ["SYNC_FILE", "SyncState", "SyncReport", "SyncError", "Drift", "ObjectId", "revision_of",
           "mailbox_revision", "dump_sync_report", "parse_sync_report", "sync_state", "applied_report",
           "failed_report", "steady_objects", "changed_fields"]
