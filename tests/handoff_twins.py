"""What the tests of commands handed to the work tree's monitor (tests/test_handoff*.py) share:
`ksgitops` run handed over or in its own process, the monitor's count of served commands, the
example twice (one with a monitor, one without) and the check that a command does the same in both."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from conftest import copy_example_sources, git_init, work_tree_files
from ksgitops.io.fs import handoff
from ksgitops.io.fs.feed import request
from monitor_process import alive, start


def ks(*args: str, cwd: Path | None = None, handed: bool = True, env: dict[str, str] | None = None,
       python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *python, "-m", "ksgitops", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, handoff.ENV: "1" if handed else "0", **(env or {})}, timeout=300)


def served(repo: Path) -> int:
    reply = request(str(repo if repo.suffix == ".git" else repo / ".git"), {"op": "status"})
    assert reply is not None and reply.get("handoff") is True, reply
    return int(reply["served"])


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The example twice: the first with a monitor, the second without."""
    mine, other = (git_init(copy_example_sources(tmp_path / name)) for name in ("monitored", "alone"))
    pid = start(mine)
    yield mine, other
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def same_run(mine: Path, other: Path, *args: str, cwd: str = "") -> str:
    """Run `args` in both twins ({} stands for the repo), handed over in the first; assert the same
    exit code, output and files. Returns the first's stdout."""
    before = served(mine)
    runs = [ks(*(a.replace("{}", str(repo)) for a in args), cwd=repo / cwd, handed=handed)
            for repo, handed in ((mine, True), (other, False))]
    assert served(mine) == before + 1, args
    shown = [(r.returncode, r.stdout.replace(str(repo), "REPO"), r.stderr.replace(str(repo), "REPO"))
             for r, repo in zip(runs, (mine, other))]
    assert shown[0] == shown[1], args
    assert work_tree_files(mine) == work_tree_files(other), args
    return runs[0].stdout
