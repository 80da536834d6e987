"""`status` answers first and keeps its memo after (io/fs/afterwards.py): the status memo is
written once the command has answered, in a store of its own, and never over a memo another run
saved since this one read; the program ends without freeing its objects one by one, yet with
its exit handlers run, its streams written out and the exit code the interpreter would give."""
from __future__ import annotations

import json
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example_sources, git_init
from ksgitops.app import usecases as app
from ksgitops.core.status.recompute import Recomputed
from ksgitops.core.status.rows import Row
from ksgitops.core.status.summary import MemorySource, summarize, with_reports
from ksgitops.io import status_sources as ss
from ksgitops.io.fs import paths
from ksgitops.io.git import cache
from handoff_twins import ks, served
from status_reports import COMMOND, FLORIN, rs_report

SLOW_MEMO = '''
import os, time
if os.environ.get("KSGITOPS_TEST_SLOW_MEMO"):
    import ksgitops.io.status_sources as ss
    write = ss._write_memo
    def slow(*args):
        time.sleep(float(os.environ["KSGITOPS_TEST_SLOW_MEMO"]))
        return write(*args)
    ss._write_memo = slow
if os.environ.get("KSGITOPS_TEST_HOLD_COMMIT"):
    from pathlib import Path
    import ksgitops.app.status as status
    commit = status.commit_on_branch
    def held(*args, **kwargs):
        flags = Path(os.environ["KSGITOPS_TEST_HOLD_COMMIT"])
        (flags / "loaded").touch()
        while not (flags / "go").exists():
            time.sleep(0.05)
        return commit(*args, **kwargs)
    status.commit_on_branch = held
'''


def _index_written(path: Path) -> bool:
    if not path.exists():
        return False
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM memo WHERE name = 'index'").fetchone()[0] == 1
    except sqlite3.OperationalError:  # no table yet
        return False
    finally:
        db.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")
@pytest.mark.parametrize("handed", [True, False], ids=["handed", "own process"])
def test_status_commit_answers_before_its_memo_is_kept_and_a_reader_waits_for_it(
        tmp_path: Path, handed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ss, "_warm", {})
    src = git_init(copy_example_sources(tmp_path / "src"))
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_MEMO)  # loaded by the monitor and by the askers
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "KSGITOPS_TEST_SLOW_MEMO": "4"}
    assert ks("reconcile", str(bare), "--commit", handed=False, env=env).returncode == 0
    cache.DiskCache.for_git_dir(str(bare)).record  # noqa: B018 - waits for the reconcile's memos
    pid = None
    if handed:
        started = ks("monitor", "start", str(bare), "-o", "json", env=env)
        assert started.returncode == 0, started.stderr
        pid = int(json.loads(started.stdout)["pid"])
    try:
        before = served(bare) if handed else 0
        done = ks("status", ".", "--commit", env=env, handed=handed, cwd=bare)  # through pipes, to their end
        assert done.returncode == 0 and "committed" in done.stdout, done.stderr
        if handed:
            assert served(bare) == before + 1
        path = bare / paths.STATE_DIR / ss.memo_name("git")
        assert not _index_written(path)  # answered, the memo not yet kept
        memo = ss.load_memo(path)  # waits for the lock of the process keeping it
        assert memo.mailboxes and _index_written(path)
        again = ks("status", ".", "--commit", "-o", "json", cwd=bare, handed=handed)
        assert again.returncode == 0 and json.loads(again.stdout)["commit"] is None, again.stderr
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def result(example: Path) -> Any:
    return app.compute(app.open_source(example, app.WORKTREE))


def test_a_run_that_fails_after_reading_the_memo_holds_back_no_other_run_s_memo(tmp_path: Path) -> None:
    """B reads the memo, then fails to commit (A committed first); A's memo is being kept meanwhile.
    B's read ends with its run, and B does not wait for A's lock before ending: A's memo is kept."""
    src = git_init(copy_example_sources(tmp_path / "src"))
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    site, flags = tmp_path / "site", tmp_path / "flags"
    site.mkdir()
    flags.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_MEMO)
    pythonpath = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    assert ks("reconcile", str(bare), "--commit", handed=False).returncode == 0
    cache.DiskCache.for_git_dir(str(bare)).record  # noqa: B018 - waits for the reconcile's memos
    slow_b = subprocess.Popen([sys.executable, "-m", "ksgitops", "status", str(bare), "--commit"], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": pythonpath, "KSGITOPS_TEST_HOLD_COMMIT": str(flags),
                                   "KSGITOPS_HANDOFF": "0"})
    try:
        deadline = time.monotonic() + 120
        while not (flags / "loaded").exists() and slow_b.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (flags / "loaded").exists(), slow_b.communicate()
        first_a = ks("status", str(bare), "--commit", handed=False,
                     env={"PYTHONPATH": pythonpath, "KSGITOPS_TEST_SLOW_MEMO": "3"})
        assert first_a.returncode == 0 and "committed" in first_a.stdout, first_a.stderr
        (flags / "go").touch()
        _, err = slow_b.communicate(timeout=120)
        assert slow_b.returncode == 3, err  # the branch moved under it
    finally:
        slow_b.kill()
    path = bare / paths.STATE_DIR / ss.memo_name("git")
    memo = ss.load_memo(path)  # waits for A's child
    ss.save_memo(path, memo)
    assert memo.mailboxes and _index_written(path)


def test_a_memo_saved_since_this_run_read_its_own_is_kept(result: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs read the same memo; the first to save wins, the second writes nothing over it
    (each entry is true for its own run, but a mix of two runs' entries is not one memo)."""
    monkeypatch.setattr(ss, "_warm", {})
    path = tmp_path / "status-git.sqlite"

    def reports(step: int) -> Any:
        return MemorySource(with_reports(result.generated, {FLORIN: {f"{COMMOND}.yaml": rs_report(step % 2, f"2026-01-01T00:00:0{step}Z")}}))

    def saved_key() -> str:
        memo = ss.load_memo(path)
        ss.save_memo(path, memo)  # unchanged: ends its read, writes nothing
        return memo.mailboxes[FLORIN].key
    first = ss.load_memo(path)
    summarize(result, reports(0), first)
    ss.save_memo(path, first)
    mine, theirs = ss.load_memo(path), ss.load_memo(path)
    summarize(result, reports(1), theirs)
    summarize(result, reports(2), mine)
    assert mine.mailboxes[FLORIN].key != theirs.mailboxes[FLORIN].key
    ss._STORES[id(mine)].close()  # done reading: its read no longer holds theirs back from committing
    ss.save_memo(path, theirs)
    ss.save_memo(path, mine)  # read before theirs was saved: nothing written
    assert saved_key() == theirs.mailboxes[FLORIN].key
    latest = ss.load_memo(path)
    summarize(result, reports(2), latest)
    ss.save_memo(path, latest)  # read after: written
    assert saved_key() == mine.mailboxes[FLORIN].key


def test_a_reader_that_waits_out_another_s_lock_leaves_the_memo_in_place(result: Any, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader locked out past the busy timeout (another process commits, or holds the file's
    exclusive lock) reads no memo and removes nothing: only a damaged memo is started anew."""
    monkeypatch.setattr(ss, "_warm", {})
    monkeypatch.setattr(ss, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "status-git.sqlite"
    memo = ss.load_memo(path)
    summarize(result, MemorySource(result.generated), memo)
    ss.save_memo(path, memo)
    saved = path.read_bytes()
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        assert not ss.load_memo(path).mailboxes  # locked out: no memo this run
    finally:
        other.rollback()
        other.close()
    assert path.read_bytes() == saved
    again = ss.load_memo(path)
    assert set(again.mailboxes) == set(memo.mailboxes)
    ss.release_memo(again)
    path.write_bytes(b"not a database, " * 100)
    journal = path.with_name(path.name + "-journal")
    journal.write_bytes(b"a journal of another file")
    ss.release_memo(ss.load_memo(path))
    assert not path.exists() or path.read_bytes() != b"not a database, " * 100  # damaged: started anew
    assert not journal.exists()  # never played back into the new memo


def test_a_recomputed_mailbox_crosses_a_pipe_with_its_rows_whole() -> None:
    row = Row("wmw-c", "Healthy", "", "2026-01-01T00:00:00Z", 3, ("p",), False, "data", "patch", "report", "", None)
    done = Recomputed("mb", None, [(("wmw-c", "apps/deployments/ns/a"), row), (("wmw-c", "core/configmaps/ns/b"), None)])  # type: ignore[arg-type]
    back = pickle.loads(pickle.dumps(done, pickle.HIGHEST_PROTOCOL))
    assert back == done and type(back.changes[0][1]) is Row and back.changes[0][1].report == "report"
    assert back.changes[1][1] is None


PROGRAM = '''
import atexit, sys, threading, time
from ksgitops.io.fs import afterwards
atexit.register(lambda: print("exit handler", flush=False))
how = sys.argv[1]
def run():
    print("answer", end="")
    if how == "thread":
        threading.Thread(target=lambda: (time.sleep(0.5), print(" thread done", end=""))).start()
        return
    raise SystemExit(int(how) if how.isdigit() else (None if how == "none" else how))
afterwards.leave(afterwards.exit_code(run))
'''


@pytest.mark.parametrize("how, code", [("none", 0), ("4", 4), ("a message", 1), ("thread", 0)])
def test_the_program_ends_with_its_handlers_run_its_streams_written_and_its_exit_code(how: str, code: int) -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM, how], capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stderr
    assert done.stdout.startswith("answer") and done.stdout.endswith("exit handler\n"), done.stdout
    assert ("thread done" in done.stdout) == (how == "thread")  # another thread: the plain exit, which waits for it
    assert done.stderr == ("a message\n" if how == "a message" else "")
