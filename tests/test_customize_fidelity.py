"""Customization as KubeStellar v0.10 to v0.15 does it, where its code (pkg/customize/customize.go,
pkg/placement/workload-projector.go, config/crds/) and ksgitops differed, and the checks of what a
WEC receives that a customization can break (a top-level field, a `%(key)` left as written)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from ksgitops.core.customize.customizer import customize
from ksgitops.core.pipeline import Result, reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.model import Obj, Origin
from minimal_fleet import gadget_crd, one_wec_inventory

Tree = Callable[[dict[str, str]], Path]
MAILBOX = "inv-mb-one"
PLACEMENT = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: p}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync:
  - {apiGroup: "", resources: [configmaps, secrets]}
  - {apiGroup: apps, resources: [deployments]}
  - {apiGroup: example.com, resources: [gadgets]}
"""
LOCATION = 'env: prod, zone: z1}, annotations: {self: "%(self)", other: "%(zone)"'
OBJECT = """\
apiVersion: {api}
kind: {kind}
metadata:
  name: a
  namespace: ns
  annotations: {{{annotations}}}
{body}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: custom
  namespace: ns
  annotations: {{{customizer_annotations}}}
replacements:
{replacements}
"""
EXPAND = 'edge.kubestellar.io/expand-parameters: "true"'
CUSTOMIZED = "edge.kubestellar.io/customizer: custom"


def run(tree: Tree, replacements: list[tuple[str, str]], *, kind: str = "ConfigMap", api: str = "v1",
        body: str = "data: {x: y}", annotations: str = CUSTOMIZED, customizer_annotations: str = "",
        extra: dict[str, str] | None = None) -> Result:
    items = "".join(f"- path: '{path}'\n  value: '{value}'\n" for path, value in replacements) or "  []\n"
    text = OBJECT.format(api=api, kind=kind, annotations=annotations, body=body,
                         customizer_annotations=customizer_annotations, replacements=items)
    repo = tree({"spaces/inv/inv.yaml": one_wec_inventory(LOCATION), "spaces/wds/p.yaml": PLACEMENT,
                 "spaces/wds/crd.yaml": gadget_crd("Namespaced"), "spaces/wds/o.yaml": text, **(extra or {})})
    return reconcile(WorkTreeSnapshot(repo))


def patch_of(result: Result, rel: str = "core/configmaps/ns/a") -> list[dict[str, object]]:
    entry = result.mailboxes[MAILBOX].entries[rel]
    return json.loads(entry.patch) if entry.patch else []


def warnings(result: Result) -> list[str]:
    assert not [p for p in result.problems if p.is_error], result.problems
    return [f"{p.origin}: {p.message}" for p in result.problems if not p.is_error]


# KubeStellar customizes, then projects (xformForDestination): the projected label is set again and
# what the projection clears is cleared, whatever the Customizer put there.

def test_labels_replaced_whole_keep_the_projected_label(tree: Tree) -> None:
    result = run(tree, [("$.metadata.labels", '{"a": "b"}')])
    assert patch_of(result) == [{"op": "add", "path": "/metadata/labels/a", "value": "b"}]


def test_the_projected_label_cannot_be_customized_away(tree: Tree) -> None:
    result = run(tree, [('$.metadata.labels["edge.kubestellar.io/projected"]', '"no"')])
    assert patch_of(result) == []


def test_metadata_the_projection_clears_stays_cleared(tree: Tree) -> None:
    result = run(tree, [("$.metadata.uid", '"abc"'), ("$.metadata.resourceVersion", '"5"'),
                        ("$.metadata.ownerReferences", '[{"kind": "X"}]'), ("$.data.x", '"z"')])
    assert patch_of(result) == [{"op": "replace", "path": "/data/x", "value": "z"}]


def test_a_whole_number_value_is_put_as_an_integer_as_go_writes_it() -> None:
    customizer = Obj("wds", {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Customizer",
                             "metadata": {"name": "c", "namespace": "ns"},
                             "replacements": [{"path": "$.spec.a", "value": "2.0"},
                                              {"path": "$.spec.b", "value": '{"n": [1e3, 2.5, -4.0]}'},
                                              {"path": "$.spec.c", "value": "1e21"}]}, Origin("c.yaml", 1))
    result = customize({"kind": "Gadget", "spec": {}}, False, customizer, {})
    assert result.body is not None
    spec = result.body["spec"]
    assert spec == {"a": 2, "b": {"n": [1000, 2.5, -4]}, "c": 1e21}
    assert [type(spec["a"]), type(spec["b"]["n"][0]), type(spec["c"])] == [int, int, float]


@pytest.mark.parametrize(("value", "put"), [("1e20", 1e20), ("-1e19", -1e19), ("9007199254740993", 9007199254740992),
                                            ("[9007199254740993, 1e300]", [9007199254740992, 1e300])])
def test_a_whole_number_past_2_53_is_put_as_the_float64_go_decodes(tree: Tree, value: str, put: object) -> None:
    # beyond 2^64 as an integer, 1e20 made the mailbox's build raise (orjson dumps no such integer)
    for kind, body, rel in [("ConfigMap", "data: {x: y}", "core/configmaps/ns/a"),
                            ("Gadget", "spec: {x: y}", "example.com/gadgets/ns/a")]:
        path = "$.data.x" if kind == "ConfigMap" else "$.spec.x"
        result = run(tree, [(path, value)], kind=kind, body=body,
                     api="v1" if kind == "ConfigMap" else "example.com/v1")
        assert [op["value"] for op in patch_of(result, rel)] == [put]


# Lists KubeStellar's CRDs make maps by a key: its API server refuses two items with one key.

def test_two_replacements_of_one_path_are_an_error_at_the_second(tree: Tree) -> None:
    result = run(tree, [("$.data.x", '"1"'), ("$.data.w", '"2"'), ("$.data.x", '"3"')])
    [error] = [p for p in result.problems if p.is_error]
    assert str(error.origin) == "spaces/wds/o.yaml:20"
    assert error.message == ("Customizer custom: replacements[2].path '$.data.x' repeats replacements[0]: "
                             "KubeStellar's CRD makes replacements a map by path, so its API server refuses this "
                             "Customizer")


def test_two_available_selector_labels_of_one_key_are_an_error(tree: Tree) -> None:
    location = ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: Location\nmetadata: {name: two}\n"
                "spec:\n  instanceSelector: {matchLabels: {id: two}}\n  availableSelectorLabels:\n"
                "  - {key: zone, values: [a]}\n  - {key: zone, values: [b]}\n")
    result = run(tree, [], extra={"spaces/inv/two.yaml": location})
    [error] = [p for p in result.problems if p.is_error]
    assert str(error.origin) == "spaces/inv/two.yaml:8" and "availableSelectorLabels[1].key 'zone' repeats " \
                                                             "spec.availableSelectorLabels[0]" in error.message


# Top-level fields: a customized copy of a built-in kind is checked as its source is.

def test_a_top_level_field_a_customizer_adds_is_a_warning_naming_it(tree: Tree) -> None:
    result = run(tree, [("$.replicas", "2")], kind="Deployment", api="apps/v1",
                 body="spec: {replicas: 1}")
    assert warnings(result) == [
        "spaces/wds/o.yaml:1: Deployment.apps ns/a: customized for the WEC by Customizer ns/custom "
        "(spaces/wds/o.yaml:9): unknown field \"replicas\" at the top level; a Deployment has apiVersion, kind, "
        "metadata, spec, status"]
    assert [p.wec for p in result.problems] == [MAILBOX]
    assert patch_of(result, "apps/deployments/ns/a") == [{"op": "add", "path": "/replicas", "value": 2}]


def test_a_top_level_field_of_a_secret_copy_says_no_value(tree: Tree) -> None:
    result = run(tree, [("$.namespace", '"hunter2"')], kind="Secret", body="stringData: {x: y}")
    [message] = warnings(result)
    assert 'unknown field "namespace" at the top level (did you mean metadata.namespace?)' in message
    assert "hunter2" not in message


def test_a_custom_resource_s_top_level_is_its_own(tree: Tree) -> None:
    result = run(tree, [("$.size", "2")], kind="Gadget", api="example.com/v1", body="spec: {}")
    assert warnings(result) == []


def test_a_top_level_field_the_source_has_is_said_only_at_the_source(tree: Tree) -> None:
    result = run(tree, [("$.extra", '"changed"')], body="data: {x: y}\nextra: old")
    assert [w for w in warnings(result) if "customized" in w] == []
    assert len(warnings(result)) == 1


# `%(key)` left as written: expansion is one pass, and a Customizer without expand-parameters expands nothing.

def test_a_parameter_that_holds_itself_is_a_warning(tree: Tree) -> None:
    result = run(tree, [], annotations=EXPAND, body='data: {x: "%(self)", y: "%(zone)"}')
    assert warnings(result) == [
        "spaces/wds/o.yaml:1: ConfigMap ns/a: parameter 'self' (a label or annotation of the WEC's Location) "
        "holds %(self): parameters are expanded once, so the WEC receives the text %(self) as written"]
    assert patch_of(result) == [{"op": "replace", "path": "/data/y", "value": "z1"}]


def test_a_parameter_that_holds_another_the_copy_uses_is_a_warning_in_a_customizer_too(tree: Tree) -> None:
    result = run(tree, [("$.data.x", '"%(other) %(zone)"')], customizer_annotations=EXPAND)
    assert [w.split(": ", 2)[2] for w in warnings(result)] == [
        "parameter 'other' (a label or annotation of the WEC's Location) holds %(zone): parameters are "
        "expanded once, so the WEC receives the text %(zone) as written"]


def test_a_secret_s_self_holding_parameter_is_not_named(tree: Tree) -> None:
    result = run(tree, [], kind="Secret", annotations=EXPAND, body='stringData: {x: "%(self)"}')
    [message] = warnings(result)
    assert "self" not in message.replace("itself", "") and "expanded once" in message


def test_a_customizer_without_expand_parameters_putting_a_location_key_is_a_warning(tree: Tree) -> None:
    result = run(tree, [("$.data.x", '"%(zone)-%(asctime)s"')], annotations=f"{CUSTOMIZED}, {EXPAND}")
    assert warnings(result) == [
        "spaces/wds/o.yaml:6: ConfigMap ns/a: Customizer ns/custom (spaces/wds/o.yaml:9) puts %(zone) as written "
        "(it has no edge.kubestellar.io/expand-parameters: \"true\" annotation), though zone is a label or "
        "annotation of the WEC's Location"]


@pytest.mark.parametrize("annotations, body, line, message", [
    ("edge.kubestellar.io/customizer: custm", "data: {x: y}", 6, "unknown Customizer ns/custm (did you mean ns/custom?)"),
    ("edge.kubestellar.io/customizer: a/b/c", "data: {x: y}", 6, "expected <name> or <namespace>/<name>, got 'a/b/c'"),
    (EXPAND, 'data:\n  x: y\n  z: "in %(nowhere)"', 9, "parameter 'nowhere' is not defined"),
    (EXPAND, 'data:\n  x: y\n  z: "in %(broken"', 9, "malformed parameter reference at offset 3"),
    (EXPAND, 'data:\n  x: y\n  z: "%%(zone)"', None, ""),  # no error: `%%` is a `%`
])
def test_an_error_about_the_customizer_annotation_or_expansion_is_at_its_field_s_line(
        tree: Tree, annotations: str, body: str, line: int | None, message: str) -> None:
    """Not at the object's first line: the annotation naming the Customizer, the string that
    does not expand (the error that keeps the object off the WEC)."""
    result = run(tree, [], annotations=annotations, body=body)
    errors = [(p.origin.line, p.message) for p in result.problems if p.is_error]
    if line is None:
        assert errors == []
        return
    [(at, text)] = errors
    assert at == line and text.startswith("ConfigMap ns/a: ") and message in text, errors


@pytest.mark.parametrize("value", ['"%(asctime)s %(levelname)s"', '"%%(zone)"'])
def test_text_that_names_no_location_key_is_not_warned_about(tree: Tree, value: str) -> None:
    """Python's logging formats and the like: nothing says they were meant as parameters."""
    assert warnings(run(tree, [("$.data.x", value)])) == []
