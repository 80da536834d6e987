"""`ksgitops sync`, the agent beside a WEC: the real `kubernetes` client against loopback KubeServers
or real clusters (KSGITOPS_TEST_KUBECONFIG, see tests/kube_fixtures.py), real git repositories as the
remote. The agent reaches each WEC through a wire that records its requests; the tests set up and
read back the cluster through the API, and name what they create after their `kube_names`.

The clusters' controllers write the ReplicaSet's status a moment after each apply: a test that
needs the reported state to stand still waits for them (`Wec.settle`), and a test that changes a
status itself changes the widget's (a custom resource no controller of the cluster writes)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, git, git_init, write_tree
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from kube_fixtures import KubeNames, Wec, isolate, widget_status, widget_wds
from kubewire import WIRE_TOKEN, KubeWire
from ksgitops.app.agent import contains, desired_objects
from ksgitops.io.fs.tree import WorkTreeSnapshot
from minimal_fleet import minimal_fleet

FLORIN = "imw1-mb-florin"
REF = f"refs/heads/ksgitops/reported/{FLORIN}"


@dataclass
class Fleet:
    work: Path  # where sources are edited and reconciled
    remote: Path  # the bare repository the agents read and push to
    cache: Path
    names: KubeNames  # cluster-level names of the test's own (the example's namespaces renamed)

    def publish(self, cli, message: str = "change") -> None:
        """Commit the source edits, reconcile them into a commit, push main to the remote."""
        if git(self.work, "status", "--porcelain"):
            git(self.work, "add", "-A")
            git(self.work, "commit", "-q", "-m", message)
        result = cli("reconcile", str(self.work), "--commit")
        assert result.code == 0, result
        git(self.work, "push", "-q", str(self.remote), "main")


def make_fleet(work: Path, cli, tmp_path: Path, names: KubeNames) -> Fleet:
    result = cli("reconcile", str(work), "--commit")
    assert result.code == 0, result
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True, capture_output=True)
    return Fleet(work, remote, tmp_path / "cache", names)


@pytest.fixture
def fleet(example: Path, cli, tmp_path: Path, kube_names: KubeNames) -> Fleet:
    return make_fleet(git_init(isolate(example, kube_names)), cli, tmp_path, kube_names)


@pytest.fixture
def widget_fleet(example: Path, cli, tmp_path: Path, kube_names: KubeNames) -> Fleet:
    """The example with a CRD and a widget placed on florin too (see kube_fixtures.widget_wds)."""
    write_tree(isolate(example, kube_names), widget_wds(kube_names))
    return make_fleet(git_init(example, "widgets"), cli, tmp_path, kube_names)


@pytest.fixture
def wec(kube_wec: Wec, unique_ns: str) -> Wec:
    """The WEC, with the namespace its agent keeps its inventory in (`unique_ns`) made beforehand."""
    return kube_wec


def sync(cli, fleet: Fleet, wec: Wec, *extra: str, mailbox: str = FLORIN, cache: Path | None = None):
    return cli("sync", "--mailbox", mailbox, "--kubeconfig", str(wec.kubeconfig), "--context", wec.context,
               "--repo", str(fleet.remote), "--cache-dir", str(cache or fleet.cache), "--once",
               "--inventory-namespace", fleet.names.ns(), *extra)


def objects(repo: Path, mailbox: str = FLORIN):
    return desired_objects(WorkTreeSnapshot(repo).read_tree(f"spaces/{mailbox}"))


def live(wec: Wec, d):
    with wec.api() as api:
        return api.get(d.api_version, d.resource, d.namespace, d.name)


def gone(obj) -> bool:
    """Deleted: absent, or on its way out (a real Namespace stays Terminating until emptied)."""
    return obj is None or bool(obj["metadata"].get("deletionTimestamp"))


def writes(wire: KubeWire, since: int = 0, inventory: bool = False):
    return [r for r in wire.writes(since) if inventory or "ksgitops-inventory" not in r.path]


def set_status(wec: Wec, d, status: dict) -> None:
    """Only for a custom resource: a workload's status is its controller's."""
    assert d.kind not in ("ReplicaSet", "Deployment"), d
    with wec.api() as api:
        api.set_status(d.api_version, d.resource, d.namespace, d.name, status)


def widget(fleet: Fleet):
    return next(d for d in objects(fleet.work) if d.kind == "Widget")


def main_fields_managers(obj) -> set[tuple[str, str]]:
    """Who manages the object itself (a controller's entries for the status subresource aside)."""
    return {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"] if e.get("subresource") != "status"}


def remote_file(fleet: Fleet, path: str, ref: str = REF) -> str:
    return git(fleet.remote, "show", f"{ref}:{path}")


def edit_yaml(path: Path, change) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    path.write_text(yaml.safe_dump_all([d for d in (change(d) for d in docs) if d is not None], sort_keys=False))


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


def test_an_object_removed_from_the_mailbox_is_pruned_and_nothing_else(fleet: Fleet, cli, wec: Wec) -> None:
    assert sync(cli, fleet, wec).code == 0
    common = fleet.names.ns("commonstuff")
    with wec.api() as api:
        api.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "bystander", "namespace": common,
                                "labels": {"edge.kubestellar.io/projected": "yes"}}, "data": {"k": "v"}})
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    edit_yaml(fleet.work / "spaces" / "wmw-c" / "httpd.yaml", lambda d: None if d["kind"] == "ConfigMap" else d)
    fleet.publish(cli, "drop the web page")
    assert cm.rel not in {d.rel for d in objects(fleet.work)}

    mark = len(wec.wire.requests)
    result = sync(cli, fleet, wec)
    assert result.code == 0, result
    assert [(r.method, r.path) for r in writes(wec.wire, mark)] == [
        ("DELETE", f"/api/v1/namespaces/{cm.namespace}/configmaps/{cm.name}")]
    assert gone(live(wec, cm)) and "pruned 1" in result.out
    with wec.api() as api:
        assert api.get("v1", "configmaps", common, "bystander") is not None
    assert all(live(wec, d) is not None for d in objects(fleet.work))
    tree = git(fleet.remote, "ls-tree", "-r", "--name-only", REF, f"spaces/{FLORIN}/reported").splitlines()
    assert f"spaces/{FLORIN}/reported/{cm.rel}.yaml" not in tree and tree


def test_namespaces_are_pruned_only_when_the_agent_created_them_and_they_hold_nothing_else(
        fleet: Fleet, cli, kube_wecs, tmp_path: Path) -> None:
    wecs = kube_wecs(["clean", "busy"])
    preexisting = fleet.names.ns("commonstuff")
    for name in ("clean", "busy"):
        with wecs[name].api() as api:
            api.namespace(fleet.names.ns())  # for the inventory
        assert sync(cli, fleet, wecs[name], cache=tmp_path / name).code == 0
    with wecs["busy"].api() as api:
        api.apply({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                   "metadata": {"name": "bystander", "namespace": preexisting}})
    (fleet.work / "spaces" / "wmw-c" / "edge-placement-c.yaml").unlink()  # florin receives nothing now
    fleet.publish(cli, "no more common stuff")
    assert objects(fleet.work) == []

    clean = sync(cli, fleet, wecs["clean"], cache=tmp_path / "clean")
    assert clean.code == 0, clean
    with wecs["clean"].api() as api:
        assert gone(api.get("v1", "namespaces", "", preexisting))
    assert "pruned 3" in clean.out

    busy = sync(cli, fleet, wecs["busy"], cache=tmp_path / "busy")
    assert busy.code == 0, busy
    with wecs["busy"].api() as api:
        assert not gone(api.get("v1", "namespaces", "", preexisting))
        assert api.get("v1", "configmaps", preexisting, "bystander") is not None
    assert f"Namespace {preexisting} left in place: it holds 1 object (configmaps/bystander)" in busy.err
    assert "pruned 2" in busy.out


def test_a_namespace_that_existed_before_is_never_pruned(fleet: Fleet, cli, wec: Wec) -> None:
    common = fleet.names.ns("commonstuff")
    with wec.api() as api:
        api.namespace(common)
    assert sync(cli, fleet, wec).code == 0
    (fleet.work / "spaces" / "wmw-c" / "edge-placement-c.yaml").unlink()
    fleet.publish(cli)
    result = sync(cli, fleet, wec)
    assert result.code == 0 and "pruned 2" in result.out, result
    with wec.api() as api:
        assert not gone(api.get("v1", "namespaces", "", common))


def test_create_only_objects_are_created_once_and_never_overwritten(fleet: Fleet, cli, wec: Wec) -> None:
    def create_only(doc):
        if doc["kind"] == "ConfigMap":
            doc["metadata"].setdefault("annotations", {})["edge.kubestellar.io/downsync-overwrite"] = "false"
        return doc
    edit_yaml(fleet.work / "spaces" / "wmw-c" / "httpd.yaml", create_only)
    fleet.publish(cli, "create-only page")
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    collection = f"/api/v1/namespaces/{cm.namespace}/configmaps"

    result = sync(cli, fleet, wec)
    assert result.code == 0 and "created 1" in result.out, result
    created = [r for r in writes(wec.wire) if r.path.startswith(collection)]
    assert [(r.method, r.path, r.query.get("fieldManager")) for r in created] == [("POST", collection, "ksgitops")]

    with wec.api() as api:
        api.patch(cm.api_version, cm.resource, cm.namespace, cm.name, {"data": {"index.html": "edited on the WEC"}})
    mark = len(wec.wire.requests)
    result = sync(cli, fleet, wec)
    assert result.code == 0 and "kept 1" in result.out, result
    assert not [r for r in writes(wec.wire, mark) if r.path.startswith(collection)]
    assert live(wec, cm)["data"] == {"index.html": "edited on the WEC"}

    with wec.api() as api:
        assert api.delete(cm.api_version, cm.resource, cm.namespace, cm.name)  # gone: created again
    assert sync(cli, fleet, wec).code == 0
    assert live(wec, cm)["data"] == cm.body["data"]


def test_a_crd_and_its_custom_resource_in_one_mailbox(widget_fleet: Fleet, cli, wec: Wec,
                                                       kube_names: KubeNames) -> None:
    fleet = widget_fleet
    group, ns = kube_names.group("example.com"), kube_names.ns("widgetland")
    result = sync(cli, fleet, wec)
    assert result.code == 0, result
    order = [r.path for r in writes(wec.wire)]
    namespace = order.index(f"/api/v1/namespaces/{ns}")
    crd = order.index(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
    widget = order.index(f"/apis/{group}/v1/namespaces/{ns}/widgets/gizmo")
    assert namespace < crd < widget
    with wec.api() as api:
        assert api.get(f"{group}/v1", "widgets", ns, "gizmo")["spec"] == {"size": 3}
        api.set_status(f"{group}/v1", "widgets", ns, "gizmo", widget_status(1))
    mark = len(wec.wire.requests)
    assert sync(cli, fleet, wec).code == 0
    assert writes(wec.wire, mark, inventory=True) == []
    report = yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/{group}/widgets/{ns}/gizmo.yaml"))
    assert report["status"] == widget_status(1) and report["object"]["kind"] == "Widget"


def crd(group: str, plural: str, kind: str, scope: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_upsync_follows_the_syncerconfig(fleet: Fleet, cli, wec: Wec) -> None:
    names = fleet.names  # the example's placements upsync group1.test and group2.test: renamed so
    sprockets, cogs = names.group("group1.test"), names.group("group2.test")
    orbital = names.ns("orbital")
    with wec.api() as api:
        api.crd(crd(sprockets, "sprockets", "Sprocket", "Namespaced"))
        api.crd(crd(cogs, "cogs", "Cog", "Cluster"))
        for ns in (orbital, names.ns("elsewhere")):
            api.namespace(ns)
        for ns, name in ((orbital, "george"), (orbital, "other"), (names.ns("elsewhere"), "george")):
            api.apply({"apiVersion": f"{sprockets}/v1", "kind": "Sprocket", "metadata": {"name": name, "namespace": ns},
                       "spec": {"teeth": 12}}, "sprockets")
        for name in ("william", "walter"):
            api.apply({"apiVersion": f"{cogs}/v1", "kind": "Cog", "metadata": {"name": name}}, "cogs")
    result = sync(cli, fleet, wec)
    assert result.code == 0 and "2 upsynced" in result.out, result
    files = git(fleet.remote, "ls-tree", "-r", "--name-only", REF, f"spaces/{FLORIN}/upsynced").splitlines()
    assert files == [f"spaces/{FLORIN}/upsynced/{sprockets}/sprockets/{orbital}/george.yaml",
                     f"spaces/{FLORIN}/upsynced/{cogs}/cogs/_cluster/william.yaml"]
    george = yaml.safe_load(remote_file(fleet, files[0]))
    assert george["spec"] == {"teeth": 12} and george["kind"] == "Sprocket"
    assert not {"uid", "resourceVersion", "managedFields", "creationTimestamp"} & set(george["metadata"])


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
