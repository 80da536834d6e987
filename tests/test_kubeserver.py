"""The real `kubernetes` client against the loopback KubeServer (or a real cluster, see kube_fixtures).

The fixtures' KubeServers run stand-ins of a cluster's controllers, as a real cluster runs its own:
a test that needs a status to stay as it set it uses a custom resource, and a Deployment's Pods
ask for a node no cluster has (made, never scheduled).

Here: CRUD (errors, generateName, dry runs, pagination, patches, selectors, finalizers) and watch;
server-side apply and the dynamic client: tests/test_kubeserver_apply.py; what only the loopback
server is tested for: tests/test_kubeserver_checks.py."""
from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client, watch

from kube_clients import cm
from kube_clients import api, core  # noqa: F401 - the fixtures


# ------------------------------------------------------------------------------------------ CRUD

def test_core_crud_of_namespaces_and_configmaps(core, unique_ns):
    assert core.read_namespace(unique_ns).status.phase == "Active"
    created = core.create_namespaced_config_map(unique_ns, cm("alpha", {"app": "a"}, k="v"))
    assert created.metadata.uid and created.metadata.creation_timestamp and created.metadata.resource_version
    assert core.read_namespaced_config_map("alpha", unique_ns).data == {"k": "v"}
    assert [c.metadata.name for c in core.list_namespaced_config_map(unique_ns, label_selector="app=a").items] == ["alpha"]

    created.data = {"k": "w"}
    replaced = core.replace_namespaced_config_map("alpha", unique_ns, created)
    assert replaced.data == {"k": "w"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert replaced.metadata.uid == created.metadata.uid

    listed = core.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={unique_ns}")
    assert [c.metadata.name for c in listed.items if c.metadata.name == "alpha"] == ["alpha"]
    assert listed.metadata.resource_version

    core.delete_namespaced_config_map("alpha", unique_ns)
    with pytest.raises(client.ApiException) as missing:
        core.read_namespaced_config_map("alpha", unique_ns)
    assert missing.value.status == 404


def test_errors_are_status_objects_with_the_right_codes(core, unique_ns):
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_config_map("nope", unique_ns)
    assert e.value.status == 404 and json.loads(e.value.body)["reason"] == "NotFound"

    core.create_namespaced_config_map(unique_ns, cm("twice"))
    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_config_map(unique_ns, cm("twice"))
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "AlreadyExists"

    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_config_map(f"{unique_ns}-absent", cm("orphan"))
    assert e.value.status == 404

    with pytest.raises(client.ApiException) as e:
        core.create_namespaced_config_map(unique_ns, {"metadata": {}, "data": {}})
    assert e.value.status == 422 and json.loads(e.value.body)["reason"] == "Invalid"

    stale = core.read_namespaced_config_map("twice", unique_ns)
    core.patch_namespaced_config_map("twice", unique_ns, {"data": {"x": "1"}})
    with pytest.raises(client.ApiException) as e:
        core.replace_namespaced_config_map("twice", unique_ns, stale)
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "Conflict"


def test_generate_name_dry_run_and_pagination(core, unique_ns):
    made = core.create_namespaced_config_map(unique_ns, {"metadata": {"generateName": "gen-"}})
    assert made.metadata.name.startswith("gen-") and len(made.metadata.name) > len("gen-")

    core.create_namespaced_config_map(unique_ns, cm("dry"), dry_run="All")
    assert [c.metadata.name for c in core.list_namespaced_config_map(unique_ns).items if c.metadata.name == "dry"] == []

    for i in range(5):
        core.create_namespaced_config_map(unique_ns, cm(f"page{i}", {"paged": "yes"}))
    first = core.list_namespaced_config_map(unique_ns, label_selector="paged", limit=2)
    assert [c.metadata.name for c in first.items] == ["page0", "page1"] and first.metadata._continue
    rest = core.list_namespaced_config_map(unique_ns, label_selector="paged", limit=10, _continue=first.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["page2", "page3", "page4"] and not rest.metadata._continue


def test_merge_and_json_patches(core, unique_ns):
    core.create_namespaced_config_map(unique_ns, cm("p", a="1", b="2"))
    merged = core.patch_namespaced_config_map("p", unique_ns, {"data": {"a": None, "c": "3"}})
    assert merged.data == {"b": "2", "c": "3"}
    patched = core.patch_namespaced_config_map("p", unique_ns, [
        {"op": "test", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/b", "value": "20"},
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/example.com~1tier", "value": "web"},
        {"op": "move", "from": "/data/c", "path": "/data/d"}])
    assert patched.data == {"b": "20", "d": "3"} and patched.metadata.labels == {"example.com/tier": "web"}
    with pytest.raises(client.ApiException) as e:
        core.patch_namespaced_config_map("p", unique_ns, [{"op": "test", "path": "/data/b", "value": "2"}])
    assert e.value.status == 422
    with pytest.raises(client.ApiException) as e:
        core.patch_namespaced_config_map("nope", unique_ns, {"data": {"a": "1"}})
    assert e.value.status == 404


def test_label_and_field_selectors(core, unique_ns):
    for name, labels in [("a", {"tier": "web", "env": "prod"}), ("b", {"tier": "db", "env": "prod"}),
                         ("c", {"tier": "web"}), ("d", {})]:
        core.create_namespaced_config_map(unique_ns, cm(name, labels))

    def names(selector: str, fields: str | None = None) -> list[str]:
        found = core.list_namespaced_config_map(unique_ns, label_selector=selector, field_selector=fields).items
        return sorted(c.metadata.name for c in found if c.metadata.name in "abcd")

    assert names("tier=web") == ["a", "c"]
    assert names("tier==web,env=prod") == ["a"]
    assert names("tier!=web") == ["b", "d"]
    assert names("tier in (db, web),env") == ["a", "b"]
    assert names("tier notin (web)") == ["b", "d"]
    assert names("env") == ["a", "b"]
    assert names("!env") == ["c", "d"]
    assert names("", "metadata.name=c") == ["c"]
    assert names("tier", "metadata.name!=c") == ["a", "b"]
    with pytest.raises(client.ApiException) as e:
        names("tier in (web")
    assert e.value.status == 400


def test_finalizers_delay_deletion_until_removed(core, unique_ns):
    body = cm("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    core.create_namespaced_config_map(unique_ns, body)
    core.delete_namespaced_config_map("held", unique_ns)
    marked = core.read_namespaced_config_map("held", unique_ns)
    assert marked.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", unique_ns, {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException) as e:
        core.read_namespaced_config_map("held", unique_ns)
    assert e.value.status == 404


# ----------------------------------------------------------------------------------------- watch

def test_watch_replays_events_after_a_resource_version(core, unique_ns):
    since = core.list_namespaced_config_map(unique_ns).metadata.resource_version
    core.create_namespaced_config_map(unique_ns, cm("w", a="1"))
    core.patch_namespaced_config_map("w", unique_ns, {"data": {"a": "2"}})
    core.delete_namespaced_config_map("w", unique_ns)
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, unique_ns, resource_version=since, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name, (event["object"].data or {}).get("a")))
        if event["type"] == "DELETED":
            w.stop()
    assert seen == [("ADDED", "w", "1"), ("MODIFIED", "w", "2"), ("DELETED", "w", "2")]


def test_watch_streams_live_events_and_initial_state(core, unique_ns):
    core.create_namespaced_config_map(unique_ns, cm("before", {"watched": "yes"}))

    def later():
        time.sleep(0.3)
        core.create_namespaced_config_map(unique_ns, cm("ignored", {"watched": "no"}))
        core.create_namespaced_config_map(unique_ns, cm("after", {"watched": "yes"}))

    writer = threading.Thread(target=later, daemon=True)
    writer.start()
    seen = []
    w = watch.Watch()
    started = time.monotonic()
    for event in w.stream(core.list_namespaced_config_map, unique_ns, label_selector="watched=yes", timeout_seconds=10):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "after":
            w.stop()
    writer.join(5)
    assert seen == [("ADDED", "before"), ("ADDED", "after")]
    assert time.monotonic() - started < 5


def test_watch_ends_at_timeout_seconds(core, unique_ns):
    started = time.monotonic()
    events = list(watch.Watch().stream(core.list_namespaced_config_map, unique_ns, timeout_seconds=1))
    assert events == []
    assert 0.9 <= time.monotonic() - started < 4
