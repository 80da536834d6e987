"""`ksgitops run`'s clone after a process killed inside libgit2's fetch: the ref lock it left is
cleared by the next cycle when the killed process had named the refs it was moving; a lock it
cannot prove its own is named in the cycle's error with the way out, and never removed.

Real kills at the exact moment: strace injects SIGKILL into the real `ksgitops run` when libgit2
renames the `.lock` of one report ref (skipped where strace is missing or may not trace).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_example_sources, git, git_init
from ksgitops.io.fs.durable import REF_INTENT, moving_refs

ROOT = Path(__file__).resolve().parents[1]
REPORTED = "refs/heads/ksgitops/reported/"
WECS = ("wec1", "wec2", "wec3")


def _strace_works() -> bool:
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True).returncode == 0


needs_strace = pytest.mark.skipif(not _strace_works(), reason="strace is missing or may not trace here")


def run_once(bare: Path, workdir: Path, killed_at: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`ksgitops run --once` on `bare`; with `killed_at`, SIGKILLed when it renames that file."""
    command = [sys.executable, "-m", "ksgitops", "run", "--repo", str(bare), "--workdir", str(workdir), "--once",
               "--port", "0"]
    if killed_at is not None:
        command = ["strace", "-f", "-qq", "-o", "/dev/null", "-P", str(killed_at),
                   "-e", "trace=rename,renameat,renameat2",
                   "-e", "inject=rename,renameat,renameat2:signal=KILL", *command]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)


def fleet(tmp_path: Path) -> tuple[Path, Path]:
    """The example served as a bare repository with three WECs' report refs, and a source clone."""
    seed = git_init(copy_example_sources(tmp_path / "seed"))
    for wec in WECS:
        git(seed, "branch", f"ksgitops/reported/{wec}")
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(seed), str(bare)], check=True)
    return seed, bare


def report_again(seed: Path, bare: Path) -> None:
    """A new commit upstream, every report ref moved to it: the next fetch moves them all."""
    git(seed, "commit", "-q", "--allow-empty", "-m", "reports")
    for wec in WECS:
        git(seed, "branch", "-f", f"ksgitops/reported/{wec}", "HEAD")
    git(seed, "push", "-q", "--force", str(bare), f"{REPORTED}*:{REPORTED}*")


def locks(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.lock") if p.parent.name != "ksgitops-state")


@needs_strace
def test_a_ref_lock_a_killed_fetch_left_is_cleared_by_the_next_cycle(tmp_path: Path) -> None:
    """Before: the killed cycle's `refs/remotes/origin/ksgitops/reported/wec2.lock` stayed, and every
    later cycle failed on it ("failed to lock file ... for writing") until someone removed it."""
    seed, bare = fleet(tmp_path)
    work = tmp_path / "work"
    first = run_once(bare, work)
    assert first.returncode == 0, first.stderr
    [clone] = work.glob("*.git")
    report_again(seed, bare)
    lock = clone / "refs/remotes/origin/ksgitops/reported/wec2.lock"
    foreign = clone / "refs/heads/elsewhere.lock"  # not a ref the fetch moves: never ours to remove
    foreign.write_text("")
    killed = run_once(bare, work, killed_at=lock)
    assert killed.returncode == -9 or killed.returncode == 137, killed.stderr
    assert locks(clone) == ["refs/heads/elsewhere.lock", "refs/remotes/origin/ksgitops/reported/wec2.lock"]
    again = run_once(bare, work)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr and "cycle failed" not in again.stderr
    assert locks(clone) == ["refs/heads/elsewhere.lock"] and not (clone / REF_INTENT).exists()
    for wec in WECS:  # the fetch the kill cut short was done whole
        assert git(clone, "rev-parse", f"refs/remotes/origin/ksgitops/reported/{wec}") == git(seed, "rev-parse", "HEAD")


def test_a_lock_no_ksgitops_named_is_left_and_named_with_the_way_out(tmp_path: Path) -> None:
    """A `.lock` on a report ref that no intent names (a git working in the clone, or an earlier
    version killed): left alone; the cycle fails on one line naming the file and what to do (before:
    libgit2's "failed to lock file '...' for writing: ", and nothing more)."""
    seed, bare = fleet(tmp_path)
    work = tmp_path / "work"
    assert run_once(bare, work).returncode == 0
    [clone] = work.glob("*.git")
    report_again(seed, bare)
    lock = clone / "refs/remotes/origin/ksgitops/reported/wec1.lock"
    lock.write_text("")
    found = run_once(bare, work)
    assert found.returncode == 3, found.stderr
    [failed] = [line for line in found.stderr.splitlines() if "cycle failed" in line]
    assert f"{lock} is there (a git process is working in this clone, or one was killed: when none is running, " \
           f"remove that file)" in failed
    assert "Traceback" not in found.stderr and lock.exists()
    lock.unlink()
    assert run_once(bare, work).returncode == 0


def test_a_move_inside_another_keeps_the_outer_refs_named(tmp_path: Path) -> None:
    """Nested moves of one process: the inner one neither clears the outer's locks nor drops its
    refs from the intent (a kill after the inner move must still clear the outer's lock)."""
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    git_dir = repo / ".git"
    intent = git_dir / REF_INTENT
    with moving_refs(str(git_dir), "refs/heads/main"):
        (git_dir / "refs/heads/main.lock").write_text("")  # as libgit2 does, in the middle of the move
        with moving_refs(str(git_dir), "refs/remotes/origin/*", "FETCH_HEAD"):
            assert intent.read_text().split() == ["refs/heads/main", "refs/remotes/origin/*", "FETCH_HEAD"]
            assert (git_dir / "refs/heads/main.lock").exists()
        assert intent.read_text().split() == ["refs/heads/main"]
        os.unlink(git_dir / "refs/heads/main.lock")
    assert not intent.exists()


KILLED_IN_A_FETCH = """
import os, signal, sys
from ksgitops.io.fs.durable import moving_refs
git_dir = sys.argv[1]
with moving_refs(git_dir, "refs/remotes/origin/main", "refs/remotes/origin/reported/*", "FETCH_HEAD", "shallow"):
    for name in ("refs/remotes/origin/reported/a/b.lock", "FETCH_HEAD.lock", "shallow.lock"):
        os.makedirs(os.path.dirname(os.path.join(git_dir, name)), exist_ok=True)
        open(os.path.join(git_dir, name), "w").close()  # as libgit2 does
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_fetch_s_pattern_and_git_file_locks_are_cleared_and_nothing_else(tmp_path: Path) -> None:
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    git_dir = repo / ".git"
    (git_dir / "refs/remotes/other").mkdir(parents=True)
    (git_dir / "refs/remotes/other/x.lock").write_text("")  # beside the pattern's folder: not named
    (git_dir / "config.lock").write_text("")  # a file the fetch did not name
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_A_FETCH, str(git_dir)], cwd=ROOT, timeout=60)
    assert killed.returncode == -9
    with moving_refs(str(git_dir), "refs/heads/main"):
        pass
    assert locks(git_dir) == ["config.lock", "refs/remotes/other/x.lock"]


def test_a_move_whose_intent_could_not_be_written_leaves_no_trace_in_the_process(tmp_path: Path, monkeypatch) -> None:
    """Before: a failed write of the intent (a full disk) left its refs recorded in the process, so
    every later move of that process (a `run`, cycle after cycle) took itself for a nested one:
    it no longer cleared a dead mover's locks, and left the intent file behind after each move."""
    from ksgitops.io.fs import durable
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    git_dir = repo / ".git"
    written = durable.write_state

    def full_disk(path: Path, data: bytes) -> None:
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(durable, "write_state", full_disk)
    with pytest.raises(OSError):
        with moving_refs(str(git_dir), "refs/heads/main"):
            pass
    monkeypatch.setattr(durable, "write_state", written)
    (git_dir / "refs/heads/dead.lock").write_text("")  # a process killed while moving refs/heads/dead
    written(git_dir / REF_INTENT, b"refs/heads/dead\n")
    with moving_refs(str(git_dir), "refs/heads/main"):
        pass
    assert locks(git_dir) == [] and not (git_dir / REF_INTENT).exists()
