"""pytest plugin: workload execution clusters (WECs) for tests.

By default each WEC is a fresh in-memory KubeServer (tests/kubeserver/) running stand-ins of a
cluster's controllers (tests/kubecontrollers.py). With KSGITOPS_TEST_KUBECONFIG the same tests run
against real clusters instead, their controllers running: a comma-separated list of `PATH` (that
kubeconfig's current context) or `PATH#CONTEXT` entries, one per cluster, each a different cluster
(`kube_wecs(n)` takes the first n; a test needing more than listed skips). `--kubeservers N` starts
N KubeServers (controllers included) in processes of their own and sets the variable to them, so
that a test reaches them only as it would reach a real cluster.

The clusters' controllers race the tests: a ReplicaSet's or Deployment's status is theirs, never
the test's (a test that needs a status of its own uses a custom resource, see `widget_wds`), and a
test waits for them with `Wec.settle()` before it relies on a workload's status staying put.

Tests never look inside a server. The program under test reaches a WEC through its `wire`
(tests/kubewire.py: what crossed it, and failures on demand); the test's own reads and writes go
straight to the API server (`Wec.api()`, tests/kubeapi.py). Everything a test creates on a cluster
carries its `kube_names` token in its name (namespaces, CRD groups) and is deleted afterwards.
"""
from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from kubeapi import KubeApi
from kubeserver import KubeServer
from kubewire import KubeWire, write_kubeconfig

ENV = "KSGITOPS_TEST_KUBECONFIG"
HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Upstream:
    """An API server: a kubeconfig file and a context in it."""
    kubeconfig: Path
    context: str


@dataclass(frozen=True)
class KubeNames:
    """Names of what one test creates on a cluster: each holds the test's token."""
    token: str

    def ns(self, base: str = "ksg") -> str:
        return f"{base}-{self.token}"

    def group(self, base: str) -> str:
        """An API group of the test's own: `group1.test` -> `group1-<token>.test`."""
        first, _, rest = base.partition(".")
        return f"{first}-{self.token}.{rest}"


# Cluster-level names in the example's sources (namespaces and the API groups its placements upsync)
_EXAMPLE_NAMES = re.compile(r"(?<![\w.-])(commonstuff|specialstuff|orbital|group\d\.test)(?![\w-])")
WORKLOADS = frozenset({"ReplicaSet", "Deployment", "StatefulSet"})


def isolate(repo: Path, names: KubeNames) -> Path:
    """Prepare a copy of the example (before it is reconciled) for a cluster: its cluster-level
    names renamed to the test's own, and its workloads scaled to zero replicas, so that no Pod is
    ever made (nothing runs on a cluster the tests use) and their controllers' status settles as
    soon as it has observed their generation."""
    def rename(m: re.Match[str]) -> str:
        return names.group(m[1]) if m[1].endswith(".test") else names.ns(m[1])
    for file in (repo / "spaces").rglob("*.yaml"):
        file.write_text(_scaled_to_zero(_EXAMPLE_NAMES.sub(rename, file.read_text())))
    return repo


def _scaled_to_zero(text: str) -> str:
    docs = list(yaml.safe_load_all(text))
    workloads = [d for d in docs if isinstance(d, dict) and d.get("kind") in WORKLOADS]
    if not workloads:
        return text
    for doc in workloads:
        doc.setdefault("spec", {})["replicas"] = 0
    return yaml.safe_dump_all(docs, sort_keys=False)


def widget_wds(names: KubeNames, space: str = "wmw-w") -> dict[str, str]:
    """A WDS placing a CRD (its `status` a subresource) and one custom resource of it, `gizmo`, on
    every WEC of the example: a workload whose status no controller of the cluster writes, so a
    test can set it as the widget's own controller would (group and namespace: the test's own)."""
    group, ns = names.group("example.com"), names.ns("widgetland")
    return {f"spaces/{space}/{path}": text.replace("GROUP", group).replace("NAMESPACE", ns)
            for path, text in _WIDGET_WDS.items()}


_WIDGET_WDS = {
    "crd.yaml": """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.GROUP}
spec:
  group: GROUP
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
""",
    "widget.yaml": """
apiVersion: GROUP/v1
kind: Widget
metadata: {name: gizmo, namespace: NAMESPACE}
spec: {size: 3}
""",
    "placement.yaml": """
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: edge-placement-w}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync:
  - apiGroup: apiextensions.k8s.io
    resources: [customresourcedefinitions]
  - apiGroup: GROUP
    resources: [widgets]
    namespaces: [NAMESPACE]
"""}


def widget_status(generation: int, ready: str = "True", reason: str = "Spinning") -> dict:
    """A Widget's status as its controller would write it (kstatus: observedGeneration and a Ready condition)."""
    return {"observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": ready, "reason": reason,
                            "message": f"widget is {reason.lower()}", "observedGeneration": generation,
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}]}


@dataclass
class Wec:
    kubeconfig: Path            # the program under test reaches the WEC here: through the wire
    context: str
    wire: KubeWire
    upstream: Upstream
    token: str                          # in the name of everything the test makes there
    server: KubeServer | None = None    # the in-memory server, for the tests of KubeServer itself
    cache_dir: Path | None = None

    def api(self) -> KubeApi:
        """The test's own hands on the API server (not through the wire)."""
        return KubeApi(self.upstream.kubeconfig, self.upstream.context)

    def settle(self, timeout: float = 60.0) -> None:
        """Wait until the cluster's controllers have caught up with the workloads in the test's
        namespaces (see KubeApi.settle)."""
        with self.api() as api:
            api.settle(self.token, timeout)

    def api_client(self):
        """A kubernetes.client.ApiClient for the API server (not through the wire)."""
        from kubernetes import config
        return config.new_client_from_config(config_file=str(self.upstream.kubeconfig), context=self.upstream.context)

    def dynamic_client(self):
        """A DynamicClient whose discovery cache is private to the test (the default cache file is
        shared per host URL and would go stale across servers reusing a port)."""
        from kubernetes.dynamic import DynamicClient
        cache = (self.cache_dir or self.kubeconfig.parent) / f"discovery-{uuid.uuid4().hex}.json"
        return DynamicClient(self.api_client(), cache_file=str(cache))

    def direct(self) -> Wec:
        """The same WEC, the program under test reaching the API server itself (TLS, real credentials)."""
        return dataclasses.replace(self, kubeconfig=self.upstream.kubeconfig, context=self.upstream.context)

    def require_server(self) -> KubeServer:
        if self.server is None:
            pytest.skip("tests of the in-memory KubeServer itself (KSGITOPS_TEST_KUBECONFIG is set)")
        return self.server


@dataclass
class Wecs:
    kubeconfig: Path                                     # one context per WEC, named as the test asked
    wecs: dict[str, Wec] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Wec:
        return self.wecs[name]


def _entry(text: str) -> Upstream:
    path, _, context = text.strip().partition("#")
    kubeconfig = Path(path).expanduser()
    try:
        doc = yaml.safe_load(kubeconfig.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise pytest.UsageError(f"{ENV}: cannot read {kubeconfig}: {e}") from None
    context = context or doc.get("current-context") or ""
    if context not in {c.get("name") for c in doc.get("contexts") or []}:
        raise pytest.UsageError(f"{ENV}: no context {context!r} in {kubeconfig}")
    return Upstream(kubeconfig, context)


def real_clusters() -> list[Upstream]:
    """The clusters of KSGITOPS_TEST_KUBECONFIG, in order ([] when unset)."""
    text = os.environ.get(ENV, "")
    found = [_entry(part) for part in text.split(",") if part.strip()]
    if len(set(found)) != len(found):
        raise pytest.UsageError(f"{ENV}: a cluster is listed twice; each entry must be a different cluster")
    return found


class _Provisioner:
    """Makes WECs for one test and cleans up after it."""

    def __init__(self, folder: Path, names: KubeNames) -> None:
        self.folder, self.names = folder, names
        self.real = real_clusters()
        self.servers: list[KubeServer] = []
        self.wires: list[KubeWire] = []
        self.upstreams: dict[Upstream, None] = {}
        self.counter = 0

    def make(self, names: Sequence[str]) -> list[Wec]:
        if self.real and len(names) > len(self.real):
            pytest.skip(f"needs {len(names)} clusters, {ENV} lists {len(self.real)}")
        self.counter += 1
        folder = self.folder / f"wecs{self.counter}"
        folder.mkdir(parents=True, exist_ok=True)
        made = []
        for i, name in enumerate(names):
            server = None
            if self.real:
                upstream = self.real[i]
            else:
                server = KubeServer(controllers=True).start()
                self.servers.append(server)
                upstream = Upstream(server.write_kubeconfig(folder / f"{name}.upstream.kubeconfig", name), name)
            self.upstreams[upstream] = None
            wire = KubeWire(upstream.kubeconfig, upstream.context).start()
            self.wires.append(wire)
            kubeconfig = write_kubeconfig(folder / f"{name}.kubeconfig", {name: wire})
            made.append(Wec(kubeconfig, name, wire, upstream, self.names.token, server, self.folder))
        return made

    def close(self) -> None:
        try:
            for upstream in self.upstreams:
                with KubeApi(upstream.kubeconfig, upstream.context) as api:
                    api.sweep(self.names.token)
        finally:
            for wire in self.wires:
                wire.stop()
            for server in self.servers:
                server.stop()


@pytest.fixture
def kube_names() -> KubeNames:
    return KubeNames(f"t{uuid.uuid4().hex[:8]}")


@pytest.fixture
def kube_wec(tmp_path: Path, kube_names: KubeNames) -> Iterator[Wec]:
    """One WEC: the first cluster of KSGITOPS_TEST_KUBECONFIG, else a fresh KubeServer."""
    provisioner = _Provisioner(tmp_path, kube_names)
    try:
        yield provisioner.make(["wec"])[0]
    finally:
        provisioner.close()


@pytest.fixture
def unique_ns(kube_wec: Wec, kube_names: KubeNames) -> str:
    """A fresh namespace in kube_wec (deleted with everything else the test made)."""
    with kube_wec.api() as api:
        api.namespace(kube_names.ns())
    return kube_names.ns()


@pytest.fixture
def kube_wecs(tmp_path: Path, kube_names: KubeNames) -> Iterator[Callable[[int | Sequence[str]], Wecs]]:
    """kube_wecs(["florin", "guilder"]) or kube_wecs(2): independent clusters, one kubeconfig with a
    context per WEC (each through its wire)."""
    provisioner = _Provisioner(tmp_path, kube_names)

    def make(names: int | Sequence[str]) -> Wecs:
        names = [f"wec{i + 1}" for i in range(names)] if isinstance(names, int) else list(names)
        made = dict(zip(names, provisioner.make(names)))
        path = write_kubeconfig(tmp_path / f"wecs{provisioner.counter}" / "kubeconfig",
                                {name: wec.wire for name, wec in made.items()})
        return Wecs(path, made)

    try:
        yield make
    finally:
        provisioner.close()


# ---- --kubeservers N: loopback API servers in processes of their own

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--kubeservers", type=int, default=0, metavar="N",
                     help=f"start N KubeServers (with stand-ins of a cluster's controllers) in processes of "
                          f"their own and run the Kubernetes tests against them as against real clusters "
                          f"(sets {ENV})")


def start_kubeservers(count: int, folder: Path) -> tuple[list[subprocess.Popen[bytes]], list[Path]]:
    """Start `count` `tests/kubeserver` processes, controllers included; their kubeconfigs once
    they listen."""
    processes, paths = [], []
    for i in range(count):
        path = folder / f"kubeserver{i + 1}.kubeconfig"
        processes.append(subprocess.Popen([sys.executable, str(HERE / "kubeserver"), "--kubeconfig", str(path),
                                           "--context", f"kubeserver{i + 1}", "--controllers"],
                                          stdout=subprocess.DEVNULL))
        paths.append(path)
    deadline = time.monotonic() + 30
    while not all(p.exists() for p in paths):
        if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
            stop_kubeservers(processes)
            raise RuntimeError("the KubeServer processes did not start")
        time.sleep(0.05)
    return processes, paths


def stop_kubeservers(processes: Sequence[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


_started: list[subprocess.Popen[bytes]] = []


def pytest_configure(config: pytest.Config) -> None:
    count = config.getoption("--kubeservers", 0)
    if count and not hasattr(config, "workerinput"):  # xdist workers inherit the variable
        folder = Path(tempfile.mkdtemp(prefix="ksgitops-kubeservers-"))
        processes, paths = start_kubeservers(count, folder)
        _started.extend(processes)
        os.environ[ENV] = ",".join(str(p) for p in paths)
    real_clusters()  # a bad KSGITOPS_TEST_KUBECONFIG is a usage error, before any test


def pytest_unconfigure(config: pytest.Config) -> None:
    stop_kubeservers(_started)
    _started.clear()
