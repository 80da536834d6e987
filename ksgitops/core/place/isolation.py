"""Blast radius = the broken part: which spaces and WECs a reconcile freezes, and what it keeps.

Only repo-wide problems (ksgitops.yaml, git) stop a reconcile. An error confined to one space
(parse, schema, names, duplicates, a Customizer that does not parse, the space step) makes the
space *broken*; `isolate` decides what that freezes:
- a broken space that is (or was) a WDS is frozen: in every mailbox, the objects it placed keep
  the content they had at its last good state, read from the mailboxes as they stand, as its
  placement records (records.py) and SinglePlacementSlices list them; its own generated roots
  stay as they are. New WECs get nothing from it, a WEC that went away still loses its mailbox. A
  WDS whose SinglePlacementSlices have no records (an older ksgitops wrote them) keeps every
  mailbox they reach whole; one never valid (nothing recorded) contributes nothing;
- in an inventory space, an error of one SyncTarget freezes that WEC; any other error freezes
  every WEC of the space (its SyncTargets and its existing mailboxes). A frozen WEC's mailbox is
  kept exactly as it stands and never removed while frozen. Placements reach WECs through the
  inventory objects that have no error of their own (`Isolation.valid`).
A space that is both gets both. A healthy repository pays nothing here: `isolate` returns at once
when no space has an error, and reads generated files only for broken spaces.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple

from ...model import FEW_WECS, Obj, Problem, few
from ..load.read import INVENTORY_ANNOTATION, SYNC_TARGET_ANNOTATION
from .records import RECORDS_DIR, SPS_DIR, RecordedPlacement, parse_record, sps_mailboxes
from ..load.snapshot import GENERATED_DIR, Previous
from ...names import mailbox_name

EDGE_GROUP = "edge.kubestellar.io"
FROZEN_DIGEST = ""  # the reuse digest of a mailbox a frozen placement reaches: it never matches a cache


@dataclass(frozen=True, slots=True)
class FrozenWec:
    mailbox: str
    space: str  # the inventory space
    name: str  # the SyncTarget
    whole_space: bool  # frozen by an error of its inventory space, not of its own SyncTarget


@dataclass(eq=False)
class FrozenSpace:
    space: str
    placements: tuple[RecordedPlacement, ...] = ()  # what its records keep
    whole: tuple[str, ...] = ()  # mailboxes kept whole: SinglePlacementSlices without records
    mailboxes: set[str] = field(default_factory=set)  # current mailboxes where it keeps something

    def kept(self) -> str:
        """What the frozen space keeps, in a sentence."""
        n = len(self.mailboxes)
        where = f"{n} mailbox{'' if n == 1 else 'es'}"
        if self.placements:
            names = ", ".join(p.name for p in self.placements)
            text = f"the objects its placements ({names}) placed at its last good state stay in {where}"
            return text + ("; other mailboxes are kept whole (SinglePlacementSlices without records)"
                           if self.whole else "")
        if self.whole:
            return (f"{where} its SinglePlacementSlices reach are kept whole: it has no placement records "
                    "(an older ksgitops wrote them)")
        return "it contributes nothing until its errors are fixed (no last good state is recorded)"


class FrozenUnit(NamedTuple):
    """One line of output about what is frozen: a space, one WEC, or the WECs of a space."""

    what: str  # "space" | "wec" | "wecs"
    space: str
    kept: str
    wecs: tuple[str, ...] = ()  # WEC names (all of them; outputs show the first few)
    mailboxes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"spaces/{self.space}: frozen: {self.kept}"

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"what": self.what, "space": self.space, "message": self.kept}
        if self.wecs:
            doc["wecCount"], doc["wecs"] = len(self.wecs), list(self.wecs[:FEW_WECS])
        return doc


@dataclass
class Frozen:
    """Everything a reconcile froze; empty (false) when nothing is broken."""

    spaces: dict[str, FrozenSpace] = field(default_factory=dict)
    wecs: dict[str, FrozenWec] = field(default_factory=dict)  # mailbox -> frozen WEC
    broken: frozenset[str] = frozenset()  # every space with an error of its own: its generated roots stay
    _reaching: dict[str, list[RecordedPlacement]] = field(default_factory=dict)
    _whole: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.spaces or self.wecs)

    def settle(self, wecs: Mapping[str, Any]) -> None:
        """Bind the frozen placements to the WECs there are now (new ones get nothing)."""
        def live(mailboxes: Iterable[str]) -> list[str]:
            return sorted(mb for mb in mailboxes if mb in wecs and mb not in self.wecs)

        for space in sorted(self.spaces):
            frozen = self.spaces[space]
            for placement in frozen.placements:
                for mb in live(placement.mailboxes):
                    self._reaching.setdefault(mb, []).append(placement)
                    frozen.mailboxes.add(mb)
            whole = set(live(frozen.whole))
            self._whole |= whole
            frozen.mailboxes |= whole

    def reaching(self, mailbox: str) -> list[RecordedPlacement]:
        return self._reaching.get(mailbox, [])

    def placements(self) -> list[tuple[RecordedPlacement, dict[str, str]]]:
        """Every frozen placement with the mailboxes (-> Location) where it keeps its objects."""
        kept: dict[int, dict[str, str]] = {}
        for mb, found in self._reaching.items():
            for placement in found:
                kept.setdefault(id(placement), {})[mb] = placement.mailboxes[mb]
        return [(p, dict(sorted(kept.get(id(p), {}).items())))
                for _, f in sorted(self.spaces.items()) for p in f.placements]

    def keeps_whole(self, mailbox: str) -> bool:
        return mailbox in self._whole or mailbox in self.wecs

    def touches(self, mailbox: str) -> bool:
        """Whether the mailbox's content depends on what it holds now (never reuse it by digest)."""
        return mailbox in self._reaching or self.keeps_whole(mailbox)

    def units(self, names: Mapping[str, str]) -> list[FrozenUnit]:
        units = [FrozenUnit("space", s, f.kept(), mailboxes=tuple(sorted(f.mailboxes)))
                 for s, f in sorted(self.spaces.items())]
        by_space: dict[tuple[str, bool], list[FrozenWec]] = {}
        for wec in self.wecs.values():
            by_space.setdefault((wec.space, wec.whole_space), []).append(wec)
        for (space, whole), found in sorted(by_space.items()):
            found.sort(key=lambda w: (names.get(w.mailbox, w.name), w.mailbox))
            shown = tuple(names.get(w.mailbox, w.name) for w in found)
            mailboxes = tuple(w.mailbox for w in found)
            if whole:
                units.append(FrozenUnit("wecs", space, f"{len(found)} WEC{'' if len(found) == 1 else 's'} "
                                        f"({few(shown)}): each mailbox is kept as it stands (the inventory "
                                        "space has errors)", shown, mailboxes))
            else:
                units += [FrozenUnit("wec", space, f"WEC {n} (mailbox {mb}) is kept as it stands (its SyncTarget "
                                     "has errors)", (n,), (mb,)) for n, mb in zip(shown, mailboxes)]
        return sorted(units, key=lambda u: (u.space, u.what != "space"))

    def trailer(self) -> str:
        """The value of the commit trailer naming what is frozen: `space wmw-c, wec imw1/florin`."""
        wecs = sorted(f"wec {w.space}/{w.name}" for w in self.wecs.values())
        more = f", and {len(wecs) - FEW_WECS} more WECs" if len(wecs) > FEW_WECS else ""
        return ", ".join([f"space {s}" for s in sorted(self.spaces)] + wecs[:FEW_WECS]) + more

    def section(self, space: str, names: Mapping[str, str]) -> dict[str, Any] | None:
        """The `frozen` part of a space's problems file (problems.py), or None."""
        units = [u for u in self.units(names) if u.space == space]
        if not units:
            return None
        doc: dict[str, Any] = {"kept": [u.kept for u in units]}
        frozen = self.spaces.get(space)
        if frozen is not None:
            doc["placements"] = [p.name for p in frozen.placements]
            doc["mailboxes"] = len(frozen.mailboxes)
        wecs = [w for u in units if u.what != "space" for w in u.wecs]
        if wecs:
            doc["wecCount"], doc["wecs"] = len(wecs), sorted(wecs)[:FEW_WECS]
        return doc


@dataclass
class Isolation:
    broken: frozenset[str]  # owned spaces with an error of their own
    valid: dict[str, list[Obj]]  # every space's objects without an error of their own: the inventory
    frozen: Frozen
    key: str = ""  # what `valid` leaves out ("" when nothing is broken): part of the where memo's key


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
    for space, found in sorted(errors.items()):
        objs = spaces[space]
        bad = _erroneous(objs, found)
        valid[space] = [o for o in objs if id(o) not in bad]
        left_out += sorted(str(o.origin) for o in objs if id(o) in bad)
        wecs = _frozen_wecs(space, objs, found, mailboxes)
        frozen.wecs.update(wecs)
        inventory = bool(wecs) or any(_is_edge(o, "SyncTarget") or _is_edge(o, "Location") for o in objs)
        kept = _frozen_space(space, previous)
        if kept.placements or kept.whole or not inventory or any(_is_edge(o, "EdgePlacement") for o in objs):
            frozen.spaces[space] = kept
    return Isolation(frozenset(errors), valid, frozen, repr(left_out))


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


def _frozen_space(space: str, previous: Previous) -> FrozenSpace:
    """What a broken WDS keeps: per SinglePlacementSlice, its record's objects (or, without a
    record, every mailbox it reaches, whole)."""
    slices = previous.read_tree(f"spaces/{space}/{GENERATED_DIR}/{SPS_DIR}") or {}
    records = (previous.read_tree(f"spaces/{space}/{GENERATED_DIR}/{RECORDS_DIR}") or {}) if slices else {}
    placements: list[RecordedPlacement] = []
    whole: set[str] = set()
    for file, data in sorted(slices.items()):
        if not file.endswith(".yaml") or not isinstance(data, bytes):
            continue
        reached = sps_mailboxes(data)
        record = parse_record(space, records.get(file), reached)
        if record is None:
            whole.update(reached)
        else:
            placements.append(record)
    return FrozenSpace(space, tuple(placements), tuple(sorted(whole)))


__all__ = ["isolate", "Isolation", "Frozen", "FrozenSpace", "FrozenWec", "FrozenUnit", "FROZEN_DIGEST"]
