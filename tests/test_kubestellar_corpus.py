"""Real KubeStellar YAML works unchanged: every repo of the corpus (KubeStellar's example1 at v0.6 to
v0.14.2, quickstart, helm/kind walkthrough, config/samples, e2e SyncerConfigs and RBAC,
space-framework samples, arranged as ksgitops repos) passes `validate`, `reconcile` and `diff`.

The corpus is read in place (copied to a temporary folder for reconcile and diff) and is never part
of this project; the tests are skipped when it is absent. Repos holding the docs' unquoted
`extended: yes` give the one error that says how to quote it (exit 2: the inventory space is frozen,
the rest reconciled), and pass once it is quoted; v0.6's repo (group edge.kcp.io) passes with
warnings to rename.
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "kubestellar-yaml"
REPOS = sorted(p.name for p in CORPUS.iterdir() if (p / "spaces").is_dir()) if CORPUS.is_dir() else []
UNQUOTED = re.compile(r"^(\s+)extended: yes$", re.MULTILINE)
BOOL_LABEL = ('label extended: the unquoted value yes is read as a boolean, but a label value must be a string; '
              'quote it: extended: "yes"')

pytestmark = pytest.mark.skipif(not REPOS, reason=f"no KubeStellar corpus at {CORPUS}")


def _sources(repo: Path) -> dict[str, bytes]:
    """The source files (not what reconcile generated: mailboxes, .ksgitops/)."""
    return {rel: p.read_bytes() for p in sorted(repo.rglob("*.yaml"))
            if not ("/.ksgitops/" in (rel := p.relative_to(repo).as_posix()) or "-mb-" in rel)}


def _unquoted(repo: Path) -> list[str]:
    """`path:line` of every unquoted `extended: yes`."""
    found = []
    for rel, data in _sources(repo).items():
        text = data.decode()
        found += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}" for m in UNQUOTED.finditer(text)]
    return found


def _quote(repo: Path) -> None:
    for path in repo.rglob("*.yaml"):
        text = path.read_text()
        path.write_text(UNQUOTED.sub(r'\1extended: "yes"', text))


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("name", REPOS)
def test_validate_in_place(name: str, cli: Callable[..., Any]) -> None:
    repo = CORPUS / name
    before = _digest(repo)
    result = cli("validate", str(repo))
    unquoted = _unquoted(repo)
    if unquoted:
        assert result.code == 2, result
        errors = [ln for ln in result.err.splitlines() if "warning:" not in ln]
        assert errors == [f"{where}: {BOOL_LABEL}" for where in unquoted]
    else:
        assert result.code == 0, result
        assert "Traceback" not in result.err
    if name.startswith("example1-v0.6"):
        assert "is KubeStellar v0.6's API group: read as edge.kubestellar.io/v1alpha1; rename it" in result.err
    assert _digest(repo) == before, "validate wrote into the corpus"


@pytest.mark.parametrize("name", REPOS)
def test_reconcile_and_diff_of_a_copy(name: str, tmp_path: Path, cli: Callable[..., Any]) -> None:
    repo = tmp_path / "work" / name
    shutil.copytree(CORPUS / name, repo)
    if _unquoted(repo):
        frozen = cli("reconcile", str(repo))  # the inventory space's WECs are frozen, the rest is written
        assert frozen.code == 2 and BOOL_LABEL in frozen.err and "frozen: " in frozen.err, frozen
        _quote(repo)
    outside = {p for p in tmp_path.rglob("*") if not p.is_relative_to(repo)}
    sources = _sources(repo)
    for command in ("validate", "reconcile", "diff"):
        result = cli(command, str(repo))
        assert result.code == 0, (command, result)
        assert "Traceback" not in result.err and "internal error" not in result.err
    assert {p for p in tmp_path.rglob("*") if not p.is_relative_to(repo)} == outside, "wrote outside the repo"
    assert {rel: data for rel, data in _sources(repo).items() if rel in sources} == sources, "changed a source"
    assert cli("reconcile", str(repo)).code == 0 and cli("diff", str(repo)).code == 0  # idempotent


@pytest.mark.skipif("example1-v0.7.0" not in REPOS, reason="no v0.7.0 example1 in the corpus")
def test_explain_names_a_v1alpha1_clause_as_its_placement_spells_it(cli: Callable[..., Any]) -> None:
    import json
    result = cli("explain", "guilder", "Deployment/specialstuff/speciald", str(CORPUS / "example1-v0.7.0"), "-o", "json")
    assert result.code == 0, result
    [match] = json.loads(result.out)["matches"]
    assert match["mailboxEntry"]["placedBy"] == ["wmw-s/edge-placement-s spec.namespaceSelector (v1alpha1)"], match
