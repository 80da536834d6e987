"""Health of one placed object on one WEC, from the state that WEC reported (kstatus-style).

Why it exists: CombinedStatus files, STATUS.md and `ksgitops status` need one answer per
(object, WEC) — a `Health` and a one-line message — computed the same way whatever transport
wrote the report. This module is that answer, and nothing else: no I/O, no aggregation.

Inputs to `assess`:
- `obj`: the object as sent to the WEC (apiVersion/kind/metadata/spec). Its `spec` supplies what
  was asked for (replicas, Service type, update strategy); its apiVersion/kind pick the rule.
- `reported`: the reported-state document `{object: {apiVersion, kind, namespace, name,
  generation}, status: {...}, reportedAt}` (docs/REFERENCE.md, "Reported state"), or None when the
  WEC has not reported the object: Missing.
- `sent_generation`: the generation the sent object got on the WEC, when the caller knows it.

Rules, checked in this order:
1. No report: Missing. A report that is not a mapping, or names no kind: Unknown.
2. Kinds with no status (ConfigMap, Secret, RBAC, ...): Healthy as soon as reported. Their status
   is never read, so a Secret's content can never reach a message.
3. Generation: `status.observedGeneration` lower than the expected generation (the larger of
   `sent_generation` and the reported `object.generation`: a status older than either describes an
   older spec) -> Progressing. Deployment, ReplicaSet, StatefulSet and DaemonSet always publish
   observedGeneration, so for them its absence also means "not yet observed".
4. The kind's own rule (table `_RULES`, keyed by (API group, kind); same kind in another group is
   not the same thing), one small function per kind, after kstatus and gitops-engine.
5. Anything else, the generic rule: Stalled=True -> Degraded; Reconciling=True -> Progressing;
   Ready / Available: True -> Healthy, False -> Degraded (Progressing when the reason says it is
   still working, `_PROGRESS_REASONS`), Unknown -> Progressing, a condition older than the expected
   generation -> Progressing; a status without those conditions -> Healthy (kstatus: "current");
   no status at all -> Unknown.

Messages are one line and deterministic. They quote only counts, generations, condition and
waiting reasons (which must look like Kubernetes reasons, CamelCase, else they are left out) and
condition/status messages (whitespace collapsed, at most `MESSAGE_LIMIT` characters). Phases,
names, revisions and other field values are never echoed.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ...model import split_api_version

__all__ = ["MESSAGE_LIMIT", "Health", "Verdict", "assess", "reads_spec", "worst"]

MESSAGE_LIMIT = 200
_REASON_LIMIT = 128
_REASON = re.compile(r"[A-Za-z][A-Za-z0-9_,:]*\Z")  # the shape of metav1.Condition.reason


class Health(str, Enum):
    """Health of one object on one WEC. Members are declared best to worst; `<` follows that order.

    Healthy < Unknown < Progressing < Missing < Degraded, because:
    - Degraded is a failure the WEC itself confirmed: it needs someone, so it sorts first.
    - Missing means no evidence at all (WEC unreachable, its sync agent down, or not reported yet);
      it usually hits every object of a WEC, and is more actionable than a rollout in flight.
    - Progressing is a rollout or reconciliation under way: time-sensitive, normally transient.
    - Unknown is "reported, but nothing to judge by" (e.g. a custom resource with no status). It is
      often permanent and benign, so it must not mask a Progressing WEC in a worst-of summary.
    - Healthy: nothing to report.
    Comparing with anything but a Health raises TypeError (the str values would compare
    alphabetically otherwise); equality with the plain string value still holds.
    """

    HEALTHY = "Healthy"
    UNKNOWN = "Unknown"
    PROGRESSING = "Progressing"
    MISSING = "Missing"
    DEGRADED = "Degraded"

    @property
    def rank(self) -> int:
        """0 for Healthy up to 4 for Degraded: higher is worse."""
        return _RANK[self]

    def _other_rank(self, other: object) -> int:
        if not isinstance(other, Health):
            raise TypeError(f"cannot order Health against {type(other).__name__}")
        return other.rank

    def __lt__(self, other: object) -> bool:
        return self.rank < self._other_rank(other)

    def __le__(self, other: object) -> bool:
        return self.rank <= self._other_rank(other)

    def __gt__(self, other: object) -> bool:
        return self.rank > self._other_rank(other)

    def __ge__(self, other: object) -> bool:
        return self.rank >= self._other_rank(other)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


_RANK = {health: rank for rank, health in enumerate(Health)}


def worst(*healths: Health | str) -> Health:
    """The worst of `healths` (Degraded > Missing > Progressing > Unknown > Healthy).

    Plain string values ("Degraded") are accepted; anything else raises ValueError. With no
    arguments: Healthy (nothing is wrong with nothing; it is the identity of worst-of).
    """
    return max((Health(h) for h in healths), default=Health.HEALTHY)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The health of one object on one WEC, and why, in one line."""

    health: Health
    message: str

    def __str__(self) -> str:
        return f"{self.health.value}: {self.message}" if self.message else self.health.value


HEALTHY, UNKNOWN, PROGRESSING, MISSING, DEGRADED = (
    Health.HEALTHY, Health.UNKNOWN, Health.PROGRESSING, Health.MISSING, Health.DEGRADED)

# --- reading a report defensively: malformed values never raise, they read as absent ----------


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _count(mapping: Mapping[str, Any], key: str) -> int:
    """A status count; Kubernetes omits zeros, so absent (or malformed) reads as 0."""
    return _int(mapping.get(key)) or 0


def _replicas(spec: Mapping[str, Any]) -> int:
    """spec.replicas as sent, defaulting to 1 as the API server does."""
    value = _int(spec.get("replicas"))
    return 1 if value is None else value


def _text(value: Any) -> str:
    """A message made safe to show: one line, at most MESSAGE_LIMIT characters."""
    if not isinstance(value, str):
        return ""
    line = " ".join(value.split())
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 1] + "…"


def _reason(value: Any) -> str:
    """A Kubernetes reason (CamelCase identifier), or "" for anything else."""
    if isinstance(value, str) and len(value) <= _REASON_LIMIT and _REASON.match(value):
        return value
    return ""


def _why(head: str, source: Mapping[str, Any]) -> str:
    """`head (Reason): message` from a condition or a pod status, leaving out what is absent."""
    reason, message = _reason(source.get("reason")), _text(source.get("message"))
    return head + (f" ({reason})" if reason else "") + (f": {message}" if message else "")


def _conditions(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """type -> condition; the first of a repeated type wins; malformed entries are skipped."""
    found: dict[str, Mapping[str, Any]] = {}
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, dict) and isinstance(cond.get("type"), str):
            found.setdefault(cond["type"], cond)
    return found


def _is(cond: Mapping[str, Any] | None, value: str) -> bool:
    return cond is not None and cond.get("status") == value


def _phase(status: Mapping[str, Any], table: Mapping[str, Verdict]) -> Verdict:
    """The verdict `table` gives the reported phase; phases it does not name are not echoed."""
    phase = status.get("phase")
    if phase is None:
        return Verdict(UNKNOWN, "no phase reported")
    found = table.get(phase) if isinstance(phase, str) else None
    return found or Verdict(UNKNOWN, "unrecognised phase")


def _stale(status: Mapping[str, Any], generation: int | None, required: bool) -> Verdict | None:
    """Progressing when the status describes an older generation than the one expected."""
    if generation is None:
        return None
    observed = _int(status.get("observedGeneration"))
    if observed is None:
        return Verdict(PROGRESSING, f"generation {generation} not yet observed") if required else None
    if observed < generation:
        return Verdict(PROGRESSING,
                       f"generation {generation} not yet observed (observedGeneration {observed})")
    return None


# --- one rule per kind: (spec as sent, status as reported) -> Verdict --------------------------


def _deployment(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = _conditions(status)
    progressing = conds.get("Progressing")
    if progressing is not None and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Verdict(DEGRADED, _why("progress deadline exceeded", {"message": progressing.get("message")}))
    if _is(conds.get("ReplicaFailure"), "True"):
        return Verdict(DEGRADED, _why("replica failure", conds["ReplicaFailure"]))
    want = _replicas(spec)
    replicas, updated, available = (
        _count(status, key) for key in ("replicas", "updatedReplicas", "availableReplicas"))
    if updated < want:
        return Verdict(PROGRESSING, f"rollout: {updated} of {want} replicas updated")
    if replicas > updated:
        return Verdict(PROGRESSING, f"rollout: {replicas - updated} old replicas pending termination")
    if available < updated:
        return Verdict(PROGRESSING, f"rollout: {available} of {updated} updated replicas available")
    if _is(conds.get("Available"), "False"):
        return Verdict(PROGRESSING, _why("Available is False", conds["Available"]))
    return Verdict(HEALTHY, f"{available} of {want} replicas available")


def _replica_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = _conditions(status)
    if _is(conds.get("ReplicaFailure"), "True"):
        return Verdict(DEGRADED, _why("replica failure", conds["ReplicaFailure"]))
    want = _replicas(spec)
    replicas, available = _count(status, "replicas"), _count(status, "availableReplicas")
    if available < want:
        return Verdict(PROGRESSING, f"{available} of {want} replicas available")
    if replicas > want:
        return Verdict(PROGRESSING, f"{replicas - want} extra replicas pending termination")
    return Verdict(HEALTHY, f"{available} of {want} replicas available")


def _stateful_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    want = _replicas(spec)
    ready, updated = _count(status, "readyReplicas"), _count(status, "updatedReplicas")
    if ready < want:
        return Verdict(PROGRESSING, f"{ready} of {want} replicas ready")
    strategy = _map(spec.get("updateStrategy"))
    if strategy.get("type") == "OnDelete":  # pods are replaced only when deleted: nothing to wait for
        return Verdict(HEALTHY, f"{ready} of {want} replicas ready (OnDelete updates)")
    partition = _count(_map(strategy.get("rollingUpdate")), "partition")
    target = max(want - partition, 0)
    if updated < target:
        return Verdict(PROGRESSING, f"rollout: {updated} of {target} replicas updated")
    if partition == 0 and status.get("currentRevision") != status.get("updateRevision"):
        # revision names are not echoed: they are field values
        return Verdict(PROGRESSING, "rollout: current revision is not yet the update revision")
    return Verdict(HEALTHY, f"{ready} of {want} replicas ready")


def _daemon_set(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    desired = _count(status, "desiredNumberScheduled")
    updated, available = _count(status, "updatedNumberScheduled"), _count(status, "numberAvailable")
    on_delete = _map(spec.get("updateStrategy")).get("type") == "OnDelete"
    if not on_delete and updated < desired:
        return Verdict(PROGRESSING, f"rollout: {updated} of {desired} pods updated")
    if available < desired:
        return Verdict(PROGRESSING, f"{available} of {desired} pods available")
    return Verdict(HEALTHY, f"{available} of {desired} pods available")


def _job(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = _conditions(status)
    for kind in ("Failed", "FailureTarget"):
        if _is(conds.get(kind), "True"):
            return Verdict(DEGRADED, _why("failed", conds[kind]))
    succeeded = _count(status, "succeeded")
    for kind in ("Complete", "SuccessCriteriaMet"):
        if _is(conds.get(kind), "True"):
            return Verdict(HEALTHY, f"complete: {succeeded} succeeded")
    counts = f"{_count(status, 'active')} active, {succeeded} succeeded, {_count(status, 'failed')} failed"
    if _is(conds.get("Suspended"), "True"):
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
            waiting = _map(_map(_map(entry).get("state")).get("waiting"))
            reason = _reason(waiting.get("reason"))
            if reason.startswith("Err") or reason.endswith(("Error", "BackOff")):
                failing.append(waiting)
    return failing, total


def _pod(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    phase = status.get("phase")
    if phase == "Succeeded":
        return Verdict(HEALTHY, "completed")
    if phase == "Failed":
        return Verdict(DEGRADED, _why("failed", status))
    failing, total = _failing_waits(status)
    if failing:
        first = failing[0]
        return Verdict(DEGRADED, _why(f"{len(failing)} of {total} containers waiting",
                                      {"reason": first.get("reason"), "message": first.get("message")}))
    conds = _conditions(status)
    if phase == "Running":
        statuses = status.get("containerStatuses")
        entries = statuses if isinstance(statuses, list) else []
        ready = sum(1 for entry in entries if _map(entry).get("ready") is True)
        counts = f"running, {ready} of {len(entries)} containers ready"
        return Verdict(HEALTHY if _is(conds.get("Ready"), "True") else PROGRESSING, counts)
    if phase == "Pending":
        if _is(conds.get("PodScheduled"), "False"):
            return Verdict(PROGRESSING, _why("not scheduled", conds["PodScheduled"]))
        return Verdict(PROGRESSING, "pending")
    if phase == "Unknown":
        return Verdict(UNKNOWN, "phase Unknown: the node is not reporting")
    return _phase(status, {})


def _persistent_volume_claim(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    return _phase(status, {
        "Bound": Verdict(HEALTHY, "bound"),
        "Pending": Verdict(PROGRESSING, "pending: not yet bound to a volume"),
        "Lost": Verdict(DEGRADED, "lost: its volume no longer exists"),
    })


def _service(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    if spec.get("type") != "LoadBalancer":
        return Verdict(HEALTHY, "no load balancer to wait for")
    ingress = _map(status.get("loadBalancer")).get("ingress")
    if isinstance(ingress, list) and ingress:
        return Verdict(HEALTHY, f"load balancer has {len(ingress)} ingress points")
    return Verdict(PROGRESSING, "waiting for a load balancer ingress")


def _namespace(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    # A placed namespace should exist: one being deleted (perhaps stuck on finalizers) is broken.
    return _phase(status, {
        "Active": Verdict(HEALTHY, "active"),
        "Terminating": Verdict(DEGRADED, "terminating"),
    })


def _custom_resource_definition(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Verdict:
    conds = _conditions(status)
    if _is(conds.get("Terminating"), "True"):
        return Verdict(DEGRADED, _why("terminating", conds["Terminating"]))
    if _is(conds.get("NamesAccepted"), "False"):
        return Verdict(DEGRADED, _why("names not accepted", conds["NamesAccepted"]))
    if _is(conds.get("Established"), "True"):
        return Verdict(HEALTHY, "established")
    return Verdict(PROGRESSING, _why("not yet established", conds.get("Established", {})))


Rule = Callable[[Mapping[str, Any], Mapping[str, Any]], Verdict]

# (API group, kind) -> (rule, whether the kind's controller always publishes observedGeneration)
_RULES: dict[tuple[str, str], tuple[Rule, bool]] = {
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
_STATUSLESS: frozenset[tuple[str, str]] = frozenset({
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

# Ready/Available=False with one of these reasons means "still working on it", not failure.
_PROGRESS_REASONS = frozenset({
    "Progressing", "ProgressingWithRetry", "Reconciling", "InProgress", "Pending", "Waiting",
    "Creating", "Updating", "Initializing", "Provisioning", "Deploying", "Starting", "Scaling",
    "DependencyNotReady",
})


def _readiness(name: str, cond: Mapping[str, Any], generation: int | None) -> Verdict:
    observed = _int(cond.get("observedGeneration"))
    if generation is not None and observed is not None and observed < generation:
        return Verdict(PROGRESSING, f"{name} condition not yet updated for generation {generation}")
    value = cond.get("status")
    if value == "True":
        return Verdict(HEALTHY, f"{name} is True")
    if value == "False":
        progressing = _reason(cond.get("reason")) in _PROGRESS_REASONS
        return Verdict(PROGRESSING if progressing else DEGRADED, _why(f"{name} is False", cond))
    if value == "Unknown":
        return Verdict(PROGRESSING, _why(f"{name} is Unknown", cond))
    return Verdict(UNKNOWN, f"{name} condition has no valid status")


def _generic(status: Mapping[str, Any], generation: int | None) -> Verdict:
    if not status:
        return Verdict(UNKNOWN, "no status reported")
    conds = _conditions(status)
    if _is(conds.get("Stalled"), "True"):  # checked first: when both are set, the worse one wins
        return Verdict(DEGRADED, _why("stalled", conds["Stalled"]))
    if _is(conds.get("Reconciling"), "True"):
        return Verdict(PROGRESSING, _why("reconciling", conds["Reconciling"]))
    names = [name for name in ("Ready", "Available") if name in conds]
    if not names:
        return Verdict(HEALTHY, "status reported, no readiness conditions")
    verdicts = [_readiness(name, conds[name], generation) for name in names]
    if all(v.health is HEALTHY for v in verdicts):
        return Verdict(HEALTHY, " and ".join(names) + (" are True" if len(names) > 1 else " is True"))
    return max(verdicts, key=lambda v: v.health.rank)  # the first of the worst, deterministically


def _expected_generation(sent: int | None, identity: Mapping[str, Any]) -> int | None:
    known = [g for g in (_int(sent), _int(identity.get("generation"))) if g]
    return max(known, default=None)


def reads_spec(obj: Mapping[str, Any]) -> bool:
    """Whether `assess` reads the sent object's spec (else its apiVersion and kind suffice)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return (split_api_version(api_version if isinstance(api_version, str) else "")[0], kind) in _RULES


def assess(obj: dict | None, reported: dict | None, sent_generation: int | None = None) -> Verdict:
    """The health of `obj` (as sent to a WEC) from that WEC's report on it; see the module doc."""
    if reported is None:
        return Verdict(MISSING, "placed, but not reported by the WEC")
    if not isinstance(reported, dict):
        return Verdict(UNKNOWN, "report is not a mapping")
    identity = _map(reported.get("object"))
    has_kind = isinstance(obj, dict) and isinstance(obj.get("kind"), str) and bool(obj["kind"])
    source: Mapping[str, Any] = obj if has_kind and obj is not None else identity
    kind, api_version = source.get("kind"), source.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        return Verdict(UNKNOWN, "report names no kind")
    key = (split_api_version(api_version if isinstance(api_version, str) else "")[0], kind)
    if key in _STATUSLESS:
        return Verdict(HEALTHY, "present; this kind has no status")
    status = reported.get("status")
    if status is None:
        status = {}
    if not isinstance(status, dict):
        return Verdict(UNKNOWN, "status is not a mapping")
    generation = _expected_generation(sent_generation, identity)
    rule, observes = _RULES.get(key, (None, False))
    stale = _stale(status, generation, required=observes)
    if stale is not None:
        return stale
    if rule is None:
        return _generic(status, generation)
    return rule(_map(_map(obj).get("spec")), status)
