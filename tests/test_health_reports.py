"""Health per object per WEC (ksgitops.core.status.health) whatever is reported: placed but not
reported (Missing), malformed reports and values, the kind and spec from the sent object or the
report; messages on one line, bounded, without data (any report, generated); the Health order,
`worst` and Verdict."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.status.health import MESSAGE_LIMIT, Health, Verdict, assess, worst
from health_tables import D, DEPLOY_OK, H, M, P, U, cond, report, sent


# --- Missing, malformed reports, object identity ----------------------------------------------

DEPLOY = sent("apps/v1", "Deployment", {"replicas": 1})


def test_missing_when_placed_but_not_reported() -> None:
    verdict = assess(DEPLOY, None)
    assert verdict == Verdict(M, "placed, but not reported by the WEC")


def test_missing_does_not_depend_on_the_object() -> None:
    assert assess(None, None).health is M
    assert assess(sent("v1", "ConfigMap"), None, sent_generation=2).health is M


def test_status_key_absent_reads_as_empty_status() -> None:
    obj = sent("example.com/v1", "Widget")
    assert assess(obj, report(obj, omit_status=True)) == Verdict(U, "no status reported")
    assert assess(DEPLOY, report(DEPLOY, omit_status=True, generation=1)).health is P


@pytest.mark.parametrize("bad,fragment", [
    ("not a report", "report is not a mapping"),
    (["status"], "report is not a mapping"),
    ({}, "report names no kind"),
    ({"object": "Deployment", "status": {}}, "report names no kind"),
    ({"object": {"kind": ""}, "status": {}}, "report names no kind"),
    ({"object": {"kind": 3}, "status": {}}, "report names no kind"),
], ids=["string", "list", "empty", "object-not-mapping", "empty-kind", "kind-not-string"])
def test_malformed_report_is_unknown(bad: Any, fragment: str) -> None:
    verdict = assess(None, bad)
    assert verdict.health is U and fragment in verdict.message


def test_kind_comes_from_the_report_when_no_object_is_given() -> None:
    reported = {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "generation": 2},
                "status": {"observedGeneration": 1}}
    assert assess(None, reported).message == "generation 2 not yet observed (observedGeneration 1)"
    # without the object there is no spec: replicas default to 1
    reported["status"] = {"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    assert assess(None, reported) == Verdict(H, "1 of 1 replicas available")


def test_kind_of_the_sent_object_wins_over_the_report() -> None:
    obj = sent("v1", "ConfigMap")
    reported = {"object": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "x"}}
    assert assess(obj, reported).health is H  # the ConfigMap rule, not "Widget without status"


def test_spec_comes_from_the_sent_object() -> None:
    status = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    assert assess(sent("apps/v1", "Deployment", {"replicas": 1}), report(DEPLOY, status, 1)).health is H
    assert assess(sent("apps/v1", "Deployment", {"replicas": 5}), report(DEPLOY, status, 1)) == \
        Verdict(P, "rollout: 1 of 5 replicas updated")


@pytest.mark.parametrize("field,value", [
    ("replicas", "3"), ("replicas", -1), ("replicas", True), ("replicas", 2.5), ("replicas", None)])
def test_malformed_replicas_default_to_one(field: str, value: Any) -> None:
    obj = sent("apps/v1", "Deployment", {field: value})
    status = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    assert assess(obj, report(obj, status, 1)) == Verdict(H, "1 of 1 replicas available")


def test_malformed_counts_read_as_zero() -> None:
    status = {"observedGeneration": 1, "replicas": "3", "updatedReplicas": True, "availableReplicas": [3]}
    assert assess(DEPLOY, report(DEPLOY, status, 1)) == Verdict(P, "rollout: 0 of 1 replicas updated")


@pytest.mark.parametrize("sent_generation", [0, -2, True, "3"])
def test_nonsense_sent_generation_is_ignored(sent_generation: Any) -> None:
    obj = sent("example.com/v1", "Widget")
    verdict = assess(obj, report(obj, {"observedGeneration": 1, "conditions": [cond("Ready", "True")]}, 1),
                     sent_generation)
    assert verdict == Verdict(H, "Ready is True")


def test_first_condition_of_a_repeated_type_wins() -> None:
    obj = sent("example.com/v1", "Widget")
    status = {"conditions": [cond("Ready", "False", "Broken"), cond("Ready", "True"), "junk", {"status": "True"}]}
    assert assess(obj, report(obj, status)).health is D


# --- messages: one line, bounded, no data ------------------------------------------------------


def test_condition_messages_are_one_line_and_truncated() -> None:
    long = "first line\n\tsecond   line " + "x" * 500
    obj = sent("example.com/v1", "Widget")
    verdict = assess(obj, report(obj, {"conditions": [cond("Ready", "False", "Broken", long)]}))
    assert verdict.health is D
    head = "Ready is False (Broken): "
    assert verdict.message.startswith(head + "first line second line xxx")
    assert len(verdict.message) == len(head) + MESSAGE_LIMIT
    assert verdict.message.endswith("…") and "\n" not in verdict.message and "\t" not in verdict.message


def test_a_message_at_the_limit_is_not_truncated() -> None:
    exact = "y" * MESSAGE_LIMIT
    obj = sent("example.com/v1", "Widget")
    verdict = assess(obj, report(obj, {"conditions": [cond("Ready", "False", "Broken", exact)]}))
    assert verdict.message == f"Ready is False (Broken): {exact}"


@pytest.mark.parametrize("reason", ["has spaces", "line\nbreak", "1Leading", "x" * 200, 42, "<b>Bold</b>"])
def test_reasons_that_are_not_kubernetes_reasons_are_left_out(reason: Any) -> None:
    obj = sent("example.com/v1", "Widget")
    verdict = assess(obj, report(obj, {"conditions": [{"type": "Ready", "status": "False", "reason": reason}]}))
    assert verdict == Verdict(D, "Ready is False")


def test_secret_data_never_reaches_a_message() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "ns1"},
              "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "hunter2"}}
    # a broken reporter that copied the data into status, and a condition quoting it
    status = {"data": {"password": "aHVudGVyMg=="},
              "conditions": [cond("Ready", "False", "Leak", "password is hunter2 aHVudGVyMg==")]}
    for verdict in (assess(secret, report(secret, status)), assess(secret, None),
                    assess(None, report(secret, status))):
        assert "hunter2" not in verdict.message and "aHVudGVyMg" not in verdict.message
        assert "hunter2" not in str(verdict)


def test_unrecognised_phases_are_not_echoed() -> None:
    for api, kind in [("v1", "Pod"), ("v1", "PersistentVolumeClaim"), ("v1", "Namespace")]:
        obj = sent(api, kind)
        verdict = assess(obj, report(obj, {"phase": "token=hunter2"}))
        assert verdict == Verdict(U, "unrecognised phase"), kind


def test_assess_is_deterministic_and_does_not_mutate_its_inputs() -> None:
    import copy
    obj = sent("apps/v1", "Deployment", {"replicas": 3})
    rep = report(obj, {**DEPLOY_OK, "updatedReplicas": 1}, 2)
    before = (copy.deepcopy(obj), copy.deepcopy(rep))
    assert assess(obj, rep, 2) == assess(copy.deepcopy(obj), copy.deepcopy(rep), 2)
    assert (obj, rep) == before


# Every reported document, however odd, gets a verdict with a one-line, bounded message.
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 5), st.text(max_size=300),
                     st.sampled_from(["True", "False", "Unknown", "Running", "Bound", "LoadBalancer"]))
_keys = st.sampled_from(["conditions", "type", "status", "reason", "message", "phase", "replicas",
                         "updatedReplicas", "availableReplicas", "readyReplicas", "observedGeneration",
                         "containerStatuses", "state", "waiting", "loadBalancer", "ingress",
                         "desiredNumberScheduled", "numberAvailable", "updatedNumberScheduled",
                         "updateStrategy", "rollingUpdate", "partition", "generation", "kind"])
_json = st.recursive(_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(_keys, inner, max_size=5)),
                     max_leaves=25)
_kinds = st.sampled_from([("apps/v1", "Deployment"), ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet"),
                          ("apps/v1", "DaemonSet"), ("batch/v1", "Job"), ("v1", "Pod"),
                          ("v1", "PersistentVolumeClaim"), ("v1", "Service"), ("v1", "Namespace"),
                          ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                          ("example.com/v1", "Widget"), ("v1", "ConfigMap")])


@settings(max_examples=300, deadline=None)
@given(kind=_kinds, spec=_json, status=_json, generation=st.one_of(st.none(), st.integers(-1, 4)),
       sent_generation=st.one_of(st.none(), st.integers(-1, 4)))
def test_any_report_gets_a_one_line_verdict(kind: tuple[str, str], spec: Any, status: Any,
                                            generation: Any, sent_generation: Any) -> None:
    obj = {**sent(*kind), "spec": spec}
    verdict = assess(obj, report(obj, status, generation), sent_generation)
    assert isinstance(verdict.health, Health) and isinstance(verdict.message, str) and verdict.message
    assert "\n" not in verdict.message and "\r" not in verdict.message
    assert len(verdict.message) <= 2 * MESSAGE_LIMIT


# --- Health order, worst, Verdict -------------------------------------------------------------


def test_health_values_and_order() -> None:
    assert [h.value for h in Health] == ["Healthy", "Unknown", "Progressing", "Missing", "Degraded"]
    assert [h.rank for h in Health] == [0, 1, 2, 3, 4]
    assert H < U < P < M < D
    assert D > M > P > U > H
    assert D >= Health("Degraded") and H <= Health("Healthy") and not (P < Health("Progressing"))
    assert sorted([H, D, U, M, P], reverse=True) == [D, M, P, U, H]  # unhealthy first


def test_health_is_its_string_value() -> None:
    assert Health.DEGRADED == "Degraded" and Health("Missing") is M
    assert str(P) == "Progressing" and f"{P}" == "Progressing" and f"{P:>12}" == " Progressing"


@pytest.mark.parametrize("other", ["Healthy", "Zebra", 3, None])
def test_health_does_not_order_against_other_types(other: Any) -> None:
    # as plain strings, "Degraded" < "Healthy" alphabetically: refuse rather than answer wrongly
    with pytest.raises(TypeError):
        _ = D < other
    with pytest.raises(TypeError):
        _ = D > other


@pytest.mark.parametrize("healths,expected", [
    ((), H),
    ((H,), H),
    ((H, U), U),
    ((P, U), P),
    ((U, P, H), P),
    ((P, M), M),
    ((M, D), D),
    ((D, H, U, P, M), D),
    ((H, H, H), H),
    (("Missing", H, "Progressing"), M),
], ids=lambda v: "-".join(str(h) for h in v) if isinstance(v, tuple) else str(v))
def test_worst(healths: tuple, expected: Health) -> None:
    result = worst(*healths)
    assert result is expected


def test_worst_rejects_what_is_not_a_health() -> None:
    with pytest.raises(ValueError):
        worst(H, "Sick")


def test_verdict_is_frozen_and_prints_in_one_line() -> None:
    verdict = Verdict(D, "stalled (Failed)")
    with pytest.raises(AttributeError, match="immutable"):
        verdict.health = H  # type: ignore[misc]
    assert str(verdict) == "Degraded: stalled (Failed)"
    assert str(Verdict(H, "")) == "Healthy"
    assert Verdict(P, "a") == Verdict(P, "a") and hash(Verdict(P, "a")) == hash(Verdict(P, "a"))
