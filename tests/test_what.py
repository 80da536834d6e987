"""What an EdgePlacement selects: clauses, upsync, never-downsynced objects, v1alpha1 conversion."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from ksgitops.core.place.what import (ALONG, Placed, along_line, clause_matches, clause_mismatch, explain_object, namespace_labels, never_downsynced, placement_spec, select, selector_problems, upsync_matches)
from ksgitops.kinds import KindInfo, KindTable
from ksgitops.model import Obj, Origin

KINDS = KindTable()


def mk(api: str, kind: str, name: str, ns: str | None = None, labels: dict | None = None,
       **top: Any) -> Obj:
    """An object of the WDS `wds`."""
    md: dict[str, Any] = {"name": name}
    if ns is not None:
        md["namespace"] = ns
    if labels is not None:
        md["labels"] = labels
    return Obj(space="wds", body={"apiVersion": api, "kind": kind, "metadata": md, **top},
               origin=Origin("spaces/wds/x.yaml", 1))


def info(o: Obj) -> KindInfo:
    found = KINDS.lookup(o.group, o.kind)
    assert found is not None
    return found


def placement(spec: dict, api: str = "edge.kubestellar.io/v2alpha1", name: str = "p") -> Obj:
    return mk(api, "EdgePlacement", name, spec=spec)


DEPLOY = mk("apps/v1", "Deployment", "web", "ns1", {"app": "web", "tier": "front"})
CM = mk("v1", "ConfigMap", "cfg", "ns1", {"app": "web"})
CM_NS2 = mk("v1", "ConfigMap", "cfg", "ns2")
CM_NS_UNDEFINED = mk("v1", "ConfigMap", "cfg", "ghost")
CROLE = mk("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", labels={"app": "web"})
NS1 = mk("v1", "Namespace", "ns1", labels={"team": "a"})
NS_LABELS = {"ns1": {"team": "a", "env": "prod"}, "ns2": {"team": "b"}}


# --- the six criteria -----------------------------------------------------------------------

CRITERIA = [
    # (id, clause, object, mismatch fragment or None when it matches)
    # 1. apiGroup
    ("group-absent-any", {}, DEPLOY, None),
    ("group-null-any", {"apiGroup": None}, DEPLOY, None),
    ("group-equal", {"apiGroup": "apps"}, DEPLOY, None),
    ("group-core-vs-apps", {"apiGroup": ""}, DEPLOY, "apiGroup \"\" (core) is not the object's group 'apps'"),
    ("group-core-hit", {"apiGroup": ""}, CM, None),
    ("group-apps-vs-core", {"apiGroup": "apps"}, CM, "apiGroup 'apps' is not the object's group \"\" (core)"),
    # 2. resources
    ("resources-empty", {"resources": []}, DEPLOY, None),
    ("resources-star", {"resources": ["*"]}, DEPLOY, None),
    ("resources-plural", {"resources": ["configmaps", "deployments"]}, DEPLOY, None),
    ("resources-miss", {"resources": ["configmaps"]}, DEPLOY, "resources ['configmaps'] include neither"),
    ("resources-kind-is-not-resource", {"resources": ["Deployment"]}, DEPLOY, "'deployments'"),
    # 3. namespaces
    ("namespaces-empty", {"namespaces": []}, DEPLOY, None),
    ("namespaces-star", {"namespaces": ["*"]}, DEPLOY, None),
    ("namespaces-hit", {"namespaces": ["ns0", "ns1"]}, DEPLOY, None),
    ("namespaces-miss", {"namespaces": ["ns2"]}, DEPLOY, "the object's namespace 'ns1'"),
    ("namespaces-cluster-empty", {"namespaces": []}, CROLE, None),
    ("namespaces-cluster-star", {"namespaces": ["*"]}, CROLE, None),
    ("namespaces-cluster-named", {"namespaces": ["ns1"]}, CROLE, "which a cluster-scoped object needs"),
    ("namespaces-cluster-empty-string", {"namespaces": [""]}, CROLE, "which a cluster-scoped object needs"),
    # 4. namespaceSelectors
    ("nssel-empty", {"namespaceSelectors": []}, DEPLOY, None),
    ("nssel-hit", {"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}, DEPLOY, None),
    ("nssel-or", {"namespaceSelectors": [{"matchLabels": {"team": "z"}},
                                         {"matchExpressions": [{"key": "env", "operator": "In",
                                                                "values": ["prod"]}]}]}, DEPLOY, None),
    ("nssel-miss", {"namespaceSelectors": [{"matchLabels": {"team": "b"}}]}, DEPLOY,
     "no namespaceSelector matches the labels {'team': 'a', 'env': 'prod'} of Namespace 'ns1'"),
    ("nssel-other-namespace", {"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}, CM_NS2,
     "of Namespace 'ns2'"),
    # the API server labels every Namespace with its name (kubernetes.io/metadata.name), so a
    # Namespace missing from the WDS has that label only
    ("nssel-undefined-namespace-has-only-its-name-label",
     {"namespaceSelectors": [{"matchLabels": {"team": "a"}}]},
     CM_NS_UNDEFINED, "the labels {'kubernetes.io/metadata.name': 'ghost'} of Namespace 'ghost'"),
    ("nssel-undefined-namespace-by-name-label",
     {"namespaceSelectors": [{"matchLabels": {"kubernetes.io/metadata.name": "ghost"}}]}, CM_NS_UNDEFINED, None),
    ("nssel-undefined-namespace-empty-selector", {"namespaceSelectors": [{}]}, CM_NS_UNDEFINED, None),
    ("nssel-cluster-empty-selector", {"namespaceSelectors": [{}]}, CROLE, None),
    ("nssel-cluster-doesnotexist", {"namespaceSelectors": [{"matchExpressions": [
        {"key": "team", "operator": "DoesNotExist"}]}]}, CROLE, None),
    ("nssel-cluster-label", {"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}, CROLE,
     "empty labels a cluster-scoped object is tested against"),
    ("nssel-null-selector", {"namespaceSelectors": [None]}, DEPLOY, "no namespaceSelector matches"),
    # 5. objectNames
    ("names-empty", {"objectNames": []}, DEPLOY, None),
    ("names-star", {"objectNames": ["*"]}, DEPLOY, None),
    ("names-hit", {"objectNames": ["web"]}, DEPLOY, None),
    ("names-miss", {"objectNames": ["api"]}, DEPLOY,
     "objectNames ['api'] include neither \"*\" nor the object's name 'web'"),
    # 6. labelSelectors
    ("labels-empty", {"labelSelectors": []}, DEPLOY, None),
    ("labels-hit", {"labelSelectors": [{"matchLabels": {"app": "web"}}]}, DEPLOY, None),
    ("labels-or", {"labelSelectors": [{"matchLabels": {"app": "x"}}, {"matchLabels": {"tier": "front"}}]},
     DEPLOY, None),
    ("labels-miss", {"labelSelectors": [{"matchLabels": {"app": "db"}}]}, DEPLOY,
     "no labelSelector matches the object's labels {'app': 'web', 'tier': 'front'}"),
    ("labels-unlabelled", {"labelSelectors": [{"matchLabels": {"app": "web"}}]}, CM_NS2, "labels {}"),
    # all six at once, and the first failing criterion is the one reported
    ("all-six-hit", {"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["ns1"],
                     "namespaceSelectors": [{"matchLabels": {"team": "a"}}], "objectNames": ["web"],
                     "labelSelectors": [{"matchLabels": {"app": "web"}}]}, DEPLOY, None),
    ("first-failure-group", {"apiGroup": "batch", "resources": ["jobs"], "objectNames": ["x"]}, DEPLOY,
     "apiGroup 'batch'"),
    ("first-failure-resources", {"apiGroup": "apps", "resources": ["jobs"], "objectNames": ["x"]}, DEPLOY,
     "resources ['jobs']"),
    ("first-failure-names", {"apiGroup": "apps", "objectNames": ["x"],
                             "labelSelectors": [{"matchLabels": {"no": "pe"}}]}, DEPLOY, "objectNames ['x']"),
]


@pytest.mark.parametrize("clause,obj,fragment", [c[1:] for c in CRITERIA], ids=[c[0] for c in CRITERIA])
def test_clause_criteria(clause: dict, obj: Obj, fragment: str | None) -> None:
    why = clause_mismatch(clause, obj, info(obj), NS_LABELS)
    assert clause_matches(clause, obj, info(obj), NS_LABELS) is (fragment is None)
    if fragment is None:
        assert why is None
    else:
        assert why is not None and fragment in why, why


def test_cluster_scoped_object_with_stray_namespace_is_cluster_scoped() -> None:
    stray = mk("v1", "Namespace", "ns1", "ns1")
    assert not clause_matches({"namespaces": ["ns1"]}, stray, info(stray), NS_LABELS)
    assert not clause_matches({"namespaceSelectors": [{"matchLabels": {"team": "a"}}]}, stray, info(stray),
                              NS_LABELS)
    assert clause_matches({"namespaces": ["*"]}, stray, info(stray), NS_LABELS)


@pytest.mark.parametrize("clause", [None, "all", ["resources"]])
def test_non_map_clause_matches_nothing(clause: Any) -> None:
    assert not clause_matches(clause, DEPLOY, info(DEPLOY), NS_LABELS)
    assert "not a map" in (clause_mismatch(clause, DEPLOY, info(DEPLOY), NS_LABELS) or "")


# --- upsync ---------------------------------------------------------------------------------

UPSYNC = [
    # (id, upsync sets, object, expected)
    # KubeStellar v0.14 looked the namespace and the name up in `resources`: these two catch that bug
    ("bug-exact-set-matches", [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["ns1"],
                                "names": ["cfg"]}], CM, True),
    ("bug-names-in-resources-do-not-count", [{"resources": ["configmaps", "ns1", "cfg"],
                                              "namespaces": ["other"], "names": ["other"]}], CM, False),
    ("apigroup-absent-is-core", [{"resources": ["configmaps"], "namespaces": ["*"], "names": ["*"]}], CM, True),
    ("apigroup-absent-is-not-any", [{"resources": ["*"], "namespaces": ["*"], "names": ["*"]}], DEPLOY, False),
    ("apigroup-exact", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"], "names": ["*"]}],
     DEPLOY, True),
    ("apigroup-other", [{"apiGroup": "batch", "resources": ["*"], "namespaces": ["*"], "names": ["*"]}],
     DEPLOY, False),
    ("resources-empty-nothing", [{"apiGroup": "apps", "resources": [], "namespaces": ["*"], "names": ["*"]}],
     DEPLOY, False),
    ("resources-absent-nothing", [{"apiGroup": "apps", "namespaces": ["*"], "names": ["*"]}], DEPLOY, False),
    ("resources-other", [{"apiGroup": "apps", "resources": ["statefulsets"], "namespaces": ["*"],
                          "names": ["*"]}], DEPLOY, False),
    ("namespaces-empty-nothing", [{"apiGroup": "apps", "resources": ["*"], "namespaces": [], "names": ["*"]}],
     DEPLOY, False),
    ("namespaces-absent-nothing", [{"apiGroup": "apps", "resources": ["*"], "names": ["*"]}], DEPLOY, False),
    ("namespaces-other", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["ns2"], "names": ["*"]}],
     DEPLOY, False),
    ("names-empty-nothing", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"], "names": []}],
     DEPLOY, False),
    ("names-absent-nothing", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"]}], DEPLOY, False),
    ("names-other", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"], "names": ["api"]}],
     DEPLOY, False),
    ("cluster-scoped-ignores-namespaces", [{"apiGroup": "rbac.authorization.k8s.io",
                                            "resources": ["clusterroles"], "names": ["reader"]}], CROLE, True),
    ("cluster-scoped-ignores-namespace-list", [{"apiGroup": "rbac.authorization.k8s.io", "resources": ["*"],
                                                "namespaces": ["ns9"], "names": ["*"]}], CROLE, True),
    ("or-over-sets", [{"apiGroup": "apps", "resources": ["*"], "namespaces": ["*"], "names": ["api"]},
                      {"apiGroup": "apps", "resources": ["*"], "namespaces": ["ns1"], "names": ["web"]}],
     DEPLOY, True),
    ("no-sets", [], DEPLOY, False),
    ("non-map-set-ignored", ["everything"], DEPLOY, False),
]


@pytest.mark.parametrize("sets,obj,expected", [u[1:] for u in UPSYNC], ids=[u[0] for u in UPSYNC])
def test_upsync_matches(sets: list, obj: Obj, expected: bool) -> None:
    assert upsync_matches(sets, obj, info(obj)) is expected


# --- never downsynced -----------------------------------------------------------------------

NEVER = [
    (mk("v1", "ServiceAccount", "default", "ns1"), True),
    (mk("v1", "ServiceAccount", "builder", "ns1"), False),
    (mk("v1", "ConfigMap", "kube-root-ca.crt", "ns1"), True),
    (mk("v1", "ConfigMap", "kube-root-ca", "ns1"), False),
    (mk("v1", "Secret", "t", "ns1", type="kubernetes.io/service-account-token"), True),
    (mk("v1", "Secret", "t", "ns1", type="bootstrap.kubernetes.io/token"), True),
    (mk("v1", "Secret", "t", "ns1", type="Opaque"), False),
    (mk("v1", "Secret", "t", "ns1"), False),
    (mk("v1", "Secret", "default", "ns1"), False),
    (mk("v1", "ConfigMap", "default", "ns1"), False),
    (mk("example.com/v1", "ServiceAccount", "default", "ns1"), False),  # not core
    (mk("example.com/v1", "ConfigMap", "kube-root-ca.crt", "ns1"), False),
    (mk("edge.kubestellar.io/v2alpha1", "EdgePlacement", "p"), True),
    (mk("edge.kubestellar.io/v1alpha1", "EdgePlacement", "p"), True),
    (mk("edge.kubestellar.io/v2alpha1", "Customizer", "c", "ns1"), True),
    (mk("edge.kubestellar.io/v2alpha1", "SyncTarget", "s"), True),
    (mk("edge.kubestellar.io/v2alpha1", "Location", "l"), True),
    (mk("space.kubestellar.io/v1alpha1", "Space", "s"), True),
    (mk("control.kubestellar.io/v1alpha1", "StatusCollector", "s", "ns1"), True),
    (mk("ksgitops.kubestellar.io/v1alpha1", "RepoConfig", "r"), True),
    (mk("example.com/v1", "EdgePlacement", "p"), False),  # a workload CRD that happens to share the name
    (DEPLOY, False),
]


@pytest.mark.parametrize("obj,expected", NEVER, ids=[f"{o.api_version}-{o.kind}-{o.name}" for o, _ in NEVER])
def test_never_downsynced(obj: Obj, expected: bool) -> None:
    """The system objects: KubeStellar v0.14.2 pkg/placement/workload-projector.go `ObjectIsSystem`
    (apiVersion exactly v1), which what-resolver.go `whatMatches` applies before any clause."""
    assert never_downsynced(obj) is expected


# KubeStellar v0.14.2 pkg/placement/what-resolver.go: `GRsNotForEdge`, `GroupsNotForEdge` and
# `GRsNotSupported` are never watched, so never downsynced; APIBindings (`NaturedInCenterGoToMailbox`)
# stop at the mailbox: workload-projector.go leaves them out of the SyncerConfig.
OFF_EDGE = [
    ("v1", "Event", "e", "ns1", "Event of the core group never reaches a WEC"),
    ("events.k8s.io/v1", "Event", "e", "ns1", "Event of events.k8s.io never reaches a WEC"),
    ("v1", "Node", "n", None, "Node of the core group"),
    ("v1", "Binding", "b", "ns1", "Binding of the core group"),
    ("v1", "ComponentStatus", "etcd-0", None, "ComponentStatus"),
    ("apps/v1", "ControllerRevision", "r", "ns1", "ControllerRevision of apps"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest", "c", None, "CertificateSigningRequest"),
    ("authentication.k8s.io/v1", "TokenReview", "t", None, "a request to the API server"),
    ("authorization.k8s.io/v1", "SubjectAccessReview", "s", None, "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview", "s", None, "SelfSubjectRulesReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview", "s", "ns1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview", "s", None, "SelfSubjectAccessReview"),
    ("apis.kcp.io/v1alpha1", "APIExport", "x", None, "APIExport of apis.kcp.io"),
    ("apis.kcp.io/v1alpha1", "APIResourceSchema", "x", None, "APIResourceSchema"),
    ("apis.kcp.io/v1alpha1", "APIExportEndpointSlice", "x", None, "APIExportEndpointSlice"),
    ("apis.kcp.io/v1alpha1", "APIBinding", "bind-kube", None, "keeps it in the mailbox"),
    ("apis.kcp.io/v1alpha1", "APIConversion", "x", None, "does not support"),
    ("apiresource.kcp.io/v1alpha1", "APIResourceImport", "x", None, "does not support"),
    ("apiresource.kcp.io/v1alpha1", "NegotiatedAPIResource", "x", None, "does not support"),
    ("core.kcp.io/v1alpha1", "LogicalCluster", "cluster", None, "LogicalCluster"),
    ("core.kcp.io/v1alpha1", "Shard", "root", None, "Shard"),
    ("edge.kubestellar.io/v2alpha1", "EdgeSyncConfig", "x", None, "no edge.kubestellar.io object"),
    ("edge.kubestellar.io/v1alpha1", "SinglePlacementSlice", "x", None, "control kind"),
    ("workload.kcp.io/v1alpha1", "SyncTarget", "x", None, "no workload.kcp.io object"),
    ("scheduling.kcp.io/v1alpha1", "Placement", "x", None, "no scheduling.kcp.io object"),
    ("tenancy.kcp.io/v1alpha1", "Workspace", "x", None, "no tenancy.kcp.io object"),
    ("topology.kcp.io/v1alpha1", "Partition", "x", None, "no topology.kcp.io object"),
]
OFF_KINDS = KindTable({(api.rpartition("/")[0], kind): KindInfo(kind.lower() + "s", ns is not None)
                       for api, kind, _, ns, _ in OFF_EDGE if api.rpartition("/")[0] != "edge.kubestellar.io"})


@pytest.mark.parametrize("api,kind,name,ns,fragment", OFF_EDGE, ids=[f"{c[0]}-{c[1]}" for c in OFF_EDGE])
def test_kinds_kept_off_the_edge_even_under_star(api: str, kind: str, name: str, ns: str | None,
                                                 fragment: str) -> None:
    obj = mk(api, kind, name, ns)
    assert never_downsynced(obj) and never_downsynced(obj, OFF_KINDS)
    spec = placement_spec(placement({"downsync": [{"resources": ["*"], "namespaces": ["*"], "objectNames": ["*"]}]}))
    assert select(spec, [obj], OFF_KINDS, {}) == []
    lines = explain_object(spec, obj, OFF_KINDS, {})
    assert lines[-1].startswith("never downsynced: ") and fragment in lines[-1], lines


@pytest.mark.parametrize("api,kind", [("example.com/v1", "Event"), ("apps/v1", "Deployment"),
                                      ("apiregistration.k8s.io/v1", "APIService"), ("v1", "Namespace"),
                                      ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                                      ("example.kcp.io/v1", "Widget")])
def test_kinds_that_do_reach_the_edge(api: str, kind: str) -> None:
    assert not never_downsynced(mk(api, kind, "x"))


def test_off_edge_rule_also_matches_by_resource() -> None:
    """A RepoConfig may map a kind of its own to one of the resources kept off the edge."""
    kinds = KindTable({("apps", "Revision"): KindInfo("controllerrevisions", True)})
    obj = mk("apps/v1", "Revision", "r", "ns1")
    assert never_downsynced(obj, kinds) and not never_downsynced(obj)


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


# --- v1alpha1 -------------------------------------------------------------------------------

V1 = "edge.kubestellar.io/v1alpha1"


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
            {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["*"],
             "_scope": "Cluster", "_source": "spec.nonNamespacedObjects[1].resourceNames"},
            {"apiGroup": "", "resources": ["namespaces"], "labelSelectors": [{}],
             "_scope": "Cluster", "_source": "spec.nonNamespacedObjects[1].labelSelectors"},
            {"apiGroup": "", "resources": ["*"], "objectNames": ["*"],
             "_scope": "Cluster", "_source": "spec.nonNamespacedObjects[4].resourceNames"},
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
    ("non-namespaced-core-default", {**NO_NS, "nonNamespacedObjects": [{"resources": ["namespaces"],
                                                                       "resourceNames": ["ns1"]}]},
     {("Namespace", "ns1@")}),
    ("non-namespaced-star", {**NO_NS, "nonNamespacedObjects": [{"apiGroup": "rbac.authorization.k8s.io",
                                                               "resources": ["*"], "resourceNames": ["*"]}]},
     {("ClusterRole", "reader@")}),  # the namespaced Role of the same group is not admitted
    # v0.7 `whatMatches`: "*" means all only as the single entry; among others it is a literal name
    ("non-namespaced-star-among-resources-is-literal", {**NO_NS, "nonNamespacedObjects": [
        {"resources": ["*", "namespaces"], "resourceNames": ["*"]}]}, {("Namespace", "ns1@"), ("Namespace", "ns2@")}),
    ("non-namespaced-star-among-names-is-literal", {**NO_NS, "nonNamespacedObjects": [
        {"resources": ["namespaces"], "resourceNames": ["*", "ns2"]}]}, {("Namespace", "ns2@")}),
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
        "resources": ["namespaces"], "resourceNames": ["ns2"],
        "labelSelectors": [{"matchLabels": {"team": "a"}}]}]}, {("Namespace", "ns1@"), ("Namespace", "ns2@")}),
    ("both", {"namespaceSelector": {"matchLabels": {"team": "b"}},
              "nonNamespacedObjects": [{"resources": ["namespaces"], "resourceNames": ["ns2"]}]},
     {("ConfigMap", "cfg@ns2"), ("Namespace", "ns2@")}),
    ("upsync-carried-over", {"namespaceSelector": {},
                             "upsync": [{"resources": ["configmaps"], "namespaces": ["*"], "names": ["*"]}]},
     {("Deployment", "web@ns1"), ("Role", "reader@ns9x")}),
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


def test_v2alpha1_clause_cannot_smuggle_private_markers() -> None:
    spec = placement_spec(placement({"downsync": [{"_scope": "Namespaced", "_source": "x",
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
    spec = placement_spec(placement({"namespaceSelector": {"matchLabels": {"team": "z"}},
                                     "nonNamespacedObjects": [{"resources": ["namespaces"],
                                                               "resourceNames": ["ns1"]}]}, V1))
    lines = explain_object(spec, NS1, KINDS, NS_LABELS)
    assert lines[0].startswith("spec.namespaceSelector (v1alpha1): does not match: ")
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
