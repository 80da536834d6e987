"""Shared fixtures: a `tree` writer (dict -> files), the bundled example, real git repos, the CLI."""
from __future__ import annotations

import importlib.util
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner

pytest_plugins = ["kube_fixtures"]

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "repo"
GENERATED_MARKERS = ("-mb-", "/.ksgitops/")


def benchmark_module(name: str) -> Any:
    """A module of benchmarks/ (not a package), loaded from its file, with benchmarks/ on the path."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"ksgitops_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Write {relative path: text or bytes} below root; returns root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def work_tree_files(root: Path) -> dict[str, bytes]:
    """Every file below `root` but in `.git`, by relative path: a work tree to compare byte for byte."""
    out = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


@pytest.fixture(autouse=True)
def no_monitor_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test's command starts a monitor by itself (KSGITOPS_MONITOR, app/monitor.py) unless the
    test asks: one started in a test's folder would run for hours after it, whatever the caller's
    environment says (`on` exported, `pytest -s` at a terminal)."""
    monkeypatch.setenv("KSGITOPS_MONITOR", "off")


@pytest.fixture
def tree(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    """tree({...}) writes a repo into a fresh folder and returns it."""
    counter = iter(range(1_000_000))

    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path / f"repo{next(counter)}", files)
    return make


def copy_example_sources(dest: Path) -> Path:
    """The example's source files only (no generated output)."""
    def ignore(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if "-mb-" in n or n == ".ksgitops"]
    shutil.copytree(EXAMPLE, dest, ignore=ignore)
    return dest


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of examples/repo without its generated files."""
    return copy_example_sources(tmp_path / "example")


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "HOME": str(repo), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def git_init(repo: Path, message: str = "sources") -> Path:
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return repo


@pytest.fixture
def example_git(example: Path) -> Path:
    """The example's sources committed in a fresh git repo (branch main)."""
    return git_init(example)


@pytest.fixture
def cli() -> Callable[..., "CliResult"]:
    """cli(*args) runs `ksgitops` in-process through main() and returns (exit code, stdout, stderr)."""
    def run(*args: str) -> CliResult:
        from ksgitops.cli.commands import main
        runner = CliRunner()
        result = runner.invoke(_Main(main), list(args), catch_exceptions=False)
        return CliResult(result.exit_code, result.stdout, result.stderr)
    return run


class _Main:
    """Adapts main(argv) to CliRunner, which wants a click command-like callable."""

    def __init__(self, main: Callable[[list[str]], None]) -> None:
        self.main_fn = main
        self.name = "ksgitops"

    def main(self, args: list[str], prog_name: str | None = None, **_: object) -> None:
        self.main_fn(args)


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out[:500]!r}, err={self.err[:500]!r})"


def run_cli_subprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real console entry point in a child process (for traceback / exit code checks)."""
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True, cwd=cwd)


def run_cli_on_a_terminal(*args: str, stream: str = "stdout", env: dict[str, str] | None = None) -> tuple[int, str]:
    """The real entry point with `stream` (stdout or stderr) on a pseudo-terminal, the other one
    discarded; returns (exit code, what the terminal received)."""
    master, slave = pty.openpty()
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: slave}
    proc = subprocess.Popen([sys.executable, "-m", "ksgitops", *args], stdin=subprocess.DEVNULL, **streams,
                            env={**os.environ, "COLUMNS": "100", "TERM": "xterm", **(env or {})})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode(errors="replace")
