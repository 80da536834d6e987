"""The space-aware client: a client per space name, listing and watching across spaces, each
object annotated with its space; and the providers a repository's SpaceProviderDescs name."""
from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence


from ...core.serialize import deep_copy
from ...core.place.spaces import SPACE_NAME_ANNOTATION, ProviderDesc

from .base import ObjectEvent, Provider, ProviderError, SpaceClient
from .gitfolders import GitFolderProvider
from .kubeconfig import KubeconfigProvider


# ---- the space-aware client

def annotate(body: dict[str, Any], space: str) -> dict[str, Any]:
    """A copy of `body` that says which space it came from."""
    copy = deep_copy(body)
    md = copy.setdefault("metadata", {})
    annotations = md.get("annotations")
    md["annotations"] = {**(annotations if isinstance(annotations, dict) else {}), SPACE_NAME_ANNOTATION: space}
    return copy


class SpaceClients:
    """Clients by space name, over several providers (the msclient of KubeStellar's space
    framework). A space name must be unique across providers."""

    def __init__(self, providers: Sequence[Provider]) -> None:
        self.providers = list(providers)

    def provider_of(self, space: str) -> Provider:
        found = []
        for provider in self.providers:
            try:
                if provider.get(space) is not None:
                    found.append(provider)
            except ProviderError:
                continue
        if not found:
            raise ProviderError(f"no provider has a space named {space!r}", exit_code=2)
        if len(found) > 1:
            raise ProviderError(f"space {space!r} exists in providers {', '.join(p.name for p in found)}", exit_code=2)
        return found[0]

    def client(self, space: str) -> SpaceClient:
        return self.provider_of(space).client(space)

    def spaces(self) -> list[str]:
        names: set[str] = set()
        for provider in self.providers:
            try:
                names.update(o.name for o in provider.list())
            except ProviderError:
                continue
        return sorted(names)

    def list_objects(self, spaces: Iterable[str] | None = None, api_version: str | None = None,
                     kind: str | None = None, namespace: str | None = None,
                     selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """List in every space (all spaces when None) and merge, in (space, identity) order; each
        object annotated with space.kubestellar.io/space-name."""
        merged = []
        for space in sorted(set(self.spaces() if spaces is None else spaces)):
            for body in self.client(space).list(api_version, kind, namespace, selector):
                merged.append(annotate(body, space))
        return merged

    def watch(self, spaces: Iterable[str], api_version: str | None = None, kind: str | None = None,
              namespace: str | None = None, selector: Mapping[str, Any] | None = None,
              stop: threading.Event | None = None, timeout: float | None = None) -> Iterator[ObjectEvent]:
        """One stream of the watches of every space (each begins with ADDED for what is there);
        ends when `stop` is set, after `timeout` seconds, or when the consumer closes it."""
        names = sorted(set(spaces))
        clients = {space: self.client(space) for space in names}
        inner = threading.Event()
        events: queue.Queue[ObjectEvent | BaseException] = queue.Queue()
        deadline = None if timeout is None else time.monotonic() + timeout

        def pump(space: str, client: SpaceClient) -> None:
            try:
                for kind_, body in client.watch(api_version, kind, namespace, selector, inner, timeout):
                    events.put(ObjectEvent(kind_, space, annotate(body, space)))
            except BaseException as e:  # noqa: BLE001 - handed to the consumer
                if not inner.is_set():
                    events.put(e)

        threads = [threading.Thread(target=pump, args=(s, c), name=f"space-watch-{s}", daemon=True)
                   for s, c in clients.items()]
        for thread in threads:
            thread.start()
        try:
            while not (stop is not None and stop.is_set()):
                left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
                if left <= 0:
                    return
                try:
                    item = events.get(timeout=left)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and events.empty():
                        return
                    continue
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            inner.set()


def space_client(name: str, providers: Sequence[Provider]) -> SpaceClient:
    """The client for space `name`: a GitSpaceClient for a folder, a KubeSpaceClient (its
    `cluster`) for a kubeconfig context."""
    return SpaceClients(providers).client(name)


def providers_from(descs: Iterable[ProviderDesc], root: Path | str, **kubeconfig_options: Any) -> list[Provider]:
    """Providers for SpaceProviderDescs: git descs over `root` (or their Config path), kubeconfig
    descs over their Config path."""
    found: list[Provider] = []
    for desc in descs:
        if desc.type == "git":
            found.append(GitFolderProvider(desc.config or root, desc.name, desc.prefix))
        elif desc.type == "kubeconfig":
            if not desc.config:
                raise ProviderError(f"SpaceProviderDesc {desc.name}: a kubeconfig provider needs Config "
                                    "(the kubeconfig path)", exit_code=2)
            found.append(KubeconfigProvider(desc.config, desc.name, desc.prefix, **kubeconfig_options))
    return found
