"""The test's own hands on a WEC: reads and writes through the Kubernetes API with the official
`kubernetes` client, straight to the API server (never through the wire, so they are not
mistaken for the agent's requests). Everything a test needs on a cluster before or after the
program under test runs goes through here: namespaces, CRDs and objects created, the `.status` of a
custom resource set as its controller would set it (the /status subresource), the wait for the
cluster's own controllers to catch up (`settle`), objects read back and deleted, and the clean-up
of what a test left behind.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config

CRDS = ("apiextensions.k8s.io/v1", "customresourcedefinitions")
NAMESPACES = ("v1", "namespaces")
PLURALS = {"Namespace": "namespaces", "ConfigMap": "configmaps", "Secret": "secrets", "ReplicaSet": "replicasets",
           "Deployment": "deployments", "CustomResourceDefinition": "customresourcedefinitions"}
_SEEDER = "ksgitops-test"


def path(api_version: str, plural: str, namespace: str = "", name: str = "", sub: str = "") -> str:
    group, _, version = api_version.rpartition("/")
    parts = [f"/apis/{group}/{version}" if group else f"/api/{version}"]
    if namespace:
        parts.append(f"namespaces/{namespace}")
    parts += [p for p in (plural, name, sub) if p]
    return "/".join(parts)


def coordinates(obj: dict[str, Any], plural: str | None = None) -> tuple[str, str, str, str]:
    """(apiVersion, plural, namespace, name) of an object; the plural from PLURALS unless given."""
    meta = obj.get("metadata") or {}
    return obj["apiVersion"], plural or PLURALS[obj["kind"]], meta.get("namespace", ""), meta.get("name", "")


class KubeApi:
    """One API server, through one kubeconfig context."""

    def __init__(self, kubeconfig: Path, context: str) -> None:
        self.client = config.new_client_from_config(config_file=str(kubeconfig), context=context)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> KubeApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, target: str, body: Any = None, query: dict[str, str] | None = None,
                content_type: str = "application/json") -> Any:
        """The decoded answer; raises kubernetes.client.ApiException on an error status."""
        request = self.client.param_serialize(method, target, query_params=list((query or {}).items()),
                                              header_params={"Accept": "application/json", "Content-Type": content_type},
                                              body=body, auth_settings=["BearerToken"])
        response = self.client.call_api(*request)
        data = response.read()
        if not 200 <= response.status < 300:
            raise client.ApiException(http_resp=response, body=data.decode(errors="replace"))
        return json.loads(data) if data else None

    def get(self, api_version: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.request("GET", path(api_version, plural, namespace, name))  # type: ignore[no-any-return]
        except client.ApiException as e:
            if e.status == 404:
                return None
            raise

    def list(self, api_version: str, plural: str, namespace: str = "", selector: str = "") -> list[dict[str, Any]]:
        query = {"labelSelector": selector} if selector else None
        return self.request("GET", path(api_version, plural, namespace), query=query)["items"]  # type: ignore[no-any-return]

    def apply(self, obj: dict[str, Any], plural: str | None = None) -> dict[str, Any]:
        """Server-side apply (created when absent), as a field manager of the test's own."""
        api_version, plural, namespace, name = coordinates(obj, plural)
        return self.request("PATCH", path(api_version, plural, namespace, name), obj,  # type: ignore[no-any-return]
                            {"fieldManager": _SEEDER, "force": "true"}, "application/apply-patch+yaml")

    def patch(self, api_version: str, plural: str, namespace: str, name: str, change: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386), as `kubectl patch --type merge` (or a person editing) does."""
        return self.request("PATCH", path(api_version, plural, namespace, name), change,  # type: ignore[no-any-return]
                            content_type="application/merge-patch+json")

    def set_status(self, api_version: str, plural: str, namespace: str, name: str,
                   status: dict[str, Any]) -> dict[str, Any]:
        """Replace `.status` through the /status subresource, as the object's controller does."""
        target = path(api_version, plural, namespace, name)
        for _ in range(5):
            current = self.request("GET", target)
            current["status"] = status
            try:
                return self.request("PUT", target + "/status", current)  # type: ignore[no-any-return]
            except client.ApiException as e:
                if e.status != 409:
                    raise
        raise AssertionError(f"{target}: status kept conflicting")

    def settle(self, token: str, timeout: float = 60.0) -> None:
        """Wait until the cluster's controllers have caught up with what the test made (names
        holding `token`), bounded polling: every ReplicaSet and Deployment in its namespaces has
        observed its generation and made the replicas it wants (Pods made, whether or not they
        run), and its CRDs are established (their status then stays)."""
        deadline = time.monotonic() + timeout
        while True:
            behind = self._unsettled(token)
            if not behind:
                return
            assert time.monotonic() < deadline, (
                f"the cluster's controllers did not catch up within {timeout:g}s with {', '.join(behind)} "
                "(is its controller manager running?)")
            time.sleep(0.05)

    def _unsettled(self, token: str) -> list[str]:
        behind = [f"customresourcedefinitions/{crd['metadata']['name']}" for crd in self.list(*CRDS)
                  if token in crd["metadata"]["name"] and not all(
                      any(c.get("type") == kind and c.get("status") == "True"
                          for c in (crd.get("status") or {}).get("conditions") or [])
                      for kind in ("NamesAccepted", "Established"))]
        for ns in self.list(*NAMESPACES):
            name = ns["metadata"]["name"]
            if token not in name or ns["metadata"].get("deletionTimestamp"):
                continue
            for plural in ("replicasets", "deployments"):
                for obj in self.list("apps/v1", plural, name):
                    status, want = obj.get("status") or {}, (obj.get("spec") or {}).get("replicas", 1)
                    counts = ("replicas", "updatedReplicas") if plural == "deployments" else ("replicas",)
                    if status.get("observedGeneration") != obj["metadata"]["generation"] or \
                            any(status.get(count, 0) != want for count in counts):
                        behind.append(f"{plural}/{name}/{obj['metadata']['name']}")
        return behind

    def delete(self, api_version: str, plural: str, namespace: str, name: str) -> bool:
        """False when it was not there."""
        try:
            self.request("DELETE", path(api_version, plural, namespace, name))
            return True
        except client.ApiException as e:
            if e.status == 404:
                return False
            raise

    def namespace(self, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
        return self.apply({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name, **({"labels": labels} if labels else {})}})

    def crd(self, body: dict[str, Any], timeout: float = 60.0) -> None:
        """Create a CRD and wait until its resource is served, as an API server does it: soon, not at once."""
        self.apply(body)
        group, plural = body["spec"]["group"], body["spec"]["names"]["plural"]
        versions = [v["name"] for v in body["spec"]["versions"] if v.get("served", True)]
        deadline = time.monotonic() + timeout
        while not all(self._serves(f"{group}/{v}", plural) for v in versions):
            assert time.monotonic() < deadline, f"{plural}.{group} not served after {timeout:g}s"
            time.sleep(0.1)

    def _serves(self, group_version: str, plural: str) -> bool:
        try:
            found = self.request("GET", f"/apis/{group_version}")
        except client.ApiException as e:
            if e.status == 404:
                return False
            raise
        return plural in {r["name"] for r in found.get("resources") or []}

    def sweep(self, token: str) -> None:
        """Delete every CRD and Namespace whose name holds `token` (what one test made), a
        namespace's contents first: a server without a namespace controller (a bare kube-apiserver)
        never empties a deleted namespace itself."""
        for crd in self.list(*CRDS):
            if token in crd["metadata"]["name"]:
                self.delete(*CRDS, "", crd["metadata"]["name"])
        doomed = [ns for ns in self.list(*NAMESPACES) if token in ns["metadata"]["name"]]
        collections = self._namespaced_collections() if doomed else []
        for ns in doomed:
            name = ns["metadata"]["name"]
            for api_version, plural in collections:
                try:
                    self.request("DELETE", path(api_version, plural, name))
                except client.ApiException as e:
                    if e.status not in (404, 405):
                        raise
            if not ns["metadata"].get("deletionTimestamp"):
                self.delete(*NAMESPACES, "", name)

    def _namespaced_collections(self) -> list[tuple[str, str]]:
        """(group/version, plural) of every namespaced resource that can be deleted as a collection
        (group versions whose discovery fails, e.g. an aggregated API that is down, left out)."""
        versions = ["v1"] + [g["preferredVersion"]["groupVersion"] for g in self.request("GET", "/apis")["groups"]]
        found = []
        for gv in versions:
            try:
                listing = self.request("GET", f"/apis/{gv}" if "/" in gv else f"/api/{gv}")
            except client.ApiException:
                continue
            found += [(gv, r["name"]) for r in listing.get("resources") or []
                      if r.get("namespaced") and "/" not in r["name"] and "deletecollection" in r.get("verbs", [])]
        return found
