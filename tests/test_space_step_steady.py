"""The space step leaves out of its plan the mailboxes it has nothing to say about (a fleet's
thousand): what it plans, writes and reports is what the whole plan gives, whatever else the
repository says about spaces."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Callable

import pytest

from conftest import EXAMPLE
from ksgitops.core.load.read import load
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.core.place import spacestep
from ksgitops.core.place.where import inventory

API = "space.kubestellar.io/v1alpha1"


def _space(name: str, provider: str = "") -> str:
    spec = "  Type: managed\n" + (f"  SpaceProviderDescName: {provider}\n" if provider else "")
    return f"apiVersion: {API}\nkind: Space\nmetadata:\n  name: {name}\n  namespace: spaces\nspec:\n{spec}"


def _provider(name: str, type: str) -> str:
    return f"apiVersion: {API}\nkind: SpaceProviderDesc\nmetadata:\n  name: {name}\nspec:\n  ProviderType: {type}\n"


SCENES: dict[str, Callable[[Path], object]] = {
    "as generated": lambda repo: None,
    "a Space named as a mailbox": lambda repo: (repo / "spaces/wmw-c/space.yaml").write_text(_space("imw1-mb-florin")),
    "the git provider redefined": lambda repo: (repo / "spaces/wmw-c/p.yaml").write_text(_provider("git", "kubeconfig")),
    "a mailbox folder gone": lambda repo: shutil.rmtree(repo / "spaces/imw1-mb-guilder"),
}


@pytest.mark.parametrize("scene", SCENES)
def test_the_plan_without_steady_mailboxes_is_the_whole_plan_s(tmp_path: Path, scene: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    SCENES[scene](repo)
    snapshot = WorkTreeSnapshot(repo)
    loaded = load(snapshot)
    wecs = inventory(loaded.spaces)
    left_out = spacestep._steady(spacestep.inputs_from(loaded.spaces).objects,
                                 spacestep.inputs_from(loaded.spaces).providers, wecs, loaded.mailboxes, set())
    found = spacestep.space_step(snapshot, loaded, loaded.spaces, wecs)
    monkeypatch.setattr(spacestep, "_steady", lambda *args: set())
    whole = spacestep.space_step(snapshot, loaded, loaded.spaces, wecs)
    assert (found.plan, found.generated, found.problems) == (whole.plan, whole.generated, whole.problems)
    expected = {"as generated": {"imw1-mb-florin", "imw1-mb-guilder"}, "a Space named as a mailbox": {"imw1-mb-guilder"},
                "the git provider redefined": set(), "a mailbox folder gone": {"imw1-mb-florin"}}[scene]
    assert left_out == expected
    if scene != "as generated":
        assert whole.plan.actions or whole.problems  # the scene is one the plan has something to say about
