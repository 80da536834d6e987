"""The per-kind tables of the health tests (tests/test_health.py), one line per case, and what
builds and runs a line: an object as sent, a report of it, conditions.

Each case is named by the answer it expects (`deployment-progressing-updated`, as in
gitops-engine's testdata) and checks the health and a fragment of the message, so a rule that
returns the right health for the wrong reason still fails."""
from __future__ import annotations

from typing import Any

from ksgitops.core.status.health import Health, assess


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
     P, "rollout: 1 old replica pending termination"),
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
     P, "1 extra replica pending termination"),
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


# --- PersistentVolumeClaim, Service, Namespace, CustomResourceDefinition ----------------------

PVC = [
    ("pvc-healthy-bound", {"phase": "Bound"}, H, "bound"),
    ("pvc-progressing-pending", {"phase": "Pending"}, P, "pending"),
    ("pvc-degraded-lost", {"phase": "Lost"}, D, "lost"),
    ("pvc-unknown-no-phase", None, U, "no phase reported"),
    ("pvc-unknown-unrecognised-phase", {"phase": 7}, U, "unrecognised phase"),
]


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


NAMESPACE = [
    ("namespace-healthy-active", {"phase": "Active"}, H, "active"),
    ("namespace-degraded-terminating", {"phase": "Terminating"}, D, "terminating"),
    ("namespace-unknown-no-phase", {}, U, "no phase reported"),
]


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
