"""Customizer replacement paths: KubeStellar's grammar (v0.14.2 pkg/jsonpath/parser.go, lexer.go)
and replacement at every match with the "definite" rule (pkg/jsonpath/eval.go `Apply`, called with
definite=true by pkg/customize/customize.go)."""
from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksgitops.core.customize.jsonpath import (Choice, Every, Name, PathError, Recurse, Slice, format_path, parse_path, replace_all)


def idx(i: int) -> Slice:
    return Slice(i, i + 1)


@pytest.mark.parametrize(
    ("path", "parsed"),
    [
        ("$.a", (Name("a"),)),
        # `.N` is an index (parser.go: a number after `.` is a one-element range)
        ("$.a.b.0.c", (Name("a"), Name("b"), idx(0), Name("c"))),
        ("$.a[0]", (Name("a"), idx(0))),
        ("$[3]", (idx(3),)),
        ("$['k']", (Name("k"),)),
        ('$["k.with.dots"]', (Name("k.with.dots"),)),
        ("$.metadata.annotations['example.com/zone']",
         (Name("metadata"), Name("annotations"), Name("example.com/zone"))),
        ("$.a[0]['b c'].d[12]", (Name("a"), idx(0), Name("b c"), Name("d"), idx(12))),
        (r"$['it\'s']", (Name("it's"),)),
        (r'$["q\"\\"]', (Name('q"\\'),)),
        (r"$['\x41\u0042\u{43}\n\t\0']", (Name("ABC\n\t\0"),)),  # JavaScript string escapes
        (r"$['\q']", (Name("q"),)),  # an unknown escape is the character itself, as in JavaScript
        ("$['']", (Name(""),)),
        ("$.a-b_c/d", (Name("a-b_c/d"),)),  # wider than KubeStellar's identifiers: an extension
        # every child, lists of names or indices, slices
        ("$.*", (Every(),)),
        ("$.a[*].b", (Name("a"), Every(), Name("b"))),
        ("$['a','b']", (Choice((Name("a"), Name("b"))),)),
        ("$[\"a\",'b',\"c\"]", (Choice((Name("a"), Name("b"), Name("c"))),)),
        ("$.a[0,2]", (Name("a"), Choice((idx(0), idx(2))))),
        ("$.a[1:3]", (Name("a"), Slice(1, 3))),
        ("$.a[:2]", (Name("a"), Slice(0, 2))),
        ("$.a[1:]", (Name("a"), Slice(1, None))),
        ("$.a[::2]", (Name("a"), Slice(0, None, 2))),
        ("$.a[1:7:3]", (Name("a"), Slice(1, 7, 3))),
        ("$.a[:]", (Name("a"), Slice(0, None))),
        # recursion: KubeStellar's `$...name`, `$..[...]`, `$..*`, and the common `$..name`
        ("$...image", (Recurse(), Name("image"))),
        ("$..['image']", (Recurse(), Name("image"))),
        ("$..*", (Recurse(), Every())),
        ("$..image", (Recurse(), Name("image"))),
        ("$.spec..[0]", (Name("spec"), Recurse(), idx(0))),
    ],
)
def test_parse_path(path: str, parsed: tuple[Any, ...]) -> None:
    assert parse_path(path) == parsed


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("a.b", "must start with"),
        (".a", "must start with"),
        ("", "must start with"),
        ("$", "whole object"),
        ("$.", "offset 2"),
        ("$..", "offset 3: expected a selector after '..'"),
        ("$.a.", "offset 4"),
        ("$.a[-1]", "offset 4"),  # KubeStellar's lexer has no negative numbers
        ("$.a[0", "offset 5"),
        ("$.a[0x1]", "offset 5"),
        ("$['a]", "offset 5: expected a closing '"),
        ("$['a','b'", "offset 9"),
        ("$['a',0]", "offset 6: expected a quoted name"),
        ("$[0,'a']", "offset 4: expected an index"),
        ("$.a[::0]", "positive step"),  # KubeStellar would loop forever
        ("$.a[*", "offset 5"),
        ("$.a[]", "offset 4"),
        ("$a", "offset 1"),
        ("$.a b", "offset 3"),
        ("$.a*", "offset 3"),
        (r"$['\1']", "octal"),
        (r"$['\x4']", "hexadecimal"),
        (r"$['\u{110000}']", "code point"),
    ],
)
def test_parse_path_errors(path: str, message: str) -> None:
    with pytest.raises(PathError, match=message.replace("*", r"\*").replace("$", r"\$")):
        parse_path(path)


def _doc() -> dict[str, Any]:
    return {
        "spec": {
            "replicas": 1,
            "containers": [{"name": "a", "image": "x:1", "env": [{"name": "E", "value": "old"}]},
                           {"name": "b", "image": "y:1"},
                           {"name": "c", "image": "z:1", "env": []}],
            "nothing": None,
            "text": "abc",
        },
        "data": {"0": "zero", "k.with.dots": "v"},
    }


def _apply(path: str, value: Any) -> tuple[int, dict[str, Any]]:
    doc = _doc()
    count = replace_all(doc, parse_path(path), value)
    return count, doc


def _images(doc: dict[str, Any]) -> list[Any]:
    return [c.get("image") for c in doc["spec"]["containers"]]


@pytest.mark.parametrize(
    ("path", "value", "count", "check"),
    [
        ("$.spec.replicas", 3, 1, lambda d: d["spec"]["replicas"] == 3),
        ("$.spec.containers.0.env.0.value", "new", 1,
         lambda d: d["spec"]["containers"][0]["env"][0]["value"] == "new"),
        ("$.spec.containers[0].env[0]", {"name": "F"}, 1,
         lambda d: d["spec"]["containers"][0]["env"] == [{"name": "F"}]),
        # definite paths: the last step may add a map key
        ("$.spec.newkey", [1, 2], 1, lambda d: d["spec"]["newkey"] == [1, 2]),
        ("$.spec.containers.1.env", [], 1, lambda d: d["spec"]["containers"][1]["env"] == []),
        ("$.spec['a','b']", 7, 2, lambda d: d["spec"]["a"] == 7 and d["spec"]["b"] == 7),
        ("$.data['0']", "ZERO", 1, lambda d: d["data"]["0"] == "ZERO"),
        ("$.data['k.with.dots']", "w", 1, lambda d: d["data"]["k.with.dots"] == "w"),
        ("$.spec.nothing", {"x": 1}, 1, lambda d: d["spec"]["nothing"] == {"x": 1}),
        ("$.new", None, 1, lambda d: "new" in d and d["new"] is None),
        # every match
        ("$.spec.containers[*].image", "i", 3, lambda d: _images(d) == ["i", "i", "i"]),
        ("$.spec.containers.*.image", "i", 3, lambda d: _images(d) == ["i", "i", "i"]),
        ("$.spec.containers[0,2].image", "i", 2, lambda d: _images(d) == ["i", "y:1", "i"]),
        ("$.spec.containers[1:].image", "i", 2, lambda d: _images(d) == ["x:1", "i", "i"]),
        ("$.spec.containers[::2].image", "i", 2, lambda d: _images(d) == ["i", "y:1", "i"]),
        ("$.spec.containers[0:9].image", "i", 3, lambda d: _images(d) == ["i", "i", "i"]),
        ("$..image", "i", 3, lambda d: _images(d) == ["i", "i", "i"]),
        ("$...name", "n", 4, lambda d: [c["name"] for c in d["spec"]["containers"]] == ["n", "n", "n"]
         and d["spec"]["containers"][0]["env"][0]["name"] == "n"),
        # a list of single indices stays definite (eval.go: SelectorList passes `definite` on)
        ("$.spec.containers[0,1].ports", [], 2,
         lambda d: [c.get("ports") for c in d["spec"]["containers"]] == [[], [], None]),
        # non-definite paths (after *, .., or a slice of more than one index) add no key
        ("$.spec.containers[*].env", [], 2, lambda d: "env" not in d["spec"]["containers"][1]),
        ("$.spec.containers[0:2].ports", [], 0, lambda d: d == _doc()),
        ("$.spec.containers[1:2].ports", [], 1, lambda d: d["spec"]["containers"][1]["ports"] == []),
        ("$..ports", [], 0, lambda d: d == _doc()),
        ("$.spec.containers[*]", {}, 3, lambda d: d["spec"]["containers"] == [{}, {}, {}]),
    ],
)
def test_replace_all(path: str, value: Any, count: int, check: Any) -> None:
    got, doc = _apply(path, value)
    assert got == count
    assert check(doc)


@pytest.mark.parametrize(
    "path",
    [
        "$.missing.x",  # a missing key before the last step (KubeStellar would add missing: null)
        "$.spec.missing.x",
        "$.spec.containers.5",  # an index beyond the end
        "$.spec.containers.5.image",
        "$.spec.containers.0.env.0.value.x",  # into a string
        "$.spec.containers.name",  # a name applied to a list
        "$.spec[0]",  # an index applied to a map
        "$.data.0",  # `.0` is an index, and data is a map: use $.data['0']
        "$.spec.nothing.x",  # into null
        "$.spec.replicas.x",
        "$.spec.text[0]",
        "$.spec.containers[7:9]",
        "$..nowhere",
    ],
)
def test_replace_all_selects_nothing(path: str) -> None:
    count, doc = _apply(path, "v")
    assert count == 0
    assert doc == _doc()


def test_replacements_are_copies() -> None:
    doc = _doc()
    value = {"list": [1]}
    assert replace_all(doc, parse_path("$.spec.containers[*].extra"), value) == 0
    assert replace_all(doc, parse_path("$.spec.containers[*].image"), value) == 3
    doc["spec"]["containers"][0]["image"]["list"].append(2)
    assert doc["spec"]["containers"][1]["image"] == {"list": [1]} and value == {"list": [1]}


def test_recursion_selects_in_the_object_as_it_was() -> None:
    """A value put by `..` is not searched again (KubeStellar would recurse into it forever)."""
    doc = {"a": {"a": 1}, "b": [{"a": 2}]}
    assert replace_all(doc, parse_path("$..a"), {"a": 0}) == 3
    assert doc == {"a": {"a": 0}, "b": [{"a": {"a": 0}}]}


def test_recursion_over_deep_nesting() -> None:
    doc: dict[str, Any] = {}
    node = doc
    for _ in range(2000):
        node["n"] = {}
        node = node["n"]
    node["leaf"] = 1
    assert replace_all(doc, parse_path("$..leaf"), 2) == 1 and node["leaf"] == 2


def test_replace_all_refuses_an_empty_path() -> None:
    with pytest.raises(PathError, match="whole object"):
        replace_all(_doc(), (), 1)


_names = st.text(max_size=6).map(Name)
_indices = st.integers(min_value=0, max_value=99).map(idx)
_slices = st.builds(lambda a, b, c: Slice(a, b, c), st.integers(0, 9), st.one_of(st.none(), st.integers(0, 9)),
                    st.integers(1, 4))
_choices = st.one_of(st.lists(_names, min_size=2, max_size=3), st.lists(_indices, min_size=2, max_size=3)
                     ).map(lambda items: Choice(tuple(items)))
_selectors = st.one_of(_names, _indices, _slices, _choices, st.just(Every()))
_steps = st.lists(st.tuples(st.booleans(), _selectors), min_size=1, max_size=5).map(
    lambda pairs: tuple(s for recurse, sel in pairs for s in ((Recurse(), sel) if recurse else (sel,))))


@given(_steps)
def test_format_then_parse_round_trips(path: tuple[Any, ...]) -> None:
    assert parse_path(format_path(path)) == path


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ((Name("a"), idx(0), Name("b")), "$.a[0].b"),
        ((Name("metadata"), Name("annotations"), Name("x.io/y")), "$.metadata.annotations['x.io/y']"),
        ((Name("*"),), "$['*']"),
        ((Name("0"),), "$['0']"),
        ((Name("it's"),), r"$['it\'s']"),
        ((Recurse(), Name("image")), "$...image"),
        ((Name("a"), Slice(1, None, 2)), "$.a[1::2]"),
        ((Choice((Name("a"), Name("b"))),), "$['a','b']"),
    ],
)
def test_format_path(path: tuple[Any, ...], text: str) -> None:
    assert format_path(path) == text
    assert parse_path(text) == path


def test_parse_does_not_mutate_and_replace_only_touches_matches() -> None:
    doc = _doc()
    before = copy.deepcopy(doc)
    replace_all(doc, parse_path("$.spec.containers[1].image"), "new")
    before["spec"]["containers"][1]["image"] = "new"
    assert doc == before


@pytest.mark.parametrize(("text", "expected"), [
    ("$" + ".." * 1500 + "a", "more than 200 steps"),  # was a RecursionError (exit 4)
    ("$.a." + "9" * 5000, "an index of more than 18 digits"),  # int() refuses 4,300 digits (exit 4)
    ("$.a[" + "9" * 19 + "]", "an index of more than 18 digits"),
])
def test_paths_beyond_the_bounds_are_path_errors(text: str, expected: str) -> None:
    with pytest.raises(PathError, match=expected):
        parse_path(text)


def test_an_index_of_eighteen_digits_still_parses() -> None:
    assert parse_path("$.a." + "9" * 18) == (Name("a"), Slice(10 ** 18 - 1, 10 ** 18))


def test_escaped_surrogates_pair_up_and_a_lone_one_is_a_path_error() -> None:
    """As in JavaScript, a pair spells one character; a lone one is no key (JSON cannot write it: exit 4)."""
    assert parse_path("$['\\ud83d\\ude00']") == (Name("\U0001F600"),)
    with pytest.raises(PathError, match="a lone surrogate"):
        parse_path("$['\\ud800']")
