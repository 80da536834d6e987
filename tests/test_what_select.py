"""What an EdgePlacement selects from a WDS: `select` (clause order, never-downsynced, control and
unknown kinds, upsync precedence, namespace selectors), CustomResourceDefinitions coming along with
their custom resources, `explain`'s lines, namespace labels and selector problems."""
from __future__ import annotations

import pytest

from ksgitops.core.place.what import (ALONG, Placed, along_line, clause_matches, clause_mismatch, explain_object,
                                      namespace_labels, placement_spec, select, selector_problems)
from ksgitops.kinds import KindInfo, KindTable
from ksgitops.model import Obj
from what_objects import CM, CM_NS2, CROLE, DEPLOY, KINDS, NS1, NS_LABELS, V1, info, mk, placement


# --- select ---------------------------------------------------------------------------------

WIDGET = mk("example.com/v1", "Widget", "w", "ns1")
SA_DEFAULT = mk("v1", "ServiceAccount", "default", "ns1")
EP = placement({"downsync": [{"namespaces": ["*"]}]})
WORKLOAD = [WIDGET, EP, SA_DEFAULT, CROLE, DEPLOY, NS1, CM]


def refs(placed: list[Placed]) -> list[tuple[str, str, int]]:
    return [(p.obj.kind, p.obj.name, p.clause) for p in placed]


def test_select_first_clause_and_order() -> None:
    spec = placement_spec(placement({"downsync": [
        {"apiGroup": "rbac.authorization.k8s.io"},
        {"resources": ["configmaps"]},
        {"namespaces": ["ns1"]},
        {"resources": ["deployments"]},  # also matches the Deployment, but clause 2 is first
    ]}))
    placed = select(spec, WORKLOAD, KINDS, namespace_labels(WORKLOAD))
    # sorted by identity (group, kind, namespace, name), not by clause or input order
    assert refs(placed) == [("ConfigMap", "cfg", 1), ("Deployment", "web", 2), ("ClusterRole", "reader", 0)]
    assert [p.obj.ref for p in placed] == sorted(p.obj.ref for p in placed)


def test_select_skips_never_downsynced_control_and_unknown_kinds() -> None:
    spec = placement_spec(placement({"downsync": [{"namespaces": ["*"]}]}))
    placed = select(spec, WORKLOAD, KINDS, {})
    assert {p.obj.name for p in placed} == {"cfg", "web", "reader", "ns1"}
    known = KindTable({("example.com", "Widget"): KindInfo("widgets", True)})
    assert "w" in {p.obj.name for p in select(spec, WORKLOAD, known, {})}


def test_select_upsync_wins() -> None:
    body = {"downsync": [{"namespaces": ["*"]}],
            "upsync": [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["ns1"], "names": ["*"]}]}
    placed = select(placement_spec(placement(body)), WORKLOAD, KINDS, {})
    assert "Deployment" not in {p.obj.kind for p in placed}
    assert "ConfigMap" in {p.obj.kind for p in placed}


def test_select_with_namespace_selectors_uses_wds_namespaces() -> None:
    ns2 = mk("v1", "Namespace", "ns2", labels={"team": "b"})
    workload = [NS1, ns2, CM, CM_NS2]
    spec = placement_spec(placement({"downsync": [{"namespaceSelectors": [{"matchLabels": {"team": "b"}}]}]}))
    placed = select(spec, workload, KINDS, namespace_labels(workload))
    assert [(p.obj.kind, p.obj.namespace) for p in placed] == [("ConfigMap", "ns2")]


def test_select_no_clauses_selects_nothing() -> None:
    assert select(placement_spec(placement({})), WORKLOAD, KINDS, {}) == []


# --- CustomResourceDefinitions come along ---------------------------------------------------
# KubeStellar v0.13.0+ pkg/placement/what-resolver.go `getPartsLocked`: for every resource with an
# object the placement places, the resource's definers (the CRDs of the WDS that define it) are added
# to the placement's parts unless already there, with ReturnSingletonState false.

def crd(group: str, kind: str, plural: str, name: str | None = None) -> Obj:
    return mk("apiextensions.k8s.io/v1", "CustomResourceDefinition", name or f"{plural}.{group}",
              spec={"group": group, "names": {"kind": kind, "plural": plural}, "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": True, "storage": True}]})


GADGET_CRD = crd("example.com", "Gadget", "gadgets")
SPROCKET_CRD = crd("example.com", "Sprocket", "sprockets")
GADGETS = [mk("example.com/v1", "Gadget", "g1", "ns1"), mk("example.com/v1", "Gadget", "g2", "ns1")]
CR_KINDS = KindTable({("example.com", "Gadget"): KindInfo("gadgets", True),
                      ("example.com", "Sprocket"): KindInfo("sprockets", True)})
CR_WORKLOAD = [GADGET_CRD, SPROCKET_CRD, *GADGETS, mk("example.com/v1", "Sprocket", "s1", "ns2"), CM]


def test_crd_comes_along_with_its_custom_resources_once() -> None:
    spec = placement_spec(placement({"downsync": [{"apiGroup": "example.com", "resources": ["gadgets"]}]}))
    placed = select(spec, CR_WORKLOAD, CR_KINDS, {})
    assert refs(placed) == [("CustomResourceDefinition", "gadgets.example.com", ALONG),
                            ("Gadget", "g1", 0), ("Gadget", "g2", 0)]


def test_crd_placed_by_a_clause_is_not_also_along() -> None:
    spec = placement_spec(placement({"downsync": [
        {"apiGroup": "example.com", "resources": ["gadgets"], "objectNames": ["g1"]},
        {"apiGroup": "apiextensions.k8s.io", "objectNames": ["gadgets.example.com"]}]}))
    placed = select(spec, CR_WORKLOAD, CR_KINDS, {})
    assert refs(placed) == [("CustomResourceDefinition", "gadgets.example.com", 1), ("Gadget", "g1", 0)]


@pytest.mark.parametrize("downsync", [[{"resources": ["configmaps"]}],
                                      [{"apiGroup": "example.com", "resources": ["gadgets"]}]],
                         ids=["no-custom-resource-matched", "custom-resources-upsynced-instead"])
def test_no_crd_without_a_placed_custom_resource(downsync: list) -> None:
    body = {"downsync": downsync,
            "upsync": [{"apiGroup": "example.com", "resources": ["gadgets"], "namespaces": ["*"], "names": ["*"]}]}
    placed = select(placement_spec(placement(body)), CR_WORKLOAD, CR_KINDS, {})
    assert "CustomResourceDefinition" not in {p.obj.kind for p in placed}


def test_crd_of_another_wds_does_not_come_along() -> None:
    spec = placement_spec(placement({"downsync": [{"apiGroup": "example.com"}]}))
    placed = select(spec, [*GADGETS], CR_KINDS, {})  # the Gadget CRD lives elsewhere
    assert refs(placed) == [("Gadget", "g1", 0), ("Gadget", "g2", 0)]


def test_each_placed_resource_brings_its_own_crd() -> None:
    spec = placement_spec(placement({"downsync": [{"apiGroup": "example.com"}]}))
    placed = select(spec, CR_WORKLOAD, CR_KINDS, {})
    assert [(kind, name) for kind, name, clause in refs(placed) if clause == ALONG] == [
        ("CustomResourceDefinition", "gadgets.example.com"), ("CustomResourceDefinition", "sprockets.example.com")]
    assert along_line(GADGET_CRD).startswith("comes along: it defines the Gadget objects")


# --- explain --------------------------------------------------------------------------------

def test_explain_lines_per_clause() -> None:
    spec = placement_spec(placement({"downsync": [{"resources": ["configmaps"]}, {"objectNames": ["web"]}]}))
    lines = explain_object(spec, DEPLOY, KINDS, NS_LABELS)
    assert lines == [
        "spec.downsync[0]: does not match: resources ['configmaps'] include neither \"*\" nor the object's "
        "resource 'deployments'",
        "spec.downsync[1]: matches",
    ]


def test_explain_upsync_precedence() -> None:
    spec = placement_spec(placement({"downsync": [{"objectNames": ["web"]}], "upsync": [
        {"apiGroup": "batch", "resources": ["*"], "namespaces": ["*"], "names": ["*"]},
        {"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"], "names": ["*"]}]}))
    lines = explain_object(spec, DEPLOY, KINDS, NS_LABELS)
    assert lines[0] == "spec.downsync[0]: matches"
    assert lines[1] == "spec.upsync[1] matches it and upsync wins over downsync, so it is not downsynced"
    assert len(lines) == 2


def test_explain_never_downsynced() -> None:
    spec = placement_spec(placement({"downsync": [{"namespaces": ["*"]}]}))
    lines = explain_object(spec, SA_DEFAULT, KINDS, {})
    assert lines[0] == "spec.downsync[0]: matches"
    assert lines[1].startswith("never downsynced: ") and "default" in lines[1]


def test_explain_unknown_kind_and_no_clauses() -> None:
    spec = placement_spec(placement({"downsync": [{"namespaces": ["*"]}]}))
    (line,) = explain_object(spec, WIDGET, KINDS, {})
    assert "'Widget'" in line and "unknown" in line
    assert explain_object(placement_spec(placement({})), CM, KINDS, {}) == [
        "the placement has no downsync clauses, so it downsyncs nothing"]


def test_explain_names_v1alpha1_sources() -> None:
    spec = placement_spec(placement({"namespaceSelector": {"matchLabels": {"team": "a"}},
                                     "nonNamespacedObjects": [{"resources": ["namespaces"],
                                                               "resourceNames": ["ns1"]}]}, V1))
    lines = explain_object(spec, NS1, KINDS, NS_LABELS)
    assert lines[0].startswith("spec.namespaceSelector (v1alpha1): does not match: ")  # a Namespace is cluster-scoped
    assert lines[1] == "spec.nonNamespacedObjects[0].resourceNames (v1alpha1): matches"


# --- namespace labels and selector problems -------------------------------------------------

def test_namespace_labels() -> None:
    """As the WDS's API server has them: with the kubernetes.io/metadata.name label it puts on
    every Namespace (Kubernetes 1.21+, so in the kcp that KubeStellar v0.14 runs on)."""
    workload = [NS1, mk("v1", "Namespace", "bare"), mk("example.com/v1", "Namespace", "fake", labels={"a": "b"}),
                CM, mk("v1", "Namespace", "odd", labels=["not", "a", "map"])]
    name = "kubernetes.io/metadata.name"
    assert namespace_labels(workload) == {"ns1": {"team": "a", name: "ns1"}, "bare": {name: "bare"},
                                          "odd": {name: "odd"}}


def test_namespace_object_is_matched_by_its_name_label() -> None:
    clause = {"resources": ["namespaces"], "labelSelectors": [{"matchLabels": {"kubernetes.io/metadata.name": "ns1"}}]}
    assert clause_matches(clause, NS1, info(NS1), {})
    other = mk("v1", "Namespace", "ns2")
    assert "no labelSelector matches the object's labels {'kubernetes.io/metadata.name': 'ns2'}" in (
        clause_mismatch(clause, other, info(other), {}) or "")


def test_selector_problems_name_field_paths() -> None:
    ep = placement({
        "locationSelectors": [{"matchLabels": {"env": "prod"}}, {"matchLabels": {"-bad": "x"}}],
        "downsync": [
            {"labelSelectors": [{}]},
            {"namespaceSelectors": [{"bogus": 1}], "labelSelectors": [{}, {"matchExpressions": [
                {"key": "a", "operator": "In"}]}]},
            {"labelSelectors": [None]},
        ],
    })
    problems = selector_problems(ep)
    assert len(problems) == 4, problems
    assert problems[0].startswith("spec.locationSelectors[1]: ") and "'-bad'" in problems[0]
    assert problems[1].startswith("spec.downsync[1].namespaceSelectors[0]: unknown field(s) bogus")
    assert problems[2].startswith("spec.downsync[1].labelSelectors[1]: matchExpressions[0]: operator In")
    assert problems[3] == "spec.downsync[2].labelSelectors[0]: must be a label selector, not null"


def test_selector_problems_v1alpha1() -> None:
    ep = placement({"namespaceSelector": {"matchLabels": {"a": 1}},
                    "nonNamespacedObjects": [{"resources": ["*"], "labelSelectors": [{"x": 1}]}],
                    "locationSelectors": {"matchLabels": {}}}, V1)
    assert selector_problems(ep) == [
        "spec.locationSelectors: must be a list of label selectors",
        "spec.namespaceSelector: matchLabels: label value 1 must be a string",
        "spec.nonNamespacedObjects[0].labelSelectors[0]: unknown field(s) x (a label selector has matchLabels "
        "and matchExpressions)",
    ]


def test_selector_problems_none_for_valid_placement() -> None:
    ep = placement({"locationSelectors": [{}], "downsync": [{"namespaceSelectors": [{}],
                                                            "labelSelectors": [{"matchLabels": {"a": ""}}]}]})
    assert selector_problems(ep) == []
    assert selector_problems(placement({"namespaceSelector": None}, V1)) == []
