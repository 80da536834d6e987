"""Which Location's labels and annotations are the customization parameters of an object on a WEC.

KubeStellar's workload projector customizes an object once per destination it goes to, a
(Location, SyncTarget) pair of one of the object's own placements, with that destination's
Location. Only the object's placements count: another WDS's placements, and the Locations only they
match, never change what an object receives. When several destinations name one SyncTarget (two
Locations select it, through one placement or several of the same WDS), each writes the object into
the one mailbox in turn and the last write wins, in no defined order; ksgitops takes the first of
those Locations by name.

The set of placements that placed an object is the same on every WEC of a group (the WECs reached
by the same placements), so each distinct set is found once per group and its Location once per WEC.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Protocol, Sequence

from ...model import Obj
from ..place.where import Wec, location_params

PlacementKey = tuple[str, str]  # (WDS, EdgePlacement name)


class Reaching(Protocol):
    """What this module needs of a placement plan: its key, and mailbox -> the first Location
    (by name) through which it reaches that WEC."""

    @property
    def key(self) -> PlacementKey: ...

    @property
    def mailboxes(self) -> dict[str, str]: ...


def parameter_location(wec: Wec, reached: Iterable[str]) -> Obj | None:
    """The first by name of the Locations `reached` (those through which an object's placements
    reached the WEC), or None when there are none."""
    first = min(reached, default=None)
    return None if first is None else next((loc for loc in wec.locations if loc.name == first), None)


def object_location(wec: Wec, plans: Iterable[Reaching], placed_by: Iterable[PlacementKey]) -> Obj | None:
    """The parameter Location of one object on `wec`, given the placements that placed it."""
    keys = set(placed_by)
    return parameter_location(wec, (p.mailboxes[wec.mailbox] for p in plans
                                    if p.key in keys and wec.mailbox in p.mailboxes))


def placement_sets(plans: Sequence[Reaching], placed_by: Iterable[Iterable[PlacementKey]]
                   ) -> tuple[list[int], tuple[tuple[int, ...], ...]]:
    """For each object (the keys of the placements that placed it), the index of its set of
    placements in the distinct sets returned beside, each a tuple of positions in `plans`."""
    at = {p.key: i for i, p in enumerate(plans)}
    sets: dict[tuple[int, ...], int] = {}
    found = []
    for keys in placed_by:
        positions = tuple(sorted({at[k] for k in keys if k in at}))
        found.append(sets.setdefault(positions, len(sets)))
    return found, tuple(sets)


def set_parameters(wec: Wec, plans: Sequence[Reaching], sets: Sequence[tuple[int, ...]]) -> list[Mapping[str, str]]:
    """The parameters of each set of placements on `wec` (`placement_sets`), each Location's once."""
    names = [p.mailboxes.get(wec.mailbox) for p in plans]
    by_name: dict[str | None, Mapping[str, str]] = {}
    found = []
    for positions in sets:
        first = min((n for n in (names[i] for i in positions) if n is not None), default=None)
        if first not in by_name:
            location = parameter_location(wec, () if first is None else (first,))
            by_name[first] = location_params(location) if location is not None else {}
        found.append(by_name[first])
    return found
