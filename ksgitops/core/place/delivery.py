"""What KubeStellar never delivers to a WEC, and what it clears from what it does deliver.

Three rules, each as KubeStellar v0.14 applies it:

1. **Kinds kept off the edge** (KubeStellar v0.14.2 pkg/placement/what-resolver.go: `GRsNotForEdge`,
   `GroupsNotForEdge`, `GRsNotSupported`, and `NaturedInCenterGoToMailbox` with
   workload-projector.go, whose SyncerConfig lists only resources that go to the edge). The
   what-resolver does not even watch these resources, so no clause can select them, `"*"` included.
   The table below names each (group, resource) with its kind, so that an object is recognised
   whether its resource comes from the kind table or not.
2. **Objects every cluster makes for itself** (workload-projector.go `ObjectIsSystem`, applied by
   the what-resolver before any clause): in the core group only, the ServiceAccount `default`, the
   ConfigMap `kube-root-ca.crt`, and Secrets of type `kubernetes.io/service-account-token` or
   `bootstrap.kubernetes.io/token`.
3. **Fields not transported** (workload-projector.go `xformForDestination` clears managedFields,
   ownerReferences, resourceVersion, selfLink, uid and clusterName; `genericObjectMerge` copies
   neither `status` nor labels/annotations whose key `kvIsSystem`: the key contains `.kcp.io/` or
   starts with `kcp.io/`; the API server sets creationTimestamp, generation and the deletion fields
   itself when the object is created).

One more, kustomize's rather than KubeStellar's: a mailbox is a kustomize overlay, and
`kubectl kustomize` drops its own bookkeeping annotations from what it prints (kyaml's file
position keys, kustomize's build keys); `internal.config.kubernetes.io/needsHashSuffix: enabled`
even renames the object; `config.kubernetes.io/local-config` (any value but "false") makes it
leave the object out. Files written out by `kustomize build` or kpt carry some of them, so base
copies go without them: what the WEC receives is then the same, rendered or built.
"""
from __future__ import annotations

from typing import Any, Mapping

_SYSTEM_SECRET_TYPES = frozenset({"kubernetes.io/service-account-token", "bootstrap.kubernetes.io/token"})

# metadata fields KubeStellar does not transport (or the WEC's API server sets itself)
CLEARED_METADATA = ("uid", "resourceVersion", "selfLink", "managedFields", "ownerReferences",
                    "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds",
                    "clusterName")


# annotations `kubectl kustomize` (kustomize v5) removes from every object it prints
KUSTOMIZE_ANNOTATIONS = frozenset({
    "config.kubernetes.io/index", "config.kubernetes.io/path", "config.k8s.io/id",
    "config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations",
    *(f"internal.config.kubernetes.io/{name}" for name in (
        "index", "path", "id", "seqindent", "annotations-migration-resource-id",
        "previousKinds", "previousNames", "previousNamespaces", "prefixes", "suffixes",
        "refBy", "generatorBehavior", "needsHashSuffix", "allowNameChange", "allowKindChange")),
})


def system_object(group: str, kind: str, name: str, body: Mapping[str, Any]) -> str | None:
    """Why this object is one that every cluster makes for itself, or None."""
    if group != "":
        return None
    if kind == "ServiceAccount" and name == "default":
        return "the ServiceAccount named default is made by every namespace of every cluster"
    if kind == "ConfigMap" and name == "kube-root-ca.crt":
        return "the ConfigMap kube-root-ca.crt is made by every namespace of every cluster"
    secret_type = body.get("type")
    if kind == "Secret" and isinstance(secret_type, str) and secret_type in _SYSTEM_SECRET_TYPES:
        return f"a Secret of type {secret_type} is made by the cluster that uses it"
    return None


def is_kcp_key(key: str) -> bool:
    """A kcp label or annotation key, which KubeStellar does not transport."""
    return ".kcp.io/" in key or key.startswith("kcp.io/")


# kustomize leaves an object with this annotation out of what it builds, unless its value is "false"
LOCAL_CONFIG = "config.kubernetes.io/local-config"


def kustomize_drops(key: str, value: Any) -> bool:
    """An annotation kustomize would drop, or drop its object for, when it builds a mailbox."""
    return key in KUSTOMIZE_ANNOTATIONS or (key == LOCAL_CONFIG and value != "false")


def carries_kustomize_keys(annotations: Mapping[str, Any]) -> bool:
    """Whether an annotations map holds a key kustomize_drops may apply to: the common case, none,
    told by a set operation."""
    return not KUSTOMIZE_ANNOTATIONS.isdisjoint(annotations) or LOCAL_CONFIG in annotations


def as_kustomize_builds(body: dict[str, Any]) -> dict[str, Any] | None:
    """`body` read from a mailbox as `kubectl kustomize` prints it (None: it leaves it out): what
    a base copy goes without, in a copy reconcile keeps as it stands (an earlier version's, a hand
    edit). Changes `body`'s annotations in place."""
    md = body.get("metadata")
    if not isinstance(md, dict):
        return body
    annotations = md.get("annotations")
    if not isinstance(annotations, dict) or not carries_kustomize_keys(annotations):
        return body
    if kustomize_drops(LOCAL_CONFIG, annotations.get(LOCAL_CONFIG, "false")):
        return None
    md["annotations"] = {k: v for k, v in annotations.items() if k not in KUSTOMIZE_ANNOTATIONS}
    return body


def is_untransported_annotation(key: str, value: Any) -> bool:
    """An annotation no base copy carries: kcp's, or one kustomize_drops."""
    return is_kcp_key(key) or kustomize_drops(key, value)


__all__ = ["CLEARED_METADATA", "KUSTOMIZE_ANNOTATIONS", "LOCAL_CONFIG", "as_kustomize_builds", "carries_kustomize_keys",
           "system_object", "is_kcp_key", "kustomize_drops", "is_untransported_annotation"]
