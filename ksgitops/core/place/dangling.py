"""Names and selectors that lead nowhere, warned about where they are written: a Location whose
`instanceSelector` selects no SyncTarget, an EdgePlacement's `statusCollectors` entry naming a
StatusCollector no space holds (`ksgitops status` looks in the placement's space first, then in
the others: status/combined.py).
"""
from __future__ import annotations

import difflib
from typing import Any, Iterable

from ...model import Obj, Problem
from ..load.jsonshape import FieldPath
from ..load.locate import FieldLines, Located
from .edgeplacement import as_list
from .where import Wec


def idle_locations(idle: list[Obj], wecs: dict[str, Wec], lines: FieldLines) -> list[Problem]:
    """One warning per Location that selects no SyncTarget (`inventory`'s `idle`)."""
    holding = {wec.space for wec in wecs.values()} if idle else set()
    found = []
    for loc in idle:
        why, at = _why_idle(loc, loc.space in holding)
        problem = Problem(loc.origin, f"Location {loc.name} selects no SyncTarget: {why}", "warning", obj=str(loc.ref))
        found.append(lines.at(Located(problem, at), loc))
    return found


def _why_idle(loc: Obj, space_has_targets: bool) -> tuple[str, FieldPath]:
    if not space_has_targets:
        return f"its space {loc.space} holds none (a Location selects the SyncTargets of its own space)", ()
    if isinstance(loc.spec.get("instanceSelector"), dict):
        return (f"its spec.instanceSelector matches none of the SyncTargets of space {loc.space}",
                ("spec", "instanceSelector"))
    return "it has no spec.instanceSelector (a Location without one selects nothing)", ()


def unknown_collectors(placements: Iterable[tuple[Obj, dict[str, Any]]], spaces: dict[str, list[Obj]],
                       lines: FieldLines) -> list[Problem]:
    """One warning per `statusCollectors` entry that names a StatusCollector of no space; the
    spaces are looked at only when some placement names one."""
    wanted = [(obj, i, name) for obj, spec in placements
              for i, name in enumerate(as_list(spec.get("statusCollectors"))) if isinstance(name, str)]
    if not wanted:
        return []
    known = sorted({o.name for objs in spaces.values() for o in objs
                    if o.kind == "StatusCollector" and o.group == "control.kubestellar.io"})
    found = []
    for obj, i, name in wanted:
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problem = Problem(obj.origin, f"EdgePlacement {obj.name}: StatusCollector {name} not found in any space: "
                                      f"`ksgitops status` combines nothing for it{hint}", "warning", obj=str(obj.ref))
        found.append(lines.at(Located(problem, ("spec", "statusCollectors", i)), obj))
    return found
