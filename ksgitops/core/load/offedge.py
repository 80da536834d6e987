"""What never reaches a WEC, whatever places it: KubeStellar's and kcp's control groups, and kinds
that are a cluster's own state or a request rather than a stored object (KubeStellar's
what-resolver ignores them: `pkg/placement/what-resolver.go`). Below `place/`, which keeps them
off the mailboxes (`delivery.py`), so that loading can say so of a kind it does not know."""
from __future__ import annotations

# group -> why no resource of that group ever reaches a WEC
_GROUPS_OFF_EDGE: dict[str, str] = {
    "edge.kubestellar.io": "KubeStellar's own control objects",
    # later KubeStellar (v0.20 on: pkg/binding/binding-controller.go excludedGroups) keeps its
    # control group off the WECs too: BindingPolicy, Binding, StatusCollector, CombinedStatus, ...
    "control.kubestellar.io": "KubeStellar's own control objects",
    "scheduling.kcp.io": "kcp's scheduling objects",
    "tenancy.kcp.io": "kcp's workspace objects",
    "topology.kcp.io": "kcp's topology objects",
    "workload.kcp.io": "kcp's workload (SyncTarget) objects",
}

_API_OBJECTS = "the hub's own API machinery, meaningless on a WEC"
_REVIEWS = "a request to the API server, not a stored object"
_CLUSTER_STATE = "state a cluster keeps about itself"
_UNSUPPORTED = "a kcp resource KubeStellar does not support in a workload"
_MAILBOX_ONLY = "KubeStellar keeps it in the mailbox and never sends it on to the WEC"

# (group, resource, kind, why): kinds that never reach a WEC, even under resources: ["*"]
_KINDS_OFF_EDGE: tuple[tuple[str, str, str, str], ...] = (
    ("", "bindings", "Binding", _REVIEWS),
    ("", "componentstatuses", "ComponentStatus", _CLUSTER_STATE),
    ("", "events", "Event", _CLUSTER_STATE),
    ("", "nodes", "Node", _CLUSTER_STATE),
    ("events.k8s.io", "events", "Event", _CLUSTER_STATE),
    ("apps", "controllerrevisions", "ControllerRevision", _CLUSTER_STATE),
    ("certificates.k8s.io", "certificatesigningrequests", "CertificateSigningRequest", _CLUSTER_STATE),
    ("authentication.k8s.io", "tokenreviews", "TokenReview", _REVIEWS),
    ("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview", _REVIEWS),
    ("authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview", _REVIEWS),
    ("authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview", _REVIEWS),
    ("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", _REVIEWS),
    ("apis.kcp.io", "apiexports", "APIExport", _API_OBJECTS),
    ("apis.kcp.io", "apiexportendpointslices", "APIExportEndpointSlice", _API_OBJECTS),
    ("apis.kcp.io", "apiresourceschemas", "APIResourceSchema", _API_OBJECTS),
    ("apis.kcp.io", "apiconversions", "APIConversion", _UNSUPPORTED),
    ("apis.kcp.io", "apibindings", "APIBinding", _MAILBOX_ONLY),
    ("apiresource.kcp.io", "apiresourceimports", "APIResourceImport", _UNSUPPORTED),
    ("apiresource.kcp.io", "negotiatedapiresources", "NegotiatedAPIResource", _UNSUPPORTED),
    ("core.kcp.io", "logicalclusters", "LogicalCluster", _API_OBJECTS),
    ("core.kcp.io", "shards", "Shard", _API_OBJECTS),
)
_BY_RESOURCE = {(g, r): (k, why) for g, r, k, why in _KINDS_OFF_EDGE}
_BY_KIND = {(g, k): (k, why) for g, _, k, why in _KINDS_OFF_EDGE}


def _group_text(group: str) -> str:
    return f"{group}" if group else "the core group"


def kind_off_edge(group: str, kind: str, resource: str | None) -> str | None:
    """Why objects of this kind never reach a WEC, or None when they may."""
    if group in _GROUPS_OFF_EDGE:
        return (f"no {group} object ever reaches a WEC ({_GROUPS_OFF_EDGE[group]}; "
                "KubeStellar's what-resolver ignores the whole group)")
    found = _BY_RESOURCE.get((group, resource or "")) or _BY_KIND.get((group, kind))
    if found is None:
        return None
    return (f"{found[0]} of {_group_text(group)} never reaches a WEC ({found[1]}; "
            "KubeStellar's what-resolver ignores the resource)")
