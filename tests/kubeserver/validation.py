"""What the API server checks in what it is sent: apiVersion and kind, a CRD's required fields
(and the conditions it is given once accepted), a workload's status counts."""
from __future__ import annotations

from .errors import ApiError, bad_request
from .resources import ResourceType, now


def check_type(rt: ResourceType, obj: dict, required: bool = False) -> None:
    if not isinstance(obj.get("metadata", {}), dict):
        raise bad_request("metadata must be an object")
    if required and not (obj.get("apiVersion") and obj.get("kind")):
        raise bad_request("apiVersion and kind must be set")
    if obj.get("apiVersion") not in (None, rt.api_version) or obj.get("kind") not in (None, rt.kind):
        raise bad_request(f"the API version and kind in the data ({obj.get('apiVersion')}, {obj.get('kind')}) "
                          f"do not match the expected ({rt.api_version}, {rt.kind})")
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    if not (rt.status or rt.custom):
        # ConfigMap, Secret, RBAC kinds...: no status field in their schema, and the API server
        # drops fields its schema does not know (field validation "Warn", the default since 1.27)
        obj.pop("status", None)


def check_crd(crd: dict) -> None:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    if not (spec.get("group") and names.get("plural") and names.get("kind") and spec.get("versions")):
        raise ApiError(422, "Invalid", "CustomResourceDefinition is invalid: spec.group, spec.names.plural, "
                                       "spec.names.kind and spec.versions are required")
    for i, v in enumerate(spec["versions"]):
        if not ((v.get("schema") or {}).get("openAPIV3Schema")):
            raise ApiError(422, "Invalid", f"CustomResourceDefinition is invalid: spec.versions[{i}].schema."
                                           "openAPIV3Schema: Required value: schemas are required")
    if crd["metadata"]["name"] != f"{names['plural']}.{spec['group']}":
        raise ApiError(422, "Invalid", "CustomResourceDefinition is invalid: metadata.name: must be "
                                       "spec.names.plural+\".\"+spec.group")
    if not any(c.get("type") == "Established" for c in (crd.get("status") or {}).get("conditions", [])):
        storage = [v["name"] for v in spec["versions"] if v.get("storage")] or [spec["versions"][0]["name"]]
        condition = lambda kind: {"type": kind, "status": "True", "reason": kind,
                                  "message": "", "lastTransitionTime": now()}
        crd["status"] = {"conditions": [condition("NamesAccepted"), condition("Established")],
                         "acceptedNames": names, "storedVersions": storage}


# Status validation the API server does for workload kinds (Kubernetes pkg/apis/apps/validation:
# ValidateReplicaSetStatus, ValidateDeploymentStatus): counts are never negative, none exceeds
# `replicas`, and no more replicas are available than ready.

_REPLICA_COUNTS = {("apps", "replicasets"): ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
                   ("apps", "deployments"): ("updatedReplicas", "readyReplicas", "availableReplicas")}


def check_replica_counts(rt: ResourceType, name: str, status: dict) -> None:
    counts = _REPLICA_COUNTS.get(rt.gr)
    if counts is None:
        return
    value = lambda key: status.get(key) or 0
    problems = [(key, "must be greater than or equal to 0") for key in ("replicas", "observedGeneration", *counts)
                if value(key) < 0]
    problems += [(key, "cannot be greater than status.replicas") for key in counts if value(key) > value("replicas")]
    if value("availableReplicas") > value("readyReplicas"):
        problems.append(("availableReplicas", "cannot be greater than readyReplicas"))
    if problems:
        detail = ", ".join(f"status.{key}: Invalid value: {value(key)}: {why}" for key, why in problems)
        raise ApiError(422, "Invalid", f'{rt.kind}.{rt.group} "{name}" is invalid: [{detail}]')

