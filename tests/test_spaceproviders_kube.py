"""The kubeconfig space provider and the space-aware client against API servers: probes, the one
client path, list and watch across spaces (with the space-name annotation), git and kubeconfig
spaces together.

Kubeconfig spaces are loopback KubeServers, or real clusters with KSGITOPS_TEST_KUBECONFIG (fixture
kube_wecs from tests/kube_fixtures.py, registered in conftest), reached with the real `kubernetes`
client; the tests put objects there and take them away through the API."""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from kube_fixtures import KubeNames, Wec, Wecs
from ksgitops.core.place.spaces import Observed, SpaceObj, SPACE_NAME_ANNOTATION
from fakes.stores import MemoryStore
from ksgitops.io.spaces import (ADDED, DELETED, GitFolderProvider, KubeconfigProvider, KubeSpaceClient, ProviderError,
                                SpaceClients, SpaceManager, space_client)
from ksgitops.io.kube import Cluster
from ksgitops.model import KsgitopsError
from space_fixtures import CM, collect, wait_for
from space_fixtures import repo  # noqa: F401 - the fixture


# ---- kubeconfig provider against API servers (loopback KubeServers, or real clusters)

MADE = "ksgitops.test/made-here"  # on what the tests put: what a cluster makes itself (kube-root-ca.crt) stays out


def put_cm(wec: Wec, ns: str, name: str, labels: dict[str, str] | None = None) -> None:
    with wec.api() as api:
        api.apply({**CM, "metadata": {"name": name, "namespace": ns, "labels": {MADE: "yes", **(labels or {})}},
                   "data": {"k": name}})


@dataclass
class Two:
    wecs: Wecs
    provider: KubeconfigProvider
    ns: str  # a namespace of the test's own, on both


@pytest.fixture
def two(kube_wecs: Callable[[list[str]], Wecs], tmp_path: Path, kube_names: KubeNames) -> Two:
    wecs = kube_wecs(["wec-florin", "wec-guilder"])
    for wec in wecs.wecs.values():
        with wec.api() as api:
            api.namespace(kube_names.ns())
    return Two(wecs, KubeconfigProvider(wecs.kubeconfig, "clusters", "wec-", probe_timeout=1.0),
               kube_names.ns())


def test_probe_reports_ready_and_not_ready(two: Two) -> None:
    provider = two.provider
    assert provider.list() == [Observed("wec-florin"), Observed("wec-guilder")]
    two.wecs["wec-guilder"].wire.unreachable = True
    assert provider.get("wec-guilder") == Observed("wec-guilder", "NotReady")
    store = MemoryStore([SpaceObj("wec-guilder", "imported", "clusters", "Ready")])
    applied = SpaceManager([provider], store).reconcile()
    assert [str(a) for a in applied.done] == ["WriteSpaceObject wec-florin (clusters)",
                                              "SetPhase wec-guilder (clusters) -> NotReady"]


def test_space_client_reaches_its_cluster_through_the_one_client_path(two: Two) -> None:
    put_cm(two.wecs["wec-florin"], two.ns, "one")
    sc = space_client("wec-florin", [two.provider])
    assert isinstance(sc, KubeSpaceClient) and isinstance(sc.cluster, Cluster)
    found = sc.cluster.list_objects("v1", "configmaps", two.ns, MADE)
    assert [i["metadata"]["name"] for i in found] == ["one"]
    assert [o["data"]["k"] for o in sc.list("v1", "ConfigMap", two.ns, {"matchLabels": {MADE: "yes"}})] == ["one"]
    with pytest.raises(KsgitopsError, match="needs apiVersion and kind"):
        sc.list()
    with pytest.raises(ProviderError, match="serves no Gizmo in v1"):
        sc.list("v1", "Gizmo")
    sc.close()


def test_list_across_spaces(two: Two, repo: Path) -> None:
    florin, guilder = two.wecs["wec-florin"], two.wecs["wec-guilder"]
    put_cm(florin, two.ns, "a", {"app": "web"})
    put_cm(florin, two.ns, "b", {"app": "db"})
    put_cm(guilder, two.ns, "a", {"app": "web"})
    clients = SpaceClients([GitFolderProvider(repo), two.provider])
    got = clients.list_objects(["wec-guilder", "wec-florin"], "v1", "ConfigMap", two.ns,
                               {"matchLabels": {"app": "web"}})
    assert [(o["metadata"]["annotations"][SPACE_NAME_ANNOTATION], o["metadata"]["name"], o["kind"]) for o in got] == [
        ("wec-florin", "a", "ConfigMap"), ("wec-guilder", "a", "ConfigMap")]
    # git and kubeconfig spaces together: the same call, the same annotation
    (repo / "spaces" / "wmw-c" / "here.yaml").write_text(yaml.safe_dump(
        {**CM, "metadata": {"name": "here", "namespace": two.ns, "labels": {MADE: "yes"}}}))
    mixed = clients.list_objects(["wmw-c", "wec-florin"], "v1", "ConfigMap", two.ns, {"matchLabels": {MADE: "yes"}})
    assert [(o["metadata"]["annotations"][SPACE_NAME_ANNOTATION], o["metadata"]["name"]) for o in mixed] == [
        ("wec-florin", "a"), ("wec-florin", "b"), ("wmw-c", "here")]
    assert "wec-florin" in clients.spaces() and "wmw-c" in clients.spaces()


def test_watch_across_spaces(two: Two) -> None:
    florin, guilder = two.wecs["wec-florin"], two.wecs["wec-guilder"]
    put_cm(florin, two.ns, "before")
    clients = SpaceClients([two.provider])
    stop = threading.Event()
    events: list[Any] = []
    thread = collect(clients.watch(["wec-florin", "wec-guilder"], "v1", "ConfigMap", two.ns,
                                   {"matchLabels": {MADE: "yes"}}, stop=stop, timeout=30), events)
    wait_for(lambda: len(events) == 1)
    put_cm(guilder, two.ns, "g1")
    put_cm(florin, two.ns, "f1")
    wait_for(lambda: len(events) == 3)
    with guilder.api() as api:
        assert api.delete("v1", "configmaps", two.ns, "g1")
    wait_for(lambda: len(events) == 4)
    stop.set()
    thread.join(10)
    assert not thread.is_alive()
    seen = [(e.type, e.space, e.object["metadata"]["name"]) for e in events]
    assert seen[0] == (ADDED, "wec-florin", "before")
    assert sorted(seen[1:3]) == [(ADDED, "wec-florin", "f1"), (ADDED, "wec-guilder", "g1")]
    assert seen[3] == (DELETED, "wec-guilder", "g1")
    assert all(e.object["metadata"]["annotations"][SPACE_NAME_ANNOTATION] == e.space for e in events)
