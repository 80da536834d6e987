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
4. The kind's own rule (table `RULES` in kindrules.py, keyed by (API group, kind); same kind in another group is
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

from collections.abc import Mapping
from typing import Any

from ...model import split_api_version
from .kindrules import RULES, STATUSLESS
from .verdict import DEGRADED, HEALTHY, MESSAGE_LIMIT, MISSING, PROGRESSING, UNKNOWN, Health, Verdict, worst, as_int, as_map, conditions_of, is_condition, reason_of, stale_verdict, why

__all__ = ["MESSAGE_LIMIT", "Health", "Verdict", "assess", "reads_spec", "worst"]

# Ready/Available=False with one of these reasons means "still working on it", not failure.
_PROGRESS_REASONS = frozenset({
    "Progressing", "ProgressingWithRetry", "Reconciling", "InProgress", "Pending", "Waiting",
    "Creating", "Updating", "Initializing", "Provisioning", "Deploying", "Starting", "Scaling",
    "DependencyNotReady",
})


def _readiness(name: str, cond: Mapping[str, Any], generation: int | None) -> Verdict:
    observed = as_int(cond.get("observedGeneration"))
    if generation is not None and observed is not None and observed < generation:
        return Verdict(PROGRESSING, f"{name} condition not yet updated for generation {generation}")
    value = cond.get("status")
    if value == "True":
        return Verdict(HEALTHY, f"{name} is True")
    if value == "False":
        progressing = reason_of(cond.get("reason")) in _PROGRESS_REASONS
        return Verdict(PROGRESSING if progressing else DEGRADED, why(f"{name} is False", cond))
    if value == "Unknown":
        return Verdict(PROGRESSING, why(f"{name} is Unknown", cond))
    return Verdict(UNKNOWN, f"{name} condition has no valid status")


def _generic(status: Mapping[str, Any], generation: int | None) -> Verdict:
    if not status:
        return Verdict(UNKNOWN, "no status reported")
    conds = conditions_of(status)
    if is_condition(conds.get("Stalled"), "True"):  # checked first: when both are set, the worse one wins
        return Verdict(DEGRADED, why("stalled", conds["Stalled"]))
    if is_condition(conds.get("Reconciling"), "True"):
        return Verdict(PROGRESSING, why("reconciling", conds["Reconciling"]))
    names = [name for name in ("Ready", "Available") if name in conds]
    if not names:
        return Verdict(HEALTHY, "status reported, no readiness conditions")
    verdicts = [_readiness(name, conds[name], generation) for name in names]
    if all(v.health is HEALTHY for v in verdicts):
        return Verdict(HEALTHY, " and ".join(names) + (" are True" if len(names) > 1 else " is True"))
    return max(verdicts, key=lambda v: v.health.rank)  # the first of the worst, deterministically


def _expected_generation(sent: int | None, identity: Mapping[str, Any]) -> int | None:
    known = [g for g in (as_int(sent), as_int(identity.get("generation"))) if g]
    return max(known, default=None)


def reads_spec(obj: Mapping[str, Any]) -> bool:
    """Whether `assess` reads the sent object's spec (else its apiVersion and kind suffice)."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return (split_api_version(api_version if isinstance(api_version, str) else "")[0], kind) in RULES


def assess(obj: dict | None, reported: dict | None, sent_generation: int | None = None) -> Verdict:
    """The health of `obj` (as sent to a WEC) from that WEC's report on it; see the module doc."""
    if reported is None:
        return Verdict(MISSING, "placed, but not reported by the WEC")
    if not isinstance(reported, dict):
        return Verdict(UNKNOWN, "report is not a mapping")
    identity = as_map(reported.get("object"))
    has_kind = isinstance(obj, dict) and isinstance(obj.get("kind"), str) and bool(obj["kind"])
    source: Mapping[str, Any] = obj if has_kind and obj is not None else identity
    kind, api_version = source.get("kind"), source.get("apiVersion")
    if not isinstance(kind, str) or not kind:
        return Verdict(UNKNOWN, "report names no kind")
    key = (split_api_version(api_version if isinstance(api_version, str) else "")[0], kind)
    if key in STATUSLESS:
        return Verdict(HEALTHY, "present; this kind has no status")
    status = reported.get("status")
    if status is None:
        status = {}
    if not isinstance(status, dict):
        return Verdict(UNKNOWN, "status is not a mapping")
    generation = _expected_generation(sent_generation, identity)
    rule, observes = RULES.get(key, (None, False))
    stale = stale_verdict(status, generation, required=observes)
    if stale is not None:
        return stale
    if rule is None:
        return _generic(status, generation)
    return rule(as_map(as_map(obj).get("spec")), status)
