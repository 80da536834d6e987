"""What the space-provider tests (tests/test_spaceproviders*.py) share: a copy of the example repo with
its mailboxes (fixture `repo`), and collecting a watch's events in a thread."""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from conftest import EXAMPLE


CM = {"apiVersion": "v1", "kind": "ConfigMap"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the example repo, generated mailboxes included."""
    return Path(shutil.copytree(EXAMPLE, tmp_path / "repo"))


def collect(events: Iterator[Any], into: list[Any]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.extend(events), daemon=True)
    thread.start()
    return thread


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)
