"""Smoke tests for the benchmark fleet generator (benchmarks/fleet.py)."""
from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _load_fleet():
    spec = importlib.util.spec_from_file_location("ksgitops_bench_fleet", ROOT / "benchmarks" / "fleet.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


fleet = _load_fleet()

WECS, OBJECTS = 230, 60  # spans three inventory files, all five kinds
WORKLOAD_KINDS = {"ConfigMap", "Deployment", "Service", "Secret", "ServiceAccount"}


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def docs_of(root: Path, space: str) -> list[tuple[str, dict]]:
    out = []
    for p in sorted((root / "spaces" / space).rglob("*.yaml")):
        for d in yaml.safe_load_all(p.read_text(encoding="utf-8")):
            if d is not None:
                out.append((p.relative_to(root).as_posix(), d))
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("fleet") / "repo"
    fleet.generate(root, WECS, OBJECTS, seed=7)
    return root


def test_deterministic_bytes(tmp_path: Path, repo: Path) -> None:
    again = tmp_path / "again"
    fleet.generate(again, WECS, OBJECTS, seed=7)
    assert snapshot(again) == snapshot(repo)
    other = tmp_path / "other"
    fleet.generate(other, WECS, OBJECTS, seed=8)
    assert snapshot(other) != snapshot(repo)


def test_cli_matches_module(tmp_path: Path, repo: Path) -> None:
    out = tmp_path / "cli"
    assert fleet.main([str(out), "--wecs", str(WECS), "--objects", str(OBJECTS), "--seed", "7"]) == 0
    assert snapshot(out) == snapshot(repo)


def test_every_document_is_an_object(repo: Path) -> None:
    for space in ("inventory", "apps"):
        for path, d in docs_of(repo, space):
            assert isinstance(d, dict), path
            assert d.get("apiVersion") and d.get("kind"), path
            assert d.get("metadata", {}).get("name"), path


def test_inventory(repo: Path) -> None:
    docs = [d for _, d in docs_of(repo, "inventory")]
    kinds = Counter(d["kind"] for d in docs)
    assert kinds == {"SyncTarget": WECS, "Location": WECS}
    files = sorted((repo / "spaces" / "inventory").glob("*.yaml"))
    assert len(files) == -(-WECS // fleet.WECS_PER_FILE)  # multi-document files, not one per object
    names = {d["metadata"]["name"] for d in docs if d["kind"] == "SyncTarget"}
    assert names == {f"wec-{i:04d}" for i in range(1, WECS + 1)}
    for d in docs:
        assert d["apiVersion"] == "edge.kubestellar.io/v2alpha1"
        name = d["metadata"]["name"]
        labels = d["metadata"]["labels"]
        assert labels["id"] == name
        if d["kind"] == "Location":
            assert labels["region"] in fleet.REGIONS
            assert labels["tier"] in fleet.TIERS
            assert labels["env"] in fleet.ENVS
            assert re.fullmatch(r"team-\d+", d["metadata"]["annotations"]["owner"])
            assert d["spec"] == {
                "resource": {"group": "edge.kubestellar.io", "version": "v2alpha1", "resource": "synctargets"},
                "instanceSelector": {"matchLabels": {"id": name}},
            }


def test_workload(repo: Path) -> None:
    docs = [d for _, d in docs_of(repo, "apps")]
    kinds = Counter(d["kind"] for d in docs)
    workload = [d for d in docs if d["kind"] in WORKLOAD_KINDS]
    assert len(workload) == OBJECTS
    assert set(kinds) == WORKLOAD_KINDS | {"Namespace", "Customizer", "EdgePlacement"}
    assert 8 <= kinds["EdgePlacement"] <= 16
    namespaces = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Namespace"}
    assert len(namespaces) == fleet.NAMESPACES
    assert all("team" in n["metadata"]["labels"] for n in namespaces.values())
    assert {d["metadata"]["namespace"] for d in workload} == set(namespaces)
    for d in workload:
        if d["kind"] == "Secret":
            assert d["type"] == "Opaque" and d["data"]
        assert d["metadata"]["name"] not in ("default", "kube-root-ca.crt")

    customizers = {(d["metadata"]["namespace"], d["metadata"]["name"]): d
                   for d in docs if d["kind"] == "Customizer"}
    expand = [d for d in workload if d["metadata"].get("annotations", {}).get(fleet.EXPAND) == "true"]
    custom = [d for d in workload if fleet.CUSTOMIZER in d["metadata"].get("annotations", {})]
    assert not {id(d) for d in expand} & {id(d) for d in custom}
    assert abs(len(expand) + len(custom) - OBJECTS / 5) <= 1
    assert abs(len(expand) - len(custom)) <= 1
    for d in custom:
        key = (d["metadata"]["namespace"], d["metadata"]["annotations"][fleet.CUSTOMIZER])
        assert key in customizers, key
    for c in customizers.values():
        assert c["apiVersion"] == "edge.kubestellar.io/v2alpha1"
        assert c["metadata"]["annotations"][fleet.EXPAND] == "true"
        assert c["replacements"] and all({"path", "value"} <= set(r) for r in c["replacements"])

    # every %(key) names a Location label or annotation that exists
    known = {"region", "tier", "env", "id", "owner"}
    text = "\n".join((repo / "spaces" / "apps").joinpath(p).read_text()
                     for p in [q.relative_to(repo / "spaces" / "apps")
                               for q in (repo / "spaces" / "apps").rglob("*.yaml")])
    used = set(re.findall(r"%\((\w[\w.-]*)\)", text))
    assert used and used <= known


def test_placements(repo: Path) -> None:
    eps = [d for _, d in docs_of(repo, "apps") if d["kind"] == "EdgePlacement"]
    everything = [e for e in eps if e["spec"]["downsync"] == [{}]]
    assert everything and everything[0]["spec"]["locationSelectors"] == [{"matchLabels": {"env": "prod"}}]
    for e in eps:
        assert e["spec"]["locationSelectors"]
        for clause in e["spec"]["downsync"]:
            assert set(clause) <= {"apiGroup", "resources", "namespaces", "namespaceSelectors",
                                   "objectNames", "labelSelectors"}


def test_wec_names_widen() -> None:
    assert fleet.wec_name(1, 1000) == "wec-0001"
    assert fleet.wec_name(1, 10000) == "wec-00001"
    assert fleet.wec_name(10000, 10000) == "wec-10000"


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    assert set(before) == set(after)
    return [k for k in before if before[k] != after[k]]


def test_change_location_label(tmp_path: Path) -> None:
    root = tmp_path / "r"
    fleet.generate(root, WECS, OBJECTS, seed=7)
    for index in (1, 150, WECS):
        before = snapshot(root)
        path = fleet.change_location_label(root, index)
        after = snapshot(root)
        assert _changed(before, after) == [path.relative_to(root).as_posix()]
        old = [d for d in yaml.safe_load_all(before[path.relative_to(root).as_posix()]) if d]
        new = [d for d in yaml.safe_load_all(after[path.relative_to(root).as_posix()]) if d]
        diffs = [(a, b) for a, b in zip(old, new) if a != b]
        assert len(diffs) == 1
        a, b = diffs[0]
        assert a["kind"] == "Location" and a["metadata"]["name"] == fleet.wec_name(index, WECS)
        assert a["metadata"]["labels"]["tier"] != b["metadata"]["labels"]["tier"]
        a["metadata"]["labels"].pop("tier"), b["metadata"]["labels"].pop("tier")
        assert a == b


def test_edit_workload_object(tmp_path: Path) -> None:
    root = tmp_path / "r"
    fleet.generate(root, WECS, OBJECTS, seed=7)
    for _ in range(2):  # every call is a change
        before = snapshot(root)
        path = fleet.edit_workload_object(root)
        rel = path.relative_to(root).as_posix()
        assert _changed(before, snapshot(root)) == [rel]
        old = [d for d in yaml.safe_load_all(before[rel]) if d]
        new = [d for d in yaml.safe_load_all(path.read_bytes()) if d]
        diffs = [(a, b) for a, b in zip(old, new) if a != b]
        assert len(diffs) == 1 and diffs[0][0]["kind"] == "ConfigMap"
        assert diffs[0][0]["metadata"] == diffs[0][1]["metadata"]


def test_mutate_dispatch(tmp_path: Path) -> None:
    root = tmp_path / "r"
    fleet.generate(root, 5, 5)
    assert fleet.mutate(root, "location", index=2).name.startswith("wecs-")
    assert fleet.mutate(root, "workload").name == "configmaps.yaml"
    with pytest.raises(ValueError):
        fleet.mutate(root, "nope")
