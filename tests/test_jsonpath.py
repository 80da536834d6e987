"""Tests for ksgitops.core.jsonpath: the replacement-path subset and "definite" set semantics."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksgitops.core.jsonpath import PathError, format_path, parse_path, set_path


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("$.a", ("a",)),
        ("$.a.b.0.c", ("a", "b", "0", "c")),
        ("$.a[0]", ("a", 0)),
        ("$[3]", (3,)),
        ("$['k']", ("k",)),
        ('$["k.with.dots"]', ("k.with.dots",)),
        ("$.metadata.annotations['example.com/zone']", ("metadata", "annotations", "example.com/zone")),
        ("$.spec.template.spec.containers.0.env.0.value",
         ("spec", "template", "spec", "containers", "0", "env", "0", "value")),
        ("$.a[0]['b c'].d[12]", ("a", 0, "b c", "d", 12)),
        (r"$['it\'s']", ("it's",)),
        (r'$["q\"\\"]', ('q"\\',)),
        ("$['']", ("",)),
        ("$.a-b_c/d", ("a-b_c/d",)),
    ],
)
def test_parse_path(path: str, steps: tuple[Any, ...]) -> None:
    assert parse_path(path) == steps


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a.b", "must start with"),
        (".a", "must start with"),
        ("", "must start with"),
        ("$", "whole object"),
        ("$.", "offset 1"),
        ("$..a", "offset 1"),
        ("$.a.", "offset 3"),
        ("$.*", "wildcards"),
        ("$.a[*]", "offset 3"),
        ("$.a[-1]", "offset 3"),
        ("$.a[0", "offset 3"),
        ("$['a]", "offset 1"),
        ("$a", "offset 1"),
    ],
)
def test_parse_path_errors(path: str, message: str) -> None:
    with pytest.raises(PathError, match=message.replace("*", r"\*")):
        parse_path(path)


def _doc() -> dict[str, Any]:
    return {
        "spec": {
            "replicas": 1,
            "containers": [{"name": "c", "env": [{"name": "E", "value": "old"}]}],
            "nothing": None,
            "text": "abc",
        },
        "data": {"0": "zero", "k.with.dots": "v"},
    }


@pytest.mark.parametrize(
    ("path", "value", "check"),
    [
        ("$.spec.replicas", 3, lambda d: d["spec"]["replicas"] == 3),
        ("$.spec.containers.0.env.0.value", "new",
         lambda d: d["spec"]["containers"][0]["env"][0]["value"] == "new"),
        ("$.spec.containers[0].env[0]", {"name": "F"},
         lambda d: d["spec"]["containers"][0]["env"] == [{"name": "F"}]),
        ("$.spec.newkey", [1, 2], lambda d: d["spec"]["newkey"] == [1, 2]),
        ("$.spec.containers.0.image", "nginx",
         lambda d: d["spec"]["containers"][0]["image"] == "nginx"),
        ("$.data.0", "ZERO", lambda d: d["data"]["0"] == "ZERO"),  # numeric segment on a map is a key
        ("$.data.1", "one", lambda d: d["data"]["1"] == "one"),
        ("$.data['k.with.dots']", "w", lambda d: d["data"]["k.with.dots"] == "w"),
        ("$.spec.nothing", {"x": 1}, lambda d: d["spec"]["nothing"] == {"x": 1}),
        ("$.new", None, lambda d: "new" in d and d["new"] is None),
    ],
)
def test_set_path(path: str, value: Any, check: Any) -> None:
    doc = _doc()
    set_path(doc, parse_path(path), value)
    assert check(doc)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("$.missing.x", r"step 1 \(\.missing\): no key 'missing'"),
        ("$.spec.missing.x", r"step 2 \(\.missing\): no key 'missing'"),
        ("$.spec.containers.1.env", "step 3 .*index 1 out of range"),
        ("$.spec.containers.5", "step 3 .*index 5 out of range"),
        ("$.spec.containers.0.env.0.value.x", r"step 7 \(\.x\): cannot step into a string"),
        ("$.spec.containers.name", "'name' is not an index, but the value here is a list"),
        ("$.spec[0]", "list index applied to a map"),
        ("$.spec.nothing.x", "cannot step into null"),
        ("$.spec.replicas.x", "cannot step into a number"),
        ("$.spec.text[0]", "cannot step into a string"),
    ],
)
def test_set_path_errors(path: str, message: str) -> None:
    doc = _doc()
    before = copy.deepcopy(doc)
    with pytest.raises(PathError, match=message):
        set_path(doc, parse_path(path), "v")
    assert doc == before


def test_set_path_error_names_the_path() -> None:
    with pytest.raises(PathError, match=r"^\$\.spec\.missing\.x: step 2"):
        set_path(_doc(), ("spec", "missing", "x"), 1)


def test_set_path_empty_steps() -> None:
    with pytest.raises(PathError, match="whole object"):
        set_path(_doc(), (), 1)


_steps = st.lists(st.one_of(st.integers(min_value=0, max_value=999), st.text(max_size=8)),
                  min_size=1, max_size=6).map(tuple)


@given(_steps)
def test_format_then_parse_round_trips(steps: tuple[Any, ...]) -> None:
    assert parse_path(format_path(steps)) == steps


@pytest.mark.parametrize(
    ("steps", "text"),
    [
        (("a", 0, "b"), "$.a[0].b"),
        (("metadata", "annotations", "x.io/y"), "$.metadata.annotations['x.io/y']"),
        (("*",), "$['*']"),
        (("it's",), r"$['it\'s']"),
    ],
)
def test_format_path(steps: tuple[Any, ...], text: str) -> None:
    assert format_path(steps) == text
