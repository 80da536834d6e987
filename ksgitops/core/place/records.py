"""Placement records: what each EdgePlacement put into the mailboxes at the last good state.

Reconcile writes one `spaces/<wds>/.ksgitops/placements/<placement>.yaml` (kind PlacementRecord,
schema/placementrecord.json) next to the placement's SinglePlacementSlice whenever the WDS is
healthy: the mailbox-relative path and identity of every object the placement placed
(CustomResourceDefinitions that came along included), its upsync sets,
`wantSingletonReportedState` and `statusCollectors`. One line per placed object, never per WEC:
the SinglePlacementSlice names the destinations. When the WDS is frozen (isolation.py), the
records say which files of each mailbox are its last good contribution.

Records are read back only for a frozen WDS. They sit in git where anyone may edit them: a
record that does not read back cleanly (or a path that is not a mailbox path) keeps every mailbox
its SinglePlacementSlice reaches whole, as no record does, and `record_trouble` says where and why.
"""
from __future__ import annotations

import re
from typing import Any

from msgspec import Struct, field

from ...kinds import KindTable
from ...names import file_stem
from ...names import rel_path
from ..load.unreadable import why_yaml
from ..serialize import dump_yaml, load_yaml, yaml_str
from .what import ALONG
from ...names import mailbox_name

RECORDS_DIR = "placements"
SPS_DIR = "singleplacementslices"
API_VERSION = "ksgitops.kubestellar.io/v1alpha1"
KIND = "PlacementRecord"
_PART = re.compile(r"[A-Za-z0-9._~-]+")


class Recorded(Struct, frozen=True):
    """One placed object: its mailbox path (`objects/<rel>.yaml`), its identity's text, and
    whether it is a CustomResourceDefinition that came along (never a singleton wish)."""

    rel: str
    text: str
    along: bool = False


class RecordedPlacement(Struct, frozen=True, eq=False):
    """A placement of a frozen WDS as its record and SinglePlacementSlice have it."""

    space: str
    name: str
    objects: tuple[Recorded, ...]
    upsync: tuple[Any, ...] = ()
    singleton: bool = False
    collectors: tuple[str, ...] = ()
    mailboxes: dict[str, str] = field(default_factory=dict)  # mailbox -> Location name (its SPS)

    @property
    def key(self) -> tuple[str, str]:
        return (self.space, self.name)

    @property
    def spec(self) -> dict[str, Any]:
        """The parts of an EdgePlacement's spec a mailbox still needs (core/emit/files.py's upsync)."""
        return {"upsync": list(self.upsync), "wantSingletonReportedState": self.singleton,
                "statusCollectors": list(self.collectors)}


def record_file(name: str) -> str:
    return f"{file_stem(name)}.yaml"


def record_yaml(plan: Any, kinds: KindTable) -> bytes:
    """The record of a PlacementPlan (core/emit/mailbox.py), sorted by path."""
    found: dict[str, tuple[str, bool]] = {}
    for placed in plan.placed:
        obj = placed.obj
        info = kinds.lookup(obj.group, obj.kind)
        if info is not None:
            found[rel_path(obj.group, info.resource, obj.namespace, obj.name)] = (str(obj.ref), placed.clause == ALONG)
    lines = [f"apiVersion: {API_VERSION}", f"kind: {KIND}", "metadata:", f"  name: {yaml_str(plan.obj.name)}"]
    lines.append("objects:" if found else "objects: []")
    for rel in sorted(found):
        text, along = found[rel]
        lines.append(f"- {{path: {yaml_str(rel)}, object: {yaml_str(text)}{', along: true' if along else ''}}}")
    spec = plan.spec
    rest = {"statusCollectors": list(spec.get("statusCollectors") or []), "upsync": list(spec.get("upsync") or []),
            "wantSingletonReportedState": spec.get("wantSingletonReportedState") is True}
    return ("\n".join(lines) + "\n").encode() + dump_yaml(rest)


def parse_record(space: str, data: Any, mailboxes: dict[str, str]) -> RecordedPlacement | None:
    """A record read back (None when it is not one), with the destinations of its SPS."""
    try:
        doc = load_yaml(data) if isinstance(data, bytes) else None
    except Exception:  # noqa: BLE001 - an unreadable record is no record
        return None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or not isinstance(doc.get("objects"), list):
        return None
    name = (doc.get("metadata") or {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    objects = [_recorded(item) for item in doc["objects"]]
    upsync, collectors = doc.get("upsync") or [], doc.get("statusCollectors") or []
    if not isinstance(name, str) or None in objects or not isinstance(upsync, list) or not isinstance(collectors, list):
        return None
    return RecordedPlacement(space, name, tuple(o for o in objects if o is not None), tuple(upsync),
                             doc.get("wantSingletonReportedState") is True, tuple(str(c) for c in collectors),
                             mailboxes)


def record_trouble(path: str, data: Any) -> tuple[int, str]:
    """(line, what is wrong) of a record file `parse_record` refuses, never quoting it."""
    if not isinstance(data, bytes):
        return 0, "a folder where reconcile writes a placement record"
    doc = _mapping(data)
    if doc is None:
        return why_yaml(path, data)
    return 1, (f"not a {KIND} as reconcile writes it (metadata.name, and objects, each with a mailbox path "
               "and an object)")


def sps_trouble(path: str, data: bytes) -> tuple[int, str] | None:
    """(line, what is wrong) of a SinglePlacementSlice file that does not read (None: it does)."""
    doc = _mapping(data)
    if doc is None:
        return why_yaml(path, data)
    if not isinstance(doc.get("destinations") or [], list):
        return 1, "not a SinglePlacementSlice as reconcile writes it (destinations is not a list)"
    return None


def _mapping(data: bytes) -> dict[str, Any] | None:
    """The generated file's one map (None: it does not read as one; why_yaml says why)."""
    try:
        doc = load_yaml(data)
    except Exception:  # noqa: BLE001 - why_yaml says what is wrong
        return None
    return doc if isinstance(doc, dict) else None


def _recorded(item: Any) -> Recorded | None:
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not isinstance(item.get("object"), str):
        return None
    parts = item["path"].split("/")
    if len(parts) != 4 or not all(_PART.fullmatch(p) and p not in (".", "..") for p in parts):
        return None  # a path that could leave the mailbox's objects/ folder
    return Recorded(item["path"], item["object"], item.get("along") is True)


def sps_mailboxes(data: Any) -> dict[str, str]:
    """mailbox -> Location name, for every destination of a SinglePlacementSlice file."""
    try:
        doc = load_yaml(data) if isinstance(data, bytes) else None
    except Exception:  # noqa: BLE001 - an unreadable SPS reaches nothing
        return {}
    found: dict[str, str] = {}
    for dest in (doc.get("destinations") if isinstance(doc, dict) else None) or []:
        if isinstance(dest, dict) and isinstance(dest.get("cluster"), str) and isinstance(dest.get("syncTargetName"), str):
            found.setdefault(mailbox_name(dest["cluster"], dest["syncTargetName"]), str(dest.get("locationName", "")))
    return found


__all__ = ["RECORDS_DIR", "SPS_DIR", "Recorded", "RecordedPlacement", "record_file", "record_yaml", "parse_record",
           "record_trouble", "sps_mailboxes", "sps_trouble"]
