"""A clone whose git checks text out with CRLF line ends (core.autocrlf=true, or attributes
`* text=auto eol=crlf`), with real git: ksgitops' work tree stays as git's checkout leaves it, a
no-op writes nothing, `diff` sees no change, and a commit holds the bare path's LF blobs
(io/fs/eol.py)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

PAGE = "spaces/wmw-c/httpd.yaml"
CHANGED = "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
UNCHANGED = "spaces/imw1-mb-florin/space.yaml"


def _clone(origin: Path, clone: Path, setting: str) -> Path:
    if setting == "core.autocrlf":
        subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(origin), str(clone)], check=True)
        git(clone, "config", "core.autocrlf", "true")
    else:  # the same for every path, or pattern by pattern (each path asked)
        rules = "* text=auto eol=crlf\n" if setting == ".gitattributes" else "*.yaml text eol=crlf\n*.json -text\n"
        (origin / ".gitattributes").write_text(rules)
        git(origin, "add", ".gitattributes")
        git(origin, "commit", "-qm", "attributes")
        subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)
    return clone


def _edit_source(repo: Path) -> None:
    page = repo / PAGE
    page.write_bytes(page.read_bytes().replace(b"common web site", b"shared web site"))


@pytest.mark.parametrize("setting", ["core.autocrlf", ".gitattributes", "patterns"])
def test_a_crlf_checkout_stays_as_git_leaves_it(example_git: Path, tmp_path: Path, cli, setting: str) -> None:
    """Before: `diff` said 6 generated folders would change (exit 1) and `reconcile` rewrote them
    all with LF, after which `git status` listed every generated file as modified; a change then
    rewrote a mailbox's unchanged files with LF too."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    clone = _clone(example_git, tmp_path / "clone", setting)
    crlf = (clone / UNCHANGED).read_bytes()
    assert b"\r\n" in crlf and git(clone, "status", "--porcelain") == ""

    assert cli("diff", str(clone)).code == 0
    found = cli("reconcile", str(clone))
    assert found.code == 0 and "0 generated folders changed" in found.out, found
    assert (clone / UNCHANGED).read_bytes() == crlf
    assert git(clone, "status", "--porcelain") == ""

    _edit_source(clone)
    assert cli("reconcile", str(clone)).code == 0
    assert (clone / UNCHANGED).read_bytes() == crlf  # a root rewritten keeps its unchanged files' bytes
    assert b"shared web site.\r\n" in (clone / CHANGED).read_bytes()  # written as git's checkout writes it
    assert {line.split()[-1] for line in git(clone, "status", "--porcelain").splitlines()} == {
        PAGE, CHANGED, "spaces/imw1-mb-florin/patches/core/configmaps/commonstuff/httpd-htdocs.json",
        "spaces/imw1-mb-guilder/objects/core/configmaps/commonstuff/httpd-htdocs.yaml",
        "spaces/imw1-mb-guilder/patches/core/configmaps/commonstuff/httpd-htdocs.json"}
    again = cli("reconcile", str(clone))
    assert "0 generated folders changed" in again.out, again
    assert cli("diff", str(clone)).code == 0


@pytest.mark.parametrize("setting", ["core.autocrlf", ".gitattributes", "patterns"])
def test_a_crlf_checkouts_commit_holds_the_bare_paths_blobs(example_git: Path, tmp_path: Path, cli,
                                                            setting: str) -> None:
    """`reconcile --commit` in such a clone commits what the bare path commits (LF blobs), and its
    checkout writes the changed files as git's would: `git status` clean, `diff` unchanged."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    clone = _clone(example_git, tmp_path / "clone", setting)
    _edit_source(clone)
    git(clone, "commit", "-qam", "edit")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(clone), str(bare)], check=True)
    assert cli("reconcile", str(clone), "--commit").code == 0
    assert cli("reconcile", str(bare), "--commit").code == 0
    assert git(clone, "rev-parse", "HEAD^{tree}") == git(bare, "rev-parse", "HEAD^{tree}")
    assert b"\r" not in subprocess.run(["git", "-C", str(clone), "cat-file", "-p", f"HEAD:{CHANGED}"],
                                       capture_output=True, check=True).stdout
    assert b"shared web site.\r\n" in (clone / CHANGED).read_bytes()
    assert git(clone, "status", "--porcelain") == ""
    assert cli("diff", str(clone)).code == 0
    assert "0 generated folders changed" in cli("reconcile", str(clone)).out


def test_crlf_where_git_writes_lf_is_a_hand_edit(example_git: Path, cli) -> None:
    """Without a setting that converts, a generated file with CRLF line ends is not as generated:
    rewritten, as any hand edit."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    target = example_git / UNCHANGED
    target.write_bytes(target.read_bytes().replace(b"\n", b"\r\n"))
    found = cli("reconcile", str(example_git))
    assert "1 generated folder changed" in found.out, found
    assert b"\r" not in target.read_bytes()
    assert git(example_git, "status", "--porcelain") == ""


def test_an_attributes_file_named_by_core_attributesfile_converts_too(example_git: Path, tmp_path: Path,
                                                                      cli) -> None:
    """Before: core.attributesFile's rules were not read (only the default places were looked at),
    so in a clone it makes CRLF `diff` saw every generated folder changed."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    rules = tmp_path / "rules"
    rules.write_text("* text=auto eol=crlf\n")
    clone = tmp_path / "clone"
    subprocess.run(["git", "-c", f"core.attributesFile={rules}", "clone", "-q", str(example_git), str(clone)],
                   check=True)
    git(clone, "config", "core.attributesFile", str(rules))
    crlf = (clone / UNCHANGED).read_bytes()
    assert b"\r\n" in crlf and git(clone, "status", "--porcelain") == ""
    assert cli("diff", str(clone)).code == 0
    assert "0 generated folders changed" in cli("reconcile", str(clone)).out
    assert (clone / UNCHANGED).read_bytes() == crlf and git(clone, "status", "--porcelain") == ""


def test_a_generated_file_with_mixed_line_ends_is_a_hand_edit_for_diff_too(example_git: Path, tmp_path: Path,
                                                                           cli) -> None:
    """One line of a CRLF checkout made LF: `git status` lists it and `reconcile` rewrites it. Before,
    `diff` read it as generated (each CRLF as LF) and said nothing would change."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    clone = _clone(example_git, tmp_path / "clone", "core.autocrlf")
    target = clone / UNCHANGED
    crlf = target.read_bytes()
    target.write_bytes(crlf.replace(b"\r\n", b"\n", 1))
    assert git(clone, "status", "--porcelain").split() == ["M", UNCHANGED]
    found = cli("diff", str(clone))
    assert found.code == 1 and "spaces/imw1-mb-florin" in found.out, found
    assert "1 generated folder changed" in cli("reconcile", str(clone)).out
    assert target.read_bytes() == crlf and git(clone, "status", "--porcelain") == ""
