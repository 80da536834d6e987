"""What the bad-input tests (tests/test_bad_input_*.py) share: the bundled example's sources as
files for the `tree` fixture, the files a run generated, `ksgitops` in a child process, the checks
of a problem line (`file:line: message`, no traceback) and of a space that contributed nothing,
and the paths of the example's objects and their copies in a mailbox."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import EXAMPLE, GENERATED_MARKERS, run_cli_subprocess

Files = dict[str, "str | bytes"]


def example_files() -> dict[str, bytes]:
    """The bundled example's source files as {relative path: bytes} (generated output left out)."""
    out = {}
    for path in sorted(EXAMPLE.rglob("*")):
        rel = path.relative_to(EXAMPLE).as_posix()
        if path.is_file() and not any(m in f"/{rel}" for m in GENERATED_MARKERS):
            out[rel] = path.read_bytes()
    return out


def all_files(repo: Path) -> dict[str, bytes]:
    """Every file and folder below repo ({path: bytes}; folders map to b"<dir>")."""
    return {p.relative_to(repo).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(repo.rglob("*"))}


def generated(repo: Path) -> dict[str, bytes]:
    """Every generated file: below a mailbox folder or a WDS's .ksgitops/."""
    return {rel: data for rel, data in all_files(repo).items()
            if data != b"<dir>" and "/" in rel and ("-mb-" in rel.split("/")[1] or "/.ksgitops/" in rel)}


def has_generated_folders(repo: Path) -> bool:
    spaces = repo / "spaces"
    return any("-mb-" in p.name or p.name == ".ksgitops" or "ksgitops-new" in p.name
               for p in spaces.rglob("*") if p.is_dir())


SPECIALD = "spaces/imw1-mb-guilder/objects/apps/deployments/specialstuff/speciald.yaml"


def assert_contributes_nothing(repo: Path, space: str = "wmw-c") -> None:
    """A space broken since the start (never valid) placed nothing; every other space was written."""
    gen = generated(repo)
    assert SPECIALD in gen and "spaces/imw1-mb-florin/space.yaml" in gen, "the healthy part was written"
    if space == "wmw-c":
        assert not [rel for rel in gen if "-mb-" in rel and "commonstuff" in rel], sorted(gen)
    assert not [rel for rel in gen if rel.startswith(f"spaces/{space}/.ksgitops/") and not rel.endswith("problems.yaml")]
    if space != "Bad_Space":
        assert b"state: Frozen" in gen[f"spaces/{space}/.ksgitops/problems.yaml"]


def ks(*args: object) -> subprocess.CompletedProcess[str]:
    return run_cli_subprocess(*(str(a) for a in args))


def assert_problem(stderr: str, path: str, line: int | None, pattern: str) -> str:
    """stderr has a `path:line: message` line whose message matches the regex `pattern`.

    line None: a file- or folder-level problem, printed as `path: message` or `path:N: message`.
    """
    where = re.escape(path) + (rf":{line}" if line is not None else r"(:\d+)?")
    rx = re.compile(rf"^{where}: .*(?:{pattern})")
    found = [ln for ln in stderr.splitlines() if rx.search(ln)]
    assert found, f"no line {path}:{line}: ~{pattern!r} in stderr:\n{stderr}"
    return found[0]


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle."""
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln:
            return i
    raise AssertionError(f"{needle!r} not found")


PLACEMENT = "apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\n"
EDGE = "apiVersion: edge.kubestellar.io/v2alpha1\n"
CM = "apiVersion: v1\nkind: ConfigMap\n"
HTTPD_C = "spaces/wmw-c/httpd.yaml"
CM_REL = "core/configmaps/commonstuff/httpd-htdocs"


def copy_files(mailbox: str, rel: str) -> tuple[str, str]:
    return f"spaces/{mailbox}/objects/{rel}.yaml", f"spaces/{mailbox}/patches/{rel}.json"
