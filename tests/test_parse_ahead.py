"""Parsing ahead (core/load/read.py `ahead`, app/sources.py `parse_ahead`): the files a run must
parse, parsed in forked children and stored before the pipeline reads them, load exactly as one
process reading them in order."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.app import sources, usecases as app
from ksgitops.core import pipeline
from ksgitops.core.load import read
from ksgitops.core.load.snapshot import SourceFile
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.io.git.cache import TouchedDict
from ksgitops.model import KsgitopsError
from test_spread import three_workers  # noqa: F401 - a fixture

BAD_ONCE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twice\n  name: twice\n"  # a duplicate key


def _cm(name: str, extra: str = "") -> str:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: ns\ndata:\n  k: v{extra}\n"


def _files() -> dict[str, str]:
    """Every way a file's parse may differ: several documents, broken YAML, a duplicate key, the
    same bytes at two paths (one parse, anchored on one), the same bytes as JSON and YAML."""
    files = {f"spaces/wds/cm-{i:02d}.yaml": _cm(f"cm-{i:02d}") for i in range(70)}
    files["spaces/wds/many.yaml"] = "---\n".join(_cm(f"doc-{i}") for i in range(5))
    files["spaces/wds/broken.yaml"] = "apiVersion: v1\nkind: [\n"
    files["spaces/wds/dup-a.yaml"] = BAD_ONCE
    files["spaces/other/dup-b.yaml"] = BAD_ONCE
    files["spaces/other/n.json"] = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": {"n": 0.1e1}}'
    files["spaces/third/n.yaml"] = files["spaces/other/n.json"]
    return files


def _seen(loaded: read.Loaded) -> tuple[Any, ...]:
    return ({s: [(o.body, str(o.origin), o.key) for o in objs] for s, objs in loaded.spaces.items()},
            [str(p) for p in loaded.problems], loaded.digests, sorted(loaded.mailboxes), loaded.skipped)


def test_a_load_whose_files_were_parsed_ahead_in_any_order_reads_the_same(tree: Callable[[dict[str, str]], Path]) -> None:
    root = tree(_files())
    alone = _seen(read.load(WorkTreeSnapshot(root), {}))
    asked: list[list[str]] = []

    def backwards(cache: read.ParseCache, files: list[tuple[str, Any]]) -> None:
        asked.append([source.path for _, source in files])
        before = dict(cache)
        made = [read.parsed_entries(space, source, cache) for space, source in reversed(files)]
        assert cache == before  # an entry is returned, never stored
        for added, _ in made:
            cache.update(added)
    cache: dict[Any, Any] = {}
    assert _seen(read.load(WorkTreeSnapshot(root), cache, ahead=backwards)) == alone
    assert len(asked[0]) == len(_files()) - 1 and "spaces/wds/broken.yaml" in asked[0]  # a content once
    assert "spaces/other/dup-b.yaml" in asked[0] and "spaces/wds/dup-a.yaml" not in asked[0]  # the first
    assert "spaces/other/n.json" in asked[0] and "spaces/third/n.yaml" in asked[0]
    assert any("duplicate key" in p and "dup-b" in p for p in alone[1]) and any("dup-a" in p for p in alone[1])
    assert _seen(read.load(WorkTreeSnapshot(root), cache, ahead=backwards)) == alone
    assert asked[1] == []  # a warm cache: nothing to parse ahead


def test_a_run_parses_ahead_in_forked_children_and_computes_what_one_process_does(
        example: Path, monkeypatch, three_workers) -> None:  # noqa: F811 - the fixture
    for i in range(3 * sources.AHEAD_LEAST):
        (example / "spaces" / "wmw-c" / f"ahead-{i:03d}.yaml").write_text(_cm(f"ahead-{i:03d}", f"\n  i: '{i}'"))
    whole = pipeline.reconcile(WorkTreeSnapshot(example), WorkTreeSnapshot(example), {})
    made = read.parsed_entries

    def marked(space: str, source: Any, cache: read.ParseCache) -> tuple[dict[Any, Any], list[Any]]:
        added, used = made(space, source, cache)
        return {**added, ("parsed-by", source.path): os.getpid()}, used
    monkeypatch.setattr(read, "parsed_entries", marked)
    cache: dict[Any, Any] = {}
    result = app.compute(app.open_source(example, app.WORKTREE), cache)
    by_pid: dict[str, int] = {key[1]: pid for key, pid in cache.items() if isinstance(key, tuple) and key[0] == "parsed-by"}
    assert len(by_pid) >= 3 * sources.AHEAD_LEAST
    assert os.getpid() in by_pid.values() and len(set(by_pid.values())) > 1  # children parsed their share
    assert result.generated == whole.generated
    assert [str(p) for p in result.problems] == [str(p) for p in whole.problems]


def _forking(monkeypatch) -> None:
    monkeypatch.setattr(sources, "AHEAD_LEAST", 1)


def test_what_a_child_read_counts_as_used_as_if_this_process_had_read_it(
        tree: Callable[[dict[str, str]], Path], monkeypatch, three_workers) -> None:  # noqa: F811
    """A persistent cache keeps what a run used (io/git/cache.py): the reading of a multi-document
    file before its edit, which the edit's parse starts from, is used whichever process parsed it."""
    _forking(monkeypatch)
    files = {f"spaces/wds/many-{i}.yaml": "---\n".join(_cm(f"d{i}-{j}") for j in range(4)) for i in range(6)}
    root = tree(files)
    warm: dict[Any, Any] = {}
    read.load(WorkTreeSnapshot(root), warm)
    for i in range(6):
        (root / f"spaces/wds/many-{i}.yaml").write_text("---\n".join(_cm(f"d{i}-{j}", "x" if j == 2 else "") for j in range(4)))
    used = []
    for ahead in (None, sources.parse_ahead):
        cache = TouchedDict(dict(warm))
        loaded = read.load(WorkTreeSnapshot(root), cache, ahead=ahead)
        used.append((set(cache.used()), _seen(loaded)))
    assert used[0] == used[1]
    assert any(key in used[0][0] for key in warm if isinstance(key, str))  # the earlier readings, used


class _Failing:
    """A snapshot whose files named in `failing` cannot be read (changed while being read)."""

    def __init__(self, inner: WorkTreeSnapshot, failing: set[str]) -> None:
        self.inner, self.failing = inner, failing

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def space_files(self, space: str) -> list[SourceFile]:
        return [SourceFile(f.path, f.key, self._reader(f)) for f in self.inner.space_files(space)]

    def _reader(self, source: SourceFile) -> Callable[[], bytes]:
        def read_it() -> bytes:
            if source.path in self.failing:
                raise KsgitopsError(f"{source.path}: changed while ksgitops was reading the sources; run again")
            return source.read()
        return read_it


def test_a_file_that_fails_to_read_fails_the_run_in_the_order_it_would_alone(
        tree: Callable[[dict[str, str]], Path], monkeypatch, three_workers) -> None:  # noqa: F811
    _forking(monkeypatch)
    root = tree(_files())
    failing = {"spaces/wds/cm-03.yaml", "spaces/wds/cm-66.yaml"}
    for _ in range(4):
        with pytest.raises(KsgitopsError) as alone:
            read.load(_Failing(WorkTreeSnapshot(root), failing), {})
        with pytest.raises(KsgitopsError) as ahead:
            read.load(_Failing(WorkTreeSnapshot(root), failing), {}, ahead=sources.parse_ahead)
        assert str(ahead.value) == str(alone.value) and "cm-03" in str(alone.value)
