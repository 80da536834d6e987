"""Tests for ksgitops.core.customize.customizer: expansion, Customizer lookup, replacements and jsonPatch."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from ksgitops.core.customize.customizer import (CUSTOMIZER_ANNOTATION, EXPAND_ANNOTATION, CustomizeResult, customize, find_customizer, wants_expansion)
from ksgitops.model import Obj, Origin

PARAMS = {"env": "prod", "loc-name": "florin", "id": "edge-1", "example.com/tier": "gold"}


def _obj(body: dict[str, Any]) -> Obj:
    return Obj(space="wds", body=body, origin=Origin("spaces/wds/x.yaml", 1))


def _customizer(name: str = "example-customizer", namespace: str = "commonstuff", *,
                expand: bool = True, replacements: Any = None, json_patch: Any = None) -> Obj:
    body: dict[str, Any] = {
        "apiVersion": "edge.kubestellar.io/v2alpha1",
        "kind": "Customizer",
        "metadata": {"name": name, "namespace": namespace,
                     "annotations": {EXPAND_ANNOTATION: "true"} if expand else {}},
    }
    if replacements is not None:
        body["replacements"] = replacements
    if json_patch is not None:
        body["jsonPatch"] = json_patch
    return _obj(body)


def _replicaset() -> dict[str, Any]:
    """KubeStellar example1's ReplicaSet (trimmed)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "commond", "namespace": "commonstuff",
                     "annotations": {CUSTOMIZER_ANNOTATION: "example-customizer"},
                     "labels": {"app": "common"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "common"}},
            "template": {
                "metadata": {"labels": {"app": "common"}},
                "spec": {"containers": [{
                    "name": "httpd", "image": "library/httpd:2.4",
                    "env": [{"name": "EV1", "value": "at the ancestor"}],
                }]},
            },
        },
    }


def _configmap() -> dict[str, Any]:
    """KubeStellar example1's ConfigMap with expand-parameters on the object itself."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "httpd-htdocs", "namespace": "commonstuff",
                     "annotations": {EXPAND_ANNOTATION: "true"}},
        "data": {"index.html": "<p>This is a common web site.\n  Running in %(loc-name).</p>\n",
                 "%(env)": "100%% %(env)"},
    }


EXAMPLE1_CUSTOMIZER = _customizer(replacements=[
    {"path": "$.spec.template.spec.containers.0.env.0.value", "value": '"env is %(env)"'},
])


def test_example1_replicaset_customizer() -> None:
    base = _replicaset()
    before = copy.deepcopy(base)
    result = customize(base, False, EXAMPLE1_CUSTOMIZER, PARAMS)
    assert result.error is None
    assert result.body is not None
    assert result.body["spec"]["template"]["spec"]["containers"][0]["env"][0] == {
        "name": "EV1", "value": "env is prod"}
    assert result.params_used == {"env": "prod"}
    assert base == before


def test_example1_configmap_expand_parameters() -> None:
    base = _configmap()
    result = customize(base, True, None, PARAMS)
    assert result == CustomizeResult(
        body={**base, "data": {
            "index.html": "<p>This is a common web site.\n  Running in florin.</p>\n",
            "%(env)": "100% prod"}},
        error=None,
        params_used={"env": "prod", "loc-name": "florin"},
    )
    assert base["data"]["index.html"].endswith("%(loc-name).</p>\n")


def test_no_customization_returns_an_independent_copy() -> None:
    base = _replicaset()
    result = customize(base, False, None, PARAMS)
    assert result.body == base and result.error is None and result.params_used == {}
    assert result.body is not None
    result.body["spec"]["template"]["spec"]["containers"][0]["env"].clear()
    assert base["spec"]["template"]["spec"]["containers"][0]["env"]


def test_customizer_without_expand_keeps_text_literal() -> None:
    customizer = _customizer(expand=False, replacements=[
        {"path": "$.spec.template.spec.containers.0.env.0.value", "value": '"env is %(env)"'}])
    result = customize(_replicaset(), False, customizer, PARAMS)
    assert result.body is not None and result.params_used == {}
    assert result.body["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "env is %(env)"


@pytest.mark.parametrize(
    ("replacements", "json_patch", "check", "used"),
    [
        ([{"path": "$.spec.replicas", "value": "5"}], None,
         lambda b: b["spec"]["replicas"] == 5, {}),
        ([{"path": "$.metadata.labels['%(example.com/tier)']", "value": '"yes"'}], None,
         lambda b: b["metadata"]["labels"]["gold"] == "yes", {"example.com/tier": "gold"}),
        ([{"path": "$.spec.template.spec.containers[0].env",
           "value": '[{"name": "ID", "value": "%(id)"}]'}], None,
         lambda b: b["spec"]["template"]["spec"]["containers"][0]["env"] == [{"name": "ID", "value": "edge-1"}],
         {"id": "edge-1"}),
        ([{"path": "$.spec.newfield", "value": '{"a": [1, null, true]}'}], None,
         lambda b: b["spec"]["newfield"] == {"a": [1, None, True]}, {}),
        ([{"path": "$.spec.replicas", "value": "5"}],
         [{"op": "replace", "path": "/spec/replicas", "value": 7}],
         lambda b: b["spec"]["replicas"] == 7, {}),  # jsonPatch runs after replacements
        (None, [{"op": "add", "path": "/metadata/labels/zone", "value": "%(env)-%(id)"},
                {"op": "remove", "path": "/spec/selector"}],
         lambda b: b["metadata"]["labels"]["zone"] == "prod-edge-1" and "selector" not in b["spec"],
         {"env": "prod", "id": "edge-1"}),
        (None, [{"op": "add", "path": "/metadata/labels/%(env)", "value": {"v": ["%(id)"]}}],
         lambda b: b["metadata"]["labels"]["prod"] == {"v": ["edge-1"]}, {"env": "prod", "id": "edge-1"}),
        (None, [{"op": "test", "path": "/spec/replicas", "value": 2},
                {"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations/copied"}],
         lambda b: b["metadata"]["annotations"]["copied"] == {"app": "common"}, {}),
        ([], [], lambda b: b == _replicaset(), {}),
    ],
)
def test_customizer_cases(replacements: Any, json_patch: Any, check: Any, used: dict[str, str]) -> None:
    customizer = _customizer(replacements=replacements, json_patch=json_patch)
    before = copy.deepcopy(customizer.body)
    result = customize(_replicaset(), False, customizer, PARAMS)
    assert result.error is None
    assert check(result.body)
    assert result.params_used == used
    assert customizer.body == before


def test_order_expand_object_then_replacements() -> None:
    """Replacement values are not re-expanded by the object's own expansion (it ran first)."""
    base = _configmap()
    customizer = _customizer(expand=False, replacements=[
        {"path": "$.data.extra", "value": '"%(env) literal"'}])
    result = customize(base, True, customizer, PARAMS)
    assert result.body is not None
    assert result.body["data"]["extra"] == "%(env) literal"
    assert result.body["data"]["%(env)"] == "100% prod"


def test_patched_values_do_not_alias_the_customizer() -> None:
    customizer = _customizer(expand=False, json_patch=[
        {"op": "add", "path": "/spec/extra", "value": {"list": [1]}}])
    first = customize(_replicaset(), False, customizer, PARAMS)
    assert first.body is not None
    first.body["spec"]["extra"]["list"].append(2)
    second = customize(_replicaset(), False, customizer, PARAMS)
    assert second.body is not None and second.body["spec"]["extra"] == {"list": [1]}


@pytest.mark.parametrize(
    ("obj_expand", "replacements", "json_patch", "fragments"),
    [
        (False, [{"path": "$.spec.x", "value": '"%(missing)"'}], None,
         ["Customizer commonstuff/example-customizer", "replacements[0]", "'$.spec.x'", "'missing'"]),
        (False, [{"path": "$.spec.%(nope).x", "value": "1"}], None,
         ["replacements[0]", "'nope'"]),
        (False, [{"path": "spec.replicas", "value": "1"}], None, ["replacements[0]", "must start with '$'"]),
        (False, [{"path": "$.spec..", "value": "1"}], None, ["replacements[0]", "'$.spec..'", "offset 8"]),
        (False, [{"path": "$.spec.replicas", "value": "env is %(env)"}], None,
         ["replacements[0]", "not valid JSON", "'env is prod'"]),
        (False, [{"path": "$.spec.replicas", "value": 3}], None,
         ["replacements[0]", "'value' must be a string holding JSON"]),
        (False, [{"value": "1"}], None, ["replacements[0]", "string 'path'"]),
        (False, "not-a-list", None, ["replacements must be a list"]),
        (False, None, [{"op": "remove", "path": "/spec/absent"}],
         ["jsonPatch[0]", "remove", "'/spec/absent'"]),
        (False, None, [{"op": "add", "path": "/x", "value": 1},
                       {"op": "test", "path": "/spec/replicas", "value": 99}],
         ["jsonPatch[1]", "test", "'/spec/replicas'"]),
        (False, None, [{"op": "add", "path": "/a/%(region)", "value": 1}], ["jsonPatch[0]", "'region'"]),
        (False, None, [{"op": "frobnicate", "path": "/x"}], ["jsonPatch[0]", "frobnicate"]),
        (False, None, [{"path": "/x"}], ["jsonPatch[0]"]),
        (False, None, ["nonsense"], ["jsonPatch[0]"]),
        (False, None, {"op": "add"}, ["jsonPatch must be a list"]),
        (False, None, [{"op": "replace", "path": "", "value": [1]}], ["not a map"]),
        (True, None, None, [EXPAND_ANNOTATION, "'zone'"]),
    ],
)
def test_customize_errors(obj_expand: bool, replacements: Any, json_patch: Any,
                          fragments: list[str]) -> None:
    base = _replicaset()
    base["metadata"]["labels"]["zone"] = "%(zone)"
    before = copy.deepcopy(base)
    customizer = _customizer(replacements=replacements, json_patch=json_patch)
    result = customize(base, obj_expand, customizer, PARAMS)
    assert result.body is None
    assert result.error is not None
    for fragment in fragments:
        assert fragment in result.error
    assert base == before


# KubeStellar v0.14.2 pkg/customize/customize.go applies each replacement with jsonpath.Apply, which
# puts the value at every selected place and does nothing where the path selects none.

MULTI = _customizer(expand=True, replacements=[
    {"path": "$.spec.template.spec.containers[*].image", "value": '"registry.%(env)/httpd"'},
    {"path": "$...env[*]['value']", "value": '"x"'},
])


def test_replacement_applies_to_every_match() -> None:
    base = _replicaset()
    base["spec"]["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": "busybox", "env": [{"name": "EV2", "value": "v"}]})
    result = customize(base, False, MULTI, PARAMS)
    assert result.error is None and result.warnings == () and result.body is not None
    containers = result.body["spec"]["template"]["spec"]["containers"]
    assert [c["image"] for c in containers] == ["registry.prod/httpd", "registry.prod/httpd"]
    assert [c["env"] for c in containers] == [[{"name": "EV1", "value": "x"}], [{"name": "EV2", "value": "x"}]]
    assert result.params_used == {"env": "prod"}


@pytest.mark.parametrize("path", ["$.spec.absent.deeper", "$.spec.template.spec.containers.3.env",
                                  "$.spec.template.spec.containers[*].nothing", "$..nowhere"])
def test_path_that_selects_nothing_is_a_warning_and_the_rest_applies(path: str) -> None:
    customizer = _customizer(replacements=[
        {"path": path, "value": "1"},
        {"path": "$.spec.replicas", "value": "5"}],
        json_patch=[{"op": "add", "path": "/metadata/labels/zone", "value": "%(env)"}])
    result = customize(_replicaset(), False, customizer, PARAMS)
    assert result.error is None and result.body is not None
    assert result.body["spec"]["replicas"] == 5 and result.body["metadata"]["labels"]["zone"] == "prod"
    [warning] = result.warnings
    assert "replacements[0]" in warning and repr(path) in warning and "selects nothing" in warning
    unchanged = _replicaset()
    unchanged["spec"]["replicas"] = 5
    unchanged["metadata"]["labels"]["zone"] = "prod"
    assert result.body == unchanged


def test_params_used_is_sorted_and_kept_on_error() -> None:
    customizer = _customizer(replacements=[
        {"path": "$.spec.a", "value": '"%(loc-name) %(env)"'},
        {"path": "$.spec.b", "value": '"%(id) %(missing)"'}])
    result = customize(_replicaset(), False, customizer, PARAMS)
    assert result.error is not None and "'missing'" in result.error
    assert list(result.params_used.items()) == [("env", "prod"), ("id", "edge-1"), ("loc-name", "florin")]


CUSTOMIZERS = {
    ("commonstuff", "example-customizer"): EXAMPLE1_CUSTOMIZER,
    ("other", "shared"): _customizer("shared", "other"),
}


def _with_annotation(namespace: str, value: Any | None) -> Obj:
    metadata: dict[str, Any] = {"name": "thing"}
    if namespace:
        metadata["namespace"] = namespace
    if value is not None:
        metadata["annotations"] = {CUSTOMIZER_ANNOTATION: value}
    return _obj({"apiVersion": "v1", "kind": "ConfigMap" if namespace else "Namespace", "metadata": metadata})


@pytest.mark.parametrize(
    ("namespace", "value", "found", "error"),
    [
        ("commonstuff", None, None, None),
        ("commonstuff", "example-customizer", ("commonstuff", "example-customizer"), None),
        ("commonstuff", "other/shared", ("other", "shared"), None),
        ("", "other/shared", ("other", "shared"), None),
        ("", "shared", None, "cluster-scoped object must name its Customizer as <namespace>/<name>"),
        ("commonstuff", "shared", None, "unknown Customizer commonstuff/shared"),
        ("", "nowhere/shared", None, "unknown Customizer nowhere/shared (did you mean other/shared?)"),
        ("commonstuff", "example-custmizer", None, "unknown Customizer commonstuff/example-custmizer (did you mean "
                                                   "commonstuff/example-customizer?)"),
        ("commonstuff", "a/b/c", None, "expected <name> or <namespace>/<name>"),
        ("commonstuff", "/shared", None, "expected <name> or <namespace>/<name>"),
        ("commonstuff", "other/", None, "expected <name> or <namespace>/<name>"),
        ("commonstuff", "", None, None),  # KubeStellar: an empty reference names no Customizer
        ("commonstuff", 7, None, "must be a string"),
    ],
)
def test_find_customizer(namespace: str, value: Any, found: tuple[str, str] | None, error: str | None) -> None:
    """KubeStellar v0.14.2 pkg/placement/workload-projector.go `customizeOrCopy`: `<ns>/<name>` for any
    object; a plain name is looked up in the object's own namespace (none for a cluster-scoped
    object); an empty reference names no Customizer."""
    customizer, message = find_customizer(_with_annotation(namespace, value), CUSTOMIZERS)
    assert customizer is (CUSTOMIZERS[found] if found else None)
    if error is None:
        assert message is None
    else:
        assert message is not None and error in message


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        (None, False),
        ({}, False),
        ({EXPAND_ANNOTATION: "true"}, True),
        ({EXPAND_ANNOTATION: "True"}, False),
        ({EXPAND_ANNOTATION: "yes"}, False),
        ({EXPAND_ANNOTATION: True}, False),
        ({"other": "true"}, False),
    ],
)
def test_wants_expansion(annotations: dict[str, Any] | None, expected: bool) -> None:
    assert wants_expansion(annotations) is expected
