"""Customizers and parameters as a careless or hostile commit writes them: paths whose work
multiplies, values put or copied until memory runs out, and messages about Secrets.

Each bomb is run through the real command in a child process with a time or memory limit: on
the code before the bounds, the first ran for hours and the others died with MemoryError (exit 4)
or took the machine's memory. Now each is one error for that (object, WEC), and the rest of the
fleet reconciles.
"""
from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import copy_example_sources, write_tree
from ksgitops.core.customize.jsonpath import MAX_VISITS, PathError, parse_path, replace_all

GIB = 1024 ** 3
WDS = "spaces/wmw-c"


def ksgitops(*args: str, memory: int = 2 * GIB, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True,
                          preexec_fn=limit, timeout=timeout)


def customized(tmp_path: Path, data: object, customizer: dict, kind: str = "ConfigMap") -> Path:
    """The example plus one object of `kind` in commonstuff (placed on both WECs) using `customizer`."""
    repo = copy_example_sources(tmp_path / "repo")
    obj = {"apiVersion": "v1", "kind": kind,
           "metadata": {"name": "target", "namespace": "commonstuff",
                        "annotations": {"edge.kubestellar.io/customizer": "hostile"}}, "data": data}
    hostile = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Customizer",
               "metadata": {"name": "hostile", "namespace": "commonstuff"}, **customizer}
    write_tree(repo, {f"{WDS}/hostile.yaml": yaml.safe_dump_all([obj, hostile])})
    if kind == "Secret":
        placement = repo / WDS / "edge-placement-c.yaml"
        placement.write_text(placement.read_text().replace("resources: [configmaps]", "resources: [configmaps, secrets]"))
    return repo


def one_error_per_wec(found: subprocess.CompletedProcess[str], said: str) -> None:
    """The same error on both WECs: one line, naming both (problems are grouped across WECs)."""
    assert found.returncode == 2 and "Traceback" not in found.stderr, found.stderr
    errors = [line for line in found.stderr.splitlines() if "hostile" in line and "warning" not in line]
    assert len(errors) == 1 and said in errors[0], found.stderr
    assert errors[0].endswith("[2 WECs: florin, guilder]"), errors[0]


def test_a_path_whose_work_multiplies_is_an_error_not_a_hang(tmp_path: Path) -> None:
    deep: object = "leaf"
    for _ in range(90):
        deep = {"a": deep, "b": [1, 2]}
    repo = customized(tmp_path, {"x": "1"}, {"replacements": [{"path": "$..*..*..*..*..*..*", "value": '"x"'}]})
    (repo / WDS / "hostile.yaml").write_text((repo / WDS / "hostile.yaml").read_text().replace(
        "data:\n  x: '1'\n", yaml.safe_dump({"data": {"x": "1"}, "spec": deep})))
    one_error_per_wec(ksgitops("validate", str(repo), timeout=120), "the path visits more than")


def test_copies_that_double_the_object_are_an_error_not_exhausted_memory(tmp_path: Path) -> None:
    doubling = [{"op": "copy", "from": "/data", "path": f"/data/k{i}"} for i in range(40)]
    repo = customized(tmp_path, {"a": "b"}, {"jsonPatch": doubling})
    one_error_per_wec(ksgitops("validate", str(repo), memory=GIB), "would grow by more than 16 MiB")


def test_a_large_parameter_expanded_many_times_is_an_error_not_exhausted_memory(tmp_path: Path) -> None:
    repo = customized(tmp_path, {"a": "%(big)" * 2000}, {"replacements": []})
    hostile = repo / WDS / "hostile.yaml"
    hostile.write_text(hostile.read_text().replace(
        "edge.kubestellar.io/customizer: hostile", "edge.kubestellar.io/expand-parameters: 'true'"))
    florin = repo / "spaces" / "imw1" / "florin.yaml"
    docs = list(yaml.safe_load_all(florin.read_text()))
    docs[1]["metadata"]["annotations"] = {"big": "x" * 2_000_000}
    florin.write_text(yaml.safe_dump_all(docs))
    found = ksgitops("validate", str(repo), memory=GIB)
    assert found.returncode == 2 and "Traceback" not in found.stderr, found.stderr
    assert "ConfigMap commonstuff/target" in found.stderr and "would grow by more than 16 MiB" in found.stderr


def test_every_place_a_path_picks_counts_toward_the_bounds() -> None:
    doc: object = 0
    for _ in range(8):
        doc = [doc]
    many = parse_path("$" + "[0,0,0,0,0,0]" * 8)  # 6^8 = 1.7 million ways to the same place
    with pytest.raises(PathError, match=f"more than {MAX_VISITS:,}"):
        replace_all(doc, many, 1)
    with pytest.raises(PathError, match="selects 6 places"):
        replace_all([[0]], parse_path("$[0,0,0,0,0,0][0]"), 1, max_places=5)
    assert replace_all([[0]], parse_path("$[0,0,0,0,0,0][0]"), 1, max_places=6) == 6


# --- Secrets ----------------------------------------------------------------------------------------

def secret_outputs(repo: Path) -> str:
    found = ksgitops("reconcile", str(repo))
    assert found.returncode == 0, found.stderr
    status = ksgitops("status", str(repo))
    assert status.returncode == 0, status.stderr
    problems = (repo / WDS / ".ksgitops" / "problems.yaml").read_text()
    return found.stdout + found.stderr + status.stdout + status.stderr + problems + (repo / "STATUS.md").read_text()


def test_a_parameter_reference_in_a_secret_is_not_named_in_any_message(tmp_path: Path) -> None:
    repo = customized(tmp_path, None, {"replacements": []}, kind="Secret")
    hostile = repo / WDS / "hostile.yaml"
    hostile.write_text(hostile.read_text().replace(
        "edge.kubestellar.io/customizer: hostile", "edge.kubestellar.io/expand-parameters: 'true'").replace(
        "data: null", "stringData: {password: 'Zq%(x7Rp)L'}"))
    shown = secret_outputs(repo)
    assert "Secret commonstuff/target" in shown and "a parameter it references is not defined" in shown
    assert "x7Rp" not in shown


def test_a_customizer_value_meant_for_a_secret_is_not_quoted_when_it_is_no_json(tmp_path: Path) -> None:
    repo = customized(tmp_path, {"password": "c2VjcmV0"},
                      {"replacements": [{"path": "$.data.password", "value": '"aHVudGVyMg=='}]}, kind="Secret")
    checked = ksgitops("validate", str(repo))  # a warning on the Customizer, an error on the Secret using it
    assert checked.returncode == 2 and "Customizer hostile: replacements[0].value is not valid JSON" in checked.stderr
    assert "Secret commonstuff/target" in checked.stderr
    found = ksgitops("reconcile", str(repo))
    shown = checked.stderr + found.stdout + found.stderr + (repo / WDS / ".ksgitops" / "problems.yaml").read_text()
    assert "aHVudGVyMg" not in shown and "c2VjcmV0" not in shown


# --- StatusCollectors ---------------------------------------------------------------------------------

def test_a_status_collector_whose_work_multiplies_is_an_error_not_a_hang(tmp_path: Path) -> None:
    numbers = "[" + ",".join(map(str, range(20))) + "]"
    expression = "1"
    for depth in range(7):  # 20^7 evaluations
        expression = f"{numbers}.map(v{depth}, {expression})"
    repo = copy_example_sources(tmp_path / "repo")
    write_tree(repo, {f"{WDS}/collector.yaml": yaml.safe_dump({
        "apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "hostile"},
        "spec": {"select": [{"name": "n", "def": f"size({expression})"}]}})})
    placement = repo / WDS / "edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace(
        "  wantSingletonReportedState: true", "  wantSingletonReportedState: true\n  statusCollectors: [hostile]"))
    assert ksgitops("reconcile", str(repo)).returncode == 0
    try:
        found = ksgitops("status", str(repo), timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("status still ran after 20 s")
    assert "hostile" in found.stderr and "Traceback" not in found.stderr, found.stderr


def test_a_json_patch_index_beyond_any_list_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """An index of thousands of digits: int() refuses it (ValueError, exit 4 before)."""
    ops = [{"op": "add", "path": "/metadata/finalizers", "value": ["a"]},
           {"op": "add", "path": "/metadata/finalizers/" + "9" * 5000, "value": "x"}]
    repo = customized(tmp_path, {"a": "b"}, {"jsonPatch": ops})
    one_error_per_wec(ksgitops("validate", str(repo)), "the path does not resolve in the object")


def test_a_copy_from_an_index_beyond_any_list_is_an_error_not_a_crash(tmp_path: Path) -> None:
    ops = [{"op": "add", "path": "/metadata/finalizers", "value": ["a"]},
           {"op": "copy", "from": "/metadata/finalizers/" + "9" * 5000, "path": "/data/b"}]
    repo = customized(tmp_path, {"a": "b"}, {"jsonPatch": ops})
    one_error_per_wec(ksgitops("validate", str(repo)), "the path does not resolve in the object")


def test_a_secret_whose_type_is_a_list_is_placed_without_a_crash(tmp_path: Path) -> None:
    """`type` is no string (the schema check says so); the system-object check passed it to a set (exit 4)."""
    repo = customized(tmp_path, {"a": "Yg=="}, {"replacements": []}, kind="Secret")
    hostile = repo / WDS / "hostile.yaml"
    hostile.write_text(hostile.read_text().replace("kind: Secret\n", "kind: Secret\ntype: [a, list]\n", 1))
    found = ksgitops("validate", str(repo))
    assert found.returncode in (0, 2) and "internal error" not in found.stderr and "Traceback" not in found.stderr, found.stderr
