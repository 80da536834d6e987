"""Health per object per WEC (ksgitops.core.status.health): one table per kind, one line per case.

Each case is named by the answer it expects (`deployment-progressing-updated`, as in
gitops-engine's testdata) and checks the health and a fragment of the message, so a rule that
returns the right health for the wrong reason still fails.
"""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.status.health import MESSAGE_LIMIT, Health, Verdict, assess, worst

H, U, P, M, D = Health.HEALTHY, Health.UNKNOWN, Health.PROGRESSING, Health.MISSING, Health.DEGRADED


def sent(api: str, kind: str, spec: dict | None = None, name: str = "x", ns: str = "ns1") -> dict:
    obj: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns}}
    if spec is not None:
        obj["spec"] = spec
    return obj


def report(obj: dict, status: Any = None, generation: int | None = None, *, omit_status: bool = False) -> dict:
    md = obj["metadata"]
    ident: dict[str, Any] = {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                             "namespace": md.get("namespace", ""), "name": md["name"]}
    if generation is not None:
        ident["generation"] = generation
    doc: dict[str, Any] = {"object": ident, "reportedAt": "2024-05-01T00:00:00Z"}
    if not omit_status:
        doc["status"] = status
    return doc


def cond(type_: str, status: str, reason: str = "", message: str = "", **extra: Any) -> dict:
    c: dict[str, Any] = {"type": type_, "status": status, **extra}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def run_table(kind_api: tuple[str, str], spec: dict | None, status: Any, generation: int | None,
              sent_generation: int | None, health: Health, fragment: str) -> None:
    api, kind = kind_api
    obj = sent(api, kind, spec)
    verdict = assess(obj, report(obj, status, generation), sent_generation)
    assert verdict.health is health, verdict
    assert fragment in verdict.message, verdict
    assert "\n" not in verdict.message


def ids(table: list[tuple]) -> list[str]:
    names = [row[0] for row in table]
    assert len(names) == len(set(names)), "duplicate case names"
    return names


# --- Deployment -------------------------------------------------------------------------------

DEPLOY_OK = {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
             "availableReplicas": 3,
             "conditions": [cond("Available", "True", "MinimumReplicasAvailable"),
                            cond("Progressing", "True", "NewReplicaSetAvailable")]}

DEPLOYMENT = [
    # name, spec, status, reported generation, sent generation, health, message fragment
    ("deployment-healthy", {"replicas": 3}, DEPLOY_OK, 2, None, H, "3 of 3 replicas available"),
    ("deployment-healthy-default-replicas", {},
     {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1}, 1, None,
     H, "1 of 1 replicas available"),
    ("deployment-progressing-default-replicas", {}, {"observedGeneration": 1}, 1, None,
     P, "0 of 1 replicas updated"),
    ("deployment-healthy-scaled-to-zero", {"replicas": 0}, {"observedGeneration": 1}, 1, None,
     H, "0 of 0 replicas available"),
    ("deployment-healthy-generation-unknown", {"replicas": 3},
     {k: v for k, v in DEPLOY_OK.items() if k != "observedGeneration"}, None, None,
     H, "3 of 3"),
    ("deployment-progressing-observed-generation", {"replicas": 3}, DEPLOY_OK, 3, None,
     P, "generation 3 not yet observed (observedGeneration 2)"),
    ("deployment-progressing-generation-not-observed", {"replicas": 3},
     {k: v for k, v in DEPLOY_OK.items() if k != "observedGeneration"}, 2, None,
     P, "generation 2 not yet observed"),
    ("deployment-progressing-sent-generation", {"replicas": 3}, DEPLOY_OK, 2, 4,
     P, "generation 4 not yet observed (observedGeneration 2)"),
    ("deployment-healthy-sent-generation-observed", {"replicas": 3}, DEPLOY_OK, None, 2,
     H, "3 of 3"),
    ("deployment-healthy-observed-newer", {"replicas": 3}, {**DEPLOY_OK, "observedGeneration": 5}, 5, 2,
     H, "3 of 3"),
    ("deployment-degraded-progress-deadline", {"replicas": 3},
     {**DEPLOY_OK, "updatedReplicas": 1, "conditions": [
         cond("Progressing", "False", "ProgressDeadlineExceeded",
              'ReplicaSet "web-5d8" has timed out progressing.')]}, 2, None,
     D, 'progress deadline exceeded: ReplicaSet "web-5d8" has timed out progressing.'),
    ("deployment-degraded-replica-failure", {"replicas": 3},
     {**DEPLOY_OK, "conditions": [cond("ReplicaFailure", "True", "FailedCreate", "exceeded quota")]},
     2, None, D, "replica failure (FailedCreate): exceeded quota"),
    ("deployment-progressing-updated", {"replicas": 3}, {**DEPLOY_OK, "updatedReplicas": 1}, 2, None,
     P, "rollout: 1 of 3 replicas updated"),
    ("deployment-progressing-old-replicas", {"replicas": 3}, {**DEPLOY_OK, "replicas": 4}, 2, None,
     P, "rollout: 1 old replicas pending termination"),
    ("deployment-progressing-available", {"replicas": 3}, {**DEPLOY_OK, "availableReplicas": 2}, 2, None,
     P, "rollout: 2 of 3 updated replicas available"),
    ("deployment-progressing-available-false", {"replicas": 3},
     {**DEPLOY_OK, "conditions": [cond("Available", "False", "MinimumReplicasUnavailable",
                                       "Deployment does not have minimum availability.")]}, 2, None,
     P, "Available is False (MinimumReplicasUnavailable): Deployment does not have minimum"),
    ("deployment-progressing-empty-status", {"replicas": 2}, None, None, None,
     P, "0 of 2 replicas updated"),
    # as kube-controller-manager writes them (pkg/controller/deployment/sync.go calculateStatus,
    # progress.go syncRolloutStatus): first the new ReplicaSet, not yet an observed generation...
    ("deployment-progressing-replicaset-created", {"replicas": 1},
     {"conditions": [cond("Progressing", "True", "NewReplicaSetCreated", 'Created new replica set "web-5d8"')]},
     1, None, P, "generation 1 not yet observed"),
    # ...then its Pods made but not running (no node, or none they fit)...
    ("deployment-progressing-pods-not-running", {"replicas": 1},
     {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "unavailableReplicas": 1,
      "conditions": [cond("Available", "False", "MinimumReplicasUnavailable"),
                     cond("Progressing", "True", "ReplicaSetUpdated")]}, 1, None,
     P, "rollout: 0 of 1 updated replicas available"),
    # ...or, scaled to zero, complete at once
    ("deployment-healthy-scaled-to-zero-complete", {"replicas": 0},
     {"observedGeneration": 1, "conditions": [cond("Available", "True", "MinimumReplicasAvailable"),
                                              cond("Progressing", "True", "NewReplicaSetAvailable")]}, 1, None,
     H, "0 of 0 replicas available"),
]


@pytest.mark.parametrize("name,spec,status,gen,sent_gen,health,fragment", DEPLOYMENT, ids=ids(DEPLOYMENT))
def test_deployment(name: str, spec: dict, status: Any, gen: int | None, sent_gen: int | None,
                    health: Health, fragment: str) -> None:
    run_table(("apps/v1", "Deployment"), spec, status, gen, sent_gen, health, fragment)


# --- ReplicaSet -------------------------------------------------------------------------------

RS_OK = {"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "availableReplicas": 2}

REPLICASET = [
    ("replicaset-healthy", {"replicas": 2}, RS_OK, 1, H, "2 of 2 replicas available"),
    ("replicaset-healthy-default-replicas", {}, {**RS_OK, "replicas": 1, "availableReplicas": 1}, 1,
     H, "1 of 1 replicas available"),
    ("replicaset-progressing-available", {"replicas": 2}, {**RS_OK, "availableReplicas": 1}, 1,
     P, "1 of 2 replicas available"),
    ("replicaset-progressing-default-replicas", {}, {"observedGeneration": 1}, 1,
     P, "0 of 1 replicas available"),
    ("replicaset-progressing-extra", {"replicas": 2}, {**RS_OK, "replicas": 3}, 1,
     P, "1 extra replicas pending termination"),
    ("replicaset-progressing-generation", {"replicas": 2}, RS_OK, 2, P, "generation 2 not yet observed"),
    ("replicaset-progressing-generation-not-observed", {"replicas": 2},
     {"replicas": 2, "availableReplicas": 2}, 1, P, "generation 1 not yet observed"),
    ("replicaset-degraded-replica-failure", {"replicas": 2},
     {**RS_OK, "conditions": [cond("ReplicaFailure", "True", "FailedCreate", 'pods "x" is forbidden')]},
     1, D, 'replica failure (FailedCreate): pods "x" is forbidden'),
    ("replicaset-healthy-replica-failure-false", {"replicas": 2},
     {**RS_OK, "conditions": [cond("ReplicaFailure", "False")]}, 1, H, "2 of 2"),
    # as the API server returns a new one (`replicas` is never left out), before its controller looked
    ("replicaset-progressing-fresh", {"replicas": 0}, {"replicas": 0}, 1, P, "generation 1 not yet observed"),
    # as kube-controller-manager writes them (pkg/controller/replicaset/replica_set_utils.go calculateStatus)
    ("replicaset-progressing-pods-not-running", {"replicas": 2},
     {"replicas": 2, "fullyLabeledReplicas": 2, "observedGeneration": 1}, 1, P, "0 of 2 replicas available"),
    ("replicaset-healthy-scaled-to-zero", {"replicas": 0}, {"replicas": 0, "observedGeneration": 1}, 1,
     H, "0 of 0 replicas available"),
]


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", REPLICASET, ids=ids(REPLICASET))
def test_replica_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "ReplicaSet"), spec, status, gen, None, health, fragment)


# --- StatefulSet ------------------------------------------------------------------------------

STS_OK = {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
          "updatedReplicas": 3, "currentRevision": "db-7f9", "updateRevision": "db-7f9"}
ROLLING = {"type": "RollingUpdate"}

STATEFULSET = [
    ("statefulset-healthy", {"replicas": 3}, STS_OK, 1, H, "3 of 3 replicas ready"),
    ("statefulset-healthy-default-replicas", {}, {**STS_OK, "readyReplicas": 1, "updatedReplicas": 1}, 1,
     H, "1 of 1 replicas ready"),
    ("statefulset-progressing-default-replicas", {}, {"observedGeneration": 1}, 1,
     P, "0 of 1 replicas ready"),
    ("statefulset-progressing-ready", {"replicas": 3}, {**STS_OK, "readyReplicas": 1}, 1,
     P, "1 of 3 replicas ready"),
    ("statefulset-progressing-updated", {"replicas": 3, "updateStrategy": ROLLING},
     {**STS_OK, "updatedReplicas": 1, "updateRevision": "db-8a0"}, 1, P, "rollout: 1 of 3 replicas updated"),
    ("statefulset-progressing-revision", {"replicas": 3}, {**STS_OK, "updateRevision": "db-8a0"}, 1,
     P, "current revision is not yet the update revision"),
    ("statefulset-healthy-partitioned", {"replicas": 3, "updateStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"partition": 2}}},
     {**STS_OK, "updatedReplicas": 1, "updateRevision": "db-8a0"}, 1, H, "3 of 3 replicas ready"),
    ("statefulset-progressing-partitioned", {"replicas": 3, "updateStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"partition": 1}}},
     {**STS_OK, "updatedReplicas": 1, "updateRevision": "db-8a0"}, 1, P, "rollout: 1 of 2 replicas updated"),
    ("statefulset-healthy-on-delete", {"replicas": 3, "updateStrategy": {"type": "OnDelete"}},
     {**STS_OK, "updatedReplicas": 0, "updateRevision": "db-8a0"}, 1, H, "(OnDelete updates)"),
    ("statefulset-progressing-on-delete-not-ready", {"replicas": 3, "updateStrategy": {"type": "OnDelete"}},
     {**STS_OK, "readyReplicas": 2}, 1, P, "2 of 3 replicas ready"),
    ("statefulset-progressing-generation", {"replicas": 3}, STS_OK, 2, P, "generation 2 not yet observed"),
]


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", STATEFULSET, ids=ids(STATEFULSET))
def test_stateful_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "StatefulSet"), spec, status, gen, None, health, fragment)


def test_stateful_set_message_does_not_echo_revisions() -> None:
    obj = sent("apps/v1", "StatefulSet", {"replicas": 3})
    verdict = assess(obj, report(obj, {**STS_OK, "updateRevision": "db-8a0"}, 1))
    assert verdict.health is P
    assert "db-" not in verdict.message


# --- DaemonSet --------------------------------------------------------------------------------

DS_OK = {"observedGeneration": 4, "desiredNumberScheduled": 3, "currentNumberScheduled": 3,
         "updatedNumberScheduled": 3, "numberAvailable": 3, "numberReady": 3}

DAEMONSET = [
    ("daemonset-healthy", {}, DS_OK, 4, H, "3 of 3 pods available"),
    ("daemonset-healthy-no-nodes", {}, {"observedGeneration": 1}, 1, H, "0 of 0 pods available"),
    ("daemonset-progressing-updated", {}, {**DS_OK, "updatedNumberScheduled": 2}, 4,
     P, "rollout: 2 of 3 pods updated"),
    ("daemonset-progressing-available", {}, {**DS_OK, "numberAvailable": 1}, 4, P, "1 of 3 pods available"),
    ("daemonset-healthy-on-delete", {"updateStrategy": {"type": "OnDelete"}},
     {**DS_OK, "updatedNumberScheduled": 0}, 4, H, "3 of 3 pods available"),
    ("daemonset-progressing-on-delete-available", {"updateStrategy": {"type": "OnDelete"}},
     {**DS_OK, "updatedNumberScheduled": 0, "numberAvailable": 2}, 4, P, "2 of 3 pods available"),
    ("daemonset-progressing-generation", {}, DS_OK, 5, P, "generation 5 not yet observed (observedGeneration 4)"),
    ("daemonset-progressing-generation-not-observed", {}, {"desiredNumberScheduled": 0}, 1,
     P, "generation 1 not yet observed"),
]


@pytest.mark.parametrize("name,spec,status,gen,health,fragment", DAEMONSET, ids=ids(DAEMONSET))
def test_daemon_set(name: str, spec: dict, status: Any, gen: int | None, health: Health, fragment: str) -> None:
    run_table(("apps/v1", "DaemonSet"), spec, status, gen, None, health, fragment)


# --- Job --------------------------------------------------------------------------------------

JOB = [
    ("job-healthy-complete", {"succeeded": 1, "conditions": [cond("Complete", "True")]}, H, "complete: 1 succeeded"),
    ("job-healthy-success-criteria-met", {"succeeded": 2, "conditions": [cond("SuccessCriteriaMet", "True")]},
     H, "complete: 2 succeeded"),
    ("job-degraded-failed", {"failed": 6, "conditions": [
        cond("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]},
     D, "failed (BackoffLimitExceeded): Job has reached the specified backoff limit"),
    ("job-degraded-failure-target", {"failed": 1, "conditions": [
        cond("FailureTarget", "True", "DeadlineExceeded", "Job was active longer than specified deadline")]},
     D, "failed (DeadlineExceeded)"),
    ("job-progressing-running", {"active": 2, "succeeded": 1}, P, "running: 2 active, 1 succeeded, 0 failed"),
    ("job-progressing-not-started", None, P, "running: 0 active, 0 succeeded, 0 failed"),
    ("job-progressing-complete-false", {"conditions": [cond("Complete", "False")]}, P, "running:"),
    ("job-progressing-suspended", {"conditions": [cond("Suspended", "True", "JobSuspended")]},
     P, "suspended: 0 active"),
]


@pytest.mark.parametrize("name,status,health,fragment", JOB, ids=ids(JOB))
def test_job(name: str, status: Any, health: Health, fragment: str) -> None:
    # generation 1 known, no observedGeneration: Jobs do not publish it, so no "not yet observed"
    run_table(("batch/v1", "Job"), {"template": {}}, status, 1, None, health, fragment)


# --- Pod --------------------------------------------------------------------------------------


def waiting(reason: str, message: str = "", name: str = "app") -> dict:
    w: dict[str, Any] = {"reason": reason}
    if message:
        w["message"] = message
    return {"name": name, "ready": False, "state": {"waiting": w}}


RUNNING_READY = {"phase": "Running", "conditions": [cond("Ready", "True"), cond("PodScheduled", "True")],
                 "containerStatuses": [{"name": "app", "ready": True, "state": {"running": {}}}]}

POD = [
    ("pod-healthy-running-ready", RUNNING_READY, H, "running, 1 of 1 containers ready"),
    ("pod-healthy-succeeded", {"phase": "Succeeded"}, H, "completed"),
    ("pod-degraded-failed", {"phase": "Failed", "reason": "Evicted",
                             "message": "The node was low on resource: memory."},
     D, "failed (Evicted): The node was low on resource: memory."),
    ("pod-degraded-crashloopbackoff", {"phase": "Running", "conditions": [cond("Ready", "False")],
                                       "containerStatuses": [
                                           {"name": "side", "ready": True, "state": {"running": {}}},
                                           waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container")]},
     D, "1 of 2 containers waiting (CrashLoopBackOff): back-off 5m0s restarting failed container"),
    ("pod-degraded-imagepullbackoff", {"phase": "Pending", "containerStatuses": [
        waiting("ImagePullBackOff", 'Back-off pulling image "nginx:nope"')]},
     D, "1 of 1 containers waiting (ImagePullBackOff)"),
    ("pod-degraded-errimagepull", {"phase": "Pending", "containerStatuses": [waiting("ErrImagePull")]},
     D, "1 of 1 containers waiting (ErrImagePull)"),
    ("pod-degraded-create-container-config-error", {"phase": "Pending", "containerStatuses": [
        waiting("CreateContainerConfigError", 'secret "db" not found')]},
     D, "(CreateContainerConfigError)"),
    ("pod-degraded-init-container", {"phase": "Pending", "initContainerStatuses": [waiting("CrashLoopBackOff", name="init")],
                                     "containerStatuses": [waiting("PodInitializing")]},
     D, "1 of 2 containers waiting (CrashLoopBackOff)"),
    ("pod-progressing-container-creating", {"phase": "Pending", "containerStatuses": [waiting("ContainerCreating")]},
     P, "pending"),
    ("pod-progressing-running-not-ready", {"phase": "Running", "conditions": [cond("Ready", "False", "ContainersNotReady")],
                                           "containerStatuses": [{"name": "app", "ready": False, "state": {"running": {}}}]},
     P, "running, 0 of 1 containers ready"),
    ("pod-progressing-unschedulable", {"phase": "Pending", "conditions": [
        cond("PodScheduled", "False", "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")]},
     P, "not scheduled (Unschedulable): 0/3 nodes are available: 3 Insufficient cpu."),
    ("pod-unknown-phase-unknown", {"phase": "Unknown"}, U, "node is not reporting"),
    ("pod-unknown-no-phase", {"conditions": []}, U, "no phase reported"),
    ("pod-unknown-empty-status", None, U, "no phase reported"),
    ("pod-unknown-unrecognised-phase", {"phase": "Sideways"}, U, "unrecognised phase"),
]


@pytest.mark.parametrize("name,status,health,fragment", POD, ids=ids(POD))
def test_pod(name: str, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "Pod"), {"containers": [{"name": "app", "image": "nginx"}]}, status, None, None,
              health, fragment)


# --- PersistentVolumeClaim, Service, Namespace, CustomResourceDefinition ----------------------

PVC = [
    ("pvc-healthy-bound", {"phase": "Bound"}, H, "bound"),
    ("pvc-progressing-pending", {"phase": "Pending"}, P, "pending"),
    ("pvc-degraded-lost", {"phase": "Lost"}, D, "lost"),
    ("pvc-unknown-no-phase", None, U, "no phase reported"),
    ("pvc-unknown-unrecognised-phase", {"phase": 7}, U, "unrecognised phase"),
]


@pytest.mark.parametrize("name,status,health,fragment", PVC, ids=ids(PVC))
def test_persistent_volume_claim(name: str, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "PersistentVolumeClaim"), {"resources": {}}, status, None, None, health, fragment)


LB_INGRESS = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}}

SERVICE = [
    ("service-healthy-cluster-ip", {"type": "ClusterIP"}, {"loadBalancer": {}}, H, "no load balancer"),
    ("service-healthy-default-type", {}, None, H, "no load balancer"),
    ("service-healthy-node-port", {"type": "NodePort"}, {}, H, "no load balancer"),
    ("service-healthy-load-balancer", {"type": "LoadBalancer"}, LB_INGRESS, H, "load balancer has 2 ingress points"),
    ("service-progressing-load-balancer", {"type": "LoadBalancer"}, {"loadBalancer": {}}, P, "waiting for a load balancer"),
    ("service-progressing-load-balancer-empty-ingress", {"type": "LoadBalancer"}, {"loadBalancer": {"ingress": []}},
     P, "waiting for a load balancer"),
    ("service-progressing-load-balancer-no-status", {"type": "LoadBalancer"}, None, P, "waiting for a load balancer"),
]


@pytest.mark.parametrize("name,spec,status,health,fragment", SERVICE, ids=ids(SERVICE))
def test_service(name: str, spec: dict, status: Any, health: Health, fragment: str) -> None:
    run_table(("v1", "Service"), spec, status, None, None, health, fragment)


def test_service_message_does_not_echo_addresses() -> None:
    obj = sent("v1", "Service", {"type": "LoadBalancer"})
    assert "203.0.113.7" not in assess(obj, report(obj, LB_INGRESS)).message


NAMESPACE = [
    ("namespace-healthy-active", {"phase": "Active"}, H, "active"),
    ("namespace-degraded-terminating", {"phase": "Terminating"}, D, "terminating"),
    ("namespace-unknown-no-phase", {}, U, "no phase reported"),
]


@pytest.mark.parametrize("name,status,health,fragment", NAMESPACE, ids=ids(NAMESPACE))
def test_namespace(name: str, status: Any, health: Health, fragment: str) -> None:
    api, kind = "v1", "Namespace"
    obj = {"apiVersion": api, "kind": kind, "metadata": {"name": "team-a"}}
    verdict = assess(obj, report({**obj, "metadata": {"name": "team-a", "namespace": ""}}, status))
    assert (verdict.health, fragment in verdict.message) == (health, True), verdict


CRD = [
    ("crd-healthy", {"conditions": [cond("NamesAccepted", "True", "NoConflicts"),
                                    cond("Established", "True", "InitialNamesAccepted")]}, H, "established"),
    ("crd-progressing-not-established", {"conditions": [cond("NamesAccepted", "True", "NoConflicts"),
                                                        cond("Established", "False", "Installing", "the initial names have not been accepted")]},
     P, "not yet established (Installing): the initial names have not been accepted"),
    ("crd-progressing-no-conditions", {}, P, "not yet established"),
    ("crd-degraded-names-not-accepted", {"conditions": [
        cond("NamesAccepted", "False", "ListKindConflict", '"WidgetList" is already in use'),
        cond("Established", "False", "NotAccepted")]},
     D, 'names not accepted (ListKindConflict): "WidgetList" is already in use'),
    ("crd-degraded-terminating", {"conditions": [cond("Established", "True"),
                                                 cond("Terminating", "True", "InstanceDeletionInProgress")]},
     D, "terminating (InstanceDeletionInProgress)"),
]


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
