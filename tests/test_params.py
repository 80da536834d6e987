"""Tests for ksgitops.core.customize.params: %(key) expansion."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksgitops.core.customize.params import ParamError, expand_leaves, expand_string, referenced_keys, split_template

PARAMS = {
    "env": "prod",
    "loc-name": "edge-1",
    "example.com/zone_id": "z9",
    "pct": "%(env)",  # a value that looks like a reference: never re-expanded
    "empty": "",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("", ""),
        ("env is %(env)", "env is prod"),
        ("%(env)", "prod"),
        ("%(env)-%(loc-name)", "prod-edge-1"),
        ("zone %(example.com/zone_id)", "zone z9"),
        ("100%%", "100%"),
        ("%%(env)", "%(env)"),
        ("%%%(env)", "%prod"),
        ("100%", "100%"),
        ("50% off", "50% off"),
        ("%d %s", "%d %s"),
        ("%(pct)", "%(env)"),
        ("[%(empty)]", "[]"),
        ("a%%b%%c", "a%b%c"),
    ],
)
def test_expand_string(text: str, expected: str) -> None:
    assert expand_string(text, PARAMS) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("env is %(nope)", "'nope'"),
        ("%(env) %(example.com/other)", "'example.com/other'"),
        ("%(env", "malformed"),
        ("%()", "empty parameter name"),
        ("%(a(b)", "malformed"),
    ],
)
def test_expand_string_errors(text: str, message: str) -> None:
    with pytest.raises(ParamError, match=message.replace("(", r"\(")):
        expand_string(text, PARAMS)


def test_missing_key_is_recorded_on_the_error() -> None:
    with pytest.raises(ParamError) as info:
        expand_string("x %(region) y", PARAMS)
    assert info.value.key == "region"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("value", "keys"),
    [
        ("no refs", set()),
        ("%(a) and %(b/c.d)", {"a", "b/c.d"}),
        ("%%(escaped) %(real)", {"real"}),
        ({"%(mapkey)": "%(v)"}, {"v"}),
        ({"a": ["%(x)", {"b": "%(y)", "n": 3}], "c": None, "d": True}, {"x", "y"}),
        (["%(broken", "%()"], set()),
        (42, set()),
    ],
)
def test_referenced_keys(value: object, keys: set[str]) -> None:
    assert referenced_keys(value) == frozenset(keys)


def test_expand_leaves_expands_values_not_keys() -> None:
    value = {"%(env)": "%(env)", "list": ["%(loc-name)", 1, None, True, {"k": "%%"}], "n": 1.5}
    assert expand_leaves(value, PARAMS) == {
        "%(env)": "prod", "list": ["edge-1", 1, None, True, {"k": "%"}], "n": 1.5,
    }


def test_expand_leaves_shares_nothing_mutable() -> None:
    inner = {"plain": "text"}
    value = {"a": inner, "b": [inner, ["x"]]}
    out = expand_leaves(value, PARAMS)
    out["a"]["plain"] = "changed"
    out["b"][1].append("y")
    assert value == {"a": {"plain": "text"}, "b": [{"plain": "text"}, ["x"]]}
    assert out["a"] is not inner and out["b"][0] is not inner


def test_expand_leaves_missing_key_raises() -> None:
    with pytest.raises(ParamError, match="'zone'"):
        expand_leaves({"a": [{"b": "%(zone)"}]}, PARAMS)


_texts = st.text(alphabet=st.sampled_from(list("ab%()x-/.")), max_size=30)


@given(_texts)
def test_escaping_round_trips(text: str) -> None:
    """Doubling every % makes any text expand back to itself, with no parameters at all."""
    assert expand_string(text.replace("%", "%%"), {}) == text


@given(_texts)
def test_expand_agrees_with_referenced_keys(text: str) -> None:
    """Expansion succeeds exactly when every referenced key is defined (if well formed)."""
    keys = referenced_keys(text)
    params = {k: "V" for k in keys}
    try:
        out = expand_string(text, params)
    except ParamError as exc:
        assert exc.key is None  # only malformed references may fail when all keys are given
    else:
        other = expand_string(text, {k: "W" for k in keys})
        assert (other != out) == bool(keys)


def test_expand_shared_equals_expand_leaves_and_shares_untouched_subtrees() -> None:
    from ksgitops.core.customize.params import expand_shared
    value = {"plain": {"a": [1, "x"]}, "tmpl": {"b": ["%(env)", "y"]}, "n": 3}
    params = {"env": "prod"}
    shared = expand_shared(value, params)
    assert shared == expand_leaves(value, params)
    assert shared["plain"] is value["plain"]
    assert shared["tmpl"] is not value["tmpl"] and value["tmpl"]["b"][0] == "%(env)"
    assert expand_shared(value["plain"], params) is value["plain"]


@given(st.lists(st.sampled_from(["a", "%", "%%", "%(", "%()", "%(env)", "%(x/y)", ")", "(", "%(a(b)", "100%"]),
                max_size=6).map("".join))
def test_a_split_template_joins_to_what_expand_string_gives(text: str) -> None:
    params = {"env": "prod", "x/y": "%(env)"}
    pieces = split_template(text)
    try:
        expected = expand_string(text, params)
    except ParamError:
        assert pieces is None or any(key is not None and key not in params for _, key in pieces)
        return
    assert pieces is not None
    assert "".join(literal + (params[key] if key is not None else "") for literal, key in pieces) == expected
