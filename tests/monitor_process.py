"""What the tests of `ksgitops monitor` (tests/test_monitor_*.py) and the tests that run beside a
monitor (tests/test_plan.py, tests/test_handoff*.py, ...) share: a monitor started for a work tree,
whether a process is alive (a zombie is not), and the `monitored` fixture: the example's git work
tree with a monitor, killed after the test."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Iterator

import pytest

from conftest import run_cli_subprocess


def start(repo: Path) -> int:
    done = run_cli_subprocess("monitor", "start", str(repo), "-o", "json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["pid"])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except (ProcessLookupError, FileNotFoundError):  # it ended and was reaped between the two looks
        return False


@pytest.fixture
def monitored(example_git: Path) -> Iterator[tuple[Path, int]]:
    pid = start(example_git)
    yield example_git, pid
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
