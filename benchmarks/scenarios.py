"""What the harness runs on one fleet, mode by mode, and what it checks on the way.

Modes (each in its own fresh copy of the fleet, so none warms another's caches):
- bare:     a bare clone, as the long-running runtime works: `reconcile --commit` builds commits in
            memory; then status and fold-in over a report per placed object.
- worktree: a checkout with the sources committed and no generated files, as a platform engineer
            (and `run --watch`) works: plain `reconcile` and `diff` on the work tree.
- checkout: the same checkout with `reconcile --commit`, as a CI job: the commit, plus the
            generated files written into the work tree and index.
Step keys are "<mode>.<step>"; `--rows` groups pick which steps run (prerequisites always run)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import ModuleType

from filesystem import discard
from measure import commit_paths, commit_to_bare, git, head_tree, log, report_tool
from mode_run import ModeRun, SizeResult, Step, status_lines
from worktree_mode import run_worktree, untimed

__all__ = ["COMPARED_STEPS", "GROUPS", "MODES", "SizeResult", "Step", "bench_size", "compare_trees"]

# --rows groups -> the mode that runs them
GROUPS = {"bare": "bare", "status": "bare", "foldin": "bare", "worktree": "worktree", "kustomize": "worktree",
          "checkout": "checkout"}
MODES = ("bare", "worktree", "checkout")
COMPARED_STEPS = ("full", "location", "workload")


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
        untimed(m, "monitor", "stop", str(m.repo))


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
        dirty = status_lines(m, "git_checkout_status", fresh)
        m.check(not dirty and head_tree(fresh) == head_tree(m.repo),
                "git_checkout: the fresh work tree equals the reconciled commit",
                "git_checkout: the fresh work tree differs from the reconciled commit", step)
    discard(fresh)


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
