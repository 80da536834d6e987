"""The house rules: the pure core imports no I/O or UI library (like kopf's import-linter contract)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "ksgitops" / "core"
FORBIDDEN = ("pygit2", "kubernetes", "click", "rich", "ksgitops.io", "ksgitops.cli.commands", "ksgitops.app.usecases")


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolve against ksgitops.core
                base = ["ksgitops", "core"][: 3 - node.level] if node.level <= 2 else []
                module = ".".join([*base, module]) if module else ".".join(base)
            names.add(module)
    return names


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_module_imports_no_io(path: Path) -> None:
    bad = {m for m in imported_modules(path) for f in FORBIDDEN if m == f or m.startswith(f + ".")}
    assert not bad, f"{path.name} imports {sorted(bad)}"


def test_the_check_sees_relative_imports(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("from ..io import git\nfrom .where import x\nimport pygit2\n")
    assert {"ksgitops.io", "ksgitops.core.place.where", "pygit2"} <= imported_modules(path)
