"""The customization fast path (customize/templates.py) gives what expanding and diffing the whole
object gives, byte for byte (and the same warnings about the customized data), or hands the object
to that general path."""
from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksgitops.core.customize.params import referenced_keys
from ksgitops.core.customize.templates import find_templates
from ksgitops.core.emit.customdata import DataCheck
from ksgitops.core.emit.customized import customized_copy as _patch, templates_of as _templates
from ksgitops.core.place.base import Base
from ksgitops.model import ObjRef

KEYS = ["env", "region", "id", "example.com/zone", "missing"]
PIECES = ["a", "-", "%(env)", "%(region)", "%(id)", "%(example.com/zone)", "%%", "%", "100%", "x/y~z"]
BROKEN = ["%(missing)", "%(", "%()"]  # rarer: one anywhere sends both paths to the same error
texts = st.lists(st.sampled_from(PIECES * 8 + BROKEN), min_size=1, max_size=4).map("".join)
keys = st.sampled_from(["a", "b/c", "d~e", "spec", "z", "1"])
scalars = st.one_of(texts, st.integers(-3, 3), st.booleans(), st.none(), st.floats(allow_nan=False, width=16))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=12)
label_values = st.one_of(st.sampled_from(["web", "a.b", "-bad", ""]), texts)
bodies = st.fixed_dictionaries({
    "apiVersion": st.sampled_from(["v1", "v%(env)"]),
    "kind": st.just("ConfigMap"),
    "metadata": st.fixed_dictionaries({
        "name": st.sampled_from(["cm", "cm-%(id)"]),
        "namespace": st.sampled_from(["ns", {"a": "%(env)"}, ["%(id)"]]),  # not a string: load refuses it
        "labels": st.dictionaries(st.sampled_from(["app", "example.com/site", "bad key"]), label_values, max_size=3),
    }),
    "data": st.dictionaries(keys, values, max_size=4),
})
params = st.dictionaries(st.sampled_from(KEYS[:-1]), st.sampled_from(["prod", "eu", "7", "", "a b", "%(env)", "x" * 70]),
                         max_size=4)


def base_of(body: dict[str, Any]) -> Base:
    return Base(ObjRef("", "ConfigMap", "ns", "cm"), "v1", "configmaps", True, body, b"", None, expand=True,
                object_keys=referenced_keys(body))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies, params)
def test_the_fast_path_gives_what_the_general_path_gives(body: dict[str, Any], given_params: dict[str, str]) -> None:
    base = base_of(body)
    needed = tuple(sorted(base.object_keys))
    check = DataCheck("ConfigMap", body, True, "customized")
    general = _patch(base, None, given_params, needed, None, check)
    fast = _patch(base, None, given_params, needed, _templates(base), check)
    assert fast == general


def test_the_fast_path_serves_a_plain_object_and_orders_ops_as_the_diff() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"site": "%(id)"}},
            "data": {"z": "%(env)", "a/b": ["%(id)", 3, "same"], "m": "100%"}}
    templates = find_templates(body)
    ops = templates.patch({"env": "prod", "id": "7"}, 1 << 20)
    assert ops == [{"op": "replace", "path": "/data/a~1b/0", "value": "7"},
                   {"op": "replace", "path": "/data/z", "value": "prod"},
                   {"op": "replace", "path": "/metadata/labels/site", "value": "7"}]


def test_what_the_fast_path_does_not_vouch_for_goes_to_the_general_path() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%(id)"}, "data": {"a": "%(id)"}}
    assert find_templates(body).patch({"id": "7"}, 1 << 20) is None  # the identity would change
    body = {"metadata": {"name": "cm"}, "data": {"a": "%(missing)"}}
    assert find_templates(body).patch({}, 1 << 20) is None  # the general path names the parameter
    body = {"metadata": {"name": "cm"}, "data": {"a": "%(big)" * 10}}
    assert find_templates(body).patch({"big": "x" * 100}, 500) is None  # over the budget: stopped early
    assert find_templates(body).patch({"big": "x" * 10}, 500) == [
        {"op": "replace", "path": "/data/a", "value": "x" * 100}]
    body = {"metadata": {"name": "cm", "labels": {"a": "%%(env)"}}}
    assert find_templates(body).patch({}, 1 << 20) is not None  # changed: "%(env)", the caller checks it
    body = {"metadata": {"name": "cm", "labels": {"a": "100%"}}}
    assert find_templates(body).patch({}, 1 << 20) is None  # a label holding % left as it was
    assert find_templates({"data": {1: "%(id)"}}) is None  # a key the diff orders by str()
    assert find_templates({"data": ("%(id)",)}) is None  # a tuple the diff compares whole
