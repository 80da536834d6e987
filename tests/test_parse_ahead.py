"""Parsing ahead (core/load/read.py `ahead`, app/sources.py `parse_ahead`): the files a run must
parse, parsed in forked children and stored before the pipeline reads them, load exactly as one
process reading them in order."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from ksgitops.app import sources, usecases as app
from ksgitops.core import pipeline
from ksgitops.core.load import read
from ksgitops.io.fs.tree import WorkTreeSnapshot
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
        for entries in made:
            cache.update(entries)
    cache: dict[Any, Any] = {}
    assert _seen(read.load(WorkTreeSnapshot(root), cache, ahead=backwards)) == alone
    assert len(asked[0]) == len(_files()) and "spaces/wds/broken.yaml" in asked[0]
    assert any("duplicate key" in p and "dup-b" in p for p in alone[1]) and any("dup-a" in p for p in alone[1])
    assert _seen(read.load(WorkTreeSnapshot(root), cache, ahead=backwards)) == alone
    assert asked[1] == []  # a warm cache: nothing to parse ahead


def test_a_run_parses_ahead_in_forked_children_and_computes_what_one_process_does(
        example: Path, monkeypatch, three_workers) -> None:  # noqa: F811 - the fixture
    for i in range(3 * sources.AHEAD_LEAST):
        (example / "spaces" / "wmw-c" / f"ahead-{i:03d}.yaml").write_text(_cm(f"ahead-{i:03d}", f"\n  i: '{i}'"))
    whole = pipeline.reconcile(WorkTreeSnapshot(example), WorkTreeSnapshot(example), {})
    by_pid: dict[str, int] = {}
    made = read.parsed_entries

    def marked(space: str, source: Any, cache: read.ParseCache) -> dict[Any, Any]:
        return {**made(space, source, cache), ("parsed-by", source.path): os.getpid()}
    monkeypatch.setattr(read, "parsed_entries", marked)
    cache: dict[Any, Any] = {}
    result = app.compute(app.open_source(example, app.WORKTREE), cache)
    by_pid = {key[1]: pid for key, pid in cache.items() if isinstance(key, tuple) and key[0] == "parsed-by"}
    assert len(by_pid) >= 3 * sources.AHEAD_LEAST
    assert os.getpid() in by_pid.values() and len(set(by_pid.values())) > 1  # children parsed their share
    assert result.generated == whole.generated
    assert [str(p) for p in result.problems] == [str(p) for p in whole.problems]
