"""End to end: reconcile -> `ksgitops sync` on a WEC -> `ksgitops status`, for drift, a mailbox not
applied yet, and an apply error. Runs against the loopback API server, or a real cluster with
KSGITOPS_TEST_KUBECONFIG (inside a throwaway namespace): every step goes through the API."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from conftest import git, git_init, write_tree
from kube_fixtures import Wec
from ksgitops.core.serialize import load_yaml
from minimal_fleet import minimal_fleet

MAILBOX = "inv-mb-edge1"
REF = f"refs/heads/ksgitops/reported/{MAILBOX}"
REPORTS = "+refs/heads/ksgitops/reported/*:refs/heads/ksgitops/reported/*"


class Fleet:
    """A work repository (sources, reconcile, status) and the bare remote the agent reads."""

    def __init__(self, work: Path, tmp_path: Path, cli: Any, wec: Wec, namespace: str) -> None:
        self.work, self.cli, self.wec, self.namespace = work, cli, wec, namespace
        self.remote = tmp_path / "remote.git"
        self.cache = tmp_path / "cache"
        self.publish("sources")

    def publish(self, message: str) -> None:
        """Commit source edits, reconcile them into a commit, push main."""
        if git(self.work, "status", "--porcelain"):
            git(self.work, "add", "-A")
            git(self.work, "commit", "-q", "-m", message)
        result = self.cli("reconcile", str(self.work), "--commit")
        assert result.code == 0, result
        if not self.remote.exists():
            subprocess.run(["git", "clone", "-q", "--bare", str(self.work), str(self.remote)], check=True,
                           capture_output=True)
        git(self.work, "push", "-q", str(self.remote), "main")

    def sync(self, code: int = 0) -> Any:
        result = self.cli("sync", "--mailbox", MAILBOX, "--kubeconfig", str(self.wec.kubeconfig), "--context",
                          self.wec.context, "--repo", str(self.remote), "--cache-dir", str(self.cache), "--once",
                          "--inventory-namespace", self.namespace)
        assert result.code == code, result
        return result

    def sync_report(self) -> dict[str, Any]:
        return yaml.safe_load(git(self.remote, "show", f"{REF}:spaces/{MAILBOX}/reported/sync.yaml"))

    def status(self) -> str:
        """Fold the agent's report ref in, summarize, commit, push; STATUS.md."""
        git(self.work, "fetch", "-q", str(self.remote), REPORTS)
        result = self.cli("status", str(self.work), "--commit")
        assert result.code == 0, result
        git(self.work, "push", "-q", str(self.remote), "main")
        return (self.work / "STATUS.md").read_text()

    def combined(self, rel: str) -> dict[str, Any]:
        return load_yaml((self.work / "spaces" / "wds" / ".ksgitops" / "status" / f"{rel}.yaml").read_bytes())  # type: ignore[no-any-return]


def wec_row(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("| edge1 |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def live_color(wec: Wec, namespace: str) -> str:
    from kubernetes import client
    with wec.api_client() as api:
        return str(client.CoreV1Api(api).read_namespaced_config_map("settings", namespace).data["color"])


def edit_live(wec: Wec, namespace: str, color: str) -> None:
    """Someone changes a field the agent manages, as `kubectl edit` would."""
    from kubernetes import client
    with wec.api_client() as api:
        client.CoreV1Api(api).patch_namespaced_config_map("settings", namespace, {"data": {"color": color}})


WIDGETS = {
    "ksgitops.yaml": """
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
spec:
  kinds: [{group: example.com, kind: Widget, resource: widgets, namespaced: true}]
""",
    "spaces/wds/widget.yaml": """
apiVersion: example.com/v1
kind: Widget
metadata: {name: gizmo, namespace: NAMESPACE}
spec: {size: 3}
""",
}


def test_drift_out_of_sync_and_failed_reach_status(tree, cli, kube_wec: Wec, unique_ns: str, tmp_path: Path) -> None:
    fleet = Fleet(git_init(tree(minimal_fleet(unique_ns))), tmp_path, cli, kube_wec, unique_ns)
    cm = f"core/configmaps/{unique_ns}/settings"
    fleet.sync()
    first = fleet.sync_report()
    assert first["revision"] and "drifted" not in first and "errors" not in first
    row = wec_row(fleet.status())
    assert row[2] == "Synced" and row[3].startswith(first["revision"][:12]) and row[4] == first["revision"][:12]

    # someone edits a managed field on the WEC: the next sync corrects it and reports it
    edit_live(kube_wec, unique_ns, "red")
    assert "drift corrected 1" in fleet.sync().out
    assert live_color(kube_wec, unique_ns) == "blue"
    report = fleet.sync_report()
    assert report["revision"] == first["revision"] and report["appliedAt"] == first["appliedAt"]
    [drift] = report["drifted"]
    assert (drift["path"], drift["change"], drift["fields"]) == (cm, "Modified", ["data.color"])
    text = fleet.status()
    assert wec_row(text)[2] == "Synced" and wec_row(text)[5] == "1"
    assert f"| edge1 | ConfigMap {unique_ns}/settings | Modified | data.color | {drift['detectedAt']} |" in text
    assert "red" not in text and "blue" not in text  # fields, never values
    assert [(d["wec"], d["fields"]) for d in fleet.combined(cm)["drifted"]] == [("edge1", ["data.color"])]
    ref = git(fleet.remote, "rev-parse", REF)
    fleet.sync()  # nothing new: the same report, no commit
    assert git(fleet.remote, "rev-parse", REF) == ref

    # a mailbox change not applied yet: OutOfSync
    (fleet.work / "spaces" / "wds" / "cm.yaml").write_text(
        (fleet.work / "spaces" / "wds" / "cm.yaml").read_text().replace("blue", "green"))
    fleet.publish("green")
    row = wec_row(fleet.status())
    assert row[2] == "OutOfSync" and row[3].startswith(first["revision"][:12]) and row[4] != first["revision"][:12]
    fleet.sync()
    assert live_color(kube_wec, unique_ns) == "green"
    row = wec_row(fleet.status())
    assert row[2] == "Synced" and row[5] == "0"  # a new revision: earlier drift no longer listed

    # an object the WEC cannot take (its CRD is not installed there): Failed, with the object's error
    write_tree(fleet.work, {path: text.replace("NAMESPACE", unique_ns) for path, text in WIDGETS.items()})
    placement = fleet.work / "spaces" / "wds" / "placement.yaml"
    placement.write_text(placement.read_text() + f"  - apiGroup: example.com\n    resources: [widgets]\n"
                                                  f"    namespaces: [{unique_ns}]\n")
    fleet.publish("widgets")
    result = fleet.sync(code=3)
    assert f"Widget.example.com {unique_ns}/gizmo: HTTP 404" in result.err
    [error] = fleet.sync_report()["errors"]
    assert error["path"] == f"example.com/widgets/{unique_ns}/gizmo" and error["message"].startswith("HTTP 404")
    text = fleet.status()
    assert wec_row(text)[2] == "Failed"
    assert f"| edge1 | Widget.example.com {unique_ns}/gizmo | HTTP 404 " in text
    widget = fleet.combined(f"example.com/widgets/{unique_ns}/gizmo")
    assert [(p["source"], p["wec"]) for p in widget["problems"]] == [("sync", "edge1")]
    assert live_color(kube_wec, unique_ns) == "green"  # the rest was applied


def test_collect_reads_state_but_never_claims_synced(tree, cli, kube_wec: Wec, unique_ns: str) -> None:
    """collect applies nothing: its WEC stays Unknown, and an agent's sync report survives it."""
    work = tree(minimal_fleet(unique_ns, context=kube_wec.context))
    assert cli("reconcile", str(work)).code == 0
    from kubernetes import client
    with kube_wec.api_client() as api:
        client.CoreV1Api(api).create_namespaced_config_map(unique_ns, {
            "metadata": {"name": "settings", "namespace": unique_ns}, "data": {"color": "blue"}})
    result = cli("collect", str(work), "--kubeconfig", str(kube_wec.kubeconfig))
    assert result.code == 0 and "collected 1 WEC, 2 reports, 1 mailbox changed;" in result.out, result  # the ConfigMap, its Namespace
    assert cli("status", str(work)).code == 0
    row = wec_row((work / "STATUS.md").read_text())
    assert row[2] == "Unknown" and row[3] == "never" and row[-1] == "1/1"

    sync = work / "spaces" / MAILBOX / "reported" / "sync.yaml"
    sync.write_text('{"apiVersion": "ksgitops.kubestellar.io/v1alpha1", "kind": "SyncReport", '
                    f'"metadata": {{"name": "{MAILBOX}"}}, "revision": "{"0" * 40}", "appliedAt": "2026-01-01T00:00:00Z"}}\n')
    kept = sync.read_bytes()
    with kube_wec.api_client() as api:  # gone: collect rewrites reported/ without its report
        client.CoreV1Api(api).delete_namespaced_config_map("settings", unique_ns)
    assert cli("collect", str(work), "--kubeconfig", str(kube_wec.kubeconfig)).code == 0
    assert not (work / "spaces" / MAILBOX / "reported" / "core" / "configmaps").exists()
    assert sync.read_bytes() == kept
    assert cli("status", str(work)).code == 0
    assert wec_row((work / "STATUS.md").read_text())[2] == "OutOfSync"  # the agent's claim, judged; not collect's
