"""Health per object per WEC (ksgitops.core.status.health): one table per kind (tests/health_tables.py),
one line per case, every kind's rule with its table; the generic rule for any other kind and the
kinds without a status. Missing and malformed reports, messages and the Health order:
tests/test_health_reports.py."""
from __future__ import annotations

from typing import Any

import pytest

from ksgitops.core.status.health import Health, Verdict, assess
from health_tables import (CRD, D, DAEMONSET, DEPLOYMENT, H, JOB, LB_INGRESS, NAMESPACE, P, POD, PVC, REPLICASET,
                           SERVICE, STATEFULSET, STS_OK, U, cond, ids, report, run_table, sent)


@pytest.mark.parametrize("name,spec,status,gen,sent_gen,health,fragment", DEPLOYMENT, ids=ids(DEPLOYMENT))
def test_deployment(name: str, spec: dict, status: Any, gen: int | None, sent_gen: int | None,
                    health: Health, fragment: str) -> None:
    run_table(("apps/v1", "Deployment"), spec, status, gen, sent_gen, health, fragment)


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", REPLICASET, ids=ids(REPLICASET))
def test_replica_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "ReplicaSet"), spec, status, gen, None, health, fragment)


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", STATEFULSET, ids=ids(STATEFULSET))
def test_stateful_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "StatefulSet"), spec, status, gen, None, health, fragment)


def test_stateful_set_message_does_not_echo_revisions() -> None:
    obj = sent("apps/v1", "StatefulSet", {"replicas": 3})
    verdict = assess(obj, report(obj, {**STS_OK, "updateRevision": "db-8a0"}, 1))
    assert verdict.health is P
    assert "db-" not in verdict.message


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", DAEMONSET, ids=ids(DAEMONSET))
def test_daemon_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "DaemonSet"), spec, status, gen, None, health, fragment)


@pytest.mark.parametrize("name,status,health,fragment", JOB, ids=ids(JOB))
def test_job(name: str, status: Any, health: Health, fragment: str) -> None:
    # generation 1 known, no observedGeneration: Jobs do not publish it, so no "not yet observed"
    run_table(("batch/v1", "Job"), {"template": {}}, status, 1, None, health, fragment)


@pytest.mark.parametrize("name,status,health,fragment", POD, ids=ids(POD))
def test_pod(name: str, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "Pod"), {"containers": [{"name": "app", "image": "nginx"}]}, status, None, None,
              health, fragment)


@pytest.mark.parametrize("name,status,health,fragment", PVC, ids=ids(PVC))
def test_persistent_volume_claim(name: str, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "PersistentVolumeClaim"), {"resources": {}}, status, None, None, health, fragment)


@pytest.mark.parametrize("name,spec,status,health,fragment", SERVICE, ids=ids(SERVICE))
def test_service(name: str, spec: dict, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "Service"), spec, status, None, None, health, fragment)


def test_service_message_does_not_echo_addresses() -> None:
    obj = sent("v1", "Service", {"type": "LoadBalancer"})
    assert "203.0.113.7" not in assess(obj, report(obj, LB_INGRESS)).message


@pytest.mark.parametrize("name,status,health,fragment", NAMESPACE, ids=ids(NAMESPACE))
def test_namespace(name: str, status: Any, health: Health, fragment: str) -> None:
    api, kind = "v1", "Namespace"
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "team-a"}}
    verdict = assess(obj, report({**obj, "metadata": {"name": "team-a", "namespace": ""}}, status))
    assert (verdict.health, fragment in verdict.message) == (health, True), verdict


@pytest.mark.parametrize("name,status,health,fragment", CRD, ids=ids(CRD))
def test_custom_resource_definition(name: str, status: Any, health: Health, fragment: str) -> None:
    run_table(("apiextensions.k8s.io/v1", "CustomResourceDefinition"), {"group": "example.com"}, status,
              1, None, health, fragment)


# --- the generic rule (any other kind) --------------------------------------------------------

GENERIC = [
    # name, apiVersion, kind, status, reported generation, sent generation, health, fragment
    ("generic-healthy-ready", "example.com/v1", "Widget", {"conditions": [cond("Ready", "True")]}, None, None,
     H, "Ready is True"),
    ("generic-healthy-available", "example.com/v1", "Widget", {"conditions": [cond("Available", "True")]}, None, None,
     H, "Available is True"),
    ("generic-healthy-ready-and-available", "example.com/v1", "Widget",
     {"conditions": [cond("Available", "True"), cond("Ready", "True")]}, None, None, H, "Ready and Available are True"),
    ("generic-degraded-ready-false", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "False", "InstallFailed", "helm install failed")]}, None, None,
     D, "Ready is False (InstallFailed): helm install failed"),
    ("generic-progressing-ready-false-progress-reason", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "False", "Progressing", "waiting for the database")]}, None, None,
     P, "Ready is False (Progressing): waiting for the database"),
    ("generic-degraded-available-false", "example.com/v1", "Widget",
     {"conditions": [cond("Available", "False", "NoEndpoints")]}, None, None, D, "Available is False (NoEndpoints)"),
    ("generic-degraded-worst-of-ready-and-available", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "Unknown"), cond("Available", "False", "Broken")]}, None, None,
     D, "Available is False (Broken)"),
    ("generic-progressing-ready-unknown", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "Unknown", "Reconciling")]}, None, None, P, "Ready is Unknown (Reconciling)"),
    ("generic-unknown-ready-malformed", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "yes")]}, None, None, U, "Ready condition has no valid status"),
    ("generic-degraded-stalled", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "True"), cond("Stalled", "True", "ArtifactFailed", "no such tag")]}, None, None,
     D, "stalled (ArtifactFailed): no such tag"),
    ("generic-healthy-stalled-false", "example.com/v1", "Widget",
     {"conditions": [cond("Stalled", "False"), cond("Ready", "True")]}, None, None, H, "Ready is True"),
    ("generic-progressing-reconciling", "example.com/v1", "Widget",
     {"conditions": [cond("Reconciling", "True", "Progressing", "fetching")]}, None, None,
     P, "reconciling (Progressing): fetching"),
    ("generic-degraded-stalled-beats-reconciling", "example.com/v1", "Widget",
     {"conditions": [cond("Reconciling", "True"), cond("Stalled", "True", "Failed")]}, None, None,
     D, "stalled (Failed)"),
    ("generic-progressing-observed-generation", "example.com/v1", "Widget",
     {"observedGeneration": 1, "conditions": [cond("Ready", "True")]}, 2, None,
     P, "generation 2 not yet observed (observedGeneration 1)"),
    ("generic-progressing-sent-generation", "example.com/v1", "Widget",
     {"observedGeneration": 2, "conditions": [cond("Ready", "True")]}, 2, 3,
     P, "generation 3 not yet observed (observedGeneration 2)"),
    ("generic-progressing-sent-generation-without-reported", "example.com/v1", "Widget",
     {"observedGeneration": 2, "conditions": [cond("Ready", "True")]}, None, 3,
     P, "generation 3 not yet observed"),
    ("generic-healthy-observed-generation-current", "example.com/v1", "Widget",
     {"observedGeneration": 2, "conditions": [cond("Ready", "True")]}, 2, 2, H, "Ready is True"),
    ("generic-healthy-no-observed-generation", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "True")]}, 7, None, H, "Ready is True"),
    ("generic-progressing-stale-ready-condition", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "True", observedGeneration=1)]}, 2, None,
     P, "Ready condition not yet updated for generation 2"),
    ("generic-healthy-current-ready-condition", "example.com/v1", "Widget",
     {"conditions": [cond("Ready", "True", observedGeneration=2)]}, 2, None, H, "Ready is True"),
    ("generic-healthy-no-readiness-conditions", "autoscaling/v2", "HorizontalPodAutoscaler",
     {"currentReplicas": 2, "conditions": [cond("AbleToScale", "True")]}, None, None,
     H, "no readiness conditions"),
    ("generic-unknown-no-status", "example.com/v1", "Widget", None, None, None, U, "no status reported"),
    ("generic-unknown-empty-status", "example.com/v1", "Widget", {}, 3, None, U, "no status reported"),
    ("generic-unknown-status-not-mapping", "example.com/v1", "Widget", ["Ready"], None, None,
     U, "status is not a mapping"),
    ("generic-healthy-malformed-conditions-ignored", "example.com/v1", "Widget",
     {"conditions": "Ready", "phase": "x"}, None, None, H, "no readiness conditions"),
    ("generic-unknown-kind-ready", "unknown.example/v9", "Gizmo", {"conditions": [cond("Ready", "True")]}, None, None,
     H, "Ready is True"),
    ("generic-unknown-kind-no-status", "unknown.example/v9", "Gizmo", None, None, None, U, "no status reported"),
    # same kind name in another group is not the built-in: no Deployment rule, no ConfigMap exemption
    ("generic-deployment-of-another-group", "example.com/v1", "Deployment",
     {"conditions": [cond("Ready", "True")]}, 1, None, H, "Ready is True"),
    ("generic-configmap-of-another-group", "example.com/v1", "ConfigMap", None, None, None, U, "no status reported"),
]


@pytest.mark.parametrize("name,api,kind,status,gen,sent_gen,health,fragment", GENERIC, ids=ids(GENERIC))
def test_generic(name: str, api: str, kind: str, status: Any, gen: int | None, sent_gen: int | None,
                 health: Health, fragment: str) -> None:
    run_table((api, kind), {"size": 1}, status, gen, sent_gen, health, fragment)


STATUSLESS = [
    ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "ServiceAccount"),
    ("rbac.authorization.k8s.io/v1", "Role"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("networking.k8s.io/v1", "NetworkPolicy"), ("v1", "LimitRange"), ("v1", "ResourceQuota"),
    ("storage.k8s.io/v1", "StorageClass"), ("scheduling.k8s.io/v1", "PriorityClass"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
]


@pytest.mark.parametrize("api,kind", STATUSLESS, ids=[k for _, k in STATUSLESS])
@pytest.mark.parametrize("status", [None, {}, {"observedGeneration": 1}], ids=["none", "empty", "old-generation"])
def test_statusless_kinds_are_healthy_once_reported(api: str, kind: str, status: Any) -> None:
    obj = sent(api, kind)
    verdict = assess(obj, report(obj, status, generation=3), sent_generation=3)
    assert verdict == Verdict(H, "present; this kind has no status")


def test_every_kind_rule_has_a_table() -> None:
    from ksgitops.core.status import health
    tables = {("apps", "Deployment"): DEPLOYMENT, ("apps", "ReplicaSet"): REPLICASET,
              ("apps", "StatefulSet"): STATEFULSET, ("apps", "DaemonSet"): DAEMONSET, ("batch", "Job"): JOB,
              ("", "Pod"): POD, ("", "PersistentVolumeClaim"): PVC, ("", "Service"): SERVICE,
              ("", "Namespace"): NAMESPACE, ("apiextensions.k8s.io", "CustomResourceDefinition"): CRD}
    assert set(tables) == set(health.RULES)
    for key, table in tables.items():
        # each kind's table reaches every health its rule can give
        expected = {row[-2] for row in table}
        assert len(expected) >= 2, key
