"""A cluster's controllers as the other tests meet them, observed only through the API: the
stand-ins of tests/kubecontrollers.py by default, a real cluster's kube-controller-manager with
KSGITOPS_TEST_KUBECONFIG (see tests/kube_fixtures.py) — the same tests check both, so what the
stand-ins claim is checked against the real thing.

Every Pod template here asks for a node no cluster has: Pods are made but never scheduled, never
ready, so a workload wants and makes its replicas but none is ever available."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from kube_fixtures import KubeNames, Wec
from kubeapi import KubeApi
from kubecontrollers import max_unavailable, template_hash
from ksgitops.app.agent import Desired, report_document
from ksgitops.core.status.health import Health, assess

NO_NODE = {"ksgitops.test/no-such-node": "true"}


def workload(kind: str, name: str, ns: str, replicas: int) -> dict:
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"nodeSelector": NO_NODE, "containers": [{"name": "main", "image": "registry.invalid/none:1"}]}}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template}}


def wait_for(read: Callable[[], Any], done: Callable[[Any], bool], what: str, timeout: float = 60.0) -> Any:
    """Poll `read()` until `done` holds for what it returns (bounded); that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"not within {timeout:g}s: {what}; last seen {value!r}"[:2000]
        time.sleep(0.05)


def counts(status: dict) -> dict:
    """The non-zero counts of a status (a serializer may or may not leave zeros out)."""
    return {k: v for k, v in status.items() if isinstance(v, int) and v}


def conditions(status: dict) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c.get("reason", "")) for c in status.get("conditions") or []}


def health(plural: str, sent: dict, live: dict) -> Any:
    meta = sent["metadata"]
    return assess(sent, report_document(Desired(f"apps/{plural}/{meta['namespace']}/{meta['name']}", sent), live))


def owned(api: KubeApi, plural: str, ns: str, owner: dict) -> list[dict]:
    group = "v1" if plural == "pods" else "apps/v1"
    return [o for o in api.list(group, plural, ns)
            if any(r.get("uid") == owner["metadata"]["uid"] and r.get("controller")
                   for r in o["metadata"].get("ownerReferences") or [])]


def test_a_replicaset_gets_pods_and_a_status_from_its_controller(kube_wec: Wec, unique_ns: str) -> None:
    sent = workload("ReplicaSet", "web", unique_ns, 2)
    with kube_wec.api() as api:
        api.apply(sent)
        get = lambda: api.get("apps/v1", "replicasets", unique_ns, "web")
        rs = wait_for(get, lambda o: counts(o.get("status") or {}).get("replicas") == 2, "two replicas made")
        assert counts(rs["status"]) == {"replicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1}
        pods = owned(api, "pods", unique_ns, rs)
        assert len(pods) == 2 and all(p["metadata"]["name"].startswith("web-") for p in pods)
        assert {p["status"]["phase"] for p in pods} == {"Pending"}
        verdict = health("replicasets", sent, rs)
        assert verdict.health is Health.PROGRESSING and "0 of 2 replicas available" in verdict.message

        api.patch("apps/v1", "replicasets", unique_ns, "web", {"spec": {"replicas": 1}})
        rs = wait_for(get, lambda o: counts(o["status"]) == {"replicas": 1, "fullyLabeledReplicas": 1,
                                                             "observedGeneration": 2}, "scaled down to one")
        wait_for(lambda: owned(api, "pods", unique_ns, rs), lambda found: len(found) == 1, "one Pod left")

        assert api.delete("apps/v1", "replicasets", unique_ns, "web")  # the garbage collector takes its Pods
        wait_for(lambda: owned(api, "pods", unique_ns, rs), lambda found: found == [], "the Pods collected")


def test_a_deployment_gets_a_replicaset_and_a_status_from_its_controller(kube_wec: Wec, unique_ns: str) -> None:
    sent = workload("Deployment", "api", unique_ns, 1)
    with kube_wec.api() as api:
        api.apply(sent)
        get = lambda: api.get("apps/v1", "deployments", unique_ns, "api")
        made = wait_for(get, lambda o: counts(o.get("status") or {}).get("replicas") == 1 and
                        conditions(o["status"]).get("Progressing", ("", ""))[1] == "ReplicaSetUpdated",
                        "a replica made and the rollout under way")
        assert counts(made["status"]) == {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1,
                                          "unavailableReplicas": 1}
        assert conditions(made["status"]) == {"Available": ("False", "MinimumReplicasUnavailable"),
                                              "Progressing": ("True", "ReplicaSetUpdated")}
        [rs] = owned(api, "replicasets", unique_ns, made)
        suffix = rs["metadata"]["labels"]["pod-template-hash"]
        assert rs["metadata"]["name"] == f"api-{suffix}" and rs["spec"]["replicas"] == 1
        assert rs["spec"]["selector"]["matchLabels"] == {"app": "api", "pod-template-hash": suffix}
        assert len(owned(api, "pods", unique_ns, rs)) == 1
        verdict = health("deployments", sent, made)
        assert verdict.health is Health.PROGRESSING and "0 of 1 updated replicas available" in verdict.message

        api.patch("apps/v1", "deployments", unique_ns, "api", {"spec": {"replicas": 0}})
        idle = wait_for(get, lambda o: o["status"].get("observedGeneration") == 2 and
                        conditions(o["status"]).get("Progressing", ("", ""))[1] == "NewReplicaSetAvailable",
                        "scaled to zero and complete")
        assert counts(idle["status"]) == {"observedGeneration": 2}
        assert conditions(idle["status"]) == {"Available": ("True", "MinimumReplicasAvailable"),
                                              "Progressing": ("True", "NewReplicaSetAvailable")}
        assert health("deployments", {**sent, "spec": {**sent["spec"], "replicas": 0}}, idle).health is Health.HEALTHY

        assert api.delete("apps/v1", "deployments", unique_ns, "api")
        wait_for(lambda: owned(api, "replicasets", unique_ns, made), lambda found: found == [],
                 "its ReplicaSet collected")


def test_a_deleted_namespace_is_terminating_until_its_controller_has_emptied_it(kube_wec: Wec,
                                                                                 kube_names: KubeNames) -> None:
    ns = kube_names.ns("doomed")
    with kube_wec.api() as api:
        api.namespace(ns)
        api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inside", "namespace": ns}})
        api.apply(workload("ReplicaSet", "web", ns, 1))
        wait_for(lambda: api.list("v1", "pods", ns), lambda found: len(found) == 1, "a Pod made")
        answer = api.request("DELETE", f"/api/v1/namespaces/{ns}")
        assert answer["kind"] == "Namespace" and answer["status"]["phase"] == "Terminating"
        assert answer["metadata"]["deletionTimestamp"]
        wait_for(lambda: api.get("v1", "namespaces", "", ns), lambda found: found is None, "the namespace gone", 120)
        assert api.list("v1", "configmaps", ns) == [] and api.list("v1", "pods", ns) == []


def test_nothing_new_is_made_in_a_terminating_namespace(kube_wec: Wec, kube_names: KubeNames) -> None:
    ns = kube_names.ns("held")
    with kube_wec.api() as api:
        api.namespace(ns)
        api.apply({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "held", "namespace": ns, "finalizers": ["ksgitops.test/hold"]}})
        api.delete("v1", "namespaces", "", ns)
        wait_for(lambda: api.get("v1", "configmaps", ns, "held"),
                 lambda o: bool(o["metadata"].get("deletionTimestamp")), "the namespace controller at work")
        assert api.get("v1", "namespaces", "", ns)["status"]["phase"] == "Terminating"  # held by the finalizer
        with pytest.raises(client.ApiException) as refused:
            api.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late", "namespace": ns}})
        body = json.loads(refused.value.body)
        assert refused.value.status == 403 and body["reason"] == "Forbidden"
        assert f"unable to create new content in namespace {ns} because it is being terminated" in body["message"]
        api.patch("v1", "configmaps", ns, "held", {"metadata": {"finalizers": None}})  # let it go


@pytest.mark.parametrize("replicas, strategy, expected", [
    (4, None, 1),                                                    # the defaults: 25% rounded down
    (3, None, 0),
    (3, {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "10%"}}, 1),  # never both 0
    (2, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 5}}, 2),  # at most the replicas
    (0, None, 0),
    (4, {"type": "Recreate"}, 0),
])
def test_max_unavailable_follows_the_deployment_controller(replicas: int, strategy: dict | None, expected: int) -> None:
    deployment = {"spec": {"replicas": replicas, **({"strategy": strategy} if strategy else {})}}
    assert max_unavailable(deployment) == expected


def test_a_pod_template_hash_is_stable_and_safe_in_a_name() -> None:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    first = template_hash(template)
    assert first == template_hash(json.loads(json.dumps(template))) and set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert template_hash({**template, "spec": {"containers": [{"name": "c", "image": "j"}]}}) != first
