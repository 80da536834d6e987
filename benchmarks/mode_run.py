"""One mode of the harness on one fleet (benchmarks/scenarios.py): its folder and repo, how it
times a step and records its checks and problems, and the results of one fleet size."""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from filesystem import discard, memos_kept, settle
from measure import MiB, git, head, init_repo, log, timed


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
            dirty = status_lines(self, status_step, self.repo)
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


def status_lines(m: ModeRun, name: str | None, repo: Path) -> list[str]:
    """`git status --porcelain --untracked-files=no` of `repo`, timed as step `name` when given."""
    argv = ["git", "status", "--porcelain", "--untracked-files=no"]
    if name is None:
        return git(repo, *argv[1:], capture=True).splitlines()
    step = m.measure(name, argv, cwd=repo)
    return (m.logs / f"{name}.out").read_text().splitlines() if step.ok else ["(git status failed)"]
