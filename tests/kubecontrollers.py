"""Stand-ins for the controllers of a real cluster, for the loopback KubeServer
(`KubeServer(controllers=True)`, `python tests/kubeserver --controllers`).

On a real cluster kube-controller-manager answers every change a moment later: it writes the
status of ReplicaSets and Deployments, makes their ReplicaSets and Pods, empties and removes
deleted Namespaces and deletes what lost its owner. A test that sets a workload's status itself,
or expects a deleted Namespace to vanish at once, passes against a bare API server and fails
there. These stand-ins do the same work, shortly after each change (`delay` seconds), as a cluster
whose Pods never run does (no node, or none they fit): Pods are made but stay Pending, so
replicas are desired and made but never ready or available.

Each follows the Kubernetes code named (kubernetes/kubernetes):
- ReplicaSet: pkg/controller/replicaset/replica_set.go (syncReplicaSet, manageReplicas: Pods made
  from the template, the ReplicaSet their controlling owner; surplus Pods deleted, newest first)
  and replica_set_utils.go (calculateStatus counts the Pods listed before they were managed, so
  the Pods just made show in the next status; updateReplicaSetStatus writes only a changed status,
  with observedGeneration set to the generation acted on).
- Deployment: pkg/controller/deployment/sync.go (getNewReplicaSet: a ReplicaSet named after the
  hash of the pod template, labelled and selected by `pod-template-hash`, the Progressing
  condition NewReplicaSetCreated; calculateStatus: counts summed over its ReplicaSets and the
  Available condition against MaxUnavailable), progress.go (syncRolloutStatus: Progressing
  NewReplicaSetAvailable once complete, ReplicaSetUpdated while counts move) and
  util/deployment_util.go (SetDeploymentCondition, DeploymentComplete, DeploymentProgressing,
  ResolveFenceposts: surge rounded up, unavailability down).
- Namespace: pkg/registry/core/namespace/storage/storage.go (DELETE marks the namespace
  Terminating) and pkg/controller/namespace/deletion/namespaced_resources_deleter.go (every object
  in it deleted; once none is left, the `kubernetes` finalizer goes and the namespace with it).
- Garbage collector: pkg/controller/garbagecollector/garbagecollector.go (attemptToDeleteItem: an
  object whose owners are all gone is deleted, in the background).

Left out: Pods never become ready; no Events, no revision annotations, no adoption of orphans by
selector, no foreground or orphan propagation; a new pod template scales the old ReplicaSets to
zero at once (no rolling-update budget); paused Deployments and progress deadlines.
"""
from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

MANAGER = "kube-controller-manager"
TEMPLATE_HASH = "pod-template-hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of Kubernetes' SafeEncodeString
_RS, _DEPLOY, _PODS, _NS = ("apps", "replicasets"), ("apps", "deployments"), ("", "pods"), ("", "namespaces")
Key = tuple[str, ...]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def _replicas(obj: dict) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _controller_of(obj: dict) -> dict | None:
    return next((r for r in _meta(obj).get("ownerReferences") or [] if r.get("controller")), None)


def _owner_reference(obj: dict, api_version: str, kind: str) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": _meta(obj)["name"], "uid": _meta(obj)["uid"],
            "controller": True, "blockOwnerDeletion": True}


def _counts(status: dict, fields: tuple[str, ...]) -> dict:
    """Counts as the API serializes them: zeros left out (omitempty), except the ones in `fields`
    that the type always carries."""
    return {k: v for k, v in status.items() if v or k in fields}


def template_hash(template: dict) -> str:
    """A stable name suffix for a pod template (FNV-1a, written in SafeEncodeString's alphabet)."""
    digest = 0x811C9DC5
    for byte in json.dumps(template, sort_keys=True).encode():
        digest = ((digest ^ byte) * 0x01000193) & 0xFFFFFFFF
    return "".join(_SAFE[ord(c) % len(_SAFE)] for c in str(digest))


class Controllers:
    """ReplicaSet, Deployment, Namespace and garbage-collector stand-ins on one KubeServer Store.

    One thread reads the Store's event log; each event makes the keys it touches due `delay`
    seconds later (a Namespace's finalization `namespace_delay` later); due keys are synced with
    the Store's own methods, under its lock, so their writes are events too and are seen by watches
    like any client's."""

    def __init__(self, store: Any, delay: float = 0.1, namespace_delay: float = 0.3) -> None:
        self.store, self.delay, self.namespace_delay = store, delay, namespace_delay
        self.due: dict[Key, float] = {}
        self.errors: list[str] = []  # what a sync raised (retried later), for a test to inspect
        self._seen = store.rv
        self._thread = threading.Thread(target=self._run, name="kubecontrollers", daemon=True)

    def start(self) -> Controllers:
        self._thread.start()
        return self

    # ----- the loop

    def _run(self) -> None:
        store = self.store
        with store.lock:
            while not store.closed:
                self._take_events()
                now = time.monotonic()
                ready = sorted(k for k, t in self.due.items() if t <= now)
                for key in ready:
                    del self.due[key]
                    self._sync(key)
                if not ready:
                    store.changed.wait(min(1.0, max(0.001, min(self.due.values(), default=now + 1.0) - now)))

    def _take_events(self) -> None:
        events = self.store.events
        start = len(events)
        while start > 0 and events[start - 1].rv > self._seen:
            start -= 1
        for event in events[start:]:
            for key, delay in self._keys(event):
                self.due.setdefault(key, time.monotonic() + delay)
        if events:
            self._seen = max(self._seen, events[-1].rv)

    def _keys(self, event: Any) -> list[tuple[Key, float]]:
        meta, gr = _meta(event.obj), event.gr
        ns, keys = meta.get("namespace", ""), []
        if gr in (_RS, _DEPLOY):
            keys.append((("sync", *gr, ns, meta["name"]), self.delay))
        owner = _controller_of(event.obj)
        if owner and ((gr == _PODS and owner.get("kind") == "ReplicaSet") or
                      (gr == _RS and owner.get("kind") == "Deployment")):  # an owner watches what it owns
            keys.append((("sync", *(_RS if gr == _PODS else _DEPLOY), ns, owner["name"]), self.delay))
        if gr == _NS and meta.get("deletionTimestamp"):
            keys.append((("finalize", meta["name"]), self.namespace_delay))
        if event.type == "DELETED":
            keys.append((("collect",), self.delay))
        return keys

    def _sync(self, key: Key) -> None:
        try:
            if key[0] == "sync":
                obj = self.store.objects.get(key[1:])
                if obj is not None and not _meta(obj).get("deletionTimestamp"):
                    (self._sync_replica_set if key[1:3] == _RS else self._sync_deployment)(obj)
            elif key[0] == "finalize":
                self._finalize_namespace(key[1])
            else:
                self._collect_garbage()
        except Exception as e:  # noqa: BLE001 -- a controller retries, as the real ones requeue
            self.errors.append(f"{key}: {e!r}")
            self.due.setdefault(key, time.monotonic() + self.namespace_delay)

    # ----- store access

    def _type(self, gr: tuple[str, str]) -> Any:
        return self.store.registry.find(gr[0], None, gr[1])

    def _owned(self, gr: tuple[str, str], ns: str, owner: dict) -> list[dict]:
        """Live (not deleting) objects of `gr` in `ns` whose controlling owner is `owner`."""
        uid = _meta(owner)["uid"]
        return [o for (g, p, o_ns, _), o in sorted(self.store.objects.items())
                if (g, p) == gr and o_ns == ns and not _meta(o).get("deletionTimestamp")
                and (_controller_of(o) or {}).get("uid") == uid]

    def _write_status(self, gr: tuple[str, str], obj: dict, status: dict) -> None:
        if status != (obj.get("status") or {}):
            meta = _meta(obj)
            self.store.update(self._type(gr), meta["namespace"], meta["name"], {"status": status}, "status", MANAGER)

    def _set_replicas(self, rs: dict, replicas: int) -> None:
        if _replicas(rs) != replicas:
            body = copy.deepcopy(rs)
            body["spec"]["replicas"] = replicas
            self.store.update(self._type(_RS), _meta(rs)["namespace"], _meta(rs)["name"], body, "", MANAGER)

    # ----- ReplicaSet

    def _sync_replica_set(self, rs: dict) -> None:
        ns = _meta(rs)["namespace"]
        pods = [p for p in self._owned(_PODS, ns, rs)
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        status = self._replica_set_status(rs, pods)
        surplus = len(pods) - _replicas(rs)
        pod_type = self._type(_PODS)
        for _ in range(-surplus):
            self.store.create(pod_type, ns, self._pod(rs), MANAGER)
        newest_first = sorted(pods, key=lambda p: (_meta(p)["creationTimestamp"], _meta(p)["name"]), reverse=True)
        for pod in newest_first[:max(surplus, 0)]:
            self.store.delete(pod_type, ns, _meta(pod)["name"], {})
        self._write_status(_RS, rs, status)

    @staticmethod
    def _replica_set_status(rs: dict, pods: list[dict]) -> dict:
        wanted = ((rs.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        labelled = sum(1 for p in pods if wanted.items() <= (_meta(p).get("labels") or {}).items())
        ready = sum(1 for p in pods if any(c.get("type") == "Ready" and c.get("status") == "True"
                                           for c in (p.get("status") or {}).get("conditions") or []))
        status = _counts({"replicas": len(pods), "fullyLabeledReplicas": labelled, "readyReplicas": ready,
                          "availableReplicas": ready}, ("replicas",))
        status["observedGeneration"] = _meta(rs)["generation"]
        conditions = (rs.get("status") or {}).get("conditions")
        return {**status, "conditions": conditions} if conditions else status

    @staticmethod
    def _pod(rs: dict) -> dict:
        template = copy.deepcopy((rs.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {**{k: v for k, v in meta.items() if k in ("labels", "annotations")},
                             "generateName": f"{_meta(rs)['name']}-",
                             "ownerReferences": [_owner_reference(rs, "apps/v1", "ReplicaSet")]},
                "spec": template.get("spec") or {}}

    # ----- Deployment

    def _sync_deployment(self, deployment: dict) -> None:
        meta, spec = _meta(deployment), deployment.get("spec") or {}
        ns, want = meta["namespace"], _replicas(deployment)
        template = spec.get("template") or {}
        suffix = template_hash(template)
        sets = self._owned(_RS, ns, deployment)
        new = next((rs for rs in sets if (_meta(rs).get("labels") or {}).get(TEMPLATE_HASH) == suffix), None)
        status = copy.deepcopy(deployment.get("status") or {})
        conditions = status.get("conditions") or []
        if new is None:
            new = self.store.create(self._type(_RS), ns, self._replica_set(deployment, suffix), MANAGER)
            _set_condition(conditions, "Progressing", "True", "NewReplicaSetCreated",
                           f'Created new replica set "{_meta(new)["name"]}"')
        for rs in sets:
            self._set_replicas(rs, want if rs is new else 0)
        sets = [new] + [rs for rs in sets if rs is not new]
        current = [self.store.objects[("apps", "replicasets", ns, _meta(rs)["name"])] for rs in sets]
        self._write_status(_DEPLOY, deployment, _deployment_status(deployment, current, status, conditions))

    @staticmethod
    def _replica_set(deployment: dict, suffix: str) -> dict:
        meta, spec = _meta(deployment), deployment.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        labels = {**(template.get("metadata") or {}).get("labels", {}), TEMPLATE_HASH: suffix}
        template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**selector.get("matchLabels", {}), TEMPLATE_HASH: suffix}
        return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": f"{meta['name']}-{suffix}", "labels": labels,
                             "ownerReferences": [_owner_reference(deployment, "apps/v1", "Deployment")]},
                "spec": {"replicas": _replicas(deployment), "minReadySeconds": spec.get("minReadySeconds", 0),
                         "selector": selector, "template": template}}

    # ----- Namespace and garbage collector

    def _finalize_namespace(self, name: str) -> None:
        namespace = self.store.objects.get(("", "namespaces", "", name))
        if namespace is None or not _meta(namespace).get("deletionTimestamp"):
            return
        inside = [(g, p, o_name, o) for (g, p, o_ns, o_name), o in list(self.store.objects.items()) if o_ns == name]
        for group, plural, o_name, obj in inside:
            if not _meta(obj).get("deletionTimestamp"):
                self.store.delete(self._type((group, plural)), name, o_name, {})
        if any(key[2] == name for key in self.store.objects):  # held by finalizers: look again later
            self.due.setdefault(("finalize", name), time.monotonic() + self.namespace_delay)
            return
        finalized = copy.deepcopy(namespace)
        finalized["spec"]["finalizers"] = [f for f in finalized["spec"].get("finalizers", []) if f != "kubernetes"]
        self.store.update(self._type(_NS), None, name, finalized, "", MANAGER)

    def _collect_garbage(self) -> None:
        alive = {_meta(o).get("uid") for o in self.store.objects.values()}
        for (group, plural, ns, name), obj in list(self.store.objects.items()):
            owners = _meta(obj).get("ownerReferences") or []
            if owners and not _meta(obj).get("deletionTimestamp") and all(r.get("uid") not in alive for r in owners):
                self.store.delete(self._type((group, plural)), ns or None, name, {})


# ---- Deployment status (pure: from the Deployment, its ReplicaSets newest first, the status so far)

def _set_condition(conditions: list[dict], kind: str, status: str, reason: str, message: str,
                   replace: Callable[[dict], bool] = lambda c: False) -> None:
    """SetDeploymentCondition: unchanged when type, status and reason match (unless `replace`
    says otherwise); lastTransitionTime kept while the status stays."""
    current = next((c for c in conditions if c["type"] == kind), None)
    if current is not None and current["status"] == status and current["reason"] == reason and not replace(current):
        return
    stamp = _now()
    kept = current["lastTransitionTime"] if current is not None and current["status"] == status else stamp
    conditions[:] = [c for c in conditions if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": kept,
                       "reason": reason, "message": message})


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total
        return -(-share // 100) if round_up else share // 100
    return int(value)


def max_unavailable(deployment: dict) -> int:
    """MaxUnavailable: 0 for Recreate or no replicas; else ResolveFenceposts of the rolling-update
    settings (defaults 25% and 25%), never both zero, never more than the replicas."""
    spec, want = deployment.get("spec") or {}, _replicas(deployment)
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate" or want == 0:
        return 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = _scaled(rolling.get("maxSurge", "25%"), want, True)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), want, False)
    return min(1 if surge == 0 and unavailable == 0 else unavailable, want)


def _deployment_status(deployment: dict, sets: list[dict], old: dict, conditions: list[dict]) -> dict:
    total = lambda key: sum((rs.get("status") or {}).get(key, 0) for rs in sets)
    available, desired = total("availableReplicas"), sum(_replicas(rs) for rs in sets)
    status = _counts({"observedGeneration": _meta(deployment)["generation"], "replicas": total("replicas"),
                      "updatedReplicas": (sets[0].get("status") or {}).get("replicas", 0),
                      "readyReplicas": total("readyReplicas"), "availableReplicas": available,
                      "unavailableReplicas": max(desired - available, 0)}, ())
    want, name = _replicas(deployment), _meta(sets[0])["name"]
    if available >= want - max_unavailable(deployment):
        _set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                       "Deployment has minimum availability.")
    else:
        _set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                       "Deployment does not have minimum availability.")
    if all(status.get(k, 0) == want for k in ("updatedReplicas", "replicas", "availableReplicas")):
        _set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                       f'ReplicaSet "{name}" has successfully progressed.')
    elif _progressed(old, status):
        _set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.',
                       replace=lambda c: True)  # progress refreshes the condition even with the same reason
    return {**status, "conditions": conditions} if conditions else status


def _progressed(old: dict, new: dict) -> bool:
    """DeploymentProgressing: more updated, ready or available replicas, or fewer old ones."""
    count = lambda status, key: status.get(key, 0)
    old_replicas = lambda status: count(status, "replicas") - count(status, "updatedReplicas")
    return any(count(new, k) > count(old, k) for k in ("updatedReplicas", "readyReplicas", "availableReplicas")) \
        or old_replicas(new) < old_replicas(old)
