"""The kubeconfig space provider: a space is a context of a kubeconfig file (discovered or
imported; clusters are provisioned outside ksgitops); its client is the `kubernetes` client."""
from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping

import yaml

from ...core.place.spaces import (WRITE_OBJECT, Action, Observed, Plan, ProviderDesc, SpaceObj, is_space, plan, space_body, space_from)
from ...model import KsgitopsError

from .base import ADDED, DELETED, MODIFIED, NotSupported, ProviderError, SpaceEvent, check_selector, watch_listing, object_key


# ---- kubeconfig: a space is a context

class KubeconfigProvider:
    """Spaces are the contexts of the kubeconfig file at `path`. Clusters are provisioned outside
    ksgitops: `create` and `delete` raise NotSupported. `probe` asks each API server for /version
    (any HTTP answer is Ready, no answer within `probe_timeout` is NotReady)."""

    type = "kubeconfig"

    def __init__(self, path: Path | str, name: str = "kubeconfig", prefix: str = "", probe: bool = True,
                 probe_timeout: float = 2.0, interval: float = 5.0, cache_dir: Path | str | None = None) -> None:
        self.path = Path(path)
        self.name = name
        self.prefix = prefix
        self.probe = probe
        self.probe_timeout = probe_timeout
        self.interval = interval
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None

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
        from kubernetes.client import ApiException, VersionApi
        try:
            api = self.api_client(name)
        except Exception:  # noqa: BLE001 - an unusable context cannot be reached
            return "NotReady"
        try:
            VersionApi(api).get_code(_request_timeout=self.probe_timeout)
            return "Ready"
        except ApiException as e:
            return "Ready" if e.status else "NotReady"  # the server answered: it is there
        except Exception:  # noqa: BLE001 - connection refused, reset, timed out
            return "NotReady"
        finally:
            api.close()

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

    def api_client(self, name: str) -> Any:
        """A kubernetes.client.ApiClient for the context."""
        from kubernetes import config
        if name not in self._named(self._config(), "contexts"):
            raise ProviderError(f"kubeconfig provider {self.name}: no context {name!r} in {self.path}", exit_code=2)
        return config.new_client_from_config(config_file=str(self.path), context=name)

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
    """A space-aware client over an API server: `api_client` (kubernetes ApiClient) and `dynamic`
    (kubernetes DynamicClient), plus list/watch by apiVersion and kind."""

    def __init__(self, provider: KubeconfigProvider, space: str) -> None:
        self.provider = provider
        self.space = space
        self._api: Any = None
        self._dynamic: Any = None

    @property
    def api_client(self) -> Any:
        if self._api is None:
            self._api = self.provider.api_client(self.space)
        return self._api

    @property
    def dynamic(self) -> Any:
        if self._dynamic is None:
            from kubernetes.dynamic import DynamicClient
            cache = None
            if self.provider.cache_dir is not None:
                cache = str(self.provider.cache_dir / f"discovery-{self.space}-{uuid.uuid4().hex}.json")
            self._dynamic = DynamicClient(self.api_client, cache_file=cache)
        return self._dynamic

    def close(self) -> None:
        if self._api is not None:
            self._api.close()

    def _resource(self, api_version: str | None, kind: str | None) -> Any:
        if not api_version or not kind:
            raise KsgitopsError(f"space {self.space}: listing an API server needs apiVersion and kind")
        return self.dynamic.resources.get(api_version=api_version, kind=kind)

    def list(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
             selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        check_selector(selector)
        resource = self._resource(api_version, kind)
        found = resource.get(namespace=namespace, label_selector=selector_string(selector)).to_dict()
        items = []
        for item in found.get("items") or []:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            items.append(item)
        return sorted(items, key=object_key)

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None, chunk: float = 2.0) -> Iterator[tuple[str, dict[str, Any]]]:
        """List, ADDED for every object there, then watch from the list's resourceVersion; the
        server-side watches last at most `chunk` seconds and are chained, so `stop` is noticed."""
        from kubernetes import watch as kwatch
        check_selector(selector)
        resource = self._resource(api_version, kind)
        labels = selector_string(selector)
        deadline = None if timeout is None else time.monotonic() + timeout
        stop = stop or threading.Event()
        listed = resource.get(namespace=namespace, label_selector=labels).to_dict()
        version = (listed.get("metadata") or {}).get("resourceVersion")
        for item in sorted(listed.get("items") or [], key=object_key):
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            yield ADDED, item
        while not stop.is_set():
            left = chunk if deadline is None else min(chunk, deadline - time.monotonic())
            if left <= 0:
                return
            watcher = kwatch.Watch()
            for event in self.dynamic.watch(resource, namespace=namespace, label_selector=labels,
                                            resource_version=version, timeout=max(1, int(round(left))),
                                            watcher=watcher):
                body = event["raw_object"]
                version = (body.get("metadata") or {}).get("resourceVersion") or version
                if event["type"] in (ADDED, MODIFIED, DELETED):
                    body.setdefault("apiVersion", api_version)
                    body.setdefault("kind", kind)
                    yield event["type"], body
                if stop.is_set():
                    watcher.stop()
                    return
