"""One rule per kind: (spec as sent, status as reported) -> Verdict, after kstatus and
gitops-engine; and the kinds whose status says nothing about health."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...model import counted
from .verdict import DEGRADED, HEALTHY, PROGRESSING, UNKNOWN, Verdict, as_map, conditions_of, count_of, is_condition, phase_verdict, reason_of, replicas_of, why

def _deployment(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = conditions_of(status)
    progressing = conds.get("Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Verdict(DEGRADED, why("progress deadline exceeded", {"message": progressing.get("message")}))
    if is_condition(conds.get("ReplicaFailure"), "True"):
        return Verdict(DEGRADED, why("replica failure", conds["ReplicaFailure"]))
    want = replicas_of(spec)
    replicas, updated, available = (
        count_of(status, key) for key in ("replicas", "updatedReplicas", "availableReplicas"))
    if updated < want:
        return Verdict(PROGRESSING, f"rollout: {updated} of {want} replicas updated")
    if replicas > updated:
        return Verdict(PROGRESSING, f"rollout: {counted(replicas - updated, 'old replica')} pending termination")
    if available < updated:
        return Verdict(PROGRESSING, f"rollout: {available} of {updated} updated replicas available")
    if is_condition(conds.get("Available"), "False"):
        return Verdict(PROGRESSING, why("Available is False", conds["Available"]))
    return Verdict(HEALTHY, f"{available} of {want} replicas available")


def _replica_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = conditions_of(status)
    if is_condition(conds.get("ReplicaFailure"), "True"):
        return Verdict(DEGRADED, why("replica failure", conds["ReplicaFailure"]))
    want = replicas_of(spec)
    replicas, available = count_of(status, "replicas"), count_of(status, "availableReplicas")
    if available < want:
        return Verdict(PROGRESSING, f"{available} of {want} replicas available")
    if replicas > want:
        return Verdict(PROGRESSING, f"{counted(replicas - want, 'extra replica')} pending termination")
    return Verdict(HEALTHY, f"{available} of {want} replicas available")


def _stateful_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    want = replicas_of(spec)
    ready, updated = count_of(status, "readyReplicas"), count_of(status, "updatedReplicas")
    if ready < want:
        return Verdict(PROGRESSING, f"{ready} of {want} replicas ready")
    strategy = as_map(spec.get("updateStrategy"))
    if strategy.get("type") == "OnDelete":  # pods are replaced only when deleted: nothing to wait for
        return Verdict(HEALTHY, f"{ready} of {want} replicas ready (OnDelete updates)")
    partition = count_of(as_map(strategy.get("rollingUpdate")), "partition")
    target = max(want - partition, 0)
    if updated < target:
        return Verdict(PROGRESSING, f"rollout: {updated} of {target} replicas updated")
    if partition == 0 and status.get("currentRevision") != status.get("updateRevision"):
        # revision names are not echoed: they are field values
        return Verdict(PROGRESSING, "rollout: current revision is not yet the update revision")
    return Verdict(HEALTHY, f"{ready} of {want} replicas ready")


def _daemon_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    desired = count_of(status, "desiredNumberScheduled")
    updated, available = count_of(status, "updatedNumberScheduled"), count_of(status, "numberAvailable")
    on_delete = as_map(spec.get("updateStrategy")).get("type") == "OnDelete"
    if not on_delete and updated < desired:
        return Verdict(PROGRESSING, f"rollout: {updated} of {desired} pods updated")
    if available < desired:
        return Verdict(PROGRESSING, f"{available} of {desired} pods available")
    return Verdict(HEALTHY, f"{available} of {desired} pods available")


def _job(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = conditions_of(status)
    for kind in ("Failed", "FailureTarget"):
        if is_condition(conds.get(kind), "True"):
            return Verdict(DEGRADED, why("failed", conds[kind]))
    succeeded = count_of(status, "succeeded")
    for kind in ("Complete", "SuccessCriteriaMet"):
        if is_condition(conds.get(kind), "True"):
            return Verdict(HEALTHY, f"complete: {succeeded} succeeded")
    counts = f"{count_of(status, 'active')} active, {succeeded} succeeded, {count_of(status, 'failed')} failed"
    if is_condition(conds.get("Suspended"), "True"):
        return Verdict(PROGRESSING, f"suspended: {counts}")
    return Verdict(PROGRESSING, f"running: {counts}")


def _failing_waits(status: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """Waiting states of init and app containers that mean failure (gitops-engine's test: the
    reason starts with Err or ends with Error or BackOff: CrashLoopBackOff, ImagePullBackOff,
    ErrImagePull, CreateContainerConfigError, ...), and how many containers were reported."""
    failing, total = [], 0
    for key in ("initContainerStatuses", "containerStatuses"):
        entries = status.get(key)
        for entry in entries if isinstance(entries, list) else ():
            total += 1
            waiting = as_map(as_map(as_map(entry).get("state")).get("waiting"))
            reason = reason_of(waiting.get("reason"))
            if reason.startswith("Err") or reason.endswith(("Error", "BackOff")):
                failing.append(waiting)
    return failing, total


def _pod(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    phase = status.get("phase")
    if phase == "Succeeded":
        return Verdict(HEALTHY, "completed")
    if phase == "Failed":
        return Verdict(DEGRADED, why("failed", status))
    failing, total = _failing_waits(status)
    if failing:
        first = failing[0]
        return Verdict(DEGRADED, why(f"{len(failing)} of {total} containers waiting",
                                      {"reason": first.get("reason"), "message": first.get("message")}))
    conds = conditions_of(status)
    if phase == "Running":
        statuses = status.get("containerStatuses")
        entries = statuses if isinstance(statuses, list) else []
        ready = sum(1 for entry in entries if as_map(entry).get("ready") is True)
        counts = f"running, {ready} of {len(entries)} containers ready"
        return Verdict(HEALTHY if is_condition(conds.get("Ready"), "True") else PROGRESSING, counts)
    if phase == "Pending":
        if is_condition(conds.get("PodScheduled"), "False"):
            return Verdict(PROGRESSING, why("not scheduled", conds["PodScheduled"]))
        return Verdict(PROGRESSING, "pending")
    if phase == "Unknown":
        return Verdict(UNKNOWN, "phase Unknown: the node is not reporting")
    return phase_verdict(status, {})


def _persistent_volume_claim(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    return phase_verdict(status, {
        "Bound": Verdict(HEALTHY, "bound"),
        "Pending": Verdict(PROGRESSING, "pending: not yet bound to a volume"),
        "Lost": Verdict(DEGRADED, "lost: its volume no longer exists"),
    })


def _service(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    if spec.get("type") != "LoadBalancer":
        return Verdict(HEALTHY, "no load balancer to wait for")
    ingress = as_map(status.get("loadBalancer")).get("ingress")
    if isinstance(ingress, list) and ingress:
        return Verdict(HEALTHY, f"load balancer has {counted(len(ingress), 'ingress point')}")
    return Verdict(PROGRESSING, "waiting for a load balancer ingress")


def _namespace(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    # A placed namespace should exist: one being deleted (perhaps stuck on finalizers) is broken.
    return phase_verdict(status, {
        "Active": Verdict(HEALTHY, "active"),
        "Terminating": Verdict(DEGRADED, "terminating"),
    })


def _custom_resource_definition(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = conditions_of(status)
    if is_condition(conds.get("Terminating"), "True"):
        return Verdict(DEGRADED, why("terminating", conds["Terminating"]))
    if is_condition(conds.get("NamesAccepted"), "False"):
        return Verdict(DEGRADED, why("names not accepted", conds["NamesAccepted"]))
    if is_condition(conds.get("Established"), "True"):
        return Verdict(HEALTHY, "established")
    return Verdict(PROGRESSING, why("not yet established", conds.get("Established", {})))


Rule = Callable[[Mapping[str, Any], Mapping[str, Any]], Verdict]

# (API group, kind) -> (rule, whether the kind's controller always publishes observedGeneration)
RULES: dict[tuple[str, str], tuple[Rule, bool]] = {
    ("apps", "Deployment"): (_deployment, True),
    ("apps", "ReplicaSet"): (_replica_set, True),
    ("apps", "StatefulSet"): (_stateful_set, True),
    ("apps", "DaemonSet"): (_daemon_set, True),
    ("batch", "Job"): (_job, False),
    ("", "Pod"): (_pod, False),
    ("", "PersistentVolumeClaim"): (_persistent_volume_claim, False),
    ("", "Service"): (_service, False),
    ("", "Namespace"): (_namespace, False),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (_custom_resource_definition, False),
}

# Kinds whose status (if any) says nothing about health: present means Healthy.
STATUSLESS: frozenset[tuple[str, str]] = frozenset({
    ("", "ConfigMap"), ("", "Secret"), ("", "ServiceAccount"), ("", "Endpoints"),
    ("", "LimitRange"), ("", "ResourceQuota"), ("", "PodTemplate"),
    ("apps", "ControllerRevision"),
    ("rbac.authorization.k8s.io", "Role"), ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRole"), ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("networking.k8s.io", "NetworkPolicy"), ("networking.k8s.io", "IngressClass"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("storage.k8s.io", "StorageClass"), ("storage.k8s.io", "CSIDriver"),
    ("scheduling.k8s.io", "PriorityClass"), ("node.k8s.io", "RuntimeClass"),
    ("coordination.k8s.io", "Lease"),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
})
