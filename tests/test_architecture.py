"""The house rules, as pyproject.toml's import-linter contracts state them (CI runs `lint-imports`
too): commands over use cases over I/O over the core; the core's rooms in data-flow order; the
core imports no I/O or UI library."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_contracts_name_every_layer_and_every_forbidden_library() -> None:
    layers = [c["layers"] for c in contracts() if c["type"] == "layers" and not c.get("containers")]
    assert layers == [["ksgitops.cli", "ksgitops.app", "ksgitops.io", "ksgitops.core"]]
    rooms = next(c for c in contracts() if c.get("containers") == ["ksgitops.core"])
    named = {m.strip() for layer in rooms["layers"] for m in layer.split("|")}
    assert named == {p.stem for p in (ROOT / "ksgitops" / "core").iterdir()
                     if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").exists())}
    pure = next(c for c in contracts() if "ksgitops.core" in c.get("source_modules", []) and
                "pygit2" in c.get("forbidden_modules", []))
    assert {"pygit2", "kubernetes", "click", "rich", "ksgitops.io"} <= set(pure["forbidden_modules"])


LINT = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")


@pytest.mark.skipif(LINT is None, reason="import-linter is not installed (the test extra brings it)")
def test_the_code_keeps_the_contracts() -> None:
    found = subprocess.run([str(LINT), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"})
    assert found.returncode == 0 and "0 broken" in found.stdout, found.stdout + found.stderr
