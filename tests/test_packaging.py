"""The wheel ships what an installed ksgitops needs: the schemas and the example `init` copies."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_schemas_and_example(tmp_path: Path) -> None:
    source = tmp_path / "src"  # build from a copy: setuptools writes build/ next to the sources
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__",
                                                                 ".pytest_cache", ".hypothesis"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"),
                    str(source)], check=True, capture_output=True)
    [wheel] = (tmp_path / "dist").glob("ksgitops-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema in (ROOT / "schema").glob("*.json"):
        assert f"ksgitops/schema/{schema.name}" in names
    example = [p for p in (ROOT / "examples" / "repo").rglob("*") if p.is_file()]
    assert example
    for path in example:
        assert f"ksgitops/example/{path.relative_to(ROOT / 'examples' / 'repo').as_posix()}" in names
    assert "ksgitops/io/git/pack.py" in names and "ksgitops/core/pipeline.py" in names
