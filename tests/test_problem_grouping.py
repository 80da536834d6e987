"""The same per-(object, WEC) problem on many WECs is reported once, naming the WECs (how many,
and the first few, sorted), in every output: stderr, `-o json`, problems.yaml, STATUS.md and the
object's CombinedStatus; per-WEC detail stays only where the message differs. The previous-copy
rule stays per WEC (test_bad_input_per_wec.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ksgitops.model import Origin, Problem, grouped_by_wec

WECS = 12


def fleet(tmp_path: Path) -> Path:
    """w00-w11; w00-w05 define neither parameter, w06-w09 only `a`, w10-w11 both."""
    docs = []
    for i in range(WECS):
        labels = {"id": f"w{i:02d}", "env": "prod", **({"a": "x"} if i >= 6 else {}), **({"b": "y"} if i >= 10 else {})}
        docs += [{"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
                  "metadata": {"name": f"w{i:02d}", "labels": {"id": f"w{i:02d}"}}},
                 {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location",
                  "metadata": {"name": f"w{i:02d}", "labels": labels},
                  "spec": {"instanceSelector": {"matchLabels": {"id": f"w{i:02d}"}}}}]
    repo = tmp_path / "repo"
    (repo / "spaces/inv").mkdir(parents=True)
    (repo / "spaces/inv/wecs.yaml").write_text(yaml.safe_dump_all(docs))
    (repo / "spaces/wds").mkdir()
    (repo / "spaces/wds/all.yaml").write_text("""\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: p}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync: [{apiGroup: "", resources: [configmaps], namespaces: [ns]}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ns
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
data: {a: "%(a)", b: "%(b)"}
""")
    return repo


def test_one_problem_per_object_and_message_in_every_output(tmp_path: Path, cli: Any) -> None:
    repo = fleet(tmp_path)
    result = cli("reconcile", str(repo), "-o", "json")
    assert result.code == 0, result  # per-(object, WEC) errors keep the exit code at 0
    lines = result.err.splitlines()
    assert len(lines) == 2, lines  # two messages: 'a' and 'b' missing (6 WECs), 'b' missing (4 WECs)
    both = next(ln for ln in lines if "parameters 'a', 'b'" in ln)
    only_b = next(ln for ln in lines if "parameter 'b' is not" in ln)
    assert both.endswith("[6 WECs: w00, w01, w02, w03, w04, …]"), both  # WECs by SyncTarget name, as STATUS.md
    assert only_b.endswith("[4 WECs: w06, w07, w08, w09]"), only_b
    problems = json.loads(result.out)["problems"]
    assert sorted((p["wecCount"], p["wecs"]) for p in problems) == [
        (4, ["w06", "w07", "w08", "w09"]), (6, ["w00", "w01", "w02", "w03", "w04"])]
    assert all("wec" not in p and "mailbox" not in p for p in problems)

    doc = yaml.safe_load((repo / "spaces/wds/.ksgitops/problems.yaml").read_text())
    assert doc["errors"] == 2 and doc["state"] == "Reconciled"
    six = next(p for p in doc["problems"] if p["wecCount"] == 6)
    assert six["wecs"] == ["w00", "w01", "w02", "w03", "w04"] and "wec" not in six and "mailbox" not in six

    assert cli("status", str(repo)).code == 0
    markdown = (repo / "STATUS.md").read_text()
    rows = [ln for ln in markdown.splitlines() if "ConfigMap ns/settings" in ln and "| wds |" in ln]
    assert len(rows) == 2 and any("| 6 WECs: w00, w01, w02, w03, w04, … |" in r for r in rows), rows
    combined = yaml.safe_load((repo / "spaces/wds/.ksgitops/status/core/configmaps/ns/settings.yaml").read_text())
    assert sorted(p["wecCount"] for p in combined["problems"] if p["source"] == "reconcile") == [4, 6]

    rendered = cli("render", "w07", str(repo))  # builds w07's mailbox only: its own problem
    assert rendered.code == 0 and rendered.err.splitlines() == [only_b.rpartition(" [")[0] + " [WEC w07]"]
    explained = json.loads(cli("explain", "w07", str(repo), "-o", "json").out)
    assert [p.rpartition(" [")[2] for p in explained["problems"]] == ["WEC w07]"]
    validated = cli("validate", str(repo), "-o", "json")
    one = next(p for p in json.loads(validated.out)["errors"] if p.get("wecCount") == 4)
    assert validated.code == 2 and one["wecs"] == ["w06", "w07", "w08", "w09"]


def test_a_problem_on_one_wec_names_it_and_its_mailbox_in_json(tmp_path: Path, cli: Any) -> None:
    repo = fleet(tmp_path)
    wecs = repo / "spaces/inv/wecs.yaml"
    docs = [d for d in yaml.safe_load_all(wecs.read_text()) if d["metadata"]["name"] in ("w00", "w10")]
    wecs.write_text(yaml.safe_dump_all(docs))
    result = cli("reconcile", str(repo), "-o", "json")
    assert result.err.rstrip().endswith(" [WEC w00]"), result.err
    [problem] = json.loads(result.out)["problems"]
    assert (problem["wec"], problem["mailbox"]) == ("w00", "inv-mb-w00") and "wecs" not in problem


def test_same_synctarget_name_in_two_inventory_spaces_is_named_with_its_space(tmp_path: Path, cli: Any) -> None:
    repo = fleet(tmp_path)
    (repo / "spaces/inv2").mkdir()
    (repo / "spaces/inv2/w00.yaml").write_text(yaml.safe_dump_all(
        [d for d in yaml.safe_load_all((repo / "spaces/inv/wecs.yaml").read_text()) if d["metadata"]["name"] == "w00"]))
    lines = cli("reconcile", str(repo)).err.splitlines()
    both = next(ln for ln in lines if "parameters 'a', 'b'" in ln)
    assert both.endswith("[7 WECs: inv/w00, inv2/w00, w01, w02, w03, …]"), both  # as `render inv2/w00` names it


def test_grouping_keeps_what_differs() -> None:
    at = Origin("spaces/wds/a.yaml", 3)
    found = grouped_by_wec([Problem(at, "m", wec="mb-2", obj="o"), Problem(at, "m", wec="mb-1", obj="o"),
                            Problem(at, "other", wec="mb-3", obj="o"), Problem(at, "m", "warning", wec="mb-4", obj="o"),
                            Problem(at, "no WEC")])
    assert [(p.message, p.severity, p.wec, p.wecs) for p in found] == [
        ("m", "error", "mb-1", ("mb-1", "mb-2")), ("m", "warning", "mb-4", ()), ("no WEC", "error", "", ()),
        ("other", "error", "mb-3", ())]
    assert str(found[0]) == "spaces/wds/a.yaml:3: m [2 WECs: mb-1, mb-2]" and found[0].mailboxes == ("mb-1", "mb-2")
    assert str(found[1]) == "spaces/wds/a.yaml:3: warning: m [WEC mb-4]"
    names = {"mb-1": "zeta", "mb-2": "alpha", "mb-4": "four"}
    named = [p.named(names) for p in found]
    assert str(named[0]) == "spaces/wds/a.yaml:3: m [2 WECs: alpha, zeta]" and named[0].mailboxes == ("mb-1", "mb-2")
    assert str(named[1]) == "spaces/wds/a.yaml:3: warning: m [WEC four]" and named[2] == found[2]
