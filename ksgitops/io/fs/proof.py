"""Proof that a work tree is as the last reconcile left it, so the next one answers from its record.

A work-tree reconcile's output depends only on what its Snapshot looked at (tree.py's
WorkTreeSnapshot logs each path with the stamp it had: every source folder listed and file read,
files looked for and absent, folders and files read back; and the names in `spaces/`) and on the
code (a record made by other code is never loaded). When it has written, every generated root is
what it computed. So if, at the start of the next run, every path it looked at has the same stamp,
`spaces/` the same names and every generated root's stamps hold (statcache.py), running the
pipeline again would compute the same trees, find them in place and report the same problems: the
record's result is the answer, with no parse, no build and no comparison. Only settled stamps
count (older than the file system's clock taken before what they stand for was read); what the run
read inside a root it wrote or reused is left to that root's stamps, and a folder whose stamp its
own writes moved is stamped again (below), so that the first run after a write can be proven.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ...core.results import PlannedResult, RecordedResult
from ...core.load.snapshot import GENERATED_DIR
from ...core.tree import REUSE
from .statcache import Stamp, full_stamp, newest
from .paths import has_other_names
from .tree import space_names

if TYPE_CHECKING:
    from ...core.pipeline import Result


RESTAMP_AT_MOST = 16  # space folders a run's writes may change and still leave a proof


class ProvenRun(NamedTuple):
    result: RecordedResult
    observed: dict[str, Stamp]  # path (a folder with a trailing /) -> its stamp as the run saw it
    roots: tuple[str, ...]  # the generated roots, each as the record keeps it (frozen ones aside)
    generated: tuple[str, ...]  # every root the run generated or kept
    spaces: tuple[str, ...]  # the folders in spaces/ as the run left them
    linked: frozenset[str] = frozenset()  # observed files with another name: always looked at (feed.py)


def run_of(record: Any, snapshot: Any, result: Result | PlannedResult) -> ProvenRun | None:
    """What a reconcile that wrote `result` over `snapshot` leaves for the next run to prove with
    (None: something it saw may have changed as it looked, so the next run computes)."""
    # a root reused because the record vouched for it must hold; one kept as it stands (frozen) is
    # written by no one, and what reconcile read of it is observed
    roots = tuple(sorted(root for root, tree in result.generated.items()
                         if tree is not REUSE or record.intact.get(root, False)))
    clock = record.clock()
    if clock < 0 or snapshot.spaces_listing is None or not all(root in record.roots for root in roots):
        return None
    if getattr(result, "unread_whole", ()):  # the next run reads the mailboxes this one left: not the same result
        return None
    # what it read inside a root it wrote or reused is covered by the root's own stamps
    covered = set(roots)
    observed = {path: stamp for path, stamp in snapshot.observed.items() if not _inside(path, covered)}
    if any(newest(stamp) >= clock for stamp in observed.values()) or not _restamp(record, snapshot, observed):
        return None
    spaces = space_names(record.work_tree)
    made = {root.split("/")[1]: tree is not None for root, tree in result.generated.items() if root.count("/") == 1}
    expected = {name for name in snapshot.spaces_listing if made.get(name, True)} | {n for n, kept in made.items() if kept}
    if set(spaces) != expected:  # a space came or went while it ran
        return None
    return ProvenRun(RecordedResult.of(result), observed, roots, tuple(sorted(result.generated)), spaces,
                     linked_of(record, observed))


def linked_of(record: Any, observed: dict[str, Stamp]) -> frozenset[str]:
    """The observed files that have another name: a change made through it is no event here."""
    return frozenset(path for path in observed
                     if not path.endswith("/") and has_other_names(f"{record.work_tree}/{path}"))


def still_as_observed(record: Any, observed: dict[str, Stamp], linked: frozenset[str]) -> bool:
    """Every observed path the monitor cannot vouch for (it may have changed, it has another name,
    or no watch is kept on it) keeps the stamp it had: without a monitor, every one is looked at."""
    base, may_differ = str(record.work_tree), record.may_differ
    return not any(full_stamp(f"{base}/{path.rstrip('/')}") != stamp
                   for path, stamp in observed.items() if path in linked or may_differ(path))


def _restamp(record: Any, snapshot: Any, observed: dict[str, Stamp]) -> bool:
    """A space folder the run's own writes changed (its first `.ksgitops/`) gets its stamp again,
    when it lists, but for that entry, what the run read; False when another change is seen."""
    base = str(record.work_tree)
    moved = [path for path in observed if path.endswith("/") and full_stamp(f"{base}/{path.rstrip('/')}") != observed[path]]
    if not moved:
        return True
    if len(moved) > RESTAMP_AT_MOST or any(path not in snapshot.listings for path in moved):
        return False
    since = record.tick()  # the clock has moved past the writes: a later change gets a newer stamp
    for path in moved:
        stamp = full_stamp(f"{base}/{path.rstrip('/')}")
        if since < 0 or newest(stamp) >= since or \
                _but_generated(snapshot.listed_again(path)) != _but_generated(snapshot.listings[path]):
            return False
        observed[path] = stamp
    return True


def _but_generated(listing: tuple[tuple[str, bool], ...]) -> tuple[tuple[str, bool], ...]:
    return tuple(entry for entry in listing if entry[0] != GENERATED_DIR)


def _inside(path: str, roots: set[str]) -> bool:
    parts = path.rstrip("/").split("/")
    return any("/".join(parts[:n]) in roots for n in range(2, len(parts) + 1))


def proven(record: Any) -> ProvenRun | None:
    """The last reconcile's run when the work tree is proven as it left it, else None."""
    run: ProvenRun | None = record.run
    if run is None or not all(root in record.roots for root in run.roots):
        return None
    if not still_as_observed(record, run.observed, run.linked):
        return None
    if record.may_differ("spaces/") and space_names(record.work_tree) != run.spaces:
        return None
    record.check(record.work_tree, run.roots)
    if not all(record.intact.get(root, False) for root in run.roots):
        return None
    record.run_proven = True
    return run
