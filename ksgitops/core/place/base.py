"""The uncustomized base copy of a workload object, as it is written into every mailbox.

Computed once per object (not per WEC): what KubeStellar does not transport is cleared (`status`,
the server-set metadata fields, kcp's label and annotation keys and kustomize's bookkeeping
annotations: see `delivery.py`), the
projected label added, an empty annotations map omitted (kustomize drops it, so we never write it).
"""
from __future__ import annotations

from typing import Any

from msgspec import Struct

from ...kinds import KindInfo
from ...model import Obj, ObjRef
from ...names import rel_path
from ..customize.params import referenced_keys
from ..customize.customizer import CUSTOMIZER_ANNOTATION, EXPAND_ANNOTATION, wants_expansion
from .delivery import CLEARED_METADATA, carries_kustomize_keys, is_kcp_key, is_untransported_annotation, kustomize_drops
from ..serialize import deep_copy, dump_yaml

PROJECTED_LABEL = "edge.kubestellar.io/projected"


class Base(Struct, frozen=True):
    """One object's base copy. `obj` is None for an implied Namespace."""

    ref: ObjRef
    api_version: str
    resource: str
    namespaced: bool
    body: dict[str, Any]
    data: bytes
    obj: Obj | None
    expand: bool = False
    customizer: str = ""
    object_keys: frozenset[str] = frozenset()

    @property
    def rel(self) -> str:
        return rel_path(self.ref.group, self.resource, self.ref.namespace, self.ref.name)

    @property
    def customizable(self) -> bool:
        return self.expand or bool(self.customizer)


def _without_kcp_keys(values: Any) -> dict[str, Any]:
    if not isinstance(values, dict):
        return {}
    return {k: v for k, v in values.items() if not is_kcp_key(k)}


def _transported_annotations(values: Any) -> dict[str, Any]:
    if not isinstance(values, dict):
        return {}
    return {k: v for k, v in values.items() if not is_untransported_annotation(k, v)}


def base_body(body: dict[str, Any]) -> dict[str, Any]:
    """A copy of `body` as it goes into a mailbox's objects/ (see the module doc)."""
    copy = deep_copy(body)
    copy.pop("status", None)
    md = copy.setdefault("metadata", {})
    for key in CLEARED_METADATA:
        md.pop(key, None)
    labels = _without_kcp_keys(md.get("labels"))
    labels[PROJECTED_LABEL] = "yes"
    md["labels"] = labels
    annotations = _transported_annotations(md.get("annotations"))
    if annotations:
        md["annotations"] = annotations
    else:
        md.pop("annotations", None)
    return copy


def reprojected(body: dict[str, Any]) -> dict[str, Any]:
    """A customized `body` as KubeStellar's projector leaves it, customizing before it projects:
    without the metadata a base copy goes without, with the projected label. Metadata or labels
    that are no map are left for the caller's checks. Copies what it changes, never `body`'s parts."""
    md = body.get("metadata")
    if not isinstance(md, dict):
        return body
    labels = md.get("labels")
    annotations = md.get("annotations")
    annotations = annotations if isinstance(annotations, dict) else None
    bookkeeping = annotations is not None and carries_kustomize_keys(annotations)
    if not any(key in md for key in CLEARED_METADATA) and isinstance(labels, dict) \
            and labels.get(PROJECTED_LABEL) == "yes" and not bookkeeping:
        return body
    md = {k: v for k, v in md.items() if k not in CLEARED_METADATA}
    if labels is None or isinstance(labels, dict):
        md["labels"] = {**(labels or {}), PROJECTED_LABEL: "yes"}
    if bookkeeping and annotations is not None:  # a value that is no string stays, for the caller's checks
        md["annotations"] = {k: v for k, v in annotations.items() if not (isinstance(v, str) and kustomize_drops(k, v))}
    return {**body, "metadata": md}


def make_base(obj: Obj, info: KindInfo) -> Base:
    body = base_body(obj.body)
    annotations = obj.annotations
    expand = wants_expansion(annotations)
    return Base(
        ref=obj.ref, api_version=obj.api_version, resource=info.resource, namespaced=info.namespaced,
        body=body, data=dump_yaml(body), obj=obj, expand=expand,
        customizer=str(annotations.get(CUSTOMIZER_ANNOTATION, "") or ""),
        object_keys=referenced_keys(body) if expand else frozenset(),
    )


def implied_namespace(name: str) -> Base:
    body = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {PROJECTED_LABEL: "yes"}}}
    return Base(ObjRef("", "Namespace", "", name), "v1", "namespaces", False, body, dump_yaml(body), None)


__all__ = ["Base", "make_base", "reprojected", "implied_namespace", "PROJECTED_LABEL", "EXPAND_ANNOTATION"]
