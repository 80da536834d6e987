"""pytest plugin: workload execution clusters (WECs) for tests, as loopback KubeServers.

Set KSGITOPS_TEST_KUBECONFIG to a kubeconfig to run against a real cluster instead (its current
context); `Wec.server` is then None and tests needing server-side handles skip via `require_server()`.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from kubeserver import KubeServer

ENV = "KSGITOPS_TEST_KUBECONFIG"


@dataclass
class Wec:
    kubeconfig: Path
    context: str
    server: KubeServer | None
    cache_dir: Path | None = None

    def api_client(self):
        """A kubernetes.client.ApiClient for this WEC."""
        from kubernetes import config
        return config.new_client_from_config(config_file=str(self.kubeconfig), context=self.context)

    def dynamic_client(self):
        """A DynamicClient whose discovery cache is private to the test (the default cache file is
        shared per host URL and would go stale across servers reusing a port)."""
        from kubernetes.dynamic import DynamicClient
        cache = (self.cache_dir or self.kubeconfig.parent) / f"discovery-{uuid.uuid4().hex}.json"
        return DynamicClient(self.api_client(), cache_file=str(cache))

    def require_server(self) -> KubeServer:
        if self.server is None:
            pytest.skip("needs the in-memory KubeServer (KSGITOPS_TEST_KUBECONFIG is set)")
        return self.server


@dataclass
class Wecs:
    kubeconfig: Path                    # merged: one context per server, named as the caller asked
    servers: dict[str, KubeServer]
    kubeconfigs: dict[str, Path] = field(default_factory=dict)   # one file per server

    def wec(self, name: str) -> Wec:
        return Wec(self.kubeconfigs[name], name, self.servers[name])


def real_kubeconfig() -> tuple[Path, str] | None:
    path = os.environ.get(ENV)
    if not path:
        return None
    doc = yaml.safe_load(Path(path).expanduser().read_text()) or {}
    return Path(path).expanduser(), doc.get("current-context", "")


@pytest.fixture
def kube_wec(tmp_path: Path) -> Iterator[Wec]:
    """One WEC: the real cluster of KSGITOPS_TEST_KUBECONFIG, else a fresh KubeServer."""
    real = real_kubeconfig()
    if real:
        yield Wec(real[0], real[1], None, tmp_path)
        return
    with KubeServer() as server:
        yield Wec(server.write_kubeconfig(tmp_path / "kubeconfig", "loopback"), "loopback", server, tmp_path)


@pytest.fixture
def unique_ns(kube_wec: Wec) -> Iterator[str]:
    """A fresh namespace in kube_wec, deleted afterwards."""
    from kubernetes import client
    name = f"ksg-test-{uuid.uuid4().hex[:10]}"
    with kube_wec.api_client() as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            yield name
        finally:
            try:
                core.delete_namespace(name)
            except client.ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture
def kube_wecs(tmp_path: Path) -> Iterator[Callable[[int | Sequence[str]], Wecs]]:
    """kube_wecs(["florin", "guilder"]) or kube_wecs(2): independent KubeServers plus a merged kubeconfig."""
    if real_kubeconfig():
        pytest.skip("multi-WEC tests need in-memory KubeServers (KSGITOPS_TEST_KUBECONFIG is set)")
    started: list[KubeServer] = []
    counter = iter(range(1_000_000))

    def make(names: int | Sequence[str]) -> Wecs:
        names = [f"wec{i + 1}" for i in range(names)] if isinstance(names, int) else list(names)
        folder = tmp_path / f"wecs{next(counter)}"
        merged: dict = {"apiVersion": "v1", "kind": "Config", "preferences": {},
                        "clusters": [], "users": [], "contexts": [], "current-context": names[0] if names else ""}
        wecs = Wecs(folder / "kubeconfig", {})
        for name in names:
            server = KubeServer().start()
            started.append(server)
            wecs.servers[name] = server
            wecs.kubeconfigs[name] = server.write_kubeconfig(folder / f"{name}.kubeconfig", name)
            single = server.kubeconfig(name)
            for section in ("clusters", "users", "contexts"):
                merged[section] += single[section]
        folder.mkdir(parents=True, exist_ok=True)
        wecs.kubeconfig.write_text(yaml.safe_dump(merged, sort_keys=False))
        return wecs

    try:
        yield make
    finally:
        for server in started:
            server.stop()
