"""The kubeconfig space provider: a space is a context of a kubeconfig file (discovered or
imported; clusters are provisioned outside ksgitops); its client lists and watches through
io/kube.py's `Cluster`, the one Kubernetes client path."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from ...core.place.spaces import Observed
from ...model import KsgitopsError
from ..kube import Cluster, KubeError

from .base import ADDED, DELETED, MODIFIED, NotSupported, ProviderError, SpaceEvent, check_selector, watch_listing, object_key


# ---- kubeconfig: a space is a context

class KubeconfigProvider:
    """Spaces are the contexts of the kubeconfig file at `path`. Clusters are provisioned outside
    ksgitops: `create` and `delete` raise NotSupported. `probe` asks each API server for /version
    (any HTTP answer is Ready, no answer within `probe_timeout` is NotReady)."""

    type = "kubeconfig"

    def __init__(self, path: Path | str, name: str = "kubeconfig", prefix: str = "", probe: bool = True,
                 probe_timeout: float = 2.0, interval: float = 5.0) -> None:
        self.path = Path(path)
        self.name = name
        self.prefix = prefix
        self.probe = probe
        self.probe_timeout = probe_timeout
        self.interval = interval

    def create(self, name: str) -> None:
        raise NotSupported(f"kubeconfig provider {self.name}: cannot create space {name}: clusters are "
                           "provisioned outside ksgitops (add a context to the kubeconfig; it is discovered "
                           "or imported)")

    def delete(self, name: str) -> None:
        raise NotSupported(f"kubeconfig provider {self.name}: cannot delete space {name}: clusters are "
                           "provisioned outside ksgitops")

    def _config(self) -> dict[str, Any]:
        try:
            doc = yaml.safe_load(self.path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise ProviderError(f"kubeconfig provider {self.name}: cannot read {self.path}: "
                                f"{type(e).__name__}") from None
        if doc is None:
            return {}
        if not isinstance(doc, dict):
            raise ProviderError(f"kubeconfig provider {self.name}: {self.path} is not a kubeconfig")
        return doc

    @staticmethod
    def _named(doc: Mapping[str, Any], section: str) -> dict[str, dict[str, Any]]:
        entries = doc.get(section) or []
        key = section[:-1]  # clusters -> cluster
        return {str(e["name"]): (e.get(key) or {}) for e in entries
                if isinstance(e, dict) and isinstance(e.get("name"), str)}

    def connection(self, name: str) -> dict[str, Any]:
        """How the space is reached (no credentials): context, cluster, user, server, namespace."""
        doc = self._config()
        contexts = self._named(doc, "contexts")
        if name not in contexts:
            raise ProviderError(f"kubeconfig provider {self.name}: no context {name!r} in {self.path}", exit_code=2)
        ctx = contexts[name]
        cluster = self._named(doc, "clusters").get(str(ctx.get("cluster")), {})
        return {"context": name, "cluster": ctx.get("cluster"), "user": ctx.get("user"),
                "server": cluster.get("server"), "namespace": ctx.get("namespace")}

    def _phase(self, name: str) -> str:
        if not self.probe:
            return "Ready"
        try:
            with Cluster(str(self.path), name, timeout=self.probe_timeout) as cluster:
                return "Ready" if cluster.answers() else "NotReady"  # any HTTP answer: it is there
        except KubeError:  # an unusable context cannot be reached
            return "NotReady"

    def _listing(self) -> dict[str, Observed]:
        contexts = self._named(self._config(), "contexts")
        return {name: Observed(name, self._phase(name)) for name in sorted(contexts)}

    def list(self) -> list[Observed]:
        return list(self._listing().values())

    def get(self, name: str) -> Observed | None:
        if name not in self._named(self._config(), "contexts"):
            return None
        return Observed(name, self._phase(name))

    def watch(self, stop: threading.Event | None = None, timeout: float | None = None) -> Iterator[SpaceEvent]:
        """Contexts added or removed (the file is watched) and phase changes (probed every
        `interval` seconds), after the call."""
        target = str(self.path.resolve())
        for kind, _, space in watch_listing(self._listing, [self.path.parent], stop, timeout, self.interval, None,
                                             lambda path: os.path.abspath(path) == target):
            yield SpaceEvent(kind, space, self.name)

    def cluster(self, name: str) -> Cluster:
        """The API server of the context."""
        if name not in self._named(self._config(), "contexts"):
            raise ProviderError(f"kubeconfig provider {self.name}: no context {name!r} in {self.path}", exit_code=2)
        try:
            return Cluster(str(self.path), name)
        except KubeError as e:
            raise ProviderError(f"kubeconfig provider {self.name}: {e}") from None

    def client(self, name: str) -> "KubeSpaceClient":
        return KubeSpaceClient(self, name)


def selector_string(selector: Mapping[str, Any] | None) -> str | None:
    """A LabelSelector as the `labelSelector` query string of the Kubernetes API."""
    if selector is None:
        return None
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], ",".join(expr.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[op])
    return ",".join(parts)


class KubeSpaceClient:
    """A space-aware client over an API server (`cluster`): list and watch by apiVersion and kind."""

    def __init__(self, provider: KubeconfigProvider, space: str) -> None:
        self.provider = provider
        self.space = space
        self._cluster: Cluster | None = None

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = self.provider.cluster(self.space)
        return self._cluster

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()

    def _resource(self, api_version: str | None, kind: str | None) -> str:
        if not api_version or not kind:
            raise KsgitopsError(f"space {self.space}: listing an API server needs apiVersion and kind")
        try:
            found = self.cluster.resource_of(api_version, kind)
        except KubeError as e:
            raise ProviderError(f"space {self.space}: {e}") from None
        if found is None:
            raise ProviderError(f"space {self.space}: the API server serves no {kind} in {api_version}", exit_code=2)
        return found.name

    def _listed(self, api_version: str, kind: str, namespace: str | None,
                selector: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], str, str]:
        """(objects, the list's resourceVersion, the kind's resource)."""
        check_selector(selector)
        resource = self._resource(api_version, kind)
        try:
            items, version = self.cluster.list_with_version(api_version, resource, namespace or "",
                                                            selector_string(selector) or "")
        except KubeError as e:
            raise ProviderError(f"space {self.space}: {e}") from None
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return sorted(items, key=object_key), version, resource

    def list(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
             selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._listed(api_version or "", kind or "", namespace, selector)[0]

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None, chunk: float = 2.0) -> Iterator[tuple[str, dict[str, Any]]]:
        """List, ADDED for every object there, then watch from the list's resourceVersion; the
        server-side watches last at most `chunk` seconds and are chained, so `stop` is noticed."""
        listed, version, resource = self._listed(api_version or "", kind or "", namespace, selector)
        deadline = None if timeout is None else time.monotonic() + timeout
        stop = stop or threading.Event()
        for item in listed:
            yield ADDED, item
        while not stop.is_set():
            left = chunk if deadline is None else min(chunk, deadline - time.monotonic())
            if left <= 0:
                return
            events = self.cluster.watch_objects(api_version or "", resource, namespace or "",
                                                selector_string(selector) or "", version, max(1, int(round(left))))
            for kind_, body in events:
                version = (body.get("metadata") or {}).get("resourceVersion") or version
                if kind_ in (ADDED, MODIFIED, DELETED):
                    body.setdefault("apiVersion", api_version)
                    body.setdefault("kind", kind)
                    yield kind_, body
                if stop.is_set():
                    events.close()
                    return
