"""What every space provider and space client shares: the interfaces, events, errors, and change
detection by polling or watching files."""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence

from msgspec import Struct

from ...core.load.selectors import selector_error
from ...core.place.spaces import Observed, ProviderDesc
from ...model import KsgitopsError
from ...names import dns1123_label_error

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class ProviderError(KsgitopsError):
    """A provider could not do what was asked (I/O, an unreachable server): exit code 3."""

    def __init__(self, message: str, exit_code: int = 3) -> None:
        super().__init__(message, exit_code=exit_code)


class NotSupported(ProviderError):
    """The provider type cannot do this at all (kubeconfig: create, delete): exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


class SpaceEvent(Struct, frozen=True):
    """A change in a provider's set of spaces (or in a space's phase or marker)."""

    type: str  # ADDED | MODIFIED | DELETED
    space: Observed
    provider: str


class ObjectEvent(Struct, frozen=True):
    """A change of an object in a space; `object` carries the space-name annotation."""

    type: str  # ADDED | MODIFIED | DELETED
    space: str
    object: dict[str, Any]


class SpaceClient(Protocol):
    space: str

    def list(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
             selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]: ...

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None) -> Iterator[tuple[str, dict[str, Any]]]: ...


class Provider(Protocol):
    """One space provider. `list` raises ProviderError when the provider cannot be reached."""

    name: str
    type: str
    prefix: str  # SpacePrefixForDiscovery ("" = no discovery)

    def create(self, name: str) -> None: ...

    def delete(self, name: str) -> None: ...

    def list(self) -> list[Observed]: ...

    def get(self, name: str) -> Observed | None: ...

    def watch(self, stop: threading.Event | None = None, timeout: float | None = None) -> Iterator[SpaceEvent]: ...

    def client(self, name: str) -> SpaceClient: ...


def describe(provider: Provider) -> ProviderDesc:
    return ProviderDesc(provider.name, provider.type, provider.prefix)


def check_space_name(name: str) -> None:
    error = dns1123_label_error(name)
    if error:
        raise ProviderError(f"space name {error}", exit_code=2)


# ---- change detection shared by the providers and the git space client

def _changes(before: Mapping[Any, Any], after: Mapping[Any, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(type, key, value) for every difference, in key order."""
    for key in sorted(set(before) | set(after), key=repr):
        old, new = before.get(key), after.get(key)
        if old is None and new is not None:
            yield ADDED, key, new
        elif new is None and old is not None:
            yield DELETED, key, old
        elif old != new:
            yield MODIFIED, key, new


def _poll_changes(paths: Sequence[Path], stop: threading.Event | None, timeout: float | None,
                  interval: float, accept: Callable[[str], bool] = lambda p: True) -> Iterator[None]:
    """Yields whenever something below `paths` changed (file events through `watchfiles`), and at
    least every `interval` seconds; ends when `stop` is set or `timeout` seconds have passed."""
    import watchfiles  # on first use: ~45 ms of start-up (python -X importtime) only watching needs
    deadline = None if timeout is None else time.monotonic() + timeout
    stop = stop or threading.Event()
    existing = [p for p in paths if p.exists()]
    if not existing:  # nothing to watch yet: poll
        while not stop.is_set():
            left = interval if deadline is None else min(interval, deadline - time.monotonic())
            if left <= 0 or stop.wait(left):
                return
            yield None
        return
    tick = interval if timeout is None else min(interval, timeout)
    for changes in watchfiles.watch(*existing, stop_event=stop, debounce=50, step=20,
                                    rust_timeout=max(1, int(tick * 1000)), yield_on_timeout=True,
                                    watch_filter=lambda change, path: accept(path)):
        if deadline is not None and time.monotonic() >= deadline:
            if changes:
                yield None
            return
        yield None


def watch_listing(list_fn: Callable[[], dict[Any, Any]], paths: Sequence[Path], stop: threading.Event | None,
                   timeout: float | None, interval: float, initial: dict[Any, Any] | None,
                   accept: Callable[[str], bool] = lambda p: True) -> Iterator[tuple[str, Any, Any]]:
    current = list_fn() if initial is None else initial
    for _ in _poll_changes(paths, stop, timeout, interval, accept):
        try:
            fresh = list_fn()
        except ProviderError:
            continue  # unreachable for a moment: try again on the next change or tick
        yield from _changes(current, fresh)
        current = fresh


def object_key(body: Mapping[str, Any]) -> tuple[str, str, str, str]:
    md = body.get("metadata") or {}
    api = str(body.get("apiVersion", ""))
    return (api.rpartition("/")[0], str(body.get("kind", "")), str(md.get("namespace") or ""), str(md.get("name", "")))


def check_selector(selector: Mapping[str, Any] | None) -> None:
    if selector is not None:
        error = selector_error(selector)
        if error:
            raise KsgitopsError(f"label selector: {error}")
