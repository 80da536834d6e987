"""v1alpha1 EdgePlacements converted to v2alpha1 (shape, what they select, the absent or empty
namespace selector), v2alpha1 clauses normalized (no private markers smuggled in, malformed values
become empty)."""
from __future__ import annotations

import copy

import pytest

from ksgitops.core.place.what import clause_matches, clause_mismatch, explain_object, placement_spec, select
from what_objects import CM, CM_NS2, CROLE, DEPLOY, KINDS, NS1, NS_LABELS, V1, info, mk, placement


# --- v1alpha1 -------------------------------------------------------------------------------

def test_v1alpha1_conversion_shape() -> None:
    """KubeStellar v0.7.0 pkg/placement/what-resolver.go `whatMatches`: nonNamespacedObjects match by
    exact apiGroup ("" when absent), resources, then a listed name OR a matching label selector."""
    body = {
        "locationSelectors": [{"matchLabels": {"env": "prod"}}],
        "namespaceSelector": {"matchLabels": {"team": "a"}},
        "nonNamespacedObjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"], "resourceNames": ["reader"]},
            {"resources": ["namespaces"], "resourceNames": ["*"], "labelSelectors": [{}]},
            {"resources": [], "resourceNames": ["x"]},  # nothing
            {"resources": ["persistentvolumes"], "resourceNames": []},  # nothing
            {"resources": ["*"], "resourceNames": ["*"], "apiGroup": None},  # null group is the core group
        ],
        "upsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["*"], "names": ["*"]}],
    }
    spec = placement_spec(placement(body, V1))
    assert spec == {
        "locationSelectors": [{"matchLabels": {"env": "prod"}}],
        "downsync": [
            {"namespaceSelectors": [{"matchLabels": {"team": "a"}}], "_scope": "Namespaced",
             "_source": "spec.namespaceSelector"},
            {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"], "objectNames": ["reader"],
             "_scope": "Cluster", "_source": "spec.nonNamespacedObjects[0].resourceNames"},
            {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["*"], "_scope": "Cluster",
             "_namespaceGate": {"matchLabels": {"team": "a"}}, "_source": "spec.nonNamespacedObjects[1].resourceNames"},
            {"apiGroup": "", "resources": ["namespaces"], "labelSelectors": [{}], "_scope": "Cluster",
             "_namespaceGate": {"matchLabels": {"team": "a"}},
             "_source": "spec.nonNamespacedObjects[1].labelSelectors"},
            {"apiGroup": "", "resources": ["*"], "objectNames": ["*"], "_scope": "Cluster",
             "_namespaceGate": {"matchLabels": {"team": "a"}}, "_source": "spec.nonNamespacedObjects[4].resourceNames"},
        ],
        "upsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["*"], "names": ["*"]}],
        "wantSingletonReportedState": False,
        "statusCollectors": [],
    }


# KubeStellar v0.7.0 pkg/apis/edge/v1alpha1/edge-placement.go holds `namespaceSelector` by value,
# so absent or null is the empty LabelSelector, which pkg/placement/what-resolver.go (`whatMatches`,
# metav1.LabelSelectorAsSelector) turns into "everything": every namespace is selected.
NO_NS = {"namespaceSelector": {"matchLabels": {"selects": "no-namespace"}}}
ALL_NAMESPACED = {("ConfigMap", "cfg@ns1"), ("ConfigMap", "cfg@ns2"), ("Deployment", "web@ns1"),
                  ("Role", "reader@ns9x")}

V1_SELECT = [
    # (id, v1alpha1 spec, objects expected to be selected (by kind/name) from V1_WORKLOAD)
    ("empty-ns-selector-namespaced-only", {"namespaceSelector": {}}, ALL_NAMESPACED),
    ("absent-ns-selector-is-empty-selects-all", {}, ALL_NAMESPACED),
    ("null-ns-selector-is-empty-selects-all", {"namespaceSelector": None}, ALL_NAMESPACED),
    ("labelled-ns-selector", {"namespaceSelector": {"matchLabels": {"team": "a"}}},
     {("ConfigMap", "cfg@ns1"), ("Deployment", "web@ns1")}),
    ("doesnotexist-ns-selector-not-cluster", {"namespaceSelector": {"matchExpressions": [
        {"key": "team", "operator": "DoesNotExist"}]}}, set()),
    ("non-namespaced-core-default", {"namespaceSelector": {"matchLabels": {"team": "a"}},
                                     "nonNamespacedObjects": [{"resources": ["namespaces"], "resourceNames": ["ns1"]}]},
     {("Namespace", "ns1@"), ("ConfigMap", "cfg@ns1"), ("Deployment", "web@ns1")}),
    ("non-namespaced-star", {**NO_NS, "nonNamespacedObjects": [{"apiGroup": "rbac.authorization.k8s.io",
                                                               "resources": ["*"], "resourceNames": ["*"]}]},
     {("ClusterRole", "reader@")}),  # the namespaced Role of the same group is not admitted
    # v0.7 `whatMatches`: "*" means all only as the single entry; among others it is a literal name
    ("non-namespaced-star-among-resources-is-literal", {**NO_NS, "nonNamespacedObjects": [
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["*", "clusterroles"], "resourceNames": ["*"]}]},
     {("ClusterRole", "reader@")}),
    ("non-namespaced-star-among-names-is-literal", {**NO_NS, "nonNamespacedObjects": [
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"], "resourceNames": ["*", "other"]}]},
     set()),
    ("non-namespaced-only-literal-stars", {**NO_NS, "nonNamespacedObjects": [
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["*", "*"], "resourceNames": ["*"]}]}, set()),
    ("non-namespaced-wrong-group", {**NO_NS, "nonNamespacedObjects": [{"resources": ["clusterroles"],
                                                                      "resourceNames": ["*"]}]}, set()),
    ("non-namespaced-namespaced-resource", {**NO_NS, "nonNamespacedObjects": [{"resources": ["configmaps"],
                                                                              "resourceNames": ["*"]}]}, set()),
    ("non-namespaced-empty-names", {**NO_NS, "nonNamespacedObjects": [{"resources": ["namespaces"],
                                                                      "resourceNames": []}]}, set()),
    ("non-namespaced-empty-resources", {**NO_NS, "nonNamespacedObjects": [{"resources": [],
                                                                          "resourceNames": ["*"]}]}, set()),
    ("non-namespaced-names-or-labels", {**NO_NS, "nonNamespacedObjects": [{
        "apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"], "resourceNames": ["other"],
        "labelSelectors": [{"matchLabels": {"app": "web"}}]}]}, {("ClusterRole", "reader@")}),
    ("both", {"namespaceSelector": {"matchLabels": {"team": "b"}},
              "nonNamespacedObjects": [{"resources": ["namespaces"], "resourceNames": ["ns2"]}]},
     {("ConfigMap", "cfg@ns2"), ("Namespace", "ns2@")}),
    # KubeStellar v0.7.0 pkg/placement/what-resolver.go never reads `upsync`: it does not unselect
    ("upsync-carried-over-does-not-unselect", {"namespaceSelector": {}, "upsync": [
        {"resources": ["configmaps"], "namespaces": ["*"], "names": ["*"]}]}, ALL_NAMESPACED),
    # ... and `setByMatch` places a Namespace only when namespaceSelector selects it, whatever
    # nonNamespacedObjects says
    ("namespace-named-but-not-selected", {**NO_NS, "nonNamespacedObjects": [
        {"resources": ["namespaces"], "resourceNames": ["*"]}]}, set()),
    ("namespace-by-labels-but-not-selected", {"namespaceSelector": {"matchLabels": {"team": "b"}},
                                              "nonNamespacedObjects": [{"resources": ["*"], "resourceNames": ["ns1"],
                                                                        "labelSelectors": [{}]}]},
     {("Namespace", "ns2@"), ("ConfigMap", "cfg@ns2")}),
    # the gate tests the Namespace's own labels, name label included (V1_NS_LABELS, what the
    # namespaced half sees here, leaves that label out)
    ("namespace-gate-sees-the-name-label", {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns2"}},
        "nonNamespacedObjects": [{"resources": ["namespaces"], "resourceNames": ["*"]}]},
     {("Namespace", "ns2@")}),
]

V1_WORKLOAD = [
    NS1, mk("v1", "Namespace", "ns2", labels={"team": "b"}), CM, CM_NS2, DEPLOY, CROLE,
    mk("rbac.authorization.k8s.io/v1", "Role", "reader", "ns9x"),
]
V1_NS_LABELS = {"ns1": {"team": "a"}, "ns2": {"team": "b"}, "ns9x": {"team": "c"}}


@pytest.mark.parametrize("body,expected", [c[1:] for c in V1_SELECT], ids=[c[0] for c in V1_SELECT])
def test_v1alpha1_selection(body: dict, expected: set) -> None:
    placed = select(placement_spec(placement(body, V1)), V1_WORKLOAD, KINDS, V1_NS_LABELS)
    assert {(p.obj.kind, f"{p.obj.name}@{p.obj.namespace}") for p in placed} == expected


def test_v1alpha1_absent_namespace_selector_converts_to_the_empty_selector() -> None:
    spec = placement_spec(placement({"nonNamespacedObjects": []}, V1))
    assert spec["downsync"] == [{"namespaceSelectors": [{}], "_scope": "Namespaced",
                                 "_source": "spec.namespaceSelector"}]
    lines = explain_object(spec, CM, KINDS, NS_LABELS)
    assert lines == ["spec.namespaceSelector (v1alpha1): matches"]


def test_v1alpha1_empty_selector_admits_namespaced_role_but_not_cluster_role() -> None:
    spec = placement_spec(placement({"namespaceSelector": {}}, V1))
    placed = select(spec, V1_WORKLOAD, KINDS, V1_NS_LABELS)
    assert ("Role", "ns9x") in {(p.obj.kind, p.obj.namespace) for p in placed}
    assert "ClusterRole" not in {p.obj.kind for p in placed}
    clause = spec["downsync"][0]
    assert "admits only namespaced objects" in (clause_mismatch(clause, CROLE, info(CROLE), {}) or "")


def test_v1alpha1_explain_names_the_namespace_gate_and_the_upsync_that_does_not_win() -> None:
    """KubeStellar v0.7.0 pkg/placement/what-resolver.go (`setByMatch`, `whatMatches`)."""
    spec = placement_spec(placement({**NO_NS, "nonNamespacedObjects": [{"resources": ["namespaces"],
                                                                       "resourceNames": ["ns1"]}],
                                     "upsync": [{"resources": ["namespaces"], "names": ["*"]}]}, V1))
    lines = explain_object(spec, NS1, KINDS, V1_NS_LABELS)
    assert lines[1] == ("spec.nonNamespacedObjects[0].resourceNames (v1alpha1): does not match: a v1alpha1 "
                        "placement places a Namespace only when its spec.namespaceSelector selects it, and it "
                        "does not select the labels {'team': 'a', 'kubernetes.io/metadata.name': 'ns1'} of "
                        "Namespace 'ns1'")
    assert lines[2] == ("spec.upsync[0] matches it, but a v1alpha1 placement's upsync does not stop its downsync "
                        "(KubeStellar v0.7)")


def test_v2alpha1_clause_cannot_smuggle_private_markers() -> None:
    spec = placement_spec(placement({"downsync": [{"_scope": "Namespaced", "_source": "x", "_namespaceGate": {"a": 1},
                                                   "resources": ["clusterroles"]}]}))
    assert spec["downsync"] == [{"resources": ["clusterroles"]}]
    assert clause_matches(spec["downsync"][0], CROLE, info(CROLE), {})


def test_placement_spec_v2_normalization_and_copy() -> None:
    body = {"locationSelectors": [{"matchLabels": {"env": "prod"}}], "downsync": [{"objectNames": ["web"]}],
            "wantSingletonReportedState": True, "statusCollectors": ["count"], "unknown": 1}
    ep = placement(body)
    before = copy.deepcopy(ep.body)
    spec = placement_spec(ep)
    assert spec == {"locationSelectors": [{"matchLabels": {"env": "prod"}}],
                    "downsync": [{"objectNames": ["web"]}], "upsync": [],
                    "wantSingletonReportedState": True, "statusCollectors": ["count"]}
    spec["downsync"][0]["objectNames"].append("x")
    spec["locationSelectors"][0]["matchLabels"]["env"] = "dev"
    assert ep.body == before


@pytest.mark.parametrize("body", [{}, {"downsync": None, "upsync": "x", "locationSelectors": {}},
                                  {"wantSingletonReportedState": "yes"}])
def test_placement_spec_malformed_values_become_empty(body: dict) -> None:
    spec = placement_spec(placement(body))
    assert spec == {"locationSelectors": [], "downsync": [], "upsync": [],
                    "wantSingletonReportedState": False, "statusCollectors": []}
