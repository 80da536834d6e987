"""What the tests of the real `kubernetes` client against the loopback KubeServer (or a real cluster)
share (tests/test_kubeserver*.py): the dynamic and core clients of the WEC (fixtures `api`,
`core`), a CRD of a test group, object builders, raw HTTP requests and managedFields by manager."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from kube_fixtures import Wec
from kubernetes import client


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
