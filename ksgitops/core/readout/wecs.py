"""Naming WECs for people: display names, the WEC argument of render/explain, the `wecs` listing."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...model import KsgitopsError
from ..results import RecordedResult
from .suggest import did_you_mean
from ..place.where import wec_names

if TYPE_CHECKING:
    from ..pipeline import Result


def wec_display_names(result: Result | RecordedResult) -> dict[str, str]:
    """mailbox -> the SyncTarget name, or `<space>/<name>` when the name is not unique."""
    return wec_names(result.wecs)


def find_wec(result: Result, name: str) -> str:
    """A WEC argument (SyncTarget name, `<is>/<st>`, or mailbox name) -> mailbox name; a frozen
    WEC's too (its mailbox kept as it stands: render shows it so, explain says why)."""
    named = {**{mb: (w.space, w.name) for mb, w in result.frozen.wecs.items()},
             **{mb: (w.space, w.name) for mb, w in result.wecs.items()}}
    if name in named:
        return name
    if "/" in name:
        space, _, st = name.partition("/")
        matches = [mb for mb, (s, n) in named.items() if s == space and n == st]
    else:
        matches = [mb for mb, (_, n) in named.items() if n == name]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise KsgitopsError(f"WEC name {name!r} is ambiguous: {', '.join(sorted(matches))}; use <space>/<synctarget>")
    spaces = {s for s, _ in named.values()}
    if "/" in name and name.partition("/")[0] not in spaces:
        space = name.partition("/")[0]
        raise KsgitopsError(f"no inventory space {space!r} holds a SyncTarget{did_you_mean(space, spaces)}")
    known = [n for mb, (s, st) in named.items() for n in (st, f"{s}/{st}", mb)]
    raise KsgitopsError(f"no WEC named {name!r}{did_you_mean(name, known)}; a WEC is a SyncTarget name, "
                        f"<space>/<synctarget> or a mailbox name (`ksgitops wecs` lists them)")


def wec_rows(result: Result, names: dict[str, str]) -> list[dict[str, Any]]:
    """One row per WEC for `ksgitops wecs`, by name: labels, mailbox, placements reaching it."""
    reaching = {mb: 0 for mb in result.wecs}
    for plans in result.placements.values():
        for p in plans:
            for mb in p.mailboxes:
                reaching[mb] = reaching.get(mb, 0) + 1
    rows = [{"wec": names.get(mb, mb), "inventorySpace": w.space, "syncTarget": w.name, "mailbox": mb,
             "labels": {str(k): str(v) for k, v in sorted(w.sync_target.labels.items())},
             "locations": [loc.name for loc in w.locations], "placements": reaching[mb],
             "frozen": mb in result.frozen.wecs}
            for mb, w in result.wecs.items()]
    return sorted(rows, key=lambda r: (r["wec"], r["mailbox"]))
