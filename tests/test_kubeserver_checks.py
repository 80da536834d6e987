"""The loopback KubeServer's own behaviour (tests/kubeserver/), and what the API server checks, with
the real `kubernetes` client (or a real cluster, see kube_fixtures, where the tests of the server's
internals skip): unreachable, slow and failing servers, discovery documents, protocol errors, the
Python handle, a server without controllers, independent WECs with a merged kubeconfig, kinds
without a status field, CRD schemas and replica counts in a status."""
from __future__ import annotations

import json
import time

import pytest
import urllib3
import yaml
from kube_fixtures import Wec
from kubernetes import client, config
from kubeserver import ApiError, KubeServer
from kube_clients import cm, deployment, raw
from kube_clients import api, core  # noqa: F401 - the fixtures


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
