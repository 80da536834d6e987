"""`ksgitops sync`, the agent beside a WEC: the real `kubernetes` client against loopback KubeServers
or real clusters (KSGITOPS_TEST_KUBECONFIG, see tests/kube_fixtures.py), real git repositories as the
remote. The agent reaches each WEC through a wire that records its requests; the tests set up and
read back the cluster through the API, and name what they create after their `kube_names`.

The clusters' controllers write the ReplicaSet's status a moment after each apply: a test that
needs the reported state to stand still waits for them (`Wec.settle`), and a test that changes a
status itself changes the widget's (a custom resource no controller of the cluster writes).

Here: the agent's cycles and reports, its exit codes, its loop and a remote with an outage; what it
prunes, creates once and upsyncs: tests/test_sync_objects.py; the fixtures: tests/sync_fleet.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, git, git_init
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from kube_fixtures import KubeNames, Wec, widget_status
from kubewire import WIRE_TOKEN
from ksgitops.app.agent import contains
from minimal_fleet import minimal_fleet
from sync_fleet import (FLORIN, Fleet, REF, live, main_fields_managers, make_fleet, objects, remote_file, set_status,
                        sync, widget, writes)
from sync_fleet import fleet, wec, widget_fleet  # noqa: F401 - the fixtures


def test_first_cycle_creates_namespaces_first_then_applies_with_ssa(fleet: Fleet, cli, wec: Wec) -> None:
    result = sync(cli, fleet, wec)
    assert result.code == 0, result
    done = writes(wec.wire)
    namespaces = [i for i, r in enumerate(done) if r.path.startswith("/api/v1/namespaces/") and r.path.count("/") == 4]
    namespaced = [i for i, r in enumerate(done) if r.path.count("/") > 5]
    assert namespaces and namespaced and max(namespaces) < min(namespaced), [(r.method, r.path) for r in done]
    for r in done:
        assert (r.method, r.content_type) == ("PATCH", "application/apply-patch+yaml"), r
        assert r.query.get("fieldManager") == "ksgitops" and r.query.get("force") == "true", r
    sent = objects(fleet.work)
    assert len(done) == len(sent)
    for d in sent:
        found = live(wec, d)
        assert found is not None and contains(found, d.body), d
        assert main_fields_managers(found) == {("ksgitops", "Apply")}
    assert "applied 3" in result.out


def test_a_cycle_with_nothing_changed_writes_nothing(fleet: Fleet, cli, wec: Wec) -> None:
    assert sync(cli, fleet, wec).code == 0
    wec.settle()  # the ReplicaSet's controller has written its status...
    assert sync(cli, fleet, wec).code == 0  # ...and this cycle reported it: from now on nothing changes
    ref = git(fleet.remote, "rev-parse", REF)
    mark = len(wec.wire.requests)
    result = sync(cli, fleet, wec)
    assert result.code == 0, result
    assert writes(wec.wire, mark, inventory=True) == []  # compared first: not even no-op applies
    assert {r.method for r in wec.wire.requests[mark:]} == {"GET"}
    assert "unchanged 3" in result.out and "reports unchanged" in result.out
    assert git(fleet.remote, "rev-parse", REF) == ref


def test_drift_on_the_wec_is_applied_again(fleet: Fleet, cli, wec: Wec) -> None:
    assert sync(cli, fleet, wec).code == 0
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    with wec.api() as api:
        api.patch(cm.api_version, cm.resource, cm.namespace, cm.name, {"data": {"index.html": "defaced"}})
    assert live(wec, cm)["data"] == {"index.html": "defaced"}
    mark = len(wec.wire.requests)
    assert sync(cli, fleet, wec).code == 0
    assert [(r.method, r.path) for r in writes(wec.wire, mark)] == [
        ("PATCH", f"/api/v1/namespaces/{cm.namespace}/configmaps/{cm.name}")]
    assert live(wec, cm)["data"] == cm.body["data"]


def test_the_report_ref_holds_only_this_mailbox_and_a_linear_history(widget_fleet: Fleet, cli, wec: Wec) -> None:
    fleet = widget_fleet
    main = git(fleet.remote, "rev-parse", "main")
    assert sync(cli, fleet, wec).code == 0
    first = git(fleet.remote, "rev-parse", REF)
    assert git(fleet.remote, "rev-parse", "main") == main  # never the branch
    held = git(fleet.remote, "ls-tree", "-r", "--name-only", REF).splitlines()  # the mailbox's reports, nothing else
    assert held and all(p.startswith(f"spaces/{FLORIN}/reported/") for p in held), held
    message = git(fleet.remote, "log", "-1", "--format=%B", REF)
    assert f"Ksgitops-Source: {main}" in message and f"Ksgitops-Mailbox: {FLORIN}" in message
    assert git(fleet.remote, "rev-parse", f"{REF}^") == main  # the first report commit sits on its source
    git(fleet.remote, "fsck", "--no-progress")

    wec.settle()  # what the controllers write is reported by the next cycle, on top of the first
    assert sync(cli, fleet, wec).code == 0
    settled = git(fleet.remote, "rev-parse", REF)
    assert settled == first or git(fleet.remote, "rev-parse", f"{REF}^") == first

    gizmo, status = widget(fleet), widget_status(1)
    set_status(wec, gizmo, status)
    assert sync(cli, fleet, wec).code == 0
    assert git(fleet.remote, "rev-parse", f"{REF}^") == settled  # then a fast-forward chain
    report = yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/{gizmo.rel}.yaml"))
    assert report["status"] == status and report["object"]["generation"] == 1
    assert git(fleet.remote, "diff", "--name-only", settled, REF).splitlines() == [
        f"spaces/{FLORIN}/reported/{gizmo.rel}.yaml"]


def test_a_failed_push_is_retried_next_cycle(widget_fleet: Fleet, cli, wec: Wec, tmp_path: Path) -> None:
    fleet = widget_fleet
    assert sync(cli, fleet, wec).code == 0
    wec.settle()
    gizmo = widget(fleet)
    set_status(wec, gizmo, widget_status(1))
    away = fleet.remote.rename(tmp_path / "away.git")  # the remote is unavailable
    result = sync(cli, fleet, wec)
    assert result.code == 3, result
    assert "Traceback" not in result.err and "kept locally, retried next cycle" in result.err
    committed = result.out.split("committed ")[1].split(";")[0].strip()
    away.rename(fleet.remote)
    assert not git(fleet.remote, "rev-parse", REF).startswith(committed)

    result = sync(cli, fleet, wec)
    assert result.code == 0, result
    assert f"pushed {committed}" in result.out
    assert git(fleet.remote, "rev-parse", REF).startswith(committed)
    assert yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/{gizmo.rel}.yaml"))["status"] == widget_status(1)


def test_an_invalid_mailbox_name_exits_2(fleet: Fleet, cli, kube_wec: Wec) -> None:
    result = sync(cli, fleet, kube_wec, mailbox="Not_A_Label")
    assert result.code == 2 and "DNS-1123" in result.err and "Traceback" not in result.err


def test_an_unreachable_wec_exits_3_with_one_line(fleet: Fleet, cli, wec: Wec) -> None:
    wec.wire.unreachable = True
    result = sync(cli, fleet, wec)
    assert result.code == 3, result
    assert [line for line in result.err.splitlines() if line] == [
        line for line in result.err.splitlines() if line.startswith(f"{FLORIN}: unreachable: ")]
    assert result.err and "Traceback" not in result.err and WIRE_TOKEN not in result.err + result.out


def test_a_missing_mailbox_applies_and_prunes_nothing(fleet: Fleet, cli, wec: Wec) -> None:
    result = sync(cli, fleet, wec, mailbox="imw1-mb-nobody")
    assert result.code == 3 and "no mailbox spaces/imw1-mb-nobody" in result.err
    assert writes(wec.wire, inventory=True) == []


def test_the_loop_runs_until_sigterm(fleet: Fleet, wec: Wec) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ksgitops", "sync", "--mailbox", FLORIN, "--kubeconfig", str(wec.kubeconfig),
         "--context", wec.context, "--repo", str(fleet.remote), "--cache-dir", str(fleet.cache),
         "--inventory-namespace", fleet.names.ns(), "--interval", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run(["git", "-C", str(fleet.remote), "rev-parse", "--verify", "-q", REF],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the agent never pushed its reports")
        time.sleep(0.5)  # a few idle cycles
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out.count(f"{FLORIN} @ ") >= 2 and "Traceback" not in err


def test_apply_and_prune_on_any_cluster(tree, cli, kube_wec: Wec, unique_ns: str, tmp_path: Path,
                                        kube_names: KubeNames) -> None:
    """The agent reaching the API server itself (with a real cluster: its TLS and credentials)."""
    from kubernetes import client
    direct = kube_wec.direct()
    work = git_init(tree(minimal_fleet(unique_ns)))
    fleet = make_fleet(work, cli, tmp_path, kube_names)
    result = sync(cli, fleet, direct, mailbox="inv-mb-edge1")
    assert result.code == 0, result
    with kube_wec.api_client() as api:
        core = client.CoreV1Api(api)
        assert core.read_namespaced_config_map("settings", unique_ns).data == {"color": "blue"}
        (work / "spaces" / "wds" / "cm.yaml").unlink()
        fleet.publish(cli)
        result = sync(cli, fleet, direct, mailbox="inv-mb-edge1")
        assert result.code == 0 and "pruned 1" in result.out, result
        names = [cm.metadata.name for cm in core.list_namespaced_config_map(unique_ns).items]
        assert "settings" not in names and "ksgitops-inventory-inv-mb-edge1" in names
        assert core.read_namespace(unique_ns).status.phase == "Active"  # it existed before: never pruned
    assert kube_wec.wire.requests == []  # not one request went through the wire


def test_a_git_daemon_remote_with_an_outage(widget_fleet: Fleet, cli, wec: Wec, git_daemon: GitDaemon,
                                            tmp_path: Path) -> None:
    """git:// (libgit2's transport, for fetch and push); the repository vanishes for a cycle."""
    fleet = widget_fleet
    served = Fleet(fleet.work, git_daemon.bare("fleet.git", fleet.work), tmp_path / "daemon-cache", fleet.names)
    url = git_daemon.url("fleet.git")

    def run():
        return cli("sync", "--mailbox", FLORIN, "--kubeconfig", str(wec.kubeconfig), "--context", wec.context,
                   "--repo", url, "--cache-dir", str(served.cache), "--inventory-namespace", fleet.names.ns(), "--once")
    result = run()
    assert result.code == 0 and "pushed" in result.out, result
    first = git(served.remote, "rev-parse", REF)
    assert git(served.remote, "diff", "--name-only", "main", REF).splitlines()

    wec.settle()
    gizmo = widget(fleet)
    set_status(wec, gizmo, widget_status(1))
    away = served.remote.rename(served.remote.with_name("elsewhere.git"))
    result = run()
    assert result.code == 3 and "kept locally" in result.err and "Traceback" not in result.err, result
    away.rename(served.remote)
    assert git(served.remote, "rev-parse", REF) == first

    result = run()
    assert result.code == 0 and "pushed" in result.out, result
    assert git(served.remote, "rev-parse", f"{REF}^") == first
    report = yaml.safe_load(remote_file(served, f"spaces/{FLORIN}/reported/{gizmo.rel}.yaml"))
    assert report["status"] == widget_status(1)


def test_a_dry_run_prints_the_plan_and_changes_nothing(fleet: Fleet, cli, wec: Wec) -> None:
    """`sync --dry-run` reads the WEC and prints one step per object (the pure plan_phase over live
    reads); it writes nothing to the WEC and pushes nothing."""
    sent = objects(fleet.work)
    mark = len(wec.wire.requests)
    planned = sync(cli, fleet, wec, "--dry-run")
    assert planned.code == 0, planned
    lines = planned.out.splitlines()
    assert len(lines) == len(sent) and all(line.startswith("apply ") for line in lines), lines
    assert all(any(str(d) in line for line in lines) for d in sent)
    assert writes(wec.wire, mark, inventory=True) == [] and {r.method for r in wec.wire.requests[mark:]} == {"GET"}
    with pytest.raises(subprocess.CalledProcessError):
        git(fleet.remote, "rev-parse", "--verify", REF)  # no report was pushed
    assert sync(cli, fleet, wec).code == 0
    again = sync(cli, fleet, wec, "--dry-run")
    assert again.code == 0 and all(line.startswith("unchanged ") for line in again.out.splitlines()), again.out
