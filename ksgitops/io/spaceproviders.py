"""The space framework's edge: space providers, the space manager that applies a core plan, and the
space-aware client (docs/SPACES.md).

Providers share one small interface (`Provider`: create, delete, list, get, watch, plus `client`):

- `GitFolderProvider(root)`: a space is `spaces/<name>/` of a work tree. `create` makes the folder
  with a `space.yaml` holding a managed Space (the managed marker, as every mailbox has); `delete`
  removes the folder; every folder is Ready.
- `KubeconfigProvider(path)`: a space is a context of a kubeconfig file. Clusters are provisioned
  outside ksgitops, so `create` and `delete` raise `NotSupported`; spaces are discovered
  (SpacePrefixForDiscovery) or imported. With `probe` (the default) a context whose API server does
  not answer is NotReady.

`SpaceManager(providers, store)` plans with `ksgitops.core.place.spaces.plan` and applies the actions.
`SpaceClients(providers)` gives a client per space name and lists / watches across spaces; each
object it returns carries the annotation `space.kubestellar.io/space-name: <space>`.

The `kubernetes` package is imported lazily, here only: the core never sees it.
"""
from __future__ import annotations

import builtins
import os
import queue
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence

import yaml

from ..core.load.read import Loaded, load, mailbox_space
from ..core.load.parse import parse_file
from ..core.readout.render import render_mailbox
from ..core.load.selectors import matches, selector_error
from ..core.serialize import deep_copy, dump_yaml
from ..core.load.snapshot import GENERATED_DIR, SourceFile
from ..core.place.spaces import (CREATE_SPACE, DELETE_OBJECT, DELETE_SPACE, SET_PHASE, SPACE_API, SPACE_NAME_ANNOTATION,
                                  WRITE_OBJECT, Action, Observed, Plan, ProviderDesc, SpaceObj, is_space, plan, space_body,
                                  space_from)
from ..core.place.spacestep import MANAGED_MARKER, SPACE_DIR, is_managed_marker
from ..model import KsgitopsError, Obj, Origin, Problem
from ..names import dns1123_label_error
from .fs.tree import WorkTreeSnapshot, write_file

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class ProviderError(KsgitopsError):
    """A provider could not do what was asked (I/O, an unreachable server): exit code 3."""

    def __init__(self, message: str, exit_code: int = 3) -> None:
        super().__init__(message, exit_code=exit_code)


class NotSupported(ProviderError):
    """The provider type cannot do this at all (kubeconfig: create, delete): exit code 2."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


@dataclass(frozen=True, slots=True)
class SpaceEvent:
    """A change in a provider's set of spaces (or in a space's phase or marker)."""

    type: str  # ADDED | MODIFIED | DELETED
    space: Observed
    provider: str


@dataclass(frozen=True, slots=True)
class ObjectEvent:
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


def _check_name(name: str) -> None:
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
    import watchfiles
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


def _watch_listing(list_fn: Callable[[], dict[Any, Any]], paths: Sequence[Path], stop: threading.Event | None,
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


# ---- git: a space is a folder of a work tree

def _read_file(path: Path) -> bytes | None:
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _marker(folder: Path) -> bool:
    """ksgitops created the folder: it holds the managed marker `.ksgitops/managed-space.yaml`
    (GitFolderProvider.create), or it is a mailbox (space.yaml: a managed Space with the
    sync-target annotation)."""
    if is_managed_marker(_read_file(folder / MANAGED_MARKER), folder.name):
        return True
    return mailbox_space(WorkTreeSnapshot(folder.parent.parent), folder.name) is not None  # folder: <root>/spaces/<name>


def _leftover(folder: Path) -> bool:
    """A folder holding nothing but generated files (`.ksgitops/`) and no managed marker: its
    sources are gone, so the space is (as reconcile sees it too)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return names == [GENERATED_DIR]


class GitFolderProvider:
    """Spaces are the folders `spaces/<name>/` of the work tree at `root`."""

    type = "git"

    def __init__(self, root: Path | str, name: str = "git", prefix: str = "", interval: float = 1.0) -> None:
        self.root = Path(root)
        self.name = name
        self.prefix = prefix
        self.interval = interval

    @property
    def spaces_dir(self) -> Path:
        return self.root / "spaces"

    def folder(self, name: str) -> Path:
        _check_name(name)
        return self.spaces_dir / name

    def create(self, name: str) -> None:
        """Make `spaces/<name>/` holding the managed marker (a managed Space in
        `.ksgitops/managed-space.yaml`, never read as input); an existing folder is left as it is
        (create is idempotent)."""
        folder = self.folder(name)
        if folder.is_dir():
            return
        staging = self.spaces_dir / f".{name}.ksgitops-new"
        shutil.rmtree(staging, ignore_errors=True)
        marker = staging / MANAGED_MARKER
        marker.parent.mkdir(parents=True)
        marker.write_bytes(dump_yaml(space_body(SpaceObj(name, "managed", self.name))))
        os.rename(staging, folder)

    def delete(self, name: str) -> None:
        """Remove `spaces/<name>/` (renamed aside first, so a crash never leaves half a space
        listed); a missing folder is no error."""
        folder = self.folder(name)
        if not folder.exists():
            return
        trash = self.spaces_dir / f".{name}.ksgitops-old"
        shutil.rmtree(trash, ignore_errors=True)
        os.rename(folder, trash)
        shutil.rmtree(trash)

    def _listing(self) -> dict[str, Observed]:
        if not self.root.is_dir():
            raise ProviderError(f"git provider {self.name}: {self.root} is not a folder")
        if not self.spaces_dir.is_dir():
            return {}
        found = {}
        for entry in os.scandir(self.spaces_dir):
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            folder = Path(entry.path)
            marked = _marker(folder)
            if marked or not _leftover(folder):
                found[entry.name] = Observed(entry.name, "Ready", marked)
        return dict(sorted(found.items()))

    def list(self) -> list[Observed]:
        return list(self._listing().values())

    def get(self, name: str) -> Observed | None:
        folder = self.folder(name)
        if folder.is_symlink() or not folder.is_dir():
            return None
        marked = _marker(folder)
        return Observed(name, "Ready", marked) if marked or not _leftover(folder) else None

    def watch(self, stop: threading.Event | None = None, timeout: float | None = None) -> Iterator[SpaceEvent]:
        """Changes to the set of spaces (and to their managed marker) after the call."""
        prefix = str(self.spaces_dir) + os.sep
        accept: Callable[[str], bool] = lambda path: path.startswith(prefix) or path == str(self.spaces_dir)
        for kind, _, space in _watch_listing(self._listing, [self.root], stop, timeout, self.interval, None, accept):
            yield SpaceEvent(kind, space, self.name)

    def client(self, name: str) -> "GitSpaceClient":
        return GitSpaceClient(self.root, name, self.interval)


class _OneSpace:
    """A Snapshot of one space of a work tree, for core.load."""

    def __init__(self, root: Path, space: str) -> None:
        self._tree = WorkTreeSnapshot(root)
        self._space = space

    def list_spaces(self) -> list[str]:
        return [self._space]

    def space_files(self, space: str) -> list[SourceFile]:
        return self._tree.space_files(space)

    def file(self, path: str) -> SourceFile | None:
        return self._tree.file(path) if path.startswith(f"spaces/{self._space}/") else None

    def read(self, path: str) -> bytes | None:
        return self._tree.read(path)

    def read_tree(self, path: str) -> Any:
        return self._tree.read_tree(path)


def _key(body: Mapping[str, Any]) -> tuple[str, str, str, str]:
    md = body.get("metadata") or {}
    api = str(body.get("apiVersion", ""))
    return (api.rpartition("/")[0], str(body.get("kind", "")), str(md.get("namespace") or ""), str(md.get("name", "")))


def _wanted(body: Mapping[str, Any], api_version: str | None, kind: str | None, namespace: str | None,
            selector: Mapping[str, Any] | None) -> bool:
    md = body.get("metadata") or {}
    return ((api_version is None or body.get("apiVersion") == api_version)
            and (kind is None or body.get("kind") == kind)
            and (namespace is None or (md.get("namespace") or "") == namespace)
            and (selector is None or matches(selector, md.get("labels") or {})))


class GitSpaceClient:
    """A space-aware client over a folder: its objects as the core loads them (files under
    `.ksgitops/` are not objects); for a mailbox, what its WEC receives (base copies + patches)."""

    def __init__(self, root: Path | str, space: str, interval: float = 1.0) -> None:
        _check_name(space)
        self.root = Path(root)
        self.space = space
        self.folder = self.root / "spaces" / space
        self.interval = interval

    def objects(self) -> list[dict[str, Any]]:
        if not self.folder.is_dir():
            raise ProviderError(f"space {self.space}: {self.folder} is not a folder")
        loaded: Loaded = load(_OneSpace(self.root, self.space))
        errors = [p for p in loaded.problems if p.is_error]
        if errors:
            raise KsgitopsError(errors)
        if self.space in loaded.mailboxes:
            tree = WorkTreeSnapshot(self.root).read_tree(f"spaces/{self.space}") or {}
            return [body for _, body in render_mailbox(tree)]
        return [deep_copy(o.body) for o in loaded.spaces.get(self.space, [])]

    def list(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
             selector: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        _check_selector(selector)
        found = [b for b in self.objects() if _wanted(b, api_version, kind, namespace, selector)]
        return sorted(found, key=_key)

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """ADDED for every object now there, then the changes the files go through."""
        def listing() -> dict[Any, Any]:
            try:
                return {_key(b): b for b in self.list(api_version, kind, namespace, selector)}
            except KsgitopsError as e:  # a file being written, or the folder gone: try again later
                raise ProviderError(str(e)) from None
        current = listing()
        for key in sorted(current):
            yield ADDED, current[key]
        prefix = str(self.folder) + os.sep
        for kind_, _, body in _watch_listing(listing, [self.folder.parent], stop, timeout, self.interval, current,
                                             lambda path: path.startswith(prefix)):
            yield kind_, body


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
        for kind, _, space in _watch_listing(self._listing, [self.path.parent], stop, timeout, self.interval, None,
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


def _check_selector(selector: Mapping[str, Any] | None) -> None:
    if selector is not None:
        error = selector_error(selector)
        if error:
            raise KsgitopsError(f"label selector: {error}")


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
        _check_selector(selector)
        resource = self._resource(api_version, kind)
        found = resource.get(namespace=namespace, label_selector=selector_string(selector)).to_dict()
        items = []
        for item in found.get("items") or []:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            items.append(item)
        return sorted(items, key=_key)

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None, chunk: float = 2.0) -> Iterator[tuple[str, dict[str, Any]]]:
        """List, ADDED for every object there, then watch from the list's resourceVersion; the
        server-side watches last at most `chunk` seconds and are chained, so `stop` is noticed."""
        from kubernetes import watch as kwatch
        _check_selector(selector)
        resource = self._resource(api_version, kind)
        labels = selector_string(selector)
        deadline = None if timeout is None else time.monotonic() + timeout
        stop = stop or threading.Event()
        listed = resource.get(namespace=namespace, label_selector=labels).to_dict()
        version = (listed.get("metadata") or {}).get("resourceVersion")
        for item in sorted(listed.get("items") or [], key=_key):
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


# ---- the space manager

class SpaceStore(Protocol):
    """Where Space objects live for the manager."""

    def list(self) -> list[SpaceObj]: ...

    def write(self, obj: SpaceObj) -> None: ...

    def delete(self, name: str) -> None: ...

    def set_phase(self, name: str, phase: str) -> None: ...


class MemoryStore:
    def __init__(self, objects: Iterable[SpaceObj] = ()) -> None:
        self.objects = {o.name: o for o in objects}

    def list(self) -> list[SpaceObj]:
        return sorted(self.objects.values())

    def write(self, obj: SpaceObj) -> None:
        self.objects[obj.name] = obj

    def delete(self, name: str) -> None:
        self.objects.pop(name, None)

    def set_phase(self, name: str, phase: str) -> None:
        if name in self.objects:
            self.objects[name] = replace(self.objects[name], phase=phase)


class FolderStore:
    """Space objects as `<name>.yaml` files of one folder, status included."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def list(self) -> list[SpaceObj]:
        if not self.folder.is_dir():
            return []
        found: list[SpaceObj] = []
        problems: list[Problem] = []
        for path in sorted(self.folder.glob("*.yaml")):
            parsed = parse_file(str(path), path.read_bytes())
            problems.extend(parsed.problems)
            for line, body in parsed.docs:
                obj = Obj("", body, Origin(str(path), line))
                if is_space(obj):
                    found.append(space_from(obj))
        if problems:
            raise KsgitopsError(problems)
        return found

    def _path(self, name: str) -> Path:
        _check_name(name)
        return self.folder / f"{name}.yaml"

    def write(self, obj: SpaceObj) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(obj.name)
        staging = path.with_name(f".{path.name}.ksgitops-new")
        staging.write_bytes(dump_yaml(space_body(obj)))
        staging.replace(path)

    def delete(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def set_phase(self, name: str, phase: str) -> None:
        for obj in self.list():
            if obj.name == name:
                self.write(replace(obj, phase=phase, origin=Origin("")))


STATUS_DIR = "space-status"  # spaces/<holder>/.ksgitops/space-status/<name>.yaml: a source Space's phase
DISCOVERED_DIR = "discovered"  # spaces/<holder>/.ksgitops/discovered/<provider>/<name>.yaml


@dataclass(frozen=True, slots=True)
class SourceSpace:
    """A Space object of a source space: `holder` is the space whose files define it."""

    holder: str
    obj: SpaceObj
    namespace: str = ""


def _space_doc(data: bytes | None, label: str) -> dict[str, Any] | None:
    """The one Space document of a generated file, None when it is missing or not that."""
    if data is None:
        return None
    parsed = parse_file(label, data)
    if parsed.problems or len(parsed.docs) != 1:
        return None
    body = parsed.docs[0][1]
    if body.get("apiVersion") != SPACE_API or body.get("kind") != "Space":
        return None
    return body


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write `data` unless the file already holds it; True when written."""
    if _read_file(path) == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, data)
    return True


class RepoSpaceStore:
    """The Space objects of a repository work tree, for the manager (`ksgitops spaces`).

    - source Space objects (`sources`) are read-only: ksgitops never edits source files. Their
      phase (status.Phase) is kept in `spaces/<holder>/.ksgitops/space-status/<name>.yaml`,
      <holder> being the space whose files define the object;
    - `owned` objects (mailbox spaces, owned by their SyncTargets) are reconcile's: listed, never
      written;
    - Space objects ksgitops writes for discovered spaces, status included: for a git provider over
      this repository (`homes[provider]` None) in the space's own folder,
      `spaces/<name>/.ksgitops/space/space.yaml` (the file reconcile writes too); for any other
      provider in `spaces/<holder>/.ksgitops/discovered/<provider>/<name>.yaml`, <holder> being the
      space holding its SpaceProviderDesc (`homes[provider]`).

    Generated files that no longer belong to anything are `stale()`; `prune()` removes them: the
    phase of a Space object that is gone, a written object now shadowed by a source object or whose
    provider is no longer declared."""

    def __init__(self, root: Path | str, sources: Sequence[SourceSpace] = (), owned: Sequence[SpaceObj] = (),
                 homes: Mapping[str, str | None] | None = None) -> None:
        self.root = Path(root)
        self.sources = {s.obj.name: s for s in sorted(sources, key=lambda s: (s.obj.name, s.obj.origin), reverse=True)}
        self.owned = {o.name: o for o in owned}
        self.homes = dict(homes or {})
        self._written: dict[str, tuple[SpaceObj, Path]] | None = None  # kept up to date by writes

    @property
    def spaces_dir(self) -> Path:
        return self.root / "spaces"

    def written(self) -> dict[str, tuple[SpaceObj, Path]]:
        """The Space objects ksgitops wrote (for discovered spaces), by name, with their files."""
        if self._written is None:
            self._written = self._scan()[0]
        return self._written

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # -- where things are

    def status_path(self, holder: str, name: str) -> Path:
        return self.spaces_dir / holder / GENERATED_DIR / STATUS_DIR / f"{name}.yaml"

    def written_path(self, provider: str, name: str) -> Path:
        _check_name(name)
        if provider not in self.homes:
            raise ProviderError(f"no provider {provider} to write Space {name} for", exit_code=2)
        home = self.homes[provider]
        if home is None:
            return self.spaces_dir / name / GENERATED_DIR / SPACE_DIR / "space.yaml"
        return self.spaces_dir / home / GENERATED_DIR / DISCOVERED_DIR / provider / f"{name}.yaml"

    def locations(self) -> dict[str, str]:
        """Where each Space object is: `file:line` of a source (or mailbox) object, or the generated file."""
        found = {name: self.rel(path) for name, (_, path) in self.written().items()}
        found.update({name: str(obj.origin) for name, obj in self.owned.items()})
        found.update({name: str(s.obj.origin) for name, s in self.sources.items()})
        return found

    # -- reading

    def _folders(self) -> list[str]:
        if not self.spaces_dir.is_dir():
            return []
        return sorted(e.name for e in os.scandir(self.spaces_dir)
                      if e.is_dir(follow_symlinks=False) and not e.name.startswith("."))

    def _scan(self) -> tuple[dict[str, tuple[SpaceObj, Path]], list[Path]]:
        """The written objects by name, and the stale generated files and folders."""
        candidates: list[tuple[SpaceObj, Path]] = []
        stale: list[Path] = []
        held = set(self.sources) | set(self.owned)
        for folder in self._folders():
            path = self.spaces_dir / folder / GENERATED_DIR / SPACE_DIR / "space.yaml"
            body = _space_doc(_read_file(path), self.rel(path))
            if body is not None:  # else: not a Space (reconcile's to manage)
                obj = space_from(Obj("", body, Origin(self.rel(path))), owner="ksgitops")
                if obj.name != folder or obj.type != "unmanaged" or obj.provider not in self.homes or folder in held:
                    stale.append(path)  # reconcile would not write it either
                elif self.homes[obj.provider] is None:
                    candidates.append((obj, path))
                # else: a git provider over another work tree; left alone
            found = self.spaces_dir / folder / GENERATED_DIR / DISCOVERED_DIR
            if found.is_dir() and not found.is_symlink():
                for entry in sorted(os.scandir(found), key=lambda e: e.name):
                    provider = Path(entry.path)
                    if self.homes.get(entry.name, None) != folder or not entry.is_dir(follow_symlinks=False):
                        stale.append(provider)
                        continue
                    for file in sorted(provider.iterdir()):
                        body = _space_doc(_read_file(file), self.rel(file))
                        obj = space_from(Obj("", body or {}, Origin(self.rel(file))), owner="ksgitops")
                        if (body is None or file.suffix != ".yaml" or obj.name != file.stem or obj.type != "unmanaged"
                                or obj.provider != entry.name or obj.name in held):
                            stale.append(file)
                        else:
                            candidates.append((obj, file))
            status = self.spaces_dir / folder / GENERATED_DIR / STATUS_DIR
            if status.is_dir() and not status.is_symlink():
                for file in sorted(status.iterdir()):
                    source = self.sources.get(file.stem) if file.suffix == ".yaml" else None
                    if source is None or source.holder != folder:
                        stale.append(file)
        written: dict[str, tuple[SpaceObj, Path]] = {}
        for obj, path in sorted(candidates, key=lambda c: (c[0].provider, c[0].name)):
            if obj.name in written:
                stale.append(path)  # discovered by two providers: the first by name keeps it
            else:
                written[obj.name] = (obj, path)
        return written, sorted(set(stale))

    def _phase(self, source: SourceSpace) -> str:
        path = self.status_path(source.holder, source.obj.name)
        body = _space_doc(_read_file(path), self.rel(path))
        status = body.get("status") if body else None
        phase = status.get("Phase") if isinstance(status, dict) else None
        return phase if isinstance(phase, str) and phase else source.obj.phase

    def list(self) -> list[SpaceObj]:
        found = [replace(s.obj, phase=self._phase(s)) for s in self.sources.values()]
        found += self.owned.values()
        found += [obj for obj, _ in self.written().values()]
        return sorted(found)

    def stale(self) -> builtins.list[str]:
        return [self.rel(p) for p in self._scan()[1]]

    # -- writing

    def write(self, obj: SpaceObj) -> None:
        """Write the Space object of a discovered space (with its phase)."""
        if obj.name in self.sources or obj.name in self.owned:
            raise KsgitopsError(f"Space {obj.name} exists in the sources; not writing another")
        path = self.written_path(obj.provider, obj.name)
        _write_atomic(path, dump_yaml(space_body(replace(obj, owner="", origin=Origin("")))))
        self.written()[obj.name] = (replace(obj, owner="ksgitops", origin=Origin(self.rel(path))), path)

    def delete(self, name: str) -> None:
        source = self.sources.get(name)
        if source is not None:
            raise KsgitopsError(Problem(source.obj.origin, f"Space {name} is defined in a source file: remove it "
                                        "there (ksgitops never edits source files)"))
        if name in self.owned:
            raise KsgitopsError(f"Space {name} is a mailbox: ksgitops reconcile removes it with its SyncTarget")
        written = self.written().pop(name, None)
        if written is not None:
            self._remove(written[1])

    def set_phase(self, name: str, phase: str) -> None:
        source = self.sources.get(name)
        if source is not None:
            metadata = {"name": name, **({"namespace": source.namespace} if source.namespace else {})}
            body = {"apiVersion": SPACE_API, "kind": "Space", "metadata": metadata, "status": {"Phase": phase}}
            _write_atomic(self.status_path(source.holder, name), dump_yaml(body))
            return
        written = self.written().get(name)
        if written is not None:
            obj, path = written
            _write_atomic(path, dump_yaml(space_body(replace(obj, phase=phase, owner="", origin=Origin("")))))
            self.written()[name] = (replace(obj, phase=phase), path)

    def prune(self) -> builtins.list[str]:
        """Remove the stale generated files; returns their paths."""
        removed = []
        for path in self._scan()[1]:
            removed.append(self.rel(path))
            self._remove(path)
        self._written = None
        return removed

    def _remove(self, path: Path) -> None:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        parent = path.parent
        while parent != self.spaces_dir and self.spaces_dir in parent.parents:
            try:
                parent.rmdir()  # only when empty
            except OSError:
                break
            parent = parent.parent


@dataclass
class Applied:
    """What one pass of the manager did: actions done, failed (with the error) and skipped (a
    previous action for the same space failed)."""

    plan: Plan
    done: list[Action] = field(default_factory=list)
    failed: list[tuple[Action, str]] = field(default_factory=list)
    skipped: list[Action] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed


class SpaceManager:
    """Plans with the pure state machine and applies the plan through the providers and a store.

    `descs` default to each provider's own (name, type, prefix)."""

    def __init__(self, providers: Sequence[Provider], store: SpaceStore,
                 descs: Sequence[ProviderDesc] | None = None) -> None:
        self.providers = {p.name: p for p in providers}
        self.store = store
        self.descs = list(descs) if descs is not None else [describe(p) for p in providers]

    def observe(self) -> dict[str, list[Observed] | None]:
        """Each provider's listing, None for a provider that cannot be reached."""
        observed: dict[str, list[Observed] | None] = {}
        for name, provider in self.providers.items():
            try:
                observed[name] = provider.list()
            except (ProviderError, OSError):
                observed[name] = None
        return observed

    def plan(self) -> Plan:
        return plan(self.store.list(), self.descs, self.observe())

    def apply(self, p: Plan) -> Applied:
        result = Applied(p)
        broken: set[str] = set()
        for action in p.actions:
            if action.space in broken:
                result.skipped.append(action)
                continue
            try:
                self._do(action)
                result.done.append(action)
            except (KsgitopsError, OSError) as e:
                broken.add(action.space)
                result.failed.append((action, str(e)))
        return result

    def reconcile(self) -> Applied:
        return self.apply(self.plan())

    def _do(self, action: Action) -> None:
        provider = self.providers.get(action.provider)
        if action.op in (CREATE_SPACE, DELETE_SPACE) and provider is None:
            raise ProviderError(f"no provider {action.provider} to {action.op} {action.space}")
        if action.op == CREATE_SPACE:
            provider.create(action.space)  # type: ignore[union-attr]
        elif action.op == DELETE_SPACE:
            provider.delete(action.space)  # type: ignore[union-attr]
        elif action.op == DELETE_OBJECT:
            self.store.delete(action.space)
        elif action.op == WRITE_OBJECT:
            self.store.write(action.space_obj())
        elif action.op == SET_PHASE:
            self.store.set_phase(action.space, action.phase)


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
    """The client for space `name`: a GitSpaceClient for a folder, a KubeSpaceClient (with
    `api_client` and `dynamic`) for a kubeconfig context."""
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


__all__ = ["Provider", "GitFolderProvider", "KubeconfigProvider", "GitSpaceClient", "KubeSpaceClient",
           "SpaceManager", "SpaceStore", "MemoryStore", "FolderStore", "RepoSpaceStore", "SourceSpace", "Applied", "SpaceClients", "space_client",
           "SpaceEvent", "ObjectEvent", "ProviderError", "NotSupported", "annotate", "selector_string",
           "providers_from", "describe", "ADDED", "MODIFIED", "DELETED"]
