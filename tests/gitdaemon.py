"""A real `git daemon` on 127.0.0.1 serving bare repositories over git:// (fetch and push).

`GitDaemon(base)` serves every repository below `base` as `git://127.0.0.1:<port>/<name>`;
`bare(name, source)` makes a bare repository there from a source repo (or an empty one).
Used as a context manager or through the `git_daemon` fixture (tests/conftest.py).
"""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class GitDaemon:
    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> "GitDaemon":
        for _ in range(20):  # another process may take the port between our probe and the daemon's bind
            self.port = _free_port()
            self._proc = subprocess.Popen(
                ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                 f"--base-path={self.base}", "--listen=127.0.0.1", f"--port={self.port}", str(self.base)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if self._wait_listening():
                return self
            self._proc.kill()
            self._proc.wait()
        raise RuntimeError("git daemon did not start")

    def _wait_listening(self) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def __enter__(self) -> "GitDaemon":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def bare(self, name: str, source: Path | None = None) -> Path:
        """A bare repository `name` below the base: a clone of `source`, or empty."""
        path = self.base / name
        if source is None:
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(path)], check=True)
        else:
            subprocess.run(["git", "clone", "-q", "--bare", str(source), str(path)], check=True)
        return path


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    """A git daemon serving tmp_path/served over git://127.0.0.1."""
    with GitDaemon(tmp_path / "served") as daemon:
        yield daemon
