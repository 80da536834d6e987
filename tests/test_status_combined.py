"""The status step's CombinedStatus files (docs/REFERENCE.md, "Generated files"): one per placed
object, schema-valid; health counts, WECs unhealthy first and the limit keeping the worst;
singletonStatus only when one WEC executes and the placement wants it (never for a CRD that came
along), removed from the file when that stops being true.

Most cases run `summarize` on the bundled example's sources (copied, generated files left out) with
reports built here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from ksgitops.app import usecases as app
from ksgitops.core.load.schemas import validate_document
from ksgitops.core.serialize import load_yaml
from ksgitops.model import Origin
from minimal_fleet import gadget_crd
from status_summaries import (COMMON_CM, COMMOND, FLORIN, GUILDER, RS_FAILED, SPECIAL_CM, SPECIALD, as_reports, cm,
                              compute, deploy, edit, report, rs, status_of, summarize, write_reports)


def test_one_combined_status_per_placed_object_and_schema_valid(example: Path) -> None:
    out = summarize(compute(example), {}, 20)
    assert sorted(out.combined) == [("wmw-c", COMMOND), ("wmw-c", COMMON_CM), ("wmw-s", SPECIALD), ("wmw-s", SPECIAL_CM)]
    for (wds, rel) in out.combined:
        status = out.status(wds, rel)
        assert validate_document("combinedstatus.json", status, Origin(rel), "CombinedStatus") == []
        assert out.generated[f"spaces/{wds}/.ksgitops/status"] is not None
    assert out.generated["spaces/imw1/.ksgitops/status"] is None  # no placed object: removed
    commond = status_of(out, "wmw-c", COMMOND)
    assert commond["object"] == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff",
                                 "name": "commond"}
    assert commond["placements"] == ["edge-placement-c"]
    assert (commond["executingCount"], commond["reportedCount"], commond["health"]) == (2, 0, {"Missing": 2})
    assert "singletonStatus" not in commond and "results" not in commond


def test_health_counts_and_wecs_unhealthy_first(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, **RS_FAILED)}})
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["health"] == {"Healthy": 1, "Degraded": 1}
    assert commond["reportedCount"] == 2
    assert [(w["name"], w["health"]) for w in commond["wecs"]] == [("guilder", "Degraded"), ("florin", "Healthy")]
    assert commond["wecs"][0]["mailbox"] == GUILDER and commond["wecs"][0]["generation"] == 1
    assert "replica failure" in commond["wecs"][0]["message"]
    # equal health: by WEC name
    both = as_reports({FLORIN: {COMMOND: rs(0)}, GUILDER: {COMMOND: rs(0)}})
    commond = status_of(summarize(compute(example), both, 20), "wmw-c", COMMOND)
    assert [(w["name"], w["health"]) for w in commond["wecs"]] == [("florin", "Progressing"), ("guilder", "Progressing")]
    # Missing sorts before Progressing, Degraded before Missing
    one = as_reports({GUILDER: {COMMOND: rs(0)}})
    commond = status_of(summarize(compute(example), one, 20), "wmw-c", COMMOND)
    assert [w["health"] for w in commond["wecs"]] == ["Missing", "Progressing"]
    assert "reportedAt" not in commond["wecs"][0]


@pytest.mark.parametrize(("limit", "names"), [(0, []), (1, ["guilder"]), (2, ["guilder", "florin"]), (20, ["guilder", "florin"])])
def test_limit_keeps_the_worst(example: Path, limit: int, names: list[str]) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, **RS_FAILED)}})
    commond = status_of(summarize(compute(example), reports, limit), "wmw-c", COMMOND)
    assert [w["name"] for w in commond["wecs"]] == names
    assert commond["health"] == {"Healthy": 1, "Degraded": 1}  # counts cover every WEC


def test_singleton_status_when_one_wec_reports_and_placement_wants_it(example: Path) -> None:
    result = compute(example)
    speciald = status_of(summarize(result, as_reports({GUILDER: {SPECIALD: deploy(1)}}), 20), "wmw-s", SPECIALD)
    assert speciald["executingCount"] == 1
    assert speciald["singletonStatus"] == deploy(1)["status"]
    assert speciald["health"] == {"Healthy": 1}
    # no report: absent
    assert "singletonStatus" not in status_of(summarize(result, {}, 20), "wmw-s", SPECIALD)
    # a ConfigMap reported with no status: an empty singletonStatus (a report exists)
    special_cm = status_of(summarize(result, as_reports({GUILDER: {SPECIAL_CM: cm("specialstuff")}}), 20),
                           "wmw-s", SPECIAL_CM)
    assert special_cm["singletonStatus"] == {}


def test_no_singleton_status_for_a_crd_that_came_along(example: Path) -> None:
    """KubeStellar v0.13+ pkg/placement/what-resolver.go adds a placed resource's CRD with
    ReturnSingletonState false, whatever the placement wants."""
    (example / "spaces/wmw-s/gadgets.yaml").write_text(gadget_crd("Namespaced") + """\
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: specialstuff}
""")
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "  wantSingletonReportedState: true",
         "  - {apiGroup: example.com, resources: [gadgets]}\n  wantSingletonReportedState: true")
    crd_rel = "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com"
    gadget_rel = "example.com/gadgets/specialstuff/g1"
    reports = {GUILDER: {crd_rel: report("apiextensions.k8s.io/v1", "CustomResourceDefinition", "",
                                         "gadgets.example.com", {"acceptedNames": {"kind": "Gadget"}}),
                         gadget_rel: report("example.com/v1", "Gadget", "specialstuff", "g1", {"ok": True})}}
    out = summarize(compute(example), as_reports(reports), 20)
    crd = status_of(out, "wmw-s", crd_rel)
    assert crd["executingCount"] == 1 and "singletonStatus" not in crd
    assert status_of(out, "wmw-s", gadget_rel)["singletonStatus"] == {"ok": True}


def test_singleton_status_absent_when_two_wecs_execute(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1)}})
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["executingCount"] == 2 and "singletonStatus" not in commond


def test_singleton_status_appears_when_executing_count_drops_to_one(example: Path) -> None:
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(1, at="2026-01-01T00:00:01Z")}})
    edit(example, "spaces/imw1/florin.yaml", "env: prod", "env: dev")
    commond = status_of(summarize(compute(example), reports, 20), "wmw-c", COMMOND)
    assert commond["executingCount"] == 1
    assert [w["name"] for w in commond["wecs"]] == ["guilder"]
    assert commond["singletonStatus"] == rs(1)["status"]


def test_singleton_status_absent_when_the_placement_does_not_want_it(example: Path) -> None:
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "wantSingletonReportedState: true",
         "wantSingletonReportedState: false")
    speciald = status_of(summarize(compute(example), as_reports({GUILDER: {SPECIALD: deploy(1)}}), 20),
                         "wmw-s", SPECIALD)
    assert speciald["executingCount"] == 1 and "singletonStatus" not in speciald


def test_singleton_status_removed_from_the_file_when_it_stops_being_true(example: Path) -> None:
    write_reports(example, {GUILDER: {SPECIALD: deploy(1)}})
    path = example / "spaces/wmw-s/.ksgitops/status" / f"{SPECIALD}.yaml"
    app.status_worktree(example)
    assert "singletonStatus" in load_yaml(path.read_bytes())
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "wantSingletonReportedState: true",
         "wantSingletonReportedState: false")
    outcome = app.status_worktree(example)
    assert "spaces/wmw-s/.ksgitops/status" in outcome.changed
    assert "singletonStatus" not in load_yaml(path.read_bytes())


GUILDER_TOO = """---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: guilder-too
  labels: {env: prod, extended: si}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: guilder}
"""


def test_singleton_status_counts_wecs_not_locations(example: Path) -> None:
    """Two Locations selecting guilder's SyncTarget: two destinations in the SinglePlacementSlice,
    one WEC. ksgitops counts WECs (executingCount 1, singletonStatus kept); KubeStellar v0.10-v0.15
    count destinations and return no singleton state here (docs/KUBESTELLAR.md)."""
    (example / "spaces/imw1/guilder.yaml").write_text((example / "spaces/imw1/guilder.yaml").read_text() + GUILDER_TOO)
    result = compute(example)
    sps = load_yaml(result.generated["spaces/wmw-s/.ksgitops/singleplacementslices"]["edge-placement-s.yaml"])
    assert [(d["locationName"], d["syncTargetName"]) for d in sps["destinations"]] == \
        [("guilder", "guilder"), ("guilder-too", "guilder")]
    speciald = status_of(summarize(result, as_reports({GUILDER: {SPECIALD: deploy(1)}}), 20), "wmw-s", SPECIALD)
    assert speciald["executingCount"] == 1
    assert speciald["singletonStatus"] == deploy(1)["status"]
