"""customize/patchapply.patched is jsonpatch without the copy: wherever it answers, its result is
jsonpatch's on a copy (keys in the same order) and the document is left as it was; where it does
not (None), jsonpatch says; and tree_shaped tells the documents it may be asked about."""
from __future__ import annotations

import random
from typing import Any

import jsonpatch
import jsonpointer
import orjson
import pytest
import yaml

from ksgitops.core.customize.patchapply import patched, tree_shaped
from ksgitops.core.serialize import load_yaml, plain_copy

KEYS = ["a", "b", "c", "0", "1", "a/b", "m~n", "", "-"]


def _value(rng: random.Random, depth: int) -> Any:
    choice = rng.randrange(7 if depth < 3 else 4)
    if choice == 0:
        return rng.choice(["x", "", "~1", "%(region)"])
    if choice == 1:
        return rng.choice([0, 1, -2, 2.5])
    if choice == 2:
        return rng.choice([True, False])
    if choice == 3:
        return None
    if choice in (4, 5):
        return {rng.choice(KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _paths(doc: Any, prefix: str = "") -> list[str]:
    """Every path of `doc`, escaped as a JSON pointer."""
    found = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, f"{prefix}/{i}")
    return found


def _path(rng: random.Random, doc: Any) -> Any:
    path = rng.choice(_paths(doc))
    choice = rng.randrange(10)
    if choice == 0:
        return path + "/" + rng.choice(["-", "00", "01", "9", "new", "~", "~2", "1\n", "0 "])
    if choice == 1:
        return rng.choice(["", "a", "/", 3, None])
    if choice == 2:
        return path.rsplit("/", 1)[0] + "/" + rng.choice(KEYS + ["5", "-"])
    return path


def _op(rng: random.Random, doc: Any) -> Any:
    choice = rng.randrange(12)
    if choice == 0:
        return rng.choice(["add", {"op": "add"}, {"path": "/a", "value": 1}, {"op": 3, "path": "/a"}])
    op: dict[str, Any] = {"op": rng.choice(["add", "add", "remove", "replace", "replace", "test", "move", "copy"]),
                          "path": _path(rng, doc)}
    if rng.random() < 0.95:
        op["value"] = _value(rng, 1)
    if op["op"] in ("move", "copy"):
        op["from"] = _path(rng, doc)
    return op


def _jsonpatch(doc: Any, ops: Any) -> tuple[bool, Any]:
    try:
        return True, jsonpatch.apply_patch(plain_copy(doc), ops, in_place=True)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError, KeyError, IndexError,
            AttributeError, ValueError):
        return False, None


def test_patched_answers_as_jsonpatch_and_leaves_the_document_alone() -> None:
    rng = random.Random(17)
    answered = 0
    for _ in range(6000):
        doc = {rng.choice(KEYS): _value(rng, 1) for _ in range(rng.randrange(1, 5))}
        ops = [_op(rng, doc) for _ in range(rng.randrange(0, 4))] if rng.random() < 0.97 else {"op": "add"}
        before = orjson.dumps(doc)
        fast = patched(doc, ops)
        assert orjson.dumps(doc) == before, ops  # nothing changed in place
        if fast is None:
            continue
        answered += 1
        ok, slow = _jsonpatch(doc, ops)
        assert ok, ops  # an answer only where jsonpatch answers
        assert orjson.dumps(fast) == orjson.dumps(slow), ops  # equal, keys in the same order
    assert answered > 2000


def test_what_a_patch_leaves_alone_is_shared() -> None:
    doc = {"metadata": {"labels": {"a": "1"}}, "spec": {"template": {"x": [1, 2]}, "replicas": 2}}
    out = patched(doc, [{"op": "replace", "path": "/spec/replicas", "value": 3},
                        {"op": "add", "path": "/spec/template/x/-", "value": 3}])
    assert out == {"metadata": {"labels": {"a": "1"}}, "spec": {"template": {"x": [1, 2, 3]}, "replicas": 3}}
    assert out["metadata"] is doc["metadata"] and doc["spec"]["template"]["x"] == [1, 2]


@pytest.mark.parametrize("text, shaped", [
    ("a: {b: [1, 2.5, x, null, true]}\n", True),
    ("a: &e [1]\nb: *e\n", False),
    ("a: &e {x: 1}\nb: [*e]\n", False),
    ("a: !!binary aGk=\n", False),
    ("a: [[], {}, []]\n", True),
])
def test_tree_shaped(text: str, shaped: bool) -> None:
    doc = yaml.safe_load(text)
    assert tree_shaped(doc) is shaped


def test_an_alias_changed_through_one_place_changes_in_both_with_jsonpatch() -> None:
    """Why tree_shaped matters: on a copy that keeps the alias, jsonpatch changes both places."""
    doc = load_yaml(b"a: &e {x: 1}\nb: *e\n")
    ops = [{"op": "replace", "path": "/a/x", "value": 2}]
    assert jsonpatch.apply_patch(plain_copy(doc), ops, in_place=True) == {"a": {"x": 2}, "b": {"x": 2}}
    assert not tree_shaped(doc)
