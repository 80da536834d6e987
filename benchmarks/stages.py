"""Where a one-Location `reconcile --commit` spends its time, stage by stage, in one process.

    python benchmarks/stages.py                      # 1,000 WECs x 200 objects, 12 changes
    python benchmarks/stages.py --wecs 200 --changes 6

A bare clone of a generated fleet is reconciled once; then, again and again, one Location's label
changes (a commit made with git plumbing, as run.py's bare rows make it) and the same process
reconciles it with one long-lived cache, as a monitor's worker or `ksgitops run` would: what is
left is the pipeline and the commit, without start-up, imports or reading the cache from disk
(with the command line's garbage-collector thresholds).
Each stage's time is summed over its calls in one run; the medians over the changes after the
first are printed, largest first (a stage nested in another is counted in both). The stages are
the pipeline's own functions, wrapped here by name: one renamed in the code is reported missing.
"""
from __future__ import annotations

import argparse
import collections
import functools
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fleet  # noqa: E402
from measure import commit_to_bare, git, init_repo  # noqa: E402

from ksgitops.app import usecases  # noqa: E402
from ksgitops.cli.entry import GC_THRESHOLD  # noqa: E402
from ksgitops.core import pipeline  # noqa: E402
from ksgitops.core.emit import mailbox  # noqa: E402
from ksgitops.core.place import where  # noqa: E402
from ksgitops.io.git.cache import DiskCache  # noqa: E402

STAGES: list[tuple[Any, str, str]] = [
    *((pipeline, name, name) for name in (
        "reconcile", "load", "validate", "with_scopes", "inventory", "space_step", "isolate",
        "_plan_placements", "_build", "mailbox_digest", "_reaching", "_generated", "problem_files")),
    (pipeline._PlanMemo, "destinations", "where (memoized)"),
    (where.Candidates, "__init__", "where: Candidates"),
    (mailbox.MailboxBuilder, "build", "MailboxBuilder.build"),
    (usecases, "commit_on_branch", "commit_on_branch"),
    (usecases, "later", "memos kept (later)"),
]


def timed(spent: dict[str, float], owner: Any, name: str, label: str) -> bool:
    """Wrap `owner.name` so that its calls add to spent[label]; False when it does not exist."""
    found: Callable[..., Any] | None = getattr(owner, name, None)
    if found is None:
        return False

    @functools.wraps(found)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return found(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started
    setattr(owner, name, wrapper)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wecs", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--changes", type=int, default=12)
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLD)  # as the command line runs
    spent: dict[str, float] = collections.defaultdict(float)
    missing = [label for owner, name, label in STAGES if not timed(spent, owner, name, label)]
    with tempfile.TemporaryDirectory(prefix="ksgitops-stages-") as tmp:
        src, bare = Path(tmp) / "src", Path(tmp) / "bare.git"
        fleet.generate(src, args.wecs, args.objects)
        init_repo(src)
        git(Path(tmp), "clone", "-q", "--bare", str(src), str(bare))
        cache = DiskCache.for_git_dir(str(bare))
        usecases.reconcile_commit(bare, "main", cache=cache)  # the full run: every mailbox made
        runs = []
        for change in range(1, args.changes + 1):
            commit_to_bare(bare, src, fleet.change_location_label(src, change), f"bench: location {change}")
            spent.clear()
            started = time.perf_counter()
            usecases.reconcile_commit(bare, "main", cache=cache)
            spent["the whole run"] = time.perf_counter() - started
            runs.append(dict(spent))
    later = runs[1:] or runs
    medians = {label: statistics.median(run.get(label, 0.0) for run in later) for label in later[-1]}
    print(f"one Location changed, {args.wecs:,} WECs x {args.objects} objects: median of {len(later)} runs "
          f"in one process (ms)")
    for label, seconds in sorted(medians.items(), key=lambda item: -item[1]):
        print(f"{seconds * 1000:9.1f}  {label}")
    if missing:
        print(f"not found in the code (renamed?): {', '.join(missing)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
