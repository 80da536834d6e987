"""What a work-tree `diff` computed, kept for the `reconcile` (or `diff`) that follows while the
work tree stays as that diff saw it: the change shown is the change applied, and it is not
computed twice (Terraform's plan, then apply). It keeps what is written and reported
(core/results.py `PlannedResult`), not the objects computed.

A run's result depends on the work tree (sources, generated files), its record and the code. A
plan is kept only when the diff's record was saved as of a monitor's token (statcache.py: the
token asked for before anything was looked at), and taken only when the record is still as of
that token — no run saved it since — and the monitor saw nothing change since then (feed.py;
what no event would tell — a file the diff read that has another name, a folder the monitor
never watches — is looked at, as proof.py does): the same files, the same record, the same code
(the file's format names it), so the pipeline would compute the same result again. What the
diff's snapshot looked at goes with it, so that the reconcile that applies it leaves the same
proof for the next run as if it had computed. Without a monitor nothing is kept: every run
computes.
"""
from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any, NamedTuple

from ...core.results import PlannedResult
from ..git.cache import code_fingerprint, unpickle
from .paths import LinkError, check_path, write_state
from .proof import linked_of, still_as_observed

PLAN_FILE = "plan.pickle"
FORMAT = "ksgitops-plan-1"


class Plan(NamedTuple):
    token: str
    identity: tuple[str, int, int]
    result: PlannedResult
    seen: set[str]
    observed: dict[str, Any]
    spaces_listing: tuple[str, ...] | None
    listings: dict[str, Any]
    linked: frozenset[str]  # observed files with another name: a change through it is no event here


def keep(record: Any, snapshot: Any, result: Any) -> None:
    """After a diff computed `result` over `snapshot` and saved `record`."""
    path = _path(record)
    if path is None:
        return
    if record.token is None or not record.as_of_this_run() or bool(getattr(result, "unread_whole", ())):
        forget(record)  # a result that left mailboxes kept whole unread: the reconcile reads the next ones
        return
    plan = Plan(record.token, record.identity, PlannedResult.of(result), snapshot.seen, snapshot.observed,
                snapshot.spaces_listing, snapshot.listings, linked_of(record, snapshot.observed))
    try:
        write_state(path, pickle.dumps({"format": _format(), "plan": plan}, protocol=pickle.HIGHEST_PROTOCOL))
    except OSError:
        forget(record)


def take(record: Any, snapshot: Any) -> Plan | None:
    """The plan a diff left, when the work tree is as that diff saw it; what its snapshot looked at
    then becomes `snapshot`'s."""
    path = _path(record)
    changes = record.changes
    if path is None or record.token is None or changes is None or changes.changed or changes.everything:
        return None
    try:
        data = unpickle(path)
    except Exception:  # noqa: BLE001 - an unreadable plan is just absent
        return None
    plan = data.get("plan") if isinstance(data, dict) and data.get("format") == _format() else None
    if not isinstance(plan, Plan) or plan.token != record.token or tuple(plan.identity) != tuple(record.identity):
        return None
    if not still_as_observed(record, plan.observed, plan.linked):  # what no event would tell
        return None
    snapshot.seen |= plan.seen
    snapshot.observed.update(plan.observed)
    snapshot.spaces_listing = plan.spaces_listing
    snapshot.listings.update(plan.listings)
    return plan


def forget(record: Any) -> None:
    path = _path(record)
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


def _path(record: Any) -> Path | None:
    """The plan's file beside the record, in its folder's own state folder (folderstate.py); None
    without a record or where a link was planted."""
    if not record.enabled:
        return None
    git_dir = record.state.parent
    try:
        check_path(git_dir, f"{record.place}/{PLAN_FILE}", shown=str(git_dir))
    except LinkError:
        return None
    return record.path.with_name(PLAN_FILE)  # type: ignore[no-any-return]


def _format() -> str:
    return f"{FORMAT}-{code_fingerprint()}-{sys.version}"
