"""Where the space manager keeps Space objects: `SpaceStore`, and the repository's store (Space
objects of source spaces, their phases and discovered spaces under `.ksgitops/`)."""
from __future__ import annotations

import builtins
import os
import shutil
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from msgspec import Struct
from msgspec.structs import replace

from ...core.load.parse import parse_file
from ...core.serialize import dump_yaml
from ...core.load.snapshot import GENERATED_DIR
from ...core.place.spaces import SPACE_API, SpaceObj, space_body, space_from
from ...core.place.spacestep import SPACE_DIR
from ...model import KsgitopsError, Obj, Origin, Problem
from ..fs.paths import write_file

from .base import ProviderError, check_space_name
from .gitfolders import read_file_or_none

# ---- the space manager


class SpaceStore(Protocol):
    """Where Space objects live for the manager."""

    def list(self) -> list[SpaceObj]: ...

    def write(self, obj: SpaceObj) -> None: ...

    def delete(self, name: str) -> None: ...

    def set_phase(self, name: str, phase: str) -> None: ...


STATUS_DIR = "space-status"  # spaces/<holder>/.ksgitops/space-status/<name>.yaml: a source Space's phase
DISCOVERED_DIR = "discovered"  # spaces/<holder>/.ksgitops/discovered/<provider>/<name>.yaml


class SourceSpace(Struct, frozen=True):
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
    if read_file_or_none(path) == data:
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
        check_space_name(name)
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

    def _scan_discovered(self, folder: str, held: set[str], candidates: list[tuple[SpaceObj, Path]],
                         stale: list[Path]) -> None:
        """The Space objects a provider discovered, written in `folder` (its home), and what is stale there."""
        found = self.spaces_dir / folder / GENERATED_DIR / DISCOVERED_DIR
        if not found.is_dir() or found.is_symlink():
            return
        for entry in sorted(os.scandir(found), key=lambda e: e.name):
            provider = Path(entry.path)
            if self.homes.get(entry.name, None) != folder or not entry.is_dir(follow_symlinks=False):
                stale.append(provider)
                continue
            for file in sorted(provider.iterdir()):
                body = _space_doc(read_file_or_none(file), self.rel(file))
                obj = space_from(Obj("", body or {}, Origin(self.rel(file))), owner="ksgitops")
                if (body is None or file.suffix != ".yaml" or obj.name != file.stem or obj.type != "unmanaged"
                        or obj.provider != entry.name or obj.name in held):
                    stale.append(file)
                else:
                    candidates.append((obj, file))

    def _scan(self) -> tuple[dict[str, tuple[SpaceObj, Path]], list[Path]]:
        """The written objects by name, and the stale generated files and folders."""
        candidates: list[tuple[SpaceObj, Path]] = []
        stale: list[Path] = []
        held = set(self.sources) | set(self.owned)
        for folder in self._folders():
            path = self.spaces_dir / folder / GENERATED_DIR / SPACE_DIR / "space.yaml"
            body = _space_doc(read_file_or_none(path), self.rel(path))
            if body is not None:  # else: not a Space (reconcile's to manage)
                obj = space_from(Obj("", body, Origin(self.rel(path))), owner="ksgitops")
                if obj.name != folder or obj.type != "unmanaged" or obj.provider not in self.homes or folder in held:
                    stale.append(path)  # reconcile would not write it either
                elif self.homes[obj.provider] is None:
                    candidates.append((obj, path))
                # else: a git provider over another work tree; left alone
            self._scan_discovered(folder, held, candidates, stale)
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
        body = _space_doc(read_file_or_none(path), self.rel(path))
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
