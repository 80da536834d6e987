"""The real `kubernetes` dynamic client against the loopback KubeServer (or a real cluster, see
kube_fixtures): discovery of built-ins and of a CRD created at runtime, server-side apply (create,
update, prune, conflicts between managers and with an update manager, force), generation, and the
status subresource."""
from __future__ import annotations

import time

import pytest
import yaml
from kube_fixtures import KubeNames, Wec
from kubernetes import client
from kubernetes.dynamic.exceptions import ConflictError, ResourceNotFoundError
from kube_clients import CRD, cm, deployment, managers, raw, replace_deployment
from kube_clients import api, core  # noqa: F401 - the fixtures


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
