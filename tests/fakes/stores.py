"""Test doubles of the space manager's store: Space objects kept in memory, or as files of a folder."""
from __future__ import annotations

from msgspec.structs import replace
from pathlib import Path
from typing import Iterable

import yaml

from ksgitops.core.load.parse import parse_file
from ksgitops.core.serialize import dump_yaml
from ksgitops.core.place.spaces import (WRITE_OBJECT, Action, Observed, Plan, ProviderDesc, SpaceObj, is_space, plan, space_body, space_from)
from ksgitops.model import KsgitopsError, Obj, Origin, Problem

from ksgitops.io.spaces.base import check_space_name


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
        check_space_name(name)
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
