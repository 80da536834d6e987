"""Kubernetes LabelSelector validation and matching."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.load.selectors import (any_matches, label_key_error, label_value_error, matcher, matches,
                                          selector_error)

# --- label keys and values ------------------------------------------------------------------

VALID_KEYS = [
    "app",
    "a",
    "A1",
    "app.kubernetes.io/name",
    "example.com/my_label.x-y",
    "a" * 63,
    "x.y/" + "a" * 63,
    ("a" * 63 + ".") * 3 + "a" * 61 + "/n",  # 253-character prefix
]

INVALID_KEYS = [
    ("", "must not be empty"),
    ("a" * 64, "longer than 63"),
    ("-app", "invalid"),
    ("app-", "invalid"),
    ("_app", "invalid"),
    ("ap p", "invalid"),
    ("a/b/c", "more than one '/'"),
    ("/app", "prefix must not be empty"),
    ("example.com/", "name must not be empty"),
    ("Example.com/app", "DNS-1123 subdomain"),
    ("exa_mple.com/app", "DNS-1123 subdomain"),
    (("a" * 63 + ".") * 3 + "a" * 62 + "/n", "longer than 253"),
    ("x/" + "a" * 64, "longer than 63"),
    (5, "must be a string"),
    (None, "must be a string"),
]


@pytest.mark.parametrize("key", VALID_KEYS)
def test_valid_label_keys(key: str) -> None:
    assert label_key_error(key) is None


@pytest.mark.parametrize("key,fragment", INVALID_KEYS)
def test_invalid_label_keys(key: object, fragment: str) -> None:
    err = label_key_error(key)
    assert err is not None and fragment in err


@pytest.mark.parametrize("value", ["", "v", "v1.2_3-x", "A" * 63, "0"])
def test_valid_label_values(value: str) -> None:
    assert label_value_error(value) is None


@pytest.mark.parametrize("value,fragment", [
    ("a" * 64, "longer than 63"),
    ("-v", "invalid"),
    ("v.", "invalid"),
    ("a/b", "invalid"),
    ("a b", "invalid"),
    ("v\n", "invalid"),  # a pattern's `$` also matched before a final newline
    (1, "must be a string"),
    (True, "must be a string"),
    (None, "must be a string"),
])
def test_invalid_label_values(value: object, fragment: str) -> None:
    err = label_value_error(value)
    assert err is not None and fragment in err


# --- selector shape -------------------------------------------------------------------------

VALID_SELECTORS = [
    None,
    {},
    {"matchLabels": None, "matchExpressions": None},
    {"matchLabels": {"app": "web", "example.com/tier": ""}},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist", "values": []}]},
    {"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists", "values": None}]},
]

INVALID_SELECTORS = [
    ("app=web", "must be a map"),
    ([{"matchLabels": {}}], "must be a map"),
    ({"matchLabel": {"a": "b"}}, "unknown field(s) matchLabel"),
    ({"matchLabels": {}, "extra": 1}, "unknown field(s) extra"),
    ({"matchLabels": ["a"]}, "matchLabels must be a map"),
    ({"matchLabels": {"-a": "b"}}, "matchLabels: label key '-a'"),
    ({"matchLabels": {"a": 1}}, "matchLabels: label value 1 must be a string"),
    ({"matchLabels": {"a": True}}, "must be a string"),
    ({"matchLabels": {"a": None}}, "must be a string"),
    ({"matchLabels": {"a": "-b"}}, "label value '-b'"),
    ({"matchExpressions": {"key": "a"}}, "matchExpressions must be a list"),
    ({"matchExpressions": ["a"]}, "matchExpressions[0]: must be a map"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "value": []}]}, "unknown field(s) value"),
    ({"matchExpressions": [{"operator": "Exists"}]}, "key is required"),
    ({"matchExpressions": [{"key": "a/b/c", "operator": "Exists"}]}, "more than one '/'"),
    ({"matchExpressions": [{"key": "a", "operator": "in", "values": ["x"]}]}, "operator 'in' is not one of"),
    ({"matchExpressions": [{"key": "a", "values": ["x"]}]}, "operator None is not one of"),
    ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "operator In needs at least one value"),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": []}]}, "operator NotIn needs"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "Exists takes no values"),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]}, "takes no values"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}, "values must be a list"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "-bad"]}]}, "label value '-bad'"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}, "must be a string"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "In"}]},
     "matchExpressions[1]:"),
]


@pytest.mark.parametrize("sel", VALID_SELECTORS)
def test_valid_selectors(sel: object) -> None:
    assert selector_error(sel) is None


@pytest.mark.parametrize("sel,fragment", INVALID_SELECTORS)
def test_invalid_selectors(sel: object, fragment: str) -> None:
    err = selector_error(sel)
    assert err is not None and fragment in err, err


# --- matching -------------------------------------------------------------------------------

LABELS = {"app": "web", "tier": "front", "example.com/team": "a"}


def _expr(key: str, operator: str, *values: str) -> dict:
    expr: dict = {"key": key, "operator": operator}
    if values:
        expr["values"] = list(values)
    return {"matchExpressions": [expr]}


MATCH_CASES = [
    # (selector, labels, expected)
    (None, LABELS, False),
    (None, {}, False),
    ({}, LABELS, True),
    ({}, {}, True),
    ({"matchLabels": {}, "matchExpressions": []}, {}, True),
    ({"matchLabels": {"app": "web"}}, LABELS, True),
    ({"matchLabels": {"app": "web", "tier": "front"}}, LABELS, True),
    ({"matchLabels": {"app": "web", "tier": "back"}}, LABELS, False),
    ({"matchLabels": {"app": "db"}}, LABELS, False),
    ({"matchLabels": {"missing": ""}}, LABELS, False),
    ({"matchLabels": {"example.com/team": "a"}}, LABELS, True),
    (_expr("app", "In", "db", "web"), LABELS, True),
    (_expr("app", "In", "db"), LABELS, False),
    (_expr("missing", "In", "x"), LABELS, False),
    (_expr("app", "NotIn", "db"), LABELS, True),
    (_expr("app", "NotIn", "web"), LABELS, False),
    (_expr("missing", "NotIn", "x"), LABELS, True),  # Kubernetes: NotIn holds when the key is absent
    (_expr("app", "Exists"), LABELS, True),
    (_expr("missing", "Exists"), LABELS, False),
    (_expr("missing", "DoesNotExist"), LABELS, True),
    (_expr("app", "DoesNotExist"), LABELS, False),
    (_expr("missing", "DoesNotExist"), {}, True),
    # matchLabels AND matchExpressions
    ({"matchLabels": {"app": "web"}, **_expr("tier", "In", "front")}, LABELS, True),
    ({"matchLabels": {"app": "web"}, **_expr("tier", "In", "back")}, LABELS, False),
    ({"matchLabels": {"app": "db"}, **_expr("tier", "In", "front")}, LABELS, False),
    # all expressions must hold
    ({"matchExpressions": [{"key": "app", "operator": "Exists"},
                           {"key": "tier", "operator": "DoesNotExist"}]}, LABELS, False),
    # invalid selectors match nothing, even where a lenient reading would match
    ({"matchLabels": {"app": "web"}, "bogus": 1}, LABELS, False),
    ({"bogus": 1}, {}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In"}]}, LABELS, False),
    ("app=web", LABELS, False),
    # odd labels arguments
    ({}, None, True),
    ({"matchLabels": {"app": "web"}}, None, False),
]


@pytest.mark.parametrize("sel,labels,expected", MATCH_CASES)
def test_matches(sel: object, labels: object, expected: bool) -> None:
    assert matches(sel, labels) is expected  # type: ignore[arg-type]


ANY_CASES = [
    ([], LABELS, False),
    (None, LABELS, False),
    ({}, LABELS, False),  # not a list
    ([None], LABELS, False),
    ([{}], {}, True),
    ([{"matchLabels": {"app": "db"}}], LABELS, False),
    ([{"matchLabels": {"app": "db"}}, {"matchLabels": {"app": "web"}}], LABELS, True),
    ([{"bogus": 1}, {"matchLabels": {"tier": "front"}}], LABELS, True),
]


@pytest.mark.parametrize("sels,labels,expected", ANY_CASES)
def test_any_matches(sels: object, labels: object, expected: bool) -> None:
    assert any_matches(sels, labels) is expected  # type: ignore[arg-type]
    assert matcher(sels)(labels) is expected  # type: ignore[arg-type]


# --- properties -----------------------------------------------------------------------------

_name = st.from_regex(r"\A[A-Za-z0-9]([-A-Za-z0-9_.]{0,20}[A-Za-z0-9])?\Z")
_labels = st.dictionaries(_name, st.one_of(st.just(""), _name), max_size=5)


@given(_labels)
def test_labels_match_their_own_match_labels(labels: dict[str, str]) -> None:
    assert selector_error({"matchLabels": labels}) is None
    assert matches({"matchLabels": labels}, labels)


@given(_labels, _name, st.lists(_name, min_size=1, max_size=3))
def test_in_and_notin_are_complements(labels: dict[str, str], key: str, values: list[str]) -> None:
    assert matches(_expr(key, "In", *values), labels) != matches(_expr(key, "NotIn", *values), labels)
    assert matches(_expr(key, "Exists"), labels) != matches(_expr(key, "DoesNotExist"), labels)


# a few keys and values, so that label sets often agree on the labels a selector names
_key = st.sampled_from(["tier", "region", "env", "id"])
_value = st.sampled_from(["", "gold", "silver", "eu", "us", "1"])
_selector = st.one_of(
    st.none(), st.just({}), st.just({"bogus": 1}), st.just({"matchLabels": "not a map"}),
    st.fixed_dictionaries({}, optional={
        "matchLabels": st.dictionaries(_key, _value, max_size=2),
        "matchExpressions": st.lists(st.builds(
            lambda key, op, values: {"key": key, "operator": op, **({"values": values} if values else {})},
            _key, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Bogus"]),
            st.lists(_value, max_size=2)), max_size=2)}))


@settings(max_examples=400)
@given(st.one_of(st.none(), st.lists(_selector, max_size=3)),
       st.lists(st.one_of(st.none(), st.dictionaries(_key, _value, max_size=4)), max_size=12))
def test_a_matcher_answers_as_any_matches_for_every_label_set(selectors: list | None, label_sets: list) -> None:
    selected = matcher(selectors)
    assert [selected(labels) for labels in label_sets] == [any_matches(selectors, labels) for labels in label_sets]


def test_a_matcher_tells_label_sets_apart_by_every_label_its_selectors_name() -> None:
    selected = matcher([{"matchLabels": {"env": "prod"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}])
    assert [selected(labels) for labels in ({"env": "prod", "tier": "a"}, {"env": "prod"}, {"env": "dev", "tier": "a"},
                                            {"env": "prod", "tier": "b", "id": "2"})] == [True, False, False, True]


def test_a_matcher_copes_with_what_yaml_can_make() -> None:
    odd = [{"matchLabels": {1: "x", "a": ["unhashable"]}}, {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
    for labels in ({"a": ["list"]}, {1: "x", "a": ["unhashable"]}, {"a": "b"}, None, "not a map"):
        assert matcher(odd)(labels) == any_matches(odd, labels)  # type: ignore[arg-type]
