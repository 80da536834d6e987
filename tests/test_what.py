"""What an EdgePlacement selects: the six clause criteria, upsync, never-downsynced objects and the
kinds kept off the edge. Selecting a WDS's objects, CRDs coming along, explain and selector
problems: tests/test_what_select.py; v1alpha1 conversion: tests/test_what_v1alpha1.py."""
from __future__ import annotations

from typing import Any

import pytest

from ksgitops.core.place.what import (clause_matches, clause_mismatch, explain_object, never_downsynced,
                                      placement_spec, select, upsync_matches)
from ksgitops.kinds import KindInfo, KindTable
from ksgitops.model import Obj
from what_objects import CM, CM_NS2, CM_NS_UNDEFINED, CROLE, DEPLOY, NS_LABELS, info, mk, placement


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
    ("namespaces-cluster-named", {"namespaces": ["ns1"]}, CROLE, "the namespace of a cluster-scoped object"),
    # KubeStellar v0.14.2 pkg/placement/what-resolver.go `downsyncMatches` compares the namespace ""
    # of a cluster-scoped object with the list as any other name
    ("namespaces-cluster-empty-string", {"namespaces": [""]}, CROLE, None),
    ("namespaces-namespaced-empty-string", {"namespaces": [""]}, DEPLOY, "nor the object's namespace 'ns1'"),
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
