"""Kill ksgitops at random points and check that nothing is lost and the rerun equals a clean run.

For each mode, a fleet (benchmarks/fleet.py) whose mailboxes hold files ksgitops did not generate
(reports, upsynced objects, a NOTES.md a person wrote) goes back and forth between two states; in
every trial the command that brings it to the other state runs as a real `python -m ksgitops`
subprocess and gets SIGKILL, half the time at a uniformly random moment of its run, half the time
at a random moment after it began writing (its journal appeared); the run and writing times come
from clean runs and narrow whenever a command ends before its kill (a machine whose load dropped).
Then:

1. recovery runs (what any next command does first), and every generated root (a mailbox's own
   files, each `.ksgitops/` folder, STATUS.md) must be wholly the old state's or wholly the new
   one's; in a checkout, the branch must be at the old commit or at a commit with the new tree, and
   the work tree and index must match it;
2. no file ksgitops did not generate may be missing or changed, and nothing may be left over
   (staging, trash, journals, lock files);
3. the rerun must give, byte for byte, the tree a clean run gave (and in a checkout the same
   commit tree, with a clean `git status`).

Modes: `worktree` (reconcile), `commit` (reconcile --commit in a checkout), `status` (work tree),
`status-commit` (status --commit in a checkout), `fold-in` (report refs into a checkout).

    python benchmarks/crash.py --wecs 1000 --objects 200 --kills 60 --workdir /work   # 300 kills (hours)
    python benchmarks/crash.py --wecs 10 --objects 10 --kills 5                        # a smoke test

Prints one Markdown row per mode; exits 1 when anything was lost, torn, divergent or left over.
tests/test_crash.py runs the same code on a small fleet."""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from crash_files import Files, State, by_root, forget_reads, git, head_tree, snapshot  # noqa: E402
from crash_modes import Run, modes  # noqa: E402
from ksgitops.app import usecases as app  # noqa: E402

MODES = ("worktree", "commit", "status", "status-commit", "fold-in")
LEFTOVER_MARKS = (".ksgitops-stage", ".ksgitops-trash", ".ksgitops-journal", ".ksgitops-tmp", ".ksgitops-new",
                  ".ksgitops-old")


@dataclass
class Tally:
    mode: str
    trials: int = 0
    kills: int = 0
    kills_writing: int = 0
    lost: int = 0  # kept files missing or changed
    torn: int = 0  # generated roots neither old nor new after recovery (or a checkout off its commit)
    divergent: int = 0  # reruns whose tree differs from a clean run's
    leftovers: int = 0
    failures: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.lost or self.torn or self.divergent or self.leftovers or self.failures)


# --- one trial ---------------------------------------------------------------------------------------

def clean_state(run: Run, state: int) -> tuple[State, float, float]:
    """Bring the fleet to `state` with an uninterrupted subprocess: its result, how long it ran,
    and how long it wrote (from its journal's appearance to its exit)."""
    run.mode.toggle(run, state)
    started = time.monotonic()
    proc = subprocess.Popen(run.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    began = None
    while proc.poll() is None:
        if began is None and writing_began(run.repo):
            began = time.monotonic()
        time.sleep(0.0005)
    ended = time.monotonic()
    if proc.returncode:
        raise RuntimeError(f"{' '.join(run.command())}: exit {proc.returncode}: {proc.stderr.read().decode()}")
    state_now = State(snapshot(run.repo), head_tree(run.repo) if run.mode.checkout else "")
    return state_now, ended - started, ended - began if began is not None else 0.05


def writing_began(repo: Path) -> bool:
    """A journal (or, from the earlier writer, a staging folder in spaces/) exists."""
    if os.path.exists(repo / ".ksgitops-journal") or os.path.exists(repo / ".git" / "ksgitops-state" / "checkout.json"):
        return True
    try:
        return any(name.startswith(".") for name in os.listdir(repo / "spaces"))
    except OSError:
        return False


@dataclass
class Window:
    """When to kill: the command's run and its writing, in seconds, narrowed whenever a command
    ends before its kill (the machine got faster than when the window was measured)."""

    duration: float
    writing: float


def kill_at_random(run: Run, rng: random.Random, window: Window, after_write: bool) -> tuple[bool, bool]:
    """Start the command and SIGKILL it at a random moment of its run, or (`after_write`) of its
    writing; returns (killed, killed after writing began)."""
    started = time.monotonic()
    proc = subprocess.Popen(run.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    began, began_at = False, None
    if after_write:
        deadline = time.monotonic() + window.duration * 3 + 5
        while proc.poll() is None and time.monotonic() < deadline and not began:
            began = writing_began(run.repo)
            if not began:
                time.sleep(0.0005)
        began_at = time.monotonic()
        time.sleep(rng.uniform(0, window.writing * 1.2))
    else:
        time.sleep(rng.uniform(0, window.duration * 0.95))
        began = writing_began(run.repo)
    killed = proc.poll() is None
    if killed:
        proc.send_signal(signal.SIGKILL)
    else:  # it ended first: its run (and writing) were shorter than the window says
        ended = time.monotonic()
        window.duration = min(window.duration, max(ended - started, 0.01))
        if began and began_at is not None:
            window.writing = min(window.writing, max(ended - began_at, 0.01))
    proc.wait()
    return killed, killed and began


def leftovers(repo: Path) -> list[str]:
    """Names a writer leaves while it works (staging, trash, journals, locks); names only, no reads."""
    found = []
    for folder, dirs, names in os.walk(repo):
        if folder == str(repo):
            dirs[:] = [d for d in dirs if d != ".git"]
        found += [os.path.join(folder, n) for n in (*dirs, *names) if any(mark in n for mark in LEFTOVER_MARKS)]
    git_dir = repo / ".git"
    found += [str(p) for p in (git_dir / "ksgitops-state" / "checkout.json", git_dir / "index.lock") if p.exists()]
    return found


def check_recovered(run: Run, old: State, new: State, old_head: str, tally: Tally) -> None:
    """After a kill and recovery: every root old or new, nothing lost, nothing left over."""
    now = snapshot(run.repo)
    roots_now, roots_old, roots_new = by_root(now), by_root(old.files), by_root(new.files)
    for root in set(roots_old) | set(roots_new) | set(roots_now):
        mine = roots_now.get(root, {})
        if mine != roots_old.get(root, {}) and mine != roots_new.get(root, {}):
            tally.torn += 1
            tally.failures.append(f"trial {tally.trials}: {root} is neither old nor new after recovery")
    _check_kept(run, now, tally, "after recovery")
    if run.mode.checkout:
        tree = head_tree(run.repo)
        if tree not in (old_head, new.tree):
            tally.torn += 1
            tally.failures.append(f"trial {tally.trials}: HEAD's tree is neither the old nor the new one")
        dirty = git(run.repo, "status", "--porcelain", "--untracked-files=no")
        if dirty:
            tally.torn += 1
            tally.failures.append(f"trial {tally.trials}: work tree or index off HEAD after recovery: {dirty[:200]}")
    _check_leftovers(run, tally, "after recovery")


def _check_kept(run: Run, now: Files, tally: Tally, when: str) -> None:
    lost = [p for p, data in run.kept.items() if now.get(p) != data]
    if lost:
        tally.lost += len(lost)
        tally.failures.append(f"trial {tally.trials}: {len(lost)} kept files lost {when}, e.g. {lost[0]}")


def check_rerun(run: Run, new: State, tally: Tally) -> None:
    try:
        run.mode.rerun(run.repo)
    except Exception as e:  # noqa: BLE001 - a failed rerun is a finding, reported with the others
        tally.failures.append(f"trial {tally.trials}: the rerun failed: {type(e).__name__}: {e}")
        return
    now = snapshot(run.repo)
    _check_kept(run, now, tally, "after the rerun")
    differs = sorted(p for p in set(now) | set(new.files) if now.get(p) != new.files.get(p))
    if run.mode.checkout and (head_tree(run.repo) != new.tree or git(run.repo, "status", "--porcelain",
                                                                        "--untracked-files=no")):
        differs.append("HEAD or the index")
    if differs:
        tally.divergent += 1
        tally.failures.append(f"trial {tally.trials}: the rerun differs from a clean run: {differs[:3]}")
    _check_leftovers(run, tally, "after the rerun")


def _check_leftovers(run: Run, tally: Tally, when: str) -> None:
    left = leftovers(run.repo)
    if left:
        tally.leftovers += len(left)
        tally.failures.append(f"trial {tally.trials}: left over {when}: {left[:3]}")


def run_mode(name: str, base: Path, wecs: int, objects: int, kills: int, seed: int,
             budget: float | None = None, progress: bool = False) -> Tally:
    """`kills` trials (fewer when `budget` seconds run out first) of one mode."""
    mode = modes()[name]
    forget_reads()  # another mode's fleet: nothing to reuse, much to hold
    run = Run(mode, base / name, wecs, objects)
    states: dict[int, State] = {}
    for state in (1, 0):
        states[state], _seconds, _writing = clean_state(run, state)
    # The trials go back and forth between the same two states, which ksgitops' caches and records
    # make faster than the first time: a second round, warm like the trials, sets the kill window
    # (its shorter run, so that a loaded machine does not push kills past the end), and must give
    # the same states.
    took: list[tuple[float, float]] = []
    for state in (1, 0):
        again, seconds, writing = clean_state(run, state)
        if again != states[state]:
            raise RuntimeError(f"{name}: a second clean run to state {state} gave another result")
        took.append((seconds, writing))
    window = Window(min(t[0] for t in took), min(t[1] for t in took))
    rng = random.Random(f"{seed}/{name}")
    tally = Tally(name)
    current = 0
    stop = time.monotonic() + budget if budget else None
    while tally.trials < kills and (stop is None or time.monotonic() < stop):
        tally.trials += 1
        target = 1 - current
        mode.toggle(run, target)
        old_head = head_tree(run.repo) if mode.checkout else ""
        killed, while_writing = kill_at_random(run, rng, window, after_write=tally.trials % 2 == 0)
        tally.kills += killed
        tally.kills_writing += while_writing
        app.open_source(run.repo, app.WORKTREE)  # what every command does first: recover
        check_recovered(run, states[current], states[target], old_head, tally)
        check_rerun(run, states[target], tally)
        current = target
        if progress:
            print(f"  {name}: trial {tally.trials}, {tally.kills} kills, {len(tally.failures)} findings", file=sys.stderr,
                  flush=True)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wecs", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--kills", type=int, default=60, help="trials per mode (about one kill each)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, default=None, help="where the fleets go (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the fleets")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="ksgitops-crash-", dir=args.workdir))
    print(f"{args.wecs} WECs x {args.objects} objects, {args.kills} trials per mode, seed {args.seed}, in {base}\n")
    print("| mode | trials | kills | kills while writing | lost files | torn roots | divergent reruns | leftovers | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    try:
        for name in args.modes.split(","):
            started = time.monotonic()
            t = run_mode(name, base, args.wecs, args.objects, args.kills, args.seed, progress=True)
            print(f"| {name} | {t.trials} | {t.kills} | {t.kills_writing} | {t.lost} | {t.torn} | {t.divergent} | "
                  f"{t.leftovers} | {time.monotonic() - started:.0f} |", flush=True)
            for line in t.failures[:10]:
                print(f"  - {line}", file=sys.stderr)
            ok = ok and t.ok()
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
