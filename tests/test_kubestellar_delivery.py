"""What each WEC receives from KubeStellar's own example1, as its docs give it at v0.8.0, v0.10.0 and
v0.14.2 (with `extended: "yes"` quoted), read in place from the shared corpus (skipped without it).

The three releases place the same objects on florin and guilder, with one difference that the input
explains: v0.8.0's docs have no CronTab or CRD at all. What KubeStellar's code implies:
- v0.8's placements are read with the v0.10+ clause semantics (v0.8's what-resolver wanted
  `objectNames: ["*"]` where v0.10 takes an empty list as "all"; the v0.8 docs write it), so the
  same clauses select the same objects;
- v0.10 names the CronTab CRD in a clause; v0.14.2 does not, and the CRD comes along with the
  CronTab because it is in the same WDS (pkg/placement/what-resolver.go, v0.13+ `definers`);
- v0.14.2 places the Namespace specialstuff by a clause, so its own labels and annotations reach
  guilder; v0.8 and v0.10 deliver it as an implied Namespace (workload-projector.go makes one with
  only the projected label);
- the APIBinding clauses of v0.8 and v0.10 select nothing here (these repos hold no APIBinding), and
  APIBindings would stop at the mailbox anyway (what-resolver.go `NaturedInCenterGoToMailbox`).
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from ksgitops.core.pipeline import reconcile
from ksgitops.core.readout.render import render_mailbox
from ksgitops.core.place.what import ALONG
from ksgitops.io.fs.tree import WorkTreeSnapshot

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "kubestellar-yaml"
VERSIONS = ["v0.8.0", "v0.10.0", "v0.14.2"]

FLORIN = [
    "apps/replicasets/commonstuff/commond",
    "core/configmaps/commonstuff/httpd-htdocs",
    "core/namespaces/_cluster/commonstuff",
]
GUILDER_WITHOUT_CRONTAB = [
    "apiregistration.k8s.io/apiservices/_cluster/v1090.example.my",
    "apps/deployments/specialstuff/speciald",
    "apps/replicasets/commonstuff/commond",
    "core/configmaps/commonstuff/httpd-htdocs",
    "core/configmaps/specialstuff/httpd-htdocs",
    "core/namespaces/_cluster/commonstuff",
    "core/namespaces/_cluster/specialstuff",
]
CRONTAB = [
    "apiextensions.k8s.io/customresourcedefinitions/_cluster/crontabs.stable.example.com",
    "stable.example.com/crontabs/specialstuff/my-new-cron-object",
]
EXPECTED = {
    "v0.8.0": {"florin": FLORIN, "guilder": GUILDER_WITHOUT_CRONTAB},
    "v0.10.0": {"florin": FLORIN, "guilder": sorted(GUILDER_WITHOUT_CRONTAB + CRONTAB)},
    "v0.14.2": {"florin": FLORIN, "guilder": sorted(GUILDER_WITHOUT_CRONTAB + CRONTAB)},
}
CRD_REL = CRONTAB[0]


def _reconciled(version: str, tmp_path: Path, variant: str = "quoted") -> Any:
    source = CORPUS / f"example1-{version}-{variant}"
    if not source.is_dir():
        pytest.skip(f"the KubeStellar YAML corpus is not here ({source})")
    repo = tmp_path / f"{version}-{variant}"
    shutil.copytree(source, repo)
    result = reconcile(WorkTreeSnapshot(repo))
    assert [str(p) for p in result.problems if p.is_error] == []
    return result


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("example1")
    return {version: _reconciled(version, tmp) for version in VERSIONS}


def _rendered(result: Any, wec: str) -> dict[str, dict[str, Any]]:
    return dict(render_mailbox(result.generated[f"spaces/imw1-mb-{wec}"]))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("wec", ["florin", "guilder"])
def test_each_wec_receives_exactly(results: dict[str, Any], version: str, wec: str) -> None:
    rendered = _rendered(results[version], wec)
    assert sorted(rendered) == EXPECTED[version][wec]


def test_the_releases_place_the_same_objects(results: dict[str, Any]) -> None:
    placed = {v: {wec: set(_rendered(results[v], wec)) for wec in ("florin", "guilder")} for v in VERSIONS}
    assert placed["v0.8.0"]["florin"] == placed["v0.10.0"]["florin"] == placed["v0.14.2"]["florin"]
    assert placed["v0.10.0"]["guilder"] == placed["v0.14.2"]["guilder"]
    assert placed["v0.10.0"]["guilder"] - placed["v0.8.0"]["guilder"] == set(CRONTAB)
    assert placed["v0.8.0"]["guilder"] <= placed["v0.10.0"]["guilder"]
    # the difference is in the input: v0.8.0's docs define no CronTab and no CRD
    kinds_v08 = {o.kind for objs in results["v0.8.0"].loaded.spaces.values() for o in objs}
    assert not kinds_v08 & {"CronTab", "CustomResourceDefinition"}


def test_v0_14_2_guilder_gets_the_crontab_crd_that_came_along(results: dict[str, Any]) -> None:
    entries = results["v0.14.2"].mailboxes["imw1-mb-guilder"].entries
    assert [(v.placement, v.clause) for v in entries[CRD_REL].via] == [("edge-placement-s", ALONG)]
    crd = _rendered(results["v0.14.2"], "guilder")[CRD_REL]
    assert crd["spec"]["names"]["kind"] == "CronTab" and crd["spec"]["group"] == "stable.example.com"
    # in v0.10 the same CRD is placed by the clause that names it
    v10 = results["v0.10.0"].mailboxes["imw1-mb-guilder"].entries[CRD_REL]
    assert [(v.placement, v.clause) for v in v10.via] == [("edge-placement-s", 4)]


@pytest.mark.parametrize("version", VERSIONS)
def test_customizations_reach_each_wec(results: dict[str, Any], version: str) -> None:
    for wec in ("florin", "guilder"):
        rendered = _rendered(results[version], wec)
        page = rendered["core/configmaps/commonstuff/httpd-htdocs"]["data"]["index.html"]
        assert f"Running in {wec}." in page
        replicaset = rendered["apps/replicasets/commonstuff/commond"]
        assert replicaset["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "env is prod"
    deployment = _rendered(results[version], "guilder")["apps/deployments/specialstuff/speciald"]
    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "in prod env"


def test_namespace_specialstuff_content_follows_each_release(results: dict[str, Any]) -> None:
    rel = "core/namespaces/_cluster/specialstuff"
    implied = {"name": "specialstuff", "labels": {"edge.kubestellar.io/projected": "yes"}}
    assert _rendered(results["v0.8.0"], "guilder")[rel]["metadata"] == implied
    assert _rendered(results["v0.10.0"], "guilder")[rel]["metadata"] == implied
    assert _rendered(results["v0.14.2"], "guilder")[rel]["metadata"] == {
        "name": "specialstuff", "labels": {"special": "yes", "edge.kubestellar.io/projected": "yes"},
        "annotations": {"just-for": "fun"}}


def test_v0_7_v1alpha1_placements_place_the_same_objects(tmp_path: Path) -> None:
    """v0.7.0's example1 with its v1alpha1 EdgePlacements (`namespaceSelector` on the Namespaces'
    labels, converted as pkg/placement/what-resolver.go v0.7.0 `whatMatches` has it; the corpus
    variant has v2alpha1 inventory): the same objects as v0.8.0 but the APIService, which v0.7.0's
    docs do not define."""
    result = _reconciled("v0.7.0", tmp_path, "v2inventory")
    assert sorted(_rendered(result, "florin")) == FLORIN
    assert sorted(_rendered(result, "guilder")) == [
        rel for rel in GUILDER_WITHOUT_CRONTAB if not rel.startswith("apiregistration.k8s.io/")]
    entries = result.mailboxes["imw1-mb-guilder"].entries
    assert [(v.placement, v.clause) for v in entries["apps/deployments/specialstuff/speciald"].via] == [
        ("edge-placement-s", 0)]
