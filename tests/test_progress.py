"""Progress bars on stderr for long work (loading, computing, writing), only when stderr is a
terminal and the output is not JSON."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import run_cli_on_a_terminal

ROOT = Path(__file__).resolve().parents[1]


def fleet_repo(tmp_path: Path, wecs: int) -> Path:
    spec = importlib.util.spec_from_file_location("fleet", ROOT / "benchmarks" / "fleet.py")
    fleet = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(fleet)  # type: ignore[union-attr]
    repo = tmp_path / "fleet"
    fleet.generate(repo, wecs, 10)
    return repo


def run_with_tty_stderr(args: list[str]) -> tuple[int, str]:
    return run_cli_on_a_terminal(*args, stream="stderr")


def test_progress_bars_for_every_stage_when_stderr_is_a_terminal(tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path, 60)
    code, err = run_with_tty_stderr(["reconcile", str(repo)])
    assert code == 0
    for stage in ("loading", "computing", "writing"):
        assert stage in err, (stage, err[-2000:])


def test_no_progress_with_json_output_even_on_a_terminal(tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path, 60)
    code, err = run_with_tty_stderr(["reconcile", str(repo), "-o", "json"])
    assert code == 0
    assert "computing" not in err and "writing" not in err and "loading" not in err, err[-2000:]


def test_other_long_commands_show_progress(tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path, 60)
    code, err = run_with_tty_stderr(["validate", str(repo)])
    assert code == 0 and "computing" in err, err[-2000:]
    code, err = run_with_tty_stderr(["wecs", str(repo)])
    assert code == 0 and "loading" in err, err[-2000:]


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path, 60)
    proc = subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "computing" not in proc.stderr and "writing" not in proc.stderr and "\x1b[" not in proc.stderr
    assert all(": warning: " in line for line in proc.stderr.splitlines())
