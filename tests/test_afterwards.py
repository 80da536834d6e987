"""Memos kept after the answer (io/fs/afterwards.py): now in a command's own process; after the
answer in a monitor's worker, under a lock taken just before the answer, that a reader in
another process waits for."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from ksgitops.io.fs import afterwards

READER = """
import sys, time
from pathlib import Path
from ksgitops.io.fs.afterwards import settled
print("waiting", flush=True)
settled(Path(sys.argv[1]))
print("kept" if (Path(sys.argv[1]) / "memo").exists() else "missing", flush=True)
"""


@pytest.fixture(autouse=True)
def _no_queue_left() -> Iterator[None]:
    yield
    afterwards.finish()  # a failing test leaves no lock held nor work queued for the next


def read_in_another_process(state: Path) -> str:
    return subprocess.run([sys.executable, "-c", READER, str(state)], capture_output=True, text=True,
                          timeout=60).stdout


def test_without_a_worker_work_is_done_at_once(tmp_path: Path) -> None:
    done: list[int] = []
    afterwards.later(tmp_path / "state", lambda: done.append(1))
    assert done == [1]
    assert not (tmp_path / "state").exists()  # nothing to lock


def test_until_the_answer_nothing_is_held_and_then_a_reader_waits_for_the_memos(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    afterwards.defer()
    afterwards.later(state, lambda: (state / "memo").write_text("kept"))
    assert read_in_another_process(state) == "waiting\nmissing\n"  # the memos as they were: no wait
    afterwards.hold()  # just before the answer
    reader = subprocess.Popen([sys.executable, "-c", READER, str(state)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "waiting\n"
        time.sleep(0.3)
        assert reader.poll() is None  # still waiting for the lock
        afterwards.finish()
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
    assert out == "kept\n"


def test_the_worker_s_own_read_does_its_queued_work_first_in_order(tmp_path: Path) -> None:
    state, other, done = tmp_path / "state", tmp_path / "other", []
    afterwards.defer()
    afterwards.later(state, lambda: done.append("first"))
    afterwards.later(other, lambda: done.append("other"))
    afterwards.later(state, lambda: done.append("second"))
    afterwards.settled(state)
    assert done == ["first", "second"]
    afterwards.finish()
    assert done == ["first", "second", "other"]


def test_a_failing_memo_costs_the_others_nothing_and_lets_readers_in(tmp_path: Path) -> None:
    state, done = tmp_path / "state", []
    state.mkdir()

    def fails() -> None:
        raise OSError("disk full")

    afterwards.defer()
    afterwards.later(state, fails)
    afterwards.later(state, lambda: done.append("second"))
    afterwards.hold()
    afterwards.finish()
    assert done == ["second"]
    assert read_in_another_process(state) == "waiting\nmissing\n"


@pytest.mark.parametrize("in_the_way", ["no folder", "a link", "a fifo", "a folder"])
def test_no_lock_to_take_means_the_work_is_done_before_the_answer(tmp_path: Path, in_the_way: str) -> None:
    state = tmp_path / "state"
    if in_the_way != "no folder":
        state.mkdir()
    lock = state / afterwards.LOCK_FILE
    if in_the_way == "a link":
        lock.symlink_to(tmp_path / "outside")
    elif in_the_way == "a fifo":
        os.mkfifo(lock)
    elif in_the_way == "a folder":
        lock.mkdir()
    done: list[int] = []
    afterwards.defer()
    afterwards.later(state, lambda: done.append(1))
    afterwards.hold()
    assert done == [1]
    assert not (tmp_path / "outside").exists()
    if in_the_way != "no folder":
        assert read_in_another_process(state) == "waiting\nmissing\n"  # a reader does not hang on it either


HOLDER = """
import fcntl, sys
with open(sys.argv[1], "ab") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    print("held", flush=True)
    sys.stdin.readline()  # until told (or killed)
"""


def another_run_holding(state: Path) -> subprocess.Popen[str]:
    """A process holding the lock of `state` (as a run keeping its memos) until told or killed."""
    other = subprocess.Popen([sys.executable, "-c", HOLDER, str(state / afterwards.LOCK_FILE)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert other.stdout is not None and other.stdout.readline() == "held\n"
    return other


def test_a_lock_another_run_holds_is_waited_for_after_the_answer_not_before(tmp_path: Path) -> None:
    """Another run's memos being kept: `hold` (just before the answer) returns at once, and the
    work waits for that run in `finish` (after the answer), then holds the lock itself."""
    state = tmp_path / "state"
    state.mkdir()
    other = another_run_holding(state)
    try:
        afterwards.defer()
        afterwards.later(state, lambda: (state / "memo").write_text("kept"))
        holding = threading.Thread(target=afterwards.hold)
        holding.start()
        holding.join(30)
        assert not holding.is_alive(), "hold() waited for the other run"  # the answer does not wait
        assert not (state / "memo").exists()
        assert other.stdin is not None
        other.stdin.write("\n")  # the other run's memos are kept: it lets go
        other.stdin.flush()
        afterwards.finish()  # waits for it, then does the work
        assert (state / "memo").read_text() == "kept"
    finally:
        other.kill()
        other.wait(timeout=60)


PROBE = """
import fcntl, sys
with open(sys.argv[1], "ab") as f:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        print("free")
    except BlockingIOError:
        print("held")
"""


def lock_seen_from_another_process(state: Path) -> str:
    return subprocess.run([sys.executable, "-c", PROBE, str(state / afterwards.LOCK_FILE)], capture_output=True,
                          text=True, timeout=60).stdout.strip()


def test_work_done_at_once_holds_the_lock_a_reader_waits_for(tmp_path: Path) -> None:
    """`render`, `validate`, a library's call: no worker, yet the memos are kept as a worker keeps them."""
    state = tmp_path / "state"
    state.mkdir()
    seen: list[str] = []
    afterwards.later(state, lambda: seen.append(lock_seen_from_another_process(state)))
    assert seen == ["held"]
    assert lock_seen_from_another_process(state) == "free"  # let go after


def test_work_done_at_once_beside_another_run_keeping_its_memos_is_not_done(tmp_path: Path) -> None:
    """Its answer waits for no other run, and it writes nothing over the memos being kept."""
    state = tmp_path / "state"
    state.mkdir()
    other = another_run_holding(state)
    done: list[int] = []
    try:
        started = time.monotonic()
        afterwards.later(state, lambda: done.append(1))
        assert done == [] and time.monotonic() - started < 5
    finally:
        other.kill()
        other.wait(timeout=60)
    afterwards.later(state, lambda: done.append(2))
    assert done == [2]


def test_the_program_keeping_its_memos_itself_holds_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside another thread (or as a container's command) the program forks no child: it keeps
    its memos before it ends, under the lock as the child would."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(afterwards, "_program", True)
    stop = threading.Event()
    beside = threading.Thread(target=stop.wait, daemon=True)
    beside.start()
    seen: list[str] = []
    try:
        with afterwards.answered_first():
            afterwards.later(state, lambda: seen.append(lock_seen_from_another_process(state)))
            assert seen == []  # after the answer
    finally:
        stop.set()
        beside.join(30)
    assert seen == ["held"]
    assert lock_seen_from_another_process(state) == "free"


def test_the_program_keeping_its_memos_itself_waits_for_no_other_run(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Another run keeps its memos in the folder: this one's exit code is not held back; it keeps none."""
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setattr(afterwards, "_program", True)
    monkeypatch.setattr(afterwards, "_last_of_its_kind", lambda: True)  # a container's command
    other = another_run_holding(state)
    done: list[int] = []
    watchdog = threading.Timer(10, other.kill)  # code that waits for the other run ends after 10 s, not never
    watchdog.start()
    try:
        started = time.monotonic()
        with afterwards.answered_first():
            afterwards.later(state, lambda: done.append(1))
        assert time.monotonic() - started < 5 and done == []
    finally:
        watchdog.cancel()
        other.kill()
        other.wait(timeout=60)
    with afterwards.answered_first():
        afterwards.later(state, lambda: done.append(2))
    assert done == [2]


PAUSE = """
import gc, sys
from ksgitops.io.fs import afterwards
from ksgitops.io.git.cache import gc_paused
if sys.argv[1] == "program":
    afterwards.as_program()
with afterwards.answered_first():
    with gc_paused():
        kept = [[] for _ in range(10_000)]
    print(gc.get_freeze_count(), gc.isenabled(), flush=True)
"""


@pytest.mark.parametrize("mode", ["program", "library"])
def test_a_pause_in_a_command_that_ends_the_program_freezes_what_it_made(mode: str) -> None:
    """What the program makes with the cyclic GC paused, in a command that ends it once answered,
    lives until the end: frozen, no collection after the pause looks at it again (a library's
    caller, a test or a monitor's worker keeps collecting it)."""
    out = subprocess.run([sys.executable, "-c", PAUSE, mode], capture_output=True, text=True, timeout=60)
    frozen, enabled = out.stdout.split()
    assert enabled == "True", out
    assert (int(frozen) >= 10_000) == (mode == "program"), out
