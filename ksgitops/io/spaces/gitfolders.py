"""The git space provider: a space is a folder `spaces/<name>/` of a work tree; its client reads and
writes the folder's objects."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping


from ...core.load.read import Loaded, load, mailbox_space
from ...core.readout.render import render_mailbox
from ...core.load.selectors import matches
from ...core.serialize import deep_copy, dump_yaml
from ...core.load.snapshot import GENERATED_DIR, SourceFile
from ...core.place.spaces import Observed, SpaceObj, space_body
from ...core.place.spacestep import MANAGED_MARKER, is_managed_marker
from ...model import KsgitopsError
from ..fs.tree import WorkTreeSnapshot

from .base import ADDED, ProviderError, SpaceEvent, check_selector, check_space_name, object_key, watch_listing


# ---- git: a space is a folder of a work tree

def read_file_or_none(path: Path) -> bytes | None:
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_bytes()


def _marker(folder: Path) -> bool:
    """ksgitops created the folder: it holds the managed marker `.ksgitops/managed-space.yaml`
    (GitFolderProvider.create), or it is a mailbox (space.yaml: a managed Space with the
    sync-target annotation)."""
    if is_managed_marker(read_file_or_none(folder / MANAGED_MARKER), folder.name):
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
        check_space_name(name)
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
        for kind, _, space in watch_listing(self._listing, [self.root], stop, timeout, self.interval, None, accept):
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
        check_space_name(space)
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
        check_selector(selector)
        found = [b for b in self.objects() if _wanted(b, api_version, kind, namespace, selector)]
        return sorted(found, key=object_key)

    def watch(self, api_version: str | None = None, kind: str | None = None, namespace: str | None = None,
              selector: Mapping[str, Any] | None = None, stop: threading.Event | None = None,
              timeout: float | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """ADDED for every object now there, then the changes the files go through."""
        def listing() -> dict[Any, Any]:
            try:
                return {object_key(b): b for b in self.list(api_version, kind, namespace, selector)}
            except KsgitopsError as e:  # a file being written, or the folder gone: try again later
                raise ProviderError(str(e)) from None
        current = listing()
        for key in sorted(current):
            yield ADDED, current[key]
        prefix = str(self.folder) + os.sep
        for kind_, _, body in watch_listing(listing, [self.folder.parent], stop, timeout, self.interval, current,
                                             lambda path: path.startswith(prefix)):
            yield kind_, body
