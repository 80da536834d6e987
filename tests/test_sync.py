"""`ksgitops sync`, the agent beside a WEC: the real `kubernetes` client against loopback KubeServers
(or a real cluster with KSGITOPS_TEST_KUBECONFIG), real git repositories as the remote."""
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
from kube_fixtures import Wec
from ksgitops.agent import contains, desired_objects
from ksgitops.io.fs import WorkTreeSnapshot
from minimal_fleet import minimal_fleet

FLORIN = "imw1-mb-florin"
REF = f"refs/heads/ksgitops/reported/{FLORIN}"
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
TOKEN = "kubeserver-dummy-token"


@dataclass
class Fleet:
    work: Path  # where sources are edited and reconciled
    remote: Path  # the bare repository the agents read and push to
    cache: Path

    def publish(self, cli, message: str = "change") -> None:
        """Commit the source edits, reconcile them into a commit, push main to the remote."""
        if git(self.work, "status", "--porcelain"):
            git(self.work, "add", "-A")
            git(self.work, "commit", "-q", "-m", message)
        result = cli("reconcile", str(self.work), "--commit")
        assert result.code == 0, result
        git(self.work, "push", "-q", str(self.remote), "main")


def make_fleet(work: Path, cli, tmp_path: Path) -> Fleet:
    result = cli("reconcile", str(work), "--commit")
    assert result.code == 0, result
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True, capture_output=True)
    return Fleet(work, remote, tmp_path / "cache")


@pytest.fixture
def fleet(example_git: Path, cli, tmp_path: Path) -> Fleet:
    return make_fleet(example_git, cli, tmp_path)


def sync(cli, fleet: Fleet, wec: Wec, *extra: str, mailbox: str = FLORIN, cache: Path | None = None):
    return cli("sync", "--mailbox", mailbox, "--kubeconfig", str(wec.kubeconfig), "--context", wec.context,
               "--repo", str(fleet.remote), "--cache-dir", str(cache or fleet.cache), "--once", *extra)


def objects(repo: Path, mailbox: str = FLORIN):
    return desired_objects(WorkTreeSnapshot(repo).read_tree(f"spaces/{mailbox}"))


def live(server, d):
    group, _, version = d.api_version.rpartition("/")
    return server.get(group, version, d.resource, d.namespace or None, d.name)


def writes(server, since: int = 0, inventory: bool = False):
    return [r for r in server.requests[since:]
            if r.method in WRITES and (inventory or "ksgitops-inventory" not in r.path)]


def remote_file(fleet: Fleet, path: str, ref: str = REF) -> str:
    return git(fleet.remote, "show", f"{ref}:{path}")


def edit_yaml(path: Path, change) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    path.write_text(yaml.safe_dump_all([d for d in (change(d) for d in docs) if d is not None], sort_keys=False))


def test_first_cycle_creates_namespaces_first_then_applies_with_ssa(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0, result
    done = writes(server)
    namespaces = [i for i, r in enumerate(done) if r.path.startswith("/api/v1/namespaces/") and r.path.count("/") == 4]
    namespaced = [i for i, r in enumerate(done) if r.path.count("/") > 5]
    assert namespaces and namespaced and max(namespaces) < min(namespaced), [(r.method, r.path) for r in done]
    for r in done:
        assert (r.method, r.content_type) == ("PATCH", "application/apply-patch+yaml"), r
        assert r.query.get("fieldManager") == "ksgitops" and r.query.get("force") == "true", r
    sent = objects(fleet.work)
    assert len(done) == len(sent)
    for d in sent:
        found = live(server, d)
        assert found is not None and contains(found, d.body), d
        assert {(e["manager"], e["operation"]) for e in found["metadata"]["managedFields"]} == {("ksgitops", "Apply")}
    assert "applied 3" in result.out


def test_a_cycle_with_nothing_changed_writes_nothing(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    assert sync(cli, fleet, kube_wec).code == 0
    ref = git(fleet.remote, "rev-parse", REF)
    mark = len(server.requests)
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0, result
    assert writes(server, mark, inventory=True) == []  # compared first: not even no-op applies
    assert {r.method for r in server.requests[mark:]} == {"GET"}
    assert "unchanged 3" in result.out and "reports unchanged" in result.out
    assert git(fleet.remote, "rev-parse", REF) == ref


def test_drift_on_the_wec_is_applied_again(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    assert sync(cli, fleet, kube_wec).code == 0
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    changed = live(server, cm)
    changed["data"] = {"index.html": "defaced"}
    server.put(changed)
    mark = len(server.requests)
    assert sync(cli, fleet, kube_wec).code == 0
    assert [(r.method, r.path) for r in writes(server, mark)] == [
        ("PATCH", f"/api/v1/namespaces/{cm.namespace}/configmaps/{cm.name}")]
    assert live(server, cm)["data"] == cm.body["data"]


def test_the_report_ref_holds_only_this_mailbox_and_a_linear_history(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    main = git(fleet.remote, "rev-parse", "main")
    assert sync(cli, fleet, kube_wec).code == 0
    first = git(fleet.remote, "rev-parse", REF)
    assert git(fleet.remote, "rev-parse", "main") == main  # never the branch
    held = git(fleet.remote, "ls-tree", "-r", "--name-only", REF).splitlines()  # the mailbox's reports, nothing else
    assert held and all(p.startswith(f"spaces/{FLORIN}/reported/") for p in held), held
    message = git(fleet.remote, "log", "-1", "--format=%B", REF)
    assert f"Ksgitops-Source: {main}" in message and f"Ksgitops-Mailbox: {FLORIN}" in message
    assert git(fleet.remote, "rev-parse", f"{REF}^") == main  # the first report commit sits on its source
    git(fleet.remote, "fsck", "--no-progress")

    rs = next(d for d in objects(fleet.work) if d.kind == "ReplicaSet")
    status = {"observedGeneration": 1, "replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    server.set_status("apps", "v1", "replicasets", rs.namespace, rs.name, status)
    assert sync(cli, fleet, kube_wec).code == 0
    assert git(fleet.remote, "rev-parse", f"{REF}^") == first  # then a fast-forward chain
    report = yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/{rs.rel}.yaml"))
    assert report["status"] == status and report["object"]["generation"] == 1
    assert git(fleet.remote, "diff", "--name-only", first, REF).splitlines() == [f"spaces/{FLORIN}/reported/{rs.rel}.yaml"]


def test_a_failed_push_is_retried_next_cycle(fleet: Fleet, cli, kube_wec: Wec, tmp_path: Path) -> None:
    server = kube_wec.require_server()
    assert sync(cli, fleet, kube_wec).code == 0
    rs = next(d for d in objects(fleet.work) if d.kind == "ReplicaSet")
    server.set_status("apps", "v1", "replicasets", rs.namespace, rs.name, {"observedGeneration": 1, "replicas": 1})
    away = fleet.remote.rename(tmp_path / "away.git")  # the remote is unavailable
    result = sync(cli, fleet, kube_wec)
    assert result.code == 3, result
    assert "Traceback" not in result.err and "kept locally, retried next cycle" in result.err
    committed = result.out.split("committed ")[1].split(";")[0].strip()
    away.rename(fleet.remote)
    assert not git(fleet.remote, "rev-parse", REF).startswith(committed)

    result = sync(cli, fleet, kube_wec)
    assert result.code == 0, result
    assert f"pushed {committed}" in result.out
    assert git(fleet.remote, "rev-parse", REF).startswith(committed)
    assert yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/{rs.rel}.yaml"))["status"]["replicas"] == 1


def test_an_object_removed_from_the_mailbox_is_pruned_and_nothing_else(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    assert sync(cli, fleet, kube_wec).code == 0
    bystander = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "bystander", "namespace": "commonstuff",
                              "labels": {"edge.kubestellar.io/projected": "yes"}}, "data": {"k": "v"}}
    server.put(bystander)
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    edit_yaml(fleet.work / "spaces" / "wmw-c" / "httpd.yaml", lambda d: None if d["kind"] == "ConfigMap" else d)
    fleet.publish(cli, "drop the web page")
    assert cm.rel not in {d.rel for d in objects(fleet.work)}

    mark = len(server.requests)
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0, result
    assert [(r.method, r.path) for r in writes(server, mark)] == [
        ("DELETE", f"/api/v1/namespaces/{cm.namespace}/configmaps/{cm.name}")]
    assert live(server, cm) is None and "pruned 1" in result.out
    assert server.get("", "v1", "configmaps", "commonstuff", "bystander") is not None
    assert all(live(server, d) is not None for d in objects(fleet.work))
    tree = git(fleet.remote, "ls-tree", "-r", "--name-only", REF, f"spaces/{FLORIN}/reported").splitlines()
    assert f"spaces/{FLORIN}/reported/{cm.rel}.yaml" not in tree and tree


def test_namespaces_are_pruned_only_when_the_agent_created_them_and_they_hold_nothing_else(
        fleet: Fleet, cli, kube_wecs, tmp_path: Path) -> None:
    wecs = kube_wecs(["clean", "busy"])
    preexisting = "commonstuff"
    for name in ("clean", "busy"):
        assert sync(cli, fleet, wecs.wec(name), cache=tmp_path / name).code == 0
    wecs.servers["busy"].put({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                              "metadata": {"name": "bystander", "namespace": preexisting}})
    (fleet.work / "spaces" / "wmw-c" / "edge-placement-c.yaml").unlink()  # florin receives nothing now
    fleet.publish(cli, "no more common stuff")
    assert objects(fleet.work) == []

    clean = sync(cli, fleet, wecs.wec("clean"), cache=tmp_path / "clean")
    assert clean.code == 0, clean
    assert wecs.servers["clean"].get("", "v1", "namespaces", None, preexisting) is None
    assert "pruned 3" in clean.out

    busy = sync(cli, fleet, wecs.wec("busy"), cache=tmp_path / "busy")
    assert busy.code == 0, busy
    assert wecs.servers["busy"].get("", "v1", "namespaces", None, preexisting) is not None
    assert wecs.servers["busy"].get("", "v1", "configmaps", preexisting, "bystander") is not None
    assert "Namespace commonstuff left in place: it holds 1 object (configmaps/bystander)" in busy.err
    assert "pruned 2" in busy.out


def test_a_namespace_that_existed_before_is_never_pruned(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    server.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "commonstuff"}})
    assert sync(cli, fleet, kube_wec).code == 0
    (fleet.work / "spaces" / "wmw-c" / "edge-placement-c.yaml").unlink()
    fleet.publish(cli)
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0 and "pruned 2" in result.out, result
    assert server.get("", "v1", "namespaces", None, "commonstuff") is not None


def test_create_only_objects_are_created_once_and_never_overwritten(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()

    def create_only(doc):
        if doc["kind"] == "ConfigMap":
            doc["metadata"].setdefault("annotations", {})["edge.kubestellar.io/downsync-overwrite"] = "false"
        return doc
    edit_yaml(fleet.work / "spaces" / "wmw-c" / "httpd.yaml", create_only)
    fleet.publish(cli, "create-only page")
    cm = next(d for d in objects(fleet.work) if d.kind == "ConfigMap")
    collection = f"/api/v1/namespaces/{cm.namespace}/configmaps"

    result = sync(cli, fleet, kube_wec)
    assert result.code == 0 and "created 1" in result.out, result
    created = [r for r in writes(server) if r.path.startswith(collection)]
    assert [(r.method, r.path, r.query.get("fieldManager")) for r in created] == [("POST", collection, "ksgitops")]

    mine = live(server, cm)
    mine["data"] = {"index.html": "edited on the WEC"}
    server.put(mine)
    mark = len(server.requests)
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0 and "kept 1" in result.out, result
    assert not [r for r in writes(server, mark) if r.path.startswith(collection)]
    assert live(server, cm)["data"] == {"index.html": "edited on the WEC"}

    server.delete("", "v1", "configmaps", cm.namespace, cm.name)  # gone: created again
    assert sync(cli, fleet, kube_wec).code == 0
    assert live(server, cm)["data"] == cm.body["data"]


CRD_WDS = {
    "spaces/wmw-w/crd.yaml": """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
""",
    "spaces/wmw-w/widget.yaml": """
apiVersion: example.com/v1
kind: Widget
metadata: {name: gizmo, namespace: widgetland}
spec: {size: 3}
""",
    "spaces/wmw-w/placement.yaml": """
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: edge-placement-w}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync:
  - apiGroup: apiextensions.k8s.io
    resources: [customresourcedefinitions]
  - apiGroup: example.com
    resources: [widgets]
    namespaces: [widgetland]
""",
}


def test_a_crd_and_its_custom_resource_in_one_mailbox(example_git: Path, cli, kube_wec: Wec, tmp_path: Path) -> None:
    server = kube_wec.require_server()
    write_tree(example_git, CRD_WDS)
    git(example_git, "add", "-A")
    git(example_git, "commit", "-q", "-m", "widgets")
    fleet = make_fleet(example_git, cli, tmp_path)
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0, result
    order = [r.path for r in writes(server)]
    ns = order.index("/api/v1/namespaces/widgetland")
    crd = order.index("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    widget = order.index("/apis/example.com/v1/namespaces/widgetland/widgets/gizmo")
    assert ns < crd < widget
    assert server.get("example.com", "v1", "widgets", "widgetland", "gizmo")["spec"] == {"size": 3}

    server.set_status("example.com", "v1", "widgets", "widgetland", "gizmo", {"phase": "Spinning"})
    mark = len(server.requests)
    assert sync(cli, fleet, kube_wec).code == 0
    assert writes(server, mark, inventory=True) == []
    report = yaml.safe_load(remote_file(fleet, f"spaces/{FLORIN}/reported/example.com/widgets/widgetland/gizmo.yaml"))
    assert report["status"] == {"phase": "Spinning"} and report["object"]["kind"] == "Widget"


def crd(group: str, plural: str, kind: str, scope: str) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True}]}}


def test_upsync_follows_the_syncerconfig(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    server.put(crd("group1.test", "sprockets", "Sprocket", "Namespaced"))
    server.put(crd("group2.test", "cogs", "Cog", "Cluster"))
    for ns in ("orbital", "elsewhere"):
        server.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for ns, name in (("orbital", "george"), ("orbital", "other"), ("elsewhere", "george")):
        server.put({"apiVersion": "group1.test/v1", "kind": "Sprocket", "metadata": {"name": name, "namespace": ns},
                    "spec": {"teeth": 12}})
    for name in ("william", "walter"):
        server.put({"apiVersion": "group2.test/v1", "kind": "Cog", "metadata": {"name": name}})
    result = sync(cli, fleet, kube_wec)
    assert result.code == 0 and "2 upsynced" in result.out, result
    files = git(fleet.remote, "ls-tree", "-r", "--name-only", REF, f"spaces/{FLORIN}/upsynced").splitlines()
    assert files == [f"spaces/{FLORIN}/upsynced/group1.test/sprockets/orbital/george.yaml",
                     f"spaces/{FLORIN}/upsynced/group2.test/cogs/_cluster/william.yaml"]
    george = yaml.safe_load(remote_file(fleet, files[0]))
    assert george["spec"] == {"teeth": 12} and george["kind"] == "Sprocket"
    assert not {"uid", "resourceVersion", "managedFields", "creationTimestamp"} & set(george["metadata"])


def test_an_invalid_mailbox_name_exits_2(fleet: Fleet, cli, kube_wec: Wec) -> None:
    result = sync(cli, fleet, kube_wec, mailbox="Not_A_Label")
    assert result.code == 2 and "DNS-1123" in result.err and "Traceback" not in result.err


def test_an_unreachable_wec_exits_3_with_one_line(fleet: Fleet, cli, kube_wec: Wec) -> None:
    kube_wec.require_server().unreachable = True
    result = sync(cli, fleet, kube_wec)
    assert result.code == 3, result
    assert [line for line in result.err.splitlines() if line] == [
        line for line in result.err.splitlines() if line.startswith(f"{FLORIN}: unreachable: ")]
    assert result.err and "Traceback" not in result.err and TOKEN not in result.err + result.out


def test_a_missing_mailbox_applies_and_prunes_nothing(fleet: Fleet, cli, kube_wec: Wec) -> None:
    server = kube_wec.require_server()
    result = sync(cli, fleet, kube_wec, mailbox="imw1-mb-nobody")
    assert result.code == 3 and "no mailbox spaces/imw1-mb-nobody" in result.err
    assert writes(server, inventory=True) == []


def test_the_loop_runs_until_sigterm(fleet: Fleet, kube_wec: Wec) -> None:
    kube_wec.require_server()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "ksgitops", "sync", "--mailbox", FLORIN, "--kubeconfig", str(kube_wec.kubeconfig),
         "--context", kube_wec.context, "--repo", str(fleet.remote), "--cache-dir", str(fleet.cache),
         "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
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


def test_apply_and_prune_on_any_cluster(tree, cli, kube_wec: Wec, unique_ns: str, tmp_path: Path) -> None:
    """Runs against the loopback server, or a real cluster with KSGITOPS_TEST_KUBECONFIG."""
    from kubernetes import client
    work = git_init(tree(minimal_fleet(unique_ns)))
    fleet = make_fleet(work, cli, tmp_path)
    args = ("--inventory-namespace", unique_ns)
    result = sync(cli, fleet, kube_wec, *args, mailbox="inv-mb-edge1")
    assert result.code == 0, result
    with kube_wec.api_client() as api:
        core = client.CoreV1Api(api)
        assert core.read_namespaced_config_map("settings", unique_ns).data == {"color": "blue"}
        (work / "spaces" / "wds" / "cm.yaml").unlink()
        fleet.publish(cli)
        result = sync(cli, fleet, kube_wec, *args, mailbox="inv-mb-edge1")
        assert result.code == 0 and "pruned 1" in result.out, result
        names = [cm.metadata.name for cm in core.list_namespaced_config_map(unique_ns).items]
        assert "settings" not in names and "ksgitops-inventory-inv-mb-edge1" in names
        assert core.read_namespace(unique_ns).status.phase == "Active"  # it existed before: never pruned



def test_a_git_daemon_remote_with_an_outage(fleet: Fleet, cli, kube_wec: Wec, git_daemon: GitDaemon,
                                            tmp_path: Path) -> None:
    """git:// (libgit2's transport, for fetch and push); the repository vanishes for a cycle."""
    server = kube_wec.require_server()
    served = Fleet(fleet.work, git_daemon.bare("fleet.git", fleet.work), tmp_path / "daemon-cache")
    url = git_daemon.url("fleet.git")

    def run():
        return cli("sync", "--mailbox", FLORIN, "--kubeconfig", str(kube_wec.kubeconfig), "--context", kube_wec.context,
                   "--repo", url, "--cache-dir", str(served.cache), "--once")
    result = run()
    assert result.code == 0 and "pushed" in result.out, result
    first = git(served.remote, "rev-parse", REF)
    assert git(served.remote, "diff", "--name-only", "main", REF).splitlines()

    rs = next(d for d in objects(fleet.work) if d.kind == "ReplicaSet")
    server.set_status("apps", "v1", "replicasets", rs.namespace, rs.name, {"observedGeneration": 1, "replicas": 1})
    away = served.remote.rename(served.remote.with_name("elsewhere.git"))
    result = run()
    assert result.code == 3 and "kept locally" in result.err and "Traceback" not in result.err, result
    away.rename(served.remote)
    assert git(served.remote, "rev-parse", REF) == first

    result = run()
    assert result.code == 0 and "pushed" in result.out, result
    assert git(served.remote, "rev-parse", f"{REF}^") == first
    assert yaml.safe_load(remote_file(served, f"spaces/{FLORIN}/reported/{rs.rel}.yaml"))["status"]["replicas"] == 1
