"""What a reconcile froze (isolation.py decides): the spaces and WECs kept as they stand, and the
sentences that say so. Kept apart from the decision because records keep a Frozen: a command
answered from a record unpickles it without loading what isolation reads and writes."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple

from msgspec import Struct, field

from ...model import FEW_WECS, counted, few

if TYPE_CHECKING:
    from .records import RecordedPlacement


class FrozenWec(Struct, frozen=True):
    mailbox: str
    space: str  # the inventory space
    name: str  # the SyncTarget
    whole_space: bool  # frozen by an error of its inventory space, not of its own SyncTarget


class FrozenSpace(Struct, eq=False):
    space: str
    placements: tuple[RecordedPlacement, ...] = ()  # what its records keep
    whole: tuple[str, ...] = ()  # mailboxes kept whole: SinglePlacementSlices without records
    mailboxes: set[str] = field(default_factory=set)  # current mailboxes where it keeps something
    unreadable: tuple[str, ...] = ()  # its records and slices that do not read (mailboxes kept whole for them)
    unrecorded: bool = False  # a SinglePlacementSlice without a record (an older ksgitops wrote it)

    def kept(self) -> str:
        """What the frozen space keeps, in a sentence."""
        n = len(self.mailboxes)
        where = counted(n, "mailbox", "mailboxes")
        if self.placements:
            names = ", ".join(p.name for p in self.placements)
            text = f"the objects its placements ({names}) placed at its last good state stay in {where}"
            return text + (f"; other mailboxes are kept whole ({self._why_whole()})" if self.whole else "")
        if self.whole:
            return f"{where} its SinglePlacementSlices reach are kept whole: {self._why_whole()}"
        return "it contributes nothing until its errors are fixed (no last good state is recorded)"

    def _why_whole(self) -> str:
        reasons = []
        if self.unreadable:
            n = len(self.unreadable)
            reasons.append(f"{few(self.unreadable)} do{'es' if n == 1 else ''} not read; reconcile writes "
                           f"{'it' if n == 1 else 'them'} anew once the space's errors are fixed")
        if self.unrecorded or not self.unreadable:
            reasons.append("it has no placement records (an older ksgitops wrote them)"
                           if not self.placements and not self.unreadable
                           else "SinglePlacementSlices without records")
        return "; ".join(reasons)


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


class Frozen(Struct):
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

    def kept_whole(self) -> list[str]:
        """The mailboxes kept whole, as they stand: frozen WECs' and those frozen spaces keep."""
        return sorted(self._whole | set(self.wecs))

    def why_whole(self, mailbox: str) -> tuple[str, str]:
        """(why the mailbox is kept whole, what has reconcile write it anew), for its warnings."""
        wec = self.wecs.get(mailbox)
        if wec is not None:
            return f"WEC {wec.name} is frozen", (f"the errors of inventory space {wec.space} are fixed"
                                                 if wec.whole_space else "the errors of its SyncTarget are fixed")
        spaces = [s for s, f in sorted(self.spaces.items()) if mailbox in f.whole]
        if len(spaces) == 1:
            return f"space {spaces[0]} is frozen", "the space's errors are fixed"
        return f"spaces {', '.join(spaces)} are frozen", "the errors of those spaces are fixed"

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
                units.append(FrozenUnit("wecs", space, f"{counted(len(found), 'WEC')} "
                                        f"({few(shown)}): each mailbox is kept as it stands (the inventory "
                                        "space has errors)", shown, mailboxes))
            else:
                units += [FrozenUnit("wec", space, f"WEC {n} (mailbox {mb}) is kept as it stands (its SyncTarget "
                                     "has errors)", (n,), (mb,)) for n, mb in zip(shown, mailboxes)]
        return sorted(units, key=lambda u: (u.space, u.what != "space"))

    def trailer(self) -> str:
        """The value of the commit trailer naming what is frozen: `space wmw-c, wec imw1/florin`."""
        wecs = sorted(f"wec {w.space}/{w.name}" for w in self.wecs.values())
        more = f", and {counted(len(wecs) - FEW_WECS, 'more WEC')}" if len(wecs) > FEW_WECS else ""
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
