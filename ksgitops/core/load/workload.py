"""Checks of what `kubectl apply` or the API server would refuse, or read otherwise than meant, in
objects KubeStellar carries (warnings: ksgitops carries the object on as KubeStellar's WDS would
have it, or not at all). Each names the field it is about, and validate.py gives it the field's
line (locate.py):

- a kind neither Kubernetes, a CRD in the repo nor a RepoConfig `kinds` entry describes (with the
  closest kind of its group), a built-in kind in a group or at a version Kubernetes (1.29 on)
  does not serve it in, a custom resource at a version its CRD does not serve;
- a top-level field a built-in kind does not have (`namespace:` slipped out of `metadata`);
- in a ConfigMap or Secret (configdata.py), a value that is not a string or not base64, a key the
  API server refuses, a Secret without the keys its built-in type requires, naming the key and
  never a Secret's value;
- an annotation `edge.kubestellar.io/...` KubeStellar does not define, and `expand-parameters`
  with a value other than "true" or "false" (KubeStellar expands only for exactly "true").
"""
from __future__ import annotations

import difflib
from typing import Iterator

from ...kinds import (CONTROL_GROUPS, CONTROL_KINDS, REMOVED_KINDS, SAME_NAME_SERVED, KindTable, builtin_groups_of,
                      builtin_versions)
from ...model import Obj
from ..customize.customizer import EXPAND_ANNOTATION
from .configdata import data_findings
from .jsonshape import FieldPath
from .offedge import kind_off_edge

Finding = tuple[str, FieldPath]  # a message and the field it is about

UNKNOWN_KIND = "unknown kind"  # a Problem's `obj` for the unknown-kind warning: one stands for all of a kind

_COMMON = ("apiVersion", "kind", "metadata", "status")  # status: what `kubectl get -o yaml` shows
_SPEC = ("spec",)
# Every other top-level field of each built-in kind, as Kubernetes 1.29 on defines it
_TOP_LEVEL: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Binding"): ("target",),
    ("", "ComponentStatus"): ("conditions",),
    ("", "ConfigMap"): ("binaryData", "data", "immutable"),
    ("", "Secret"): ("data", "immutable", "stringData", "type"),
    ("", "ServiceAccount"): ("automountServiceAccountToken", "imagePullSecrets", "secrets"),
    ("", "Endpoints"): ("subsets",),
    ("", "PodTemplate"): ("template",),
    ("", "Event"): ("action", "count", "eventTime", "firstTimestamp", "involvedObject", "lastTimestamp", "message",
                    "reason", "related", "reportingComponent", "reportingInstance", "series", "source", "type"),
    ("events.k8s.io", "Event"): ("action", "deprecatedCount", "deprecatedFirstTimestamp", "deprecatedLastTimestamp",
                                 "deprecatedSource", "eventTime", "note", "reason", "regarding", "related",
                                 "reportingController", "reportingInstance", "series", "type"),
    ("apps", "ControllerRevision"): ("data", "revision"),
    ("discovery.k8s.io", "EndpointSlice"): ("addressType", "endpoints", "ports"),
    ("rbac.authorization.k8s.io", "Role"): ("rules",),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("aggregationRule", "rules"),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("roleRef", "subjects"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("roleRef", "subjects"),
    ("storage.k8s.io", "StorageClass"): ("allowVolumeExpansion", "allowedTopologies", "mountOptions", "parameters",
                                         "provisioner", "reclaimPolicy", "volumeBindingMode"),
    ("storage.k8s.io", "CSIStorageCapacity"): ("capacity", "maximumVolumeSize", "nodeTopology", "storageClassName"),
    ("storage.k8s.io", "VolumeAttributesClass"): ("driverName", "parameters"),
    ("authentication.k8s.io", "SelfSubjectReview"): (),
    ("scheduling.k8s.io", "PriorityClass"): ("description", "globalDefault", "preemptionPolicy", "value"),
    ("node.k8s.io", "RuntimeClass"): ("handler", "overhead", "scheduling"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"): ("webhooks",),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): ("webhooks",),
}  # the rest: `spec` (and status)
_METADATA = ("name", "namespace", "labels", "annotations", "generateName", "finalizers", "ownerReferences", "uid")

EDGE_PREFIX = "edge.kubestellar.io/"
# every key KubeStellar (v0.13 to v0.15) and ksgitops write or read under that prefix
KNOWN_EDGE_KEYS = tuple(EDGE_PREFIX + name for name in (
    "customizer", "expand-parameters", "downsync-overwrite", "downsynced", "upsynced", "projected",
    "source-placement", "sync-target-name", "sync-target-uid"))


def object_findings(obj: Obj, kinds: KindTable) -> Iterator[tuple[str, FieldPath, str]]:
    """(message, field, the Problem's `obj`) of every warning of this module about `obj`."""
    label, ref = f"{obj.kind} {obj.name}", str(obj.ref)
    yield from kind_findings(obj, kinds)
    builtin = kinds.is_builtin(obj.group, obj.kind)
    for message, at in [*(top_level_findings(obj) if builtin else ()), *(data_findings(obj) if builtin else ()),
                        *annotation_findings(obj)]:
        yield f"{label}: {message}", at, ref


def kind_findings(obj: Obj, kinds: KindTable) -> Iterator[tuple[str, FieldPath, str]]:
    """A kind nothing describes, or a version or group its API server does not serve it in."""
    if kinds.lookup(obj.group, obj.kind) is None:
        elsewhere = _served_elsewhere(obj)
        if elsewhere:
            yield (f"{obj.kind} {obj.api_version}: Kubernetes serves {obj.kind} as {elsewhere}; as written, no "
                   "clause can place it", ("apiVersion",), str(obj.ref))
        elif (obj.group, obj.kind) in REMOVED_KINDS:
            yield _removed_kind(obj), ("kind",), f"{UNKNOWN_KIND} {obj.group}/{obj.kind}"
        else:
            yield _unknown_kind(obj, kinds), ("kind",), f"{UNKNOWN_KIND} {obj.group}/{obj.kind}"
        return
    served = kinds.served(obj.group, obj.kind) if obj.group not in CONTROL_GROUPS else ()  # every release is read
    if served and obj.version not in served:
        who = "Kubernetes" if kinds.is_builtin(obj.group, obj.kind) else "its CustomResourceDefinition"
        versions = " or ".join(f"{obj.group}/{v}" if obj.group else v for v in served)
        yield f"{obj.kind} {obj.api_version}: {who} serves {obj.kind} as {versions}", ("apiVersion",), str(obj.ref)


def _served_elsewhere(obj: Obj) -> str:
    """`apps/v1` when `obj` names a built-in kind in a Kubernetes group that does not serve it
    (`v1 Deployment`, `extensions/v1beta1 Deployment`); "" otherwise (a group with a dot not
    Kubernetes' own may be a CRD's that lives elsewhere)."""
    group = obj.group
    if ("." in group and not group.endswith(".k8s.io")) or (group, obj.kind) in SAME_NAME_SERVED:
        return ""
    kind = obj.kind
    return " or ".join(f"{g}/{v}" if g else v for g in builtin_groups_of(kind) for v in builtin_versions(g, kind))


def _removed_kind(obj: Obj) -> str:
    release, instead = REMOVED_KINDS[(obj.group, obj.kind)]
    gone = f"Kubernetes removed it in {release}" if release else "Kubernetes served it only as an alpha API, since removed"
    return (f"kind {obj.kind} of apiVersion {obj.api_version}: {gone}" + (f"; use {instead}" if instead else "")
            + ": no cluster of a current release serves it, and no clause can place it")


def _unknown_kind(obj: Obj, kinds: KindTable) -> str:
    never = kind_off_edge(obj.group, obj.kind, None)
    if never:  # KubeStellar's EdgeSyncConfig, kcp's APIBinding, later releases' BindingPolicy, ...
        text = (f"kind {obj.kind} of apiVersion {obj.api_version} is unknown: its objects are loaded and never "
                f"placed, whatever declares the kind: {never}")
    else:
        text = (f"kind {obj.kind} of apiVersion {obj.api_version} is unknown (no built-in mapping, CRD in the "
                f"repo, or RepoConfig kinds entry): its objects are loaded, cluster-scoped unless they set "
                f"metadata.namespace, and no clause can place them; add its CRD to a space or a RepoConfig "
                f"kinds entry to place them")
    close = _close_kind(obj, kinds)
    return text + f" (did you mean {close}?)" if close else text


def _close_kind(obj: Obj, kinds: KindTable) -> str:
    if obj.group in CONTROL_GROUPS:
        close = difflib.get_close_matches(obj.kind, sorted(CONTROL_KINDS), n=1, cutoff=0.85)
        return close[0] if close else ""
    known = kinds.kinds_in(obj.group)
    close = difflib.get_close_matches(obj.kind, known, n=1, cutoff=0.8)
    return close[0] if close else next((k for k in known if k.lower() == obj.kind.lower()), "")


def top_level_fields(group: str, kind: str) -> tuple[str, ...]:
    """Every top-level field of the built-in kind (group, kind), `status` included."""
    return _COMMON + _TOP_LEVEL.get((group, kind), _SPEC)


def top_level_findings(obj: Obj) -> Iterator[tuple[str, FieldPath]]:
    """Top-level fields a built-in kind does not have."""
    allowed = top_level_fields(obj.group, obj.kind)
    for key in obj.body:
        if key not in allowed:
            yield top_level_message(key, allowed, obj.kind), (key,)


def top_level_message(key: str, allowed: tuple[str, ...], kind: str) -> str:
    """What is said of a top-level field `key` a built-in kind (its fields: `allowed`) does not have."""
    hint = _field_hint(key, allowed) or f"; a {kind} has {', '.join(sorted(allowed))}"
    return f'unknown field "{key}" at the top level{hint}'


def _field_hint(key: str, allowed: tuple[str, ...]) -> str:
    if key in _METADATA:
        return f" (did you mean metadata.{key}?)"
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def annotation_findings(obj: Obj) -> Iterator[tuple[str, FieldPath]]:
    """KubeStellar annotations it does not define, and an expand-parameters that expands nothing."""
    for key, value in obj.annotations.items():
        if not isinstance(key, str) or not key.startswith(EDGE_PREFIX):
            continue
        at = ("metadata", "annotations", key)
        if key not in KNOWN_EDGE_KEYS:
            close = difflib.get_close_matches(key, KNOWN_EDGE_KEYS, n=1, cutoff=0.8)
            hint = f" (did you mean {close[0]}?)" if close else ""
            yield f"annotation {key} is not one KubeStellar defines: it does nothing{hint}", at
        elif key == EXPAND_ANNOTATION and isinstance(value, str) and value not in ("true", "false"):
            yield (f'annotation {key}: "{_short(value)}" expands nothing: KubeStellar expands parameters only '
                   'for exactly "true" (write "true", or "false")'), at


def _short(value: str) -> str:
    return value if len(value) <= 40 else value[:40] + "..."
