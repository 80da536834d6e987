"""STATUS.md (docs/REFERENCE.md, "STATUS.md"; docs/STATUS.md): the fleet at a glance, as
GitHub-rendered Markdown tables.

Built from one small `MailboxSummary` per mailbox (counts per placement, last report, the broken
rows), so a run where one mailbox changed re-summarizes one mailbox. Deterministic: the only times
are the reports' own `reportedAt` values, so the file changes only when a value does.
"""
from __future__ import annotations

import datetime as _dt
import heapq
import re
from functools import lru_cache
from itertools import islice
from operator import attrgetter
from typing import Any, Mapping

from msgspec import Struct, field

from ...model import counted
from .combined import HEALTH_ORDER, counts
from .health import Health
from .verdict import rank_of
from ..emit.problems import ParsedProblems, SpaceProblem
from .sync import SHORT, SyncSummary, state_counts
from .syncreport import SyncState

BROKEN_LIMIT = 100  # rows of the broken list; the rest is counted (every pair is in the CombinedStatus files)


class Broken(Struct, frozen=True, order=True):
    """One (object, WEC) that is not Healthy; sorted worst first, then by object and WEC. A Struct,
    not a NamedTuple: a memo holds thousands, and a Struct unpickles in C."""

    rank: int  # minus the health rank: worst first
    wds: str
    rel: str
    wec: str
    mailbox: str
    text: str
    health: str
    message: str


class MailboxSummary(Struct):
    mailbox: str
    wec: str
    last_report: str | None
    counts: dict[str, int] = field(default_factory=dict)
    by_placement: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # -> (healthy, total)
    broken: list[Broken] = field(default_factory=list)  # the worst `broken_limit` only
    broken_count: int = 0
    sync: SyncSummary = field(default_factory=lambda: SyncSummary(SyncState.UNKNOWN.value, ""))

    _line: tuple[str, str] | None = None  # (WEC name, its row): a memo, never given nor compared

    def __eq__(self, other: object) -> bool:
        if type(other) is not MailboxSummary:
            return NotImplemented
        return _compared_summary(self) == _compared_summary(other)

    @property
    def healthy(self) -> int:
        return self.counts.get(Health.HEALTHY.value, 0)

    def wec_row(self, name: str) -> str:
        """Its line of STATUS.md's WEC table, made once per summary (a memo keeps it: a run where
        one mailbox changed writes one row, not the fleet's)."""
        if self._line is None or self._line[0] != name:
            sync = self.sync
            self._line = (name, _row(name, self.mailbox, sync.state, sync.applied_text(), sync.latest[:SHORT],
                                    str(sync.drift_count), self.last_report or "never", f"{self.healthy}/{self.total}"))
        return self._line[1]

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @classmethod
    def of(cls, mailbox: str, wec: str, rows: Mapping[str, Any], infos: Mapping[str, Any],
           last_report: str | None, broken_limit: int = BROKEN_LIMIT, sync: SyncSummary | None = None
           ) -> "MailboxSummary":
        summary = cls(mailbox, wec, last_report, counts(r.health for r in rows.values()))
        if sync is not None:
            summary.sync = sync
        tally: dict[tuple[str, str], list[int]] = {}
        healthy_value = Health.HEALTHY.value  # an enum's value is a property: read once, not per row
        for rel, row in rows.items():
            healthy = row.health == healthy_value
            for placement in row.placements:
                item = tally.setdefault((row.wds, placement), [0, 0])
                item[0] += healthy
                item[1] += 1
            if not healthy:
                summary.broken.append(Broken(-rank_of(row.health), row.wds, rel, wec, mailbox,
                                             infos[rel][3], row.health, row.message))
        summary.by_placement = {k: (v[0], v[1]) for k, v in sorted(tally.items())}
        summary.broken.sort()
        summary.broken_count = len(summary.broken)
        del summary.broken[max(broken_limit, 0):]  # more could never be shown
        return summary


_compared_summary = attrgetter(*(f for f in MailboxSummary.__struct_fields__ if f != "_line"))


def total_counts(summaries: Mapping[str, MailboxSummary]) -> dict[str, int]:
    """Health counts over all mailboxes, in HEALTH_ORDER."""
    total: dict[str, int] = {}
    for s in summaries.values():
        for health, n in s.counts.items():
            total[health] = total.get(health, 0) + n
    return {h.value: total[h.value] for h in HEALTH_ORDER if h.value in total}


def markdown(result: Any, names: dict[str, str], summaries: Mapping[str, MailboxSummary], objects: int,
             broken_limit: int = BROKEN_LIMIT, reconcile: Mapping[str, ParsedProblems] | None = None,
             frozen: list[Any] | None = None) -> bytes:
    """STATUS.md; `objects` is the number of placed workload objects, `reconcile` the problems
    files by space ("" for repo-wide findings), `frozen` what reconcile keeps frozen
    (core.isolation.FrozenUnit)."""
    total = total_counts(summaries)
    healthy = total.get(Health.HEALTHY.value, 0)
    pairs = sum(total.values())
    others = ", ".join(f"{n} {h}" for h, n in total.items() if h != Health.HEALTHY.value)
    reconcile = reconcile or {}
    lines = [
        "# Status", "",
        "Generated by `ksgitops status` from the reported state in the mailboxes' `reported/` folders, "
        "the agents' sync reports (`reported/sync.yaml`) and reconcile's problems files "
        "(`spaces/<space>/.ksgitops/problems.yaml`); per object, see `spaces/<wds>/.ksgitops/status/`.", "",
        f"**{healthy}/{pairs} healthy** ({counted(objects, 'object')} on {counted(len(result.wecs), 'WEC')}"
        + (f"; {others}" if others else "") + "). " + _sync_line(summaries) + " " + _problem_line(reconcile, frozen),
        "",
        *_problem_section(reconcile, broken_limit),
        *_frozen_section(frozen or [], broken_limit),
        *_placements_section(result, summaries),
        *_wecs_section(summaries, names, broken_limit),
        *_broken_section(summaries, broken_limit),
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _placements_section(result: Any, summaries: Mapping[str, MailboxSummary]) -> list[str]:
    lines = ["## Placements", "", "| Placement | WECs | Objects | Healthy |", "|---|---:|---:|---:|"]
    rows = [(wds, p.obj.name, "", len(p.mailboxes), len(p.placed)) for wds in result.placements
            for p in result.placements[wds]]
    rows += [(p.space, p.name, " (frozen)", len(reached), len(p.objects)) for p, reached in result.frozen.placements()]
    for wds, name, note, wecs, placed in sorted(rows):
        h, t = 0, 0
        for s in summaries.values():
            found = s.by_placement.get((wds, name))
            if found:
                h, t = h + found[0], t + found[1]
        lines.append(_row(f"{wds}/{name}{note}", str(wecs), str(placed), f"{h}/{t}"))
    return lines


def _wecs_section(summaries: Mapping[str, MailboxSummary], names: dict[str, str], broken_limit: int) -> list[str]:
    lines = ["", "## WECs", "",
             "| WEC | Mailbox | Sync | Applied | Latest | Drifted | Last report | Healthy |",
             "|---|---|---|---|---|---:|---|---:|"]
    ordered = sorted(summaries, key=lambda m: (names.get(m, m), m))
    for mb in ordered:
        lines.append(summaries[mb].wec_row(names.get(mb, mb)))
    return lines + _sync_section([summaries[mb] for mb in ordered], broken_limit)


def _broken_section(summaries: Mapping[str, MailboxSummary], broken_limit: int) -> list[str]:
    broken_count = sum(s.broken_count for s in summaries.values())
    lines = ["", "## Broken", ""]
    if not broken_count:
        return lines + ["Nothing is broken."]
    lines += ["| Object | WEC | Health | Message |", "|---|---|---|---|"]
    # each summary's list is sorted: the merge's first ones are the smallest (nsmallest would read them all)
    shown = islice(heapq.merge(*(s.broken for s in summaries.values())), max(broken_limit, 0))
    for b in shown:
        lines.append(_row(f"{b.wds}: {b.text}", b.wec, b.health, b.message))
    if broken_count > broken_limit:
        lines += ["", f"... and {broken_count - broken_limit} more (see the CombinedStatus files)."]
    return lines


def _sync_line(summaries: Mapping[str, MailboxSummary]) -> str:
    states = ", ".join(f"{n} {state}" for state, n in state_counts(summaries.values()).items())
    drifted = sum(s.sync.drift_count for s in summaries.values())
    return f"Sync: {states or 'no WECs'}; {counted(drifted, 'drifted object')}."


def _problem_line(reconcile: Mapping[str, ParsedProblems], frozen: list[Any] | None = None) -> str:
    errors = sum(e.is_error for p in reconcile.values() for e in p.entries)
    warnings = sum(not e.is_error for p in reconcile.values() for e in p.entries)
    line = f"Reconcile: {counted(errors, 'error')}, {counted(warnings, 'warning')}."
    spaces = sum(u.what == "space" for u in frozen or [])
    wecs = sum(len(u.wecs) for u in frozen or [] if u.what != "space")
    parts = [counted(n, what) for n, what in ((spaces, "space"), (wecs, "WEC")) if n]
    return line + (f" Frozen: {' and '.join(parts)}." if parts else "")


def _frozen_section(frozen: list[Any], limit: int) -> list[str]:
    """What reconcile keeps as it was because its sources have errors (the first `limit`)."""
    lines = ["## Frozen", ""]
    if not frozen:
        return lines + ["Nothing is frozen.", ""]
    lines += ["These parts have errors of their own (above): reconcile keeps them as they were and "
              "reconciles the rest.", "", "| Frozen | Space | Kept |", "|---|---|---|"]
    lines += [_row(_frozen_what(u), u.space, u.kept) for u in frozen[:max(limit, 0)]]
    return lines + _more(len(frozen), limit, "the problems files") + [""]


def _frozen_what(unit: Any) -> str:
    if unit.what == "space":
        return "space"
    return f"WEC {unit.wecs[0]}" if unit.what == "wec" else counted(len(unit.wecs), "WEC")


def _problem_section(reconcile: Mapping[str, ParsedProblems], limit: int) -> list[str]:
    """Per space its state and counts, then every error (the first `limit`)."""
    lines = ["## Reconcile problems", ""]
    spaces = [space for space in sorted(reconcile) if reconcile[space].entries or space]
    if not spaces:
        return lines + ["No reconcile problems.", ""]
    lines += ["| Space | State | Errors | Warnings |", "|---|---|---:|---:|"]
    for space in spaces:
        entries = reconcile[space].entries
        errors = sum(e.is_error for e in entries)
        lines.append(_row(space or "(repository)", reconcile[space].state or "-", str(errors), str(len(entries) - errors)))
    errors_found: list[tuple[str, SpaceProblem]] = [(space, e) for space in spaces for e in reconcile[space].entries
                                                    if e.is_error]
    if errors_found:
        lines += ["", "| Space | Where | Object | WEC | Message |", "|---|---|---|---|---|"]
        lines += [_row(space or "(repository)", e.where, e.object or "-", e.wec_text or "-", e.message)
                  for space, e in errors_found[:max(limit, 0)]]
        lines += _more(len(errors_found), limit, "the problems files")
    return lines + [""]


def _sync_section(summaries: list[MailboxSummary], limit: int) -> list[str]:
    """Apply errors and drifted objects per WEC (the first `limit` of each)."""
    errors = [(s.wec, text, message) for s in summaries for text, message in s.sync.errors]
    drifted = [(s.wec, *item) for s in summaries for item in s.sync.drifted]
    lines = ["", "## Sync", "", "### Apply errors", ""]
    if errors:
        lines += ["| WEC | Object | Message |", "|---|---|---|"]
        lines += [_row(wec, text or "(the whole mailbox)", message) for wec, text, message in errors[:max(limit, 0)]]
        lines += _more(sum(s.sync.error_count for s in summaries), limit, "the sync reports")
    else:
        lines.append("No apply errors.")
    lines += ["", "### Drifted objects", ""]
    if drifted:
        lines += ["| WEC | Object | Change | Fields | Detected |", "|---|---|---|---|---|"]
        lines += [_row(wec, text, change, ", ".join(fields) or "-", at)
                  for wec, text, change, fields, at in drifted[:max(limit, 0)]]
        lines += _more(sum(s.sync.drift_count for s in summaries), limit, "the sync reports")
    else:
        lines.append("No drifted objects.")
    return lines


def _more(count: int, limit: int, where: str) -> list[str]:
    return ["", f"... and {count - limit} more (see {where})."] if count > limit else []


def _row(*cells: str) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;") or " "


_FRACTION = re.compile(r"(\.\d{6})\d+")


@lru_cache(maxsize=1 << 14)  # a WEC's reports share a few times; status orders 166k of them
def time_key(text: str) -> tuple[float, str]:
    """RFC 3339 text ordered by instant (then by text); unparsable text sorts first."""
    try:
        moment = _dt.datetime.fromisoformat(_FRACTION.sub(r"\1", text.replace("z", "Z")).replace("Z", "+00:00"))
        return (moment.timestamp(), text)
    except ValueError:
        return (float("-inf"), text)


__all__ = ["markdown", "total_counts", "MailboxSummary", "Broken", "time_key", "BROKEN_LIMIT"]
