"""serialize.plain_copy is copy.deepcopy for parsed YAML and JSON: equal values, the same sharing
(a node an alias repeats stays one node), and nothing orjson would refuse is refused."""
from __future__ import annotations

import copy
import math
import random
from typing import Any

import jsonpatch

from ksgitops.core.serialize import load_yaml, plain_copy


def shape(value: Any, seen: dict[int, int] | None = None) -> Any:
    """The value with each container's identity numbered in order of first sight."""
    seen = {} if seen is None else seen
    if isinstance(value, (dict, list)):
        if id(value) in seen:
            return ("ref", seen[id(value)])
        seen[id(value)] = len(seen)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        return (type(value).__name__, [(k, shape(v, seen)) for k, v in items])
    return ("atom", type(value).__name__, repr(value))


def random_value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(9 if depth < 4 else 5)
    atoms = ["s", "", 0, -1, 2**70, 1.5, math.nan, math.inf, True, None]
    if pick < 5:
        return rng.choice(atoms)
    if pick < 7:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["a", "b", 1, 2**65, None, True, ("t", 1)]
    return {rng.choice(keys): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_random_documents_copy_as_deepcopy_does() -> None:
    rng = random.Random(5)
    for _ in range(3000):
        doc = random_value(rng)
        if isinstance(doc, dict) and rng.random() < 0.5 and doc:  # an alias: one node twice
            doc["again"] = next(iter(doc.values()))
        ours, theirs = plain_copy(doc), copy.deepcopy(doc)
        assert shape(ours) == shape(theirs)


def test_an_alias_stays_shared_so_a_patch_lands_as_it_did() -> None:
    text = b"a: &x {k: [1, 2]}\nb: *x\nc: {s: !!set {p: null}}\n"
    doc = load_yaml(text)  # how status reads a mailbox's object back (aliases and all)
    patch = [{"op": "replace", "path": "/a/k/0", "value": 9}]
    ours = jsonpatch.apply_patch(plain_copy(doc), patch, in_place=True)
    assert ours == jsonpatch.apply_patch(doc, patch) and ours["b"]["k"][0] == 9
    assert doc["a"]["k"][0] == 1  # the original is untouched
    assert shape(plain_copy(doc)) == shape(copy.deepcopy(doc))


def test_status_reads_a_patched_object_whatever_its_keys_and_numbers(tmp_path) -> None:
    """A hand-edited base copy with a key or a number JSON has no room for still gets its patch
    applied and judged (orjson would refuse both)."""
    import shutil

    from conftest import EXAMPLE
    from ksgitops.app import usecases as app
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    patched = sorted((repo / "spaces" / "imw1-mb-florin" / "patches").rglob("*.json"))
    assert patched  # the example customizes objects for florin
    rel = patched[0].relative_to(repo / "spaces" / "imw1-mb-florin" / "patches").with_suffix(".yaml")
    base = repo / "spaces" / "imw1-mb-florin" / "objects" / rel
    base.write_text(base.read_text() + "1: an int key\nbig: 99999999999999999999999\n")
    outcome = app.status_worktree(repo)
    assert outcome.output.combined  # summarized, no internal error
