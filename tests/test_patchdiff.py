"""Tests for ksgitops.core.customize.patchdiff: a minimal, deterministic RFC 6902 diff."""
from __future__ import annotations

from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.customize.patchdiff import copy_json, escape_pointer, make_patch


@pytest.mark.parametrize(
    ("base", "final", "patch"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
        ({"a": 1, "b": 2}, {"b": 2}, [{"op": "remove", "path": "/a"}]),
        ({}, {"z": 1, "a": 2},
         [{"op": "add", "path": "/a", "value": 2}, {"op": "add", "path": "/z", "value": 1}]),
        ({"c": 1, "a": 1}, {"b": 1},
         [{"op": "remove", "path": "/a"}, {"op": "add", "path": "/b", "value": 1},
          {"op": "remove", "path": "/c"}]),
        ({"a": {"b": {"c": 1, "d": 2}}}, {"a": {"b": {"c": 1, "d": 3}}},
         [{"op": "replace", "path": "/a/b/d", "value": 3}]),
        ({"a": [1, 2, 3]}, {"a": [1, 5, 3]}, [{"op": "replace", "path": "/a/1", "value": 5}]),
        ({"a": [1, 2]}, {"a": [1, 2, 3]}, [{"op": "replace", "path": "/a", "value": [1, 2, 3]}]),
        ({"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 2}]},
         [{"op": "add", "path": "/a/0/y", "value": 2}]),
        ({"a": {"x": 1}}, {"a": [1]}, [{"op": "replace", "path": "/a", "value": [1]}]),
        ({"a": 1}, {"a": "1"}, [{"op": "replace", "path": "/a", "value": "1"}]),
        ({"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
        ({"a": 1}, {"a": 1.0}, [{"op": "replace", "path": "/a", "value": 1.0}]),
        ({"a": None}, {"a": {}}, [{"op": "replace", "path": "/a", "value": {}}]),
        ({"a/b": 1, "c~d": 1}, {"a/b": 2, "c~d": 2},
         [{"op": "replace", "path": "/a~1b", "value": 2}, {"op": "replace", "path": "/c~0d", "value": 2}]),
        ({"": 1}, {"": 2}, [{"op": "replace", "path": "/", "value": 2}]),
        (1, 2, [{"op": "replace", "path": "", "value": 2}]),
        ([1], {"a": 1}, [{"op": "replace", "path": "", "value": {"a": 1}}]),
    ],
)
def test_make_patch(base: Any, final: Any, patch: list[dict[str, Any]]) -> None:
    assert make_patch(base, final) == patch
    assert _canon(jsonpatch.apply_patch(base, patch)) == _canon(final)


@pytest.mark.parametrize(
    ("token", "escaped"),
    [("plain", "plain"), ("a/b", "a~1b"), ("a~b", "a~0b"), ("~/", "~0~1"), ("~1", "~01")],
)
def test_escape_pointer(token: str, escaped: str) -> None:
    assert escape_pointer(token) == escaped


def test_patch_values_are_copies() -> None:
    final = {"a": {"b": [1]}}
    patch = make_patch({}, final)
    final["a"]["b"].append(2)
    assert patch == [{"op": "add", "path": "/a", "value": {"b": [1]}}]


def test_copy_json_shares_nothing_mutable() -> None:
    value = {"a": [{"b": 1}], "c": "s"}
    out = copy_json(value)
    out["a"][0]["b"] = 2
    assert value == {"a": [{"b": 1}], "c": "s"} and out["a"] is not value["a"]


def _canon(value: Any) -> bytes:
    """Type-exact comparison (Python's == conflates 1, 1.0 and True)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_keys = st.text(alphabet=st.sampled_from(list("ab~/0 ")), max_size=3)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5),
                     st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=3))
_json = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(_keys, kids, max_size=4)),
                     max_leaves=20)


def _mutate_strategy() -> st.SearchStrategy[tuple[Any, Any]]:
    """Pairs that are often close (final derived from base by patching), plus unrelated pairs."""
    unrelated = st.tuples(_json, _json)
    close = _json.flatmap(lambda b: st.tuples(st.just(b), _near(b)))
    return st.one_of(unrelated, close)


def _near(value: Any) -> st.SearchStrategy[Any]:
    """A strategy for values resembling `value`: same shape with some parts redrawn."""
    if isinstance(value, dict) and value:
        return st.fixed_dictionaries({k: st.one_of(st.just(v), _near(v)) for k, v in value.items()},
                                     optional={"new": _json})
    if isinstance(value, list) and value:
        return st.tuples(*[st.one_of(st.just(v), _near(v)) for v in value]).map(list)
    return _json


@settings(max_examples=300)
@given(_mutate_strategy())
def test_patch_applies_to_final(pair: tuple[Any, Any]) -> None:
    base, final = pair
    before = _canon(base)
    patch = make_patch(base, final)
    assert {op["op"] for op in patch} <= {"add", "remove", "replace"}
    assert _canon(jsonpatch.apply_patch(base, patch)) == _canon(final)
    assert _canon(base) == before


@given(_json)
def test_no_patch_for_equal_values(value: Any) -> None:
    assert make_patch(value, value) == []
    assert make_patch(value, copy_json(value)) == []


def test_negative_zero_is_a_change() -> None:
    assert make_patch({"x": 0.0}, {"x": -0.0}) == [{"op": "replace", "path": "/x", "value": -0.0}]
