"""Two ksgitops folders in one git repository (a monorepo's infra/staging/ and infra/prod/) keep
apart the state that describes one folder (io/fs/folderstate.py): each one's stat record, status
memo and monitor, so that a run in one leaves the other's proof standing and each has a monitor of
its own; the folder at the top of the work tree keeps the state folder's old paths."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import EXAMPLE, copy_example_sources, git, git_init, run_cli_subprocess
from handoff_twins import ks
from ksgitops.app import monitor as monitoring, usecases as app
from ksgitops.io.fs import statcache
from ksgitops.io.fs.afterwards import settled
from ksgitops.io.fs.feed import request
from ksgitops.io.fs.folderstate import place_of
from monitor_process import alive, start
from test_worktree_proof import until_proven

STATE = Path(".git/ksgitops-state")


@pytest.fixture
def mono(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(top, staging, prod): the example with its reports in infra/staging/, its sources alone in
    infra/prod/, committed in one git repository whose top holds no spaces/."""
    top = tmp_path / "mono"
    staging, prod = top / "infra/staging", top / "infra/prod"
    shutil.copytree(EXAMPLE, staging)
    copy_example_sources(prod)
    (top / "README.md").write_text("two environments\n")
    git_init(top)
    return top, staging, prod


def test_a_run_in_one_folder_leaves_the_others_record_standing(mono: tuple[Path, Path, Path]) -> None:
    top, staging, prod = mono
    until_proven(staging)
    until_proven(prod)
    assert isinstance(app.reconcile_worktree(staging), app.ProvenOutcome)  # nothing read: its record holds
    assert isinstance(app.reconcile_worktree(prod), app.ProvenOutcome)
    records = sorted(p.relative_to(top / STATE) for p in (top / STATE).rglob("worktree.pickle"))
    assert len(records) == 2 and all(str(p).startswith("folders/") for p in records), records
    assert {str(p.parent) for p in records} == {place_of(f).removeprefix(f"{STATE.name}/") for f in (staging, prod)}


def test_each_folder_keeps_its_own_status_memo(mono: tuple[Path, Path, Path]) -> None:
    top, staging, prod = mono
    for folder in (staging, prod):
        assert run_cli_subprocess("reconcile", str(folder)).returncode in (0, 2)
    assert run_cli_subprocess("status", str(staging)).returncode in (0, 2)
    settled(top / STATE)  # the memo is written once the command has answered
    [staging_memo] = (top / STATE).rglob("status-worktree.sqlite")
    kept = staging_memo.read_bytes()
    assert run_cli_subprocess("status", str(prod)).returncode in (0, 2)  # prod has no reports: another memo
    settled(top / STATE)
    memos = sorted((top / STATE).rglob("status-worktree.sqlite"))
    assert len(memos) == 2 and staging_memo in memos
    assert staging_memo.read_bytes() == kept
    assert run_cli_subprocess("status", str(staging)).returncode in (0, 2)
    settled(top / STATE)
    assert staging_memo.read_bytes() == kept  # nothing changed in staging: its memo is not written again


@pytest.fixture
def pids() -> Iterator[list[int]]:
    """Monitors a test started, killed after it."""
    started: list[int] = []
    yield started
    for pid in started:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _status(folder: Path) -> dict | None:
    done = run_cli_subprocess("monitor", "status", str(folder), "-o", "json")
    return json.loads(done.stdout) if done.returncode == 0 else None


def _served(folder: Path) -> int:
    reply = request(str(folder.parent.parent / ".git"), {"op": "status"}, place=place_of(folder))
    assert reply is not None
    return int(reply["served"])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_each_folder_has_a_monitor_of_its_own(mono: tuple[Path, Path, Path], pids: list[int]) -> None:
    top, staging, prod = mono
    pids.append(start(staging))
    pids.append(start(prod))  # it was refused: the first monitor held the repository's one lock
    assert pids[0] != pids[1]
    for folder, pid in zip((staging, prod), pids):
        facts = _status(folder)
        assert facts is not None and facts["pid"] == pid
        git_dir = str(top / ".git")
        record = statcache.WorkTreeRecord.load(folder, git_dir)
        record.follow(git_dir)
        assert record.followed  # its own monitor answered its run
    assert "watching" in (top / ".git" / place_of(prod) / "monitor.log").read_text()
    # a command is handed to the monitor of the folder it runs in
    assert ks("reconcile", cwd=prod).returncode in (0, 2)
    assert (_served(staging), _served(prod)) == (0, 1)
    assert ks("diff", "infra/staging", cwd=top).returncode in (0, 1, 2)
    assert (_served(staging), _served(prod)) == (1, 1)
    assert run_cli_subprocess("monitor", "stop", str(staging)).stdout == "stopped\n"
    assert _status(staging) is None and _status(prod) is not None
    assert run_cli_subprocess("monitor", "stop", str(prod)).stdout == "stopped\n"
    assert _status(prod) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_monitor_is_started_by_itself_beside_another_folders(mono: tuple[Path, Path, Path], pids: list[int]) -> None:
    _, staging, prod = mono
    pids.append(start(staging))
    monitoring.start_in_background(prod, idle_exit=60)
    deadline = time.monotonic() + 60
    while (facts := monitoring.status(prod)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert facts is not None and facts["pid"] != pids[0]
    pids.append(facts["pid"])


def test_the_folder_at_the_top_keeps_the_state_folders_old_paths(example_git: Path) -> None:
    inner = copy_example_sources(example_git / "sub/inner")  # a second ksgitops folder, below the top
    git(example_git, "add", "-A")
    git(example_git, "commit", "-q", "-m", "inner")
    until_proven(example_git)
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    until_proven(inner)
    assert run_cli_subprocess("status", str(inner)).returncode in (0, 2)
    state = example_git / STATE
    assert (state / "worktree.pickle").is_file() and (state / "status-worktree.sqlite").is_file()
    assert isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    (state / "worktree.pickle").unlink()  # the record the top's run reads is the one at the old path
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    assert isinstance(app.reconcile_worktree(inner), app.ProvenOutcome)


@pytest.mark.parametrize("command", [("reconcile",), ("status",), ("monitor", "start")])
def test_a_link_on_the_way_to_a_folders_own_state_is_not_followed(mono: tuple[Path, Path, Path], tmp_path: Path,
                                                                  command: tuple[str, ...]) -> None:
    top, _, prod = mono
    outside = tmp_path / "outside"
    outside.mkdir()
    (top / STATE).mkdir()
    os.symlink(outside, top / STATE / "folders")
    done = run_cli_subprocess(*command, str(prod))
    assert done.returncode == 2, done
    assert done.stderr.startswith(f"{top / STATE / 'folders'}: is a symbolic link"), done.stderr
    assert "Traceback" not in done.stderr and not any(outside.iterdir())


def test_a_folders_state_name_is_safe_short_and_its_own() -> None:
    from ksgitops.io.fs.folderstate import name_of
    paths = ["infra/staging", "infra+staging", "infra_staging", "infra/stäging", "infra/st ging", "x" * 300 + "/a",
             "x" * 300 + "/b", ".hidden/env"]
    names = [name_of(p) for p in paths]
    assert len(set(names)) == len(paths)
    assert all(len(n) <= 60 and not n.startswith(".") and all(c.isascii() and (c.isalnum() or c in "._+-") for c in n)
               for n in names), names
    assert name_of("infra/staging").startswith("infra+staging-") and name_of("infra/staging") == name_of("infra/staging")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_folder_named_below_a_C_folder_is_handed_to_its_own_monitor(mono: tuple[Path, Path, Path],
                                                                       pids: list[int]) -> None:
    """REPO is found below the `-C` folders (each below the one before, wherever they are given),
    as the command finds it: the hand-off asks that folder's monitor, not the top's."""
    top, _, prod = mono
    pids.append(start(prod))
    for args in (("-C", "infra", "diff", "prod"), ("diff", "prod", "-C", "infra"), ("-C", "infra", "-C", "prod", "diff")):
        before = _served(prod)
        assert ks(*args, cwd=top).returncode in (0, 1, 2), args
        assert _served(prod) == before + 1, args


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")
def test_a_bare_repository_below_a_ksgitops_folder_is_handed_to_its_own_monitor(mono: tuple[Path, Path, Path],
                                                                                  tmp_path: Path, pids: list[int]) -> None:
    """A bare repository's monitor keeps its state in the repository's own state folder: a command
    given that repository asks it, wherever the repository lies (here inside infra/prod/)."""
    top, _, prod = mono
    solo = git_init(copy_example_sources(tmp_path / "solo"))
    mirror = prod / "mirror.git"
    git(top, "clone", "-q", "--bare", str(solo), str(mirror))
    pids.append(start(mirror))
    reply = request(str(mirror), {"op": "status"})
    assert reply is not None and reply["served"] == 0
    assert ks("status", "--commit", str(mirror), cwd=top).returncode == 0
    reply = request(str(mirror), {"op": "status"})
    assert reply is not None and reply["served"] == 1


def _own(top: Path, folder: Path) -> Path:
    return top / ".git" / place_of(folder)


def test_a_renamed_folders_state_goes_when_its_new_name_settles_in(mono: tuple[Path, Path, Path]) -> None:
    top, staging, prod = mono
    for folder in (staging, prod):
        assert run_cli_subprocess("reconcile", str(folder)).returncode in (0, 2)
    settled(top / STATE)
    old, kept = _own(top, staging), _own(top, prod)
    assert (old / "folder").read_text() == "infra/staging" and (old / "worktree.pickle").is_file()
    renamed = staging.rename(top / "infra/stage")
    assert run_cli_subprocess("reconcile", str(renamed)).returncode in (0, 2)
    settled(top / STATE)
    assert (_own(top, renamed) / "worktree.pickle").is_file()
    assert not old.exists()  # its folder holds no spaces/ any more
    assert (kept / "worktree.pickle").is_file()  # prod is still there


def test_a_monitored_or_unnamed_state_folder_stays(mono: tuple[Path, Path, Path]) -> None:
    from ksgitops.io.fs.feed import hold_monitor_lock
    top, staging, prod = mono
    folders = top / STATE / "folders"
    watched, young, old, foreign = (folders / n for n in ("gone-0", "new-1", "old-2", "odd-3"))
    held = hold_monitor_lock(watched)  # a monitor still runs for a folder that is gone
    for place in (young, old, foreign):
        place.mkdir(parents=True)
    (watched / "folder").write_text("infra/gone")
    (foreign / "folder").write_text("../../elsewhere")  # names no folder of this work tree: not judged
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    try:
        assert run_cli_subprocess("reconcile", str(prod)).returncode in (0, 2)
        settled(top / STATE)
        assert sorted(p.name for p in folders.iterdir()) == sorted([watched.name, young.name, old.name, foreign.name,
                                                                     _own(top, prod).name])
    finally:
        os.close(held)


@pytest.mark.parametrize("top_is_a_folder", [False, True])
def test_an_older_versions_files_for_a_nested_folder_go_from_the_top(mono: tuple[Path, Path, Path],
                                                                      top_is_a_folder: bool) -> None:
    """An older ksgitops kept a nested folder's record and status memo where the top's go."""
    top, staging, _ = mono
    state = top / STATE
    state.mkdir()
    for name in ("worktree.pickle", "status-worktree.sqlite", "cache.pickle"):
        (state / name).write_bytes(b"left by an older version")
    if top_is_a_folder:
        (top / "spaces").mkdir()
    assert run_cli_subprocess("reconcile", str(staging)).returncode in (0, 2)
    settled(state)
    left = {"worktree.pickle", "status-worktree.sqlite", "cache.pickle"} & {p.name for p in state.iterdir()}
    assert left == ({"worktree.pickle", "status-worktree.sqlite", "cache.pickle"} if top_is_a_folder else {"cache.pickle"})
