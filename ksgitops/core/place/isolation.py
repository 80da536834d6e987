"""Blast radius = the broken part: which spaces and WECs a reconcile freezes, and what it keeps.

Only repo-wide problems (ksgitops.yaml, git) stop a reconcile. An error confined to one space
(parse, schema, names, duplicates, the space step) makes the
space *broken*; `isolate` decides what that freezes:
- a broken space that is (or was) a WDS is frozen: in every mailbox, the objects it placed keep
  the content they had at its last good state, read from the mailboxes as they stand, as its
  placement records (records.py) and SinglePlacementSlices list them; its own generated roots
  stay as they are. New WECs get nothing from it, a WEC that went away still loses its mailbox. A
  WDS whose SinglePlacementSlices have no records (an older ksgitops wrote them), or records that
  do not read (a located warning says where), keeps every mailbox they reach whole; one never
  valid (nothing recorded) contributes nothing;
- in an inventory space, an error of one SyncTarget freezes that WEC; any other error freezes
  every WEC of the space (its SyncTargets and its existing mailboxes). A frozen WEC's mailbox is
  kept exactly as it stands and never removed while frozen. Placements reach WECs through the
  inventory objects that have no error of their own (`Isolation.valid`).
A space that is both gets both. A healthy repository pays nothing here: `isolate` returns at once
when no space has an error, and reads generated files only for broken spaces.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from msgspec import Struct, field

from ...model import Obj, Origin, Problem
from ..load.read import INVENTORY_ANNOTATION, SYNC_TARGET_ANNOTATION
from .records import (RECORDS_DIR, SPS_DIR, RecordedPlacement, parse_record, record_trouble, sps_mailboxes,
                      sps_trouble)
from ..load.snapshot import GENERATED_DIR, Previous
from ...names import mailbox_name
from .frozen import Frozen, FrozenSpace, FrozenUnit, FrozenWec

EDGE_GROUP = "edge.kubestellar.io"
FROZEN_DIGEST = ""  # the reuse digest of a mailbox a frozen placement reaches: it never matches a cache


class Isolation(Struct):
    broken: frozenset[str]  # owned spaces with an error of their own
    valid: dict[str, list[Obj]]  # every space's objects without an error of their own: the inventory
    frozen: Frozen
    key: str = ""  # what `valid` leaves out ("" when nothing is broken): part of the where memo's key
    problems: list[Problem] = field(default_factory=list)  # generated files of broken spaces that do not read (their records)


def isolate(spaces: Mapping[str, list[Obj]], mailboxes: Mapping[str, Obj], problems: Iterable[Problem],
            previous: Previous) -> Isolation:
    """Broken spaces, frozen WECs and spaces, from the problems found (errors per (object, WEC)
    are not the space's: they keep previous copies in mailbox.py)."""
    errors: dict[str, list[Problem]] = {}
    for problem in problems:
        if problem.is_error and not problem.wec and problem.space in spaces:
            errors.setdefault(problem.space, []).append(problem)
    if not errors:
        return Isolation(frozenset(), dict(spaces), Frozen())
    valid = dict(spaces)
    frozen = Frozen(broken=frozenset(errors))
    left_out: list[str] = []
    unread: list[Problem] = []
    for space, found in sorted(errors.items()):
        objs = spaces[space]
        bad = _erroneous(objs, found)
        valid[space] = [o for o in objs if id(o) not in bad]
        left_out += sorted(str(o.origin) for o in objs if id(o) in bad)
        wecs = _frozen_wecs(space, objs, found, mailboxes)
        frozen.wecs.update(wecs)
        inventory = bool(wecs) or any(_is_edge(o, "SyncTarget") or _is_edge(o, "Location") for o in objs)
        kept = _frozen_space(space, previous, mailboxes, unread)
        if kept.placements or kept.whole or not inventory or any(_is_edge(o, "EdgePlacement") for o in objs):
            frozen.spaces[space] = kept
    return Isolation(frozenset(errors), valid, frozen, repr(left_out), unread)


def _is_edge(obj: Obj, kind: str) -> bool:
    return obj.kind == kind and obj.group == EDGE_GROUP


def _erroneous(objs: list[Obj], found: list[Problem]) -> set[int]:
    """The objects an error is about: at the object's own origin, or naming it."""
    origins = {p.origin for p in found}
    texts = {p.obj for p in found if p.obj}
    return {id(o) for o in objs if o.origin in origins or (texts and str(o.ref) in texts)}


def _frozen_wecs(space: str, objs: list[Obj], found: list[Problem], mailboxes: Mapping[str, Obj]
                 ) -> dict[str, FrozenWec]:
    targets = [o for o in objs if _is_edge(o, "SyncTarget")]
    existing = {mb: obj for mb, obj in mailboxes.items() if obj.annotations.get(INVENTORY_ANNOTATION) == space}
    if not targets and not existing and not any(_is_edge(o, "Location") for o in objs):
        return {}
    by_origin = {st.origin: st for st in targets}
    by_text = {str(st.ref): st for st in targets}
    tied: dict[str, FrozenWec] = {}
    for problem in found:
        st = by_origin.get(problem.origin) or by_text.get(problem.obj)
        if st is None:  # a Location, an unreadable file, ...: every WEC of the space
            out = {mailbox_name(space, t.name): FrozenWec(mailbox_name(space, t.name), space, t.name, True)
                   for t in targets}
            for mb, obj in existing.items():
                out.setdefault(mb, FrozenWec(mb, space, str(obj.annotations.get(SYNC_TARGET_ANNOTATION, mb)), True))
            return out
        mailbox = mailbox_name(space, st.name)
        tied[mailbox] = FrozenWec(mailbox, space, st.name, False)
    return tied


def _frozen_space(space: str, previous: Previous, mailboxes: Mapping[str, Obj], unread: list[Problem]) -> FrozenSpace:
    """What a broken WDS keeps: per SinglePlacementSlice, its record's objects (or, without a
    record or with one that does not read, every mailbox it reaches, whole; every mailbox there is,
    when the slice does not read). A file that does not read appends a warning to `unread`."""
    base = f"spaces/{space}/{GENERATED_DIR}"
    slices = previous.read_tree(f"{base}/{SPS_DIR}") or {}
    records = (previous.read_tree(f"{base}/{RECORDS_DIR}") or {}) if slices else {}
    placements: list[RecordedPlacement] = []
    whole: set[str] = set()
    unreadable: list[str] = []
    unrecorded = False

    def warn(path: str, found: tuple[int, str], what: str, kept: str) -> None:
        unreadable.append(path)
        unread.append(Problem(Origin(path, found[0]), f"{what} does not read: {found[1]}; while space {space} is "
                              f"frozen, {kept} is kept whole; fix the space's errors and reconcile writes it anew "
                              "(or restore the file from git)", "warning"))

    for file, data in sorted(slices.items()):
        if not file.endswith(".yaml") or not isinstance(data, bytes):
            continue
        trouble = sps_trouble(f"{base}/{SPS_DIR}/{file}", data)
        if trouble is not None:  # which WECs it reached is not known: none of them may lose its objects
            whole.update(mailboxes)
            warn(f"{base}/{SPS_DIR}/{file}", trouble, "SinglePlacementSlice", "every mailbox")
            continue
        reached = sps_mailboxes(data)
        found = records.get(file)
        record = parse_record(space, found, reached)
        if record is not None:
            placements.append(record)
            continue
        whole.update(reached)
        if found is None:
            unrecorded = True
        else:
            path = f"{base}/{RECORDS_DIR}/{file}"
            warn(path, record_trouble(path, found), "placement record", "every mailbox its SinglePlacementSlice reaches")
    return FrozenSpace(space, tuple(placements), tuple(sorted(whole)), unreadable=tuple(unreadable),
                       unrecorded=unrecorded)


__all__ = ["isolate", "Isolation", "Frozen", "FrozenSpace", "FrozenWec", "FrozenUnit", "FROZEN_DIGEST"]
