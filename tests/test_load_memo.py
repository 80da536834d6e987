"""Loading a space again with the same cache: each file's objects, with their identity checked,
are taken from the memo (a fleet's inventory is thousands of objects), and the result is what a
fresh read gives, problems included, in the same order."""
from __future__ import annotations

from pathlib import Path

import pytest

from ksgitops.core.load import read
from ksgitops.io.fs.tree import WorkTreeSnapshot

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: ns\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / "spaces" / "wds" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _shown(loaded: read.Loaded) -> tuple[list[str], list[str]]:
    return [str(o.ref) + "@" + str(o.origin) for objs in loaded.spaces.values() for o in objs], \
        [str(p) for p in loaded.problems]


def test_a_space_read_again_takes_its_checked_objects_from_the_memo(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, {"a.yaml": CM.format("b") + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n"
                      + "---\n" + CM.format("a"),
                      "b.yaml": CM.format("a") + "---\n" + CM.format("c") + "---\n"
                      + "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ns}\n"})
    cache: dict = {}  # type: ignore[type-arg]
    first = _shown(read.load(WorkTreeSnapshot(tmp_path), cache))
    assert first == (["ConfigMap ns/a@spaces/wds/a.yaml:11", "ConfigMap ns/b@spaces/wds/a.yaml:1",
                      "ConfigMap ns/c@spaces/wds/b.yaml:7"],
                     ["spaces/wds/a.yaml:7: missing metadata.name",  # in the order of the files' documents
                      "spaces/wds/b.yaml:1: ConfigMap ns/a is defined twice: here and at spaces/wds/a.yaml:11",
                      "spaces/wds/b.yaml:13: missing metadata.name"])
    checked: list[object] = []
    has_identity = read._has_identity
    monkeypatch.setattr(read, "_has_identity", lambda obj, problems: checked.append(obj) or has_identity(obj, problems))
    assert _shown(read.load(WorkTreeSnapshot(tmp_path), cache)) == first
    assert checked == []  # nothing checked again
    _write(tmp_path, {"b.yaml": CM.format("d")})  # an edit: that file's objects are checked anew
    again = _shown(read.load(WorkTreeSnapshot(tmp_path), cache))
    assert len(checked) == 1 and again[0][-1] == "ConfigMap ns/d@spaces/wds/b.yaml:1"
    assert again == _shown(read.load(WorkTreeSnapshot(tmp_path), {}))  # as a fresh read
