"""`ksgitops sync`, what the agent does with each object (tests/test_sync.py for its setting): an
object removed from the mailbox is pruned and nothing else, namespaces only when the agent made
them and they hold nothing else, create-only objects are created once and never overwritten, a
CRD and its custom resource in one mailbox, upsync as the SyncerConfig says."""
from __future__ import annotations

from pathlib import Path

import yaml

from conftest import git
from kube_fixtures import KubeNames, Wec, widget_status
from sync_fleet import FLORIN, Fleet, REF, edit_yaml, gone, live, objects, remote_file, sync, writes
from sync_fleet import fleet, wec, widget_fleet  # noqa: F401 - the fixtures


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
