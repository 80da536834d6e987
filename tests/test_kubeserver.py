"""The real `kubernetes` client against the loopback KubeServer (or a real cluster, see kube_fixtures).

The fixtures' KubeServers run stand-ins of a cluster's controllers, as a real cluster runs its own:
a test that needs a status to stay as it set it uses a custom resource, and a Deployment's Pods
ask for a node no cluster has (made, never scheduled)."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
import urllib3
import yaml
from kube_fixtures import KubeNames, Wec
from kubernetes import client, config, watch
from kubernetes.dynamic.exceptions import ConflictError, ResourceNotFoundError
from kubeserver import ApiError, KubeServer

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.ksgitops-test.example.com"},
       "spec": {"group": "ksgitops-test.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wdg"]},
                "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture
def api(kube_wec: Wec):
    with kube_wec.api_client() as api_client:
        yield api_client


@pytest.fixture
def core(api) -> client.CoreV1Api:
    return client.CoreV1Api(api)


def cm(name: str, labels: dict | None = None, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels or {}}, "data": data}


def deployment(name: str, ns: str, replicas: int = 1, image: str = "nginx:1") -> dict:
    """Its Pods ask for a node no cluster has: made by its controllers, never run."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"nodeSelector": {"ksgitops.test/no-such-node": "true"},
                                           "containers": [{"name": "main", "image": image}]}}}}


def replace_deployment(apps: client.AppsV1Api, name: str, ns: str, change) -> client.V1Deployment:
    """Read, change, replace: again on a conflict (its controller writes the status meanwhile)."""
    for _ in range(10):
        current = apps.read_namespaced_deployment(name, ns)
        change(current)
        try:
            return apps.replace_namespaced_deployment(name, ns, current)
        except client.ApiException as e:
            if e.status != 409:
                raise
    raise AssertionError(f"deployment {ns}/{name} kept conflicting")


def raw(server, method: str, path: str, body: bytes | None = None, ctype: str = "application/json"):
    """A plain HTTP request: (status, parsed JSON)."""
    request = urllib.request.Request(server.url + path, data=body, method=method, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def managers(obj) -> dict[str, dict]:
    entries = obj["metadata"].get("managedFields") or []
    return {e["manager"]: e for e in entries}


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


# ------------------------------------------------------------------------------ dynamic client, SSA

def test_dynamic_discovery_finds_builtins_and_a_crd_created_at_runtime(kube_wec: Wec, api, unique_ns,
                                                                       kube_names: KubeNames):
    group = kube_names.group("ksgitops-test.example.com")  # the test's own
    crd = {**CRD, "metadata": {"name": f"widgets.{group}"}, "spec": {**CRD["spec"], "group": group}}
    dyn = kube_wec.dynamic_client()
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert (deployments.name, deployments.namespaced) == ("deployments", True)
    assert "status" in deployments.subresources
    assert dyn.resources.get(api_version="v1", kind="Namespace").namespaced is False
    assert dyn.resources.get(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole").namespaced is False
    with pytest.raises(ResourceNotFoundError):
        dyn.resources.get(api_version=f"{group}/v1alpha1", kind="Widget")

    crds = client.ApiextensionsV1Api(api)
    crds.create_custom_resource_definition(crd)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                widgets = dyn.resources.get(api_version=f"{group}/v1alpha1", kind="Widget")
                break
            except ResourceNotFoundError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        established = crds.read_custom_resource_definition(crd["metadata"]["name"]).status.conditions
        assert any(c.type == "Established" and c.status == "True" for c in established)
        assert widgets.namespaced and widgets.short_names == ["wdg"] and "status" in widgets.subresources
        widgets.create(body={"apiVersion": f"{group}/v1alpha1", "kind": "Widget",
                             "metadata": {"name": "w1"}, "spec": {"size": 3}}, namespace=unique_ns)
        listed = client.CustomObjectsApi(api).list_namespaced_custom_object(
            group, "v1alpha1", unique_ns, "widgets")
        assert [(w["metadata"]["name"], w["spec"]) for w in listed["items"]] == [("w1", {"size": 3})]
    finally:
        crds.delete_custom_resource_definition(crd["metadata"]["name"])
    if kube_wec.server:
        assert raw(kube_wec.server, "GET", f"/apis/{group}/v1alpha1")[0] == 404
        assert group not in [g["name"] for g in raw(kube_wec.server, "GET", "/apis")[1]["groups"]]
        assert kube_wec.server.store.registry.find(group, None, "widgets") is None


def test_server_side_apply_creates_updates_and_prunes(kube_wec: Wec, unique_ns):
    dyn = kube_wec.dynamic_client()
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = cm("applied", {"owner": "ksgitops"}, a="1", b="2")
    body["metadata"]["namespace"] = unique_ns

    first = dyn.server_side_apply(configmaps, body=body, field_manager="ksgitops").to_dict()
    assert first["data"] == {"a": "1", "b": "2"}
    entry = managers(first)["ksgitops"]
    assert entry["operation"] == "Apply"
    assert entry["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}

    body["data"] = {"a": "10"}
    second = dyn.server_side_apply(configmaps, body=body, field_manager="ksgitops").to_dict()
    assert second["data"] == {"a": "10"}, "re-apply dropping a field must remove it"
    assert second["metadata"]["labels"] == {"owner": "ksgitops"}
    assert second["metadata"]["uid"] == first["metadata"]["uid"]

    again = dyn.server_side_apply(configmaps, body=body, field_manager="ksgitops").to_dict()
    assert again["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"], "no-op apply must not write"

    if kube_wec.server:
        applies = [r for r in kube_wec.server.requests_matching("PATCH", f"/api/v1/namespaces/{unique_ns}/configmaps/applied")]
        assert len(applies) == 3
        assert {(r.content_type, r.query["fieldManager"]) for r in applies} == {("application/apply-patch+yaml", "ksgitops")}
        assert applies[0].json()["data"] == {"a": "1", "b": "2"}


def test_apply_conflicts_between_managers_and_force(kube_wec: Wec, unique_ns):
    dyn = kube_wec.dynamic_client()
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    mine = {**cm("shared", k="mine"), "metadata": {"name": "shared", "namespace": unique_ns}}
    theirs = {**cm("shared", k="theirs", other="x"), "metadata": {"name": "shared", "namespace": unique_ns}}
    dyn.server_side_apply(configmaps, body=mine, field_manager="ksgitops")
    with pytest.raises(ConflictError) as e:
        dyn.server_side_apply(configmaps, body=theirs, field_manager="someone-else")
    assert e.value.status == 409 and "conflict" in str(e.value.body).lower()

    forced = dyn.server_side_apply(configmaps, body=theirs, field_manager="someone-else", force_conflicts=True).to_dict()
    assert forced["data"] == {"k": "theirs", "other": "x"}
    assert "f:k" not in managers(forced).get("ksgitops", {}).get("fieldsV1", {}).get("f:data", {})
    assert managers(forced)["someone-else"]["fieldsV1"]["f:data"] == {"f:k": {}, "f:other": {}}


def test_apply_conflicts_with_an_update_manager(api, unique_ns):
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map(unique_ns, cm("edited", k="v"), field_manager="kubectl-edit")
    applied = yaml.safe_dump({**cm("edited", k="w"), "metadata": {"name": "edited", "namespace": unique_ns}})
    with pytest.raises(client.ApiException) as e:
        core.patch_namespaced_config_map("edited", unique_ns, yaml.safe_load(applied), field_manager="ksgitops",
                                         _content_type="application/apply-patch+yaml")
    assert e.value.status == 409
    done = core.patch_namespaced_config_map("edited", unique_ns, yaml.safe_load(applied), field_manager="ksgitops",
                                            force=True, _content_type="application/apply-patch+yaml")
    assert done.data == {"k": "w"}


def test_generation_increments_on_spec_change_only(api, unique_ns):
    apps = client.AppsV1Api(api)
    created = apps.create_namespaced_deployment(unique_ns, deployment("web", unique_ns))
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("web", unique_ns, {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1 and labelled.metadata.labels == {"x": "y"}
    scaled = apps.patch_namespaced_deployment("web", unique_ns, {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2 and scaled.spec.replicas == 3

    def new_image(d: client.V1Deployment) -> None:
        d.spec.template.spec.containers[0].image = "nginx:2"
    replaced = replace_deployment(apps, "web", unique_ns, new_image)
    assert replaced.metadata.generation == 3 and replaced.spec.template.spec.containers[0].image == "nginx:2"
    assert replace_deployment(apps, "web", unique_ns, lambda d: None).metadata.generation == 3


def test_status_subresource_changes_only_status(kube_wec: Wec, api, unique_ns, kube_names: KubeNames):
    """On a custom resource: no controller of the cluster writes its status (a Deployment's is its controller's)."""
    server = kube_wec.require_server()
    group = kube_names.group("status.example.com")
    crd = {**CRD, "metadata": {"name": f"widgets.{group}"}, "spec": {**CRD["spec"], "group": group}}
    with kube_wec.api() as kube:
        kube.crd(crd)
    widgets = client.CustomObjectsApi(api)
    coordinates = (group, "v1alpha1", unique_ns, "widgets")
    widgets.create_namespaced_custom_object(*coordinates, {
        "apiVersion": f"{group}/v1alpha1", "kind": "Widget", "metadata": {"name": "st"}, "spec": {"size": 1},
        "status": {"phase": "Made"}})
    assert "status" not in server.get(group, "v1alpha1", "widgets", unique_ns, "st"), "create ignores .status"

    patched = widgets.patch_namespaced_custom_object_status(
        *coordinates, "st", {"spec": {"size": 7}, "status": {"phase": "Spinning", "observedGeneration": 1}})
    assert patched["status"] == {"phase": "Spinning", "observedGeneration": 1}
    assert patched["spec"] == {"size": 1} and patched["metadata"]["generation"] == 1

    main = widgets.patch_namespaced_custom_object(*coordinates, "st", {"spec": {"size": 4}, "status": {"phase": "X"}})
    assert main["spec"] == {"size": 4} and main["status"]["phase"] == "Spinning" and main["metadata"]["generation"] == 2

    server.set_status(group, "v1alpha1", "Widget", unique_ns, "st", {"phase": "Idle"})
    assert widgets.get_namespaced_custom_object_status(*coordinates, "st")["status"] == {"phase": "Idle"}
    assert server.get(group, "v1alpha1", "widgets", unique_ns, "st")["spec"] == {"size": 4}


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


# ------------------------------------------------------------------------------ server-only checks

def test_unreachable_slow_and_failing_servers(kube_wec: Wec, core):
    server = kube_wec.require_server()
    server.unreachable = True
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespace(_request_timeout=2)
    assert time.monotonic() - started < 2
    server.unreachable = False

    server.delay = 1.5
    with pytest.raises(urllib3.exceptions.HTTPError):
        core.list_namespace(_request_timeout=0.3)
    server.delay = 0

    server.fail_status = 503
    with pytest.raises(client.ApiException) as e:
        core.list_namespace()
    assert e.value.status == 503
    server.fail_status = None
    assert "default" in [n.metadata.name for n in core.list_namespace().items]


def test_discovery_documents(kube_wec: Wec):
    server = kube_wec.require_server()
    assert raw(server, "GET", "/version")[1]["major"] == "1"
    assert raw(server, "GET", "/api")[1]["versions"] == ["v1"]
    groups = {g["name"]: g for g in raw(server, "GET", "/apis")[1]["groups"]}
    assert {"apps", "batch", "apiextensions.k8s.io", "networking.k8s.io", "rbac.authorization.k8s.io"} <= set(groups)
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    core = {r["name"]: r for r in raw(server, "GET", "/api/v1")[1]["resources"]}
    assert core["configmaps"]["shortNames"] == ["cm"] and core["namespaces"]["namespaced"] is False
    assert {"namespaces/status", "pods/status", "services/status"} <= set(core) and "configmaps/status" not in core
    apps = {r["name"]: r for r in raw(server, "GET", "/apis/apps/v1")[1]["resources"]}
    assert apps["deployments/status"]["verbs"] == ["get", "patch", "update"]
    assert raw(server, "GET", "/apis/nothing/v1")[0] == 404


def test_protocol_errors(kube_wec: Wec):
    server = kube_wec.require_server()
    path = "/api/v1/namespaces/default/configmaps"
    status, doc = raw(server, "PATCH", f"{path}/x", b"{}", "text/plain")
    assert (status, doc["reason"]) == (415, "UnsupportedMediaType")
    status, doc = raw(server, "PATCH", f"{path}/x", b"{}", "application/apply-patch+yaml")
    assert (status, doc["reason"]) == (400, "BadRequest")
    status, doc = raw(server, "PUT", path, b"{}")
    assert (status, doc["reason"], doc["kind"]) == (405, "MethodNotAllowed", "Status")
    status, doc = raw(server, "POST", path, b'{"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}}')
    assert (status, doc["reason"]) == (400, "BadRequest")
    assert raw(server, "GET", "/api/v1/namespaces/default/nonsense")[0] == 404
    status, doc = raw(server, "PATCH", f"{path}/y?fieldManager=t", b"kind: ConfigMap\napiVersion: v1\ndata: {a: b}\n",
                      "application/apply-patch+yaml")
    assert (status, doc["data"], doc["metadata"]["name"]) == (201, {"a": "b"}, "y")


def test_python_handle_seeds_and_inspects(kube_wec: Wec, core):
    server = kube_wec.require_server()
    server.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "seeded"}})
    stored = server.put({**cm("s", a="1"), "metadata": {"name": "s", "namespace": "seeded"}})
    assert stored["metadata"]["resourceVersion"] == str(server.resource_version)
    assert core.read_namespaced_config_map("s", "seeded").data == {"a": "1"}
    core.patch_namespaced_config_map("s", "seeded", {"data": {"a": "2"}})
    assert server.get("", "v1", "cm", "seeded", "s")["data"] == {"a": "2"}
    assert [o["metadata"]["name"] for o in server.objects("", "v1", "ConfigMap", "seeded")] == ["s"]
    assert server.get("", "v1", "configmaps", "seeded", "absent") is None
    with pytest.raises(ApiError, match="not found"):
        server.put({**cm("t"), "metadata": {"name": "t", "namespace": "no-such-namespace"}})
    assert ("PATCH", "/api/v1/namespaces/seeded/configmaps/s", "application/strategic-merge-patch+json") in \
        [(r.method, r.path, r.content_type) for r in server.requests]


def test_without_controllers_deleting_a_namespace_deletes_its_contents_at_once(tmp_path):
    """A KubeServer without its controllers (with them, and on a real cluster, the namespace stays
    Terminating a while: test_kubecontrollers.py)."""
    with KubeServer() as server, config.new_client_from_config(
            config_file=str(server.write_kubeconfig(tmp_path / "bare.kubeconfig"))) as bare:
        core = client.CoreV1Api(bare)
        core.create_namespace({"metadata": {"name": "doomed"}})
        core.create_namespaced_config_map("doomed", cm("inside"))
        gone = core.delete_namespace("doomed")
        assert gone["kind"] == "Namespace" and gone["status"]["phase"] == "Terminating"
        assert server.objects("", "v1", "configmaps", "doomed") == []
        with pytest.raises(client.ApiException) as e:
            core.read_namespace("doomed")
        assert e.value.status == 404


def test_kube_wecs_are_independent_with_a_merged_kubeconfig(kube_wecs, kube_names):
    wecs = kube_wecs(["florin", "guilder"])
    ns = kube_names.ns()
    for wec in wecs.wecs.values():
        with wec.api() as api:
            api.namespace(ns)
    merged = yaml.safe_load(wecs.kubeconfig.read_text())
    assert [c["name"] for c in merged["contexts"]] == ["florin", "guilder"]
    assert wecs["florin"].wire.url != wecs["guilder"].wire.url
    with config.new_client_from_config(config_file=str(wecs.kubeconfig), context="florin") as florin:
        client.CoreV1Api(florin).create_namespaced_config_map(ns, cm("only-florin"))
    with config.new_client_from_config(config_file=str(wecs.kubeconfig), context="guilder") as guilder:
        names = [c.metadata.name for c in client.CoreV1Api(guilder).list_namespaced_config_map(ns).items]
    assert "only-florin" not in names
    with wecs["florin"].api() as api:
        assert api.get("v1", "configmaps", ns, "only-florin") is not None
    assert [(r.method, r.path) for r in wecs["florin"].wire.writes()] == [("POST", f"/api/v1/namespaces/{ns}/configmaps")]
    assert wecs["guilder"].wire.writes() == []  # the test's own writes go straight to the server
    with config.new_client_from_config(config_file=str(wecs["guilder"].kubeconfig)) as single:
        assert client.CoreV1Api(single).api_client.configuration.host == wecs["guilder"].wire.url
    assert len(kube_wecs(3).wecs) == 3


def test_kinds_without_a_status_field_drop_one(kube_wec: Wec, unique_ns):
    """The API server drops fields a built-in kind's schema does not have (field validation "Warn",
    the default since Kubernetes 1.27): a ConfigMap or a Secret never holds a status."""
    with kube_wec.api() as kube:
        for body in ({**cm("plain", a="1"), "status": {"phase": "x"}},
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "dg=="},
                      "status": {"x": 1}}):
            plural = f"{body['kind'].lower()}s"
            made = kube.request("POST", f"/api/v1/namespaces/{unique_ns}/{plural}", body)
            assert "status" not in made and made["metadata"]["name"] == body["metadata"]["name"]
            assert "status" not in kube.apply({**body, "metadata": {**body["metadata"], "namespace": unique_ns}})
            assert "status" not in kube.get("v1", plural, unique_ns, body["metadata"]["name"])


def test_a_v1_crd_needs_a_schema_for_every_version(api, kube_names):
    crds = client.ApiextensionsV1Api(api)
    group = kube_names.group("noschema.example.com")
    body = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"things.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "things", "kind": "Thing"},
                     "versions": [{"name": "v1", "served": True, "storage": True}]}}
    with pytest.raises(client.ApiException) as e:
        crds.create_custom_resource_definition(body)
    assert e.value.status == 422 and "schema" in json.loads(e.value.body)["message"]


def test_replica_counts_in_a_status_are_validated(kube_wec: Wec, api, unique_ns):
    """As the API server validates a Deployment's or ReplicaSet's status: no count negative or above
    `replicas`, and never more available than ready."""
    client.AppsV1Api(api).create_namespaced_deployment(unique_ns, deployment("counted", unique_ns))
    with kube_wec.api() as kube:
        for bad in ({"replicas": 1, "readyReplicas": 2}, {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2},
                    {"replicas": -1}):
            with pytest.raises(client.ApiException) as e:
                kube.set_status("apps/v1", "deployments", unique_ns, "counted", bad)
            assert e.value.status == 422 and "status." in json.loads(e.value.body)["message"], bad
        fine = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 1}
        assert kube.set_status("apps/v1", "deployments", unique_ns, "counted", fine)["status"] == fine
