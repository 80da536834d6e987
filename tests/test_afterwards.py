"""Memos kept after the answer (io/fs/afterwards.py): now in a command's own process; after the
answer in a monitor's worker, under a lock that a reader in another process waits for."""
from __future__ import annotations

import subprocess
import sys
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


def test_without_a_worker_work_is_done_at_once(tmp_path: Path) -> None:
    done: list[int] = []
    afterwards.later(tmp_path / "state", lambda: done.append(1))
    assert done == [1]
    assert not (tmp_path / "state").exists()  # nothing to lock


def test_a_worker_answers_first_and_a_reader_waits_for_the_memos(tmp_path: Path) -> None:
    state = tmp_path / "state"
    afterwards.defer()
    afterwards.later(state, lambda: (state / "memo").write_text("kept"))
    assert not (state / "memo").exists()
    reader = subprocess.Popen([sys.executable, "-c", READER, str(state)], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "waiting\n"
        time.sleep(0.3)
        assert reader.poll() is None  # still waiting for the lock
        afterwards.finish()
        out, _ = reader.communicate(timeout=30)
    finally:
        reader.kill()
    assert out == "kept\n"


def test_a_failing_memo_costs_the_others_nothing_and_lets_readers_in(tmp_path: Path) -> None:
    state, done = tmp_path / "state", []

    def fails() -> None:
        raise OSError("disk full")

    afterwards.defer()
    afterwards.later(state, fails)
    afterwards.later(state, lambda: done.append("second"))
    afterwards.settled(state)  # its own lock: no wait in the process that holds it
    afterwards.finish()
    assert done == ["second"]
    reader = subprocess.run([sys.executable, "-c", READER, str(state)], capture_output=True, text=True, timeout=30)
    assert reader.stdout == "waiting\nmissing\n"


def test_no_lock_to_take_means_the_work_is_done_at_once(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    done: list[int] = []
    afterwards.defer()
    afterwards.later(blocked, lambda: done.append(1))
    assert done == [1]
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    (link / afterwards.LOCK_FILE).symlink_to(tmp_path / "outside")  # a link where the lock goes: not followed
    afterwards.later(link, lambda: done.append(2))
    assert done == [1, 2] and not (tmp_path / "outside").exists()
