"""Synthetic reported state for a reconciled fleet: one report per object per mailbox, committed.

`commit_reports(repo)` writes `reported/<rel>.yaml` into every mailbox of the branch head (read
from the commit: works on bare clones) as one commit, built in memory with ksgitops' own tree
writer; `change_one_report(repo)` rewrites one report (a Deployment of the first mailbox turns
unavailable). Reports are written as ksgitops' transports write them (`dump_report`: JSON, which is YAML).
Report times differ per WEC, so every report is a distinct blob, as in a real fleet;
about 1 in 50 objects reports a problem, so STATUS.md has a broken list. Every mailbox also gets
the sync report an agent writes (`reported/sync.yaml`): most WECs Synced, 1 in 10 OutOfSync, 1 in
25 with an apply error, 1 in 50 with a drifted object, so the sync columns and lists are exercised.
"""
from __future__ import annotations

from typing import Any

import pygit2
import yaml

from ksgitops.core.status.reported import dump_report
from ksgitops.core.status.syncreport import (REVISION_FILES, REVISION_FOLDERS, SYNC_FILE, Drift, ObjectId, SyncError, SyncReport, dump_sync_report, revision_of)
from ksgitops.core.tree import FileTree, put
from ksgitops.io.git.repo import TreeIndex, TreeWriter, blobs, tree_at

BRANCH = "refs/heads/main"
SIGNATURE = pygit2.Signature("ksgitops-bench", "bench@example.invalid")


def _status(kind: str, healthy: bool) -> dict[str, Any] | None:
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        ready = 2 if healthy else 0
        return {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "readyReplicas": ready,
                "availableReplicas": ready,
                "conditions": [{"type": "Available", "status": "True" if healthy else "False",
                                "reason": "MinimumReplicasAvailable" if healthy else "MinimumReplicasUnavailable"}]}
    if kind == "Namespace":
        return {"phase": "Active"}
    if kind == "Service":
        return {"loadBalancer": {}}
    return None


def _report(identity: dict[str, Any], at: str, healthy: bool) -> bytes:
    doc: dict[str, Any] = {"object": dict(identity, generation=1), "reportedAt": at}
    status = _status(identity["kind"], healthy)
    if status is not None:
        doc["status"] = status
    return dump_report(doc)


def _sync_report(mailbox: str, index: TreeIndex, n: int, rel: str, identity: dict[str, Any], at: str,
                 commit: str) -> bytes:
    latest = revision_of({name: index.entry_id(f"spaces/{mailbox}/{name}") for name in REVISION_FILES + REVISION_FOLDERS})
    obj = ObjectId(identity["apiVersion"], identity["kind"], identity.get("namespace", ""), identity["name"])
    errors = (SyncError(rel, "HTTP 422 Invalid: spec: rejected by an admission webhook", obj, at),) if n % 25 == 3 else ()
    drifted = (Drift(rel, obj, "Modified", ("spec.replicas",), at),) if n % 50 == 5 else ()
    revision = "0" * 40 if n % 10 == 1 else latest
    return dump_sync_report(SyncReport(mailbox, revision, commit, at, errors, drifted))


def _commit(repo: pygit2.Repository, generated: dict[str, Any], message: str) -> str:
    head = repo.references[BRANCH].peel(pygit2.Commit)
    tree = TreeWriter(repo).apply(head.tree, generated)
    return str(repo.create_commit(BRANCH, SIGNATURE, SIGNATURE, message, tree, [head.id]))


def commit_reports(path: str, at_day: str = "2026-11-22") -> int:
    """A report for every object of every mailbox; returns how many."""
    repo = pygit2.Repository(path)
    head = repo.references[BRANCH].peel(pygit2.Commit)
    index = TreeIndex(repo, head.tree)
    identities: dict[pygit2.Oid, dict[str, Any]] = {}
    generated: dict[str, Any] = {}
    count = 0
    for n, entry in enumerate(sorted(repo[index.get("spaces").id], key=lambda e: e.name)):
        objects = index.get(f"spaces/{entry.name}/objects")
        if "-mb-" not in entry.name or objects is None:
            continue
        at = f"{at_day}T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z"
        tree: FileTree = {}
        for rel, oid, _ in blobs(repo, tree_at(repo, objects.id)):
            identity = identities.get(oid)
            if identity is None:
                body = yaml.load(repo[oid].data, Loader=yaml.CSafeLoader)
                md = body["metadata"]
                identity = {"apiVersion": body["apiVersion"], "kind": body["kind"], "name": md["name"]}
                if md.get("namespace"):
                    identity["namespace"] = md["namespace"]
                identities[oid] = identity
            healthy = count % 50 != 7
            put(tree, rel, _report(identity, at, healthy))
            count += 1
        first = next(iter(blobs(repo, tree_at(repo, objects.id))))
        put(tree, SYNC_FILE, _sync_report(entry.name, index, n, first[0].rsplit(".", 1)[0],
                                          identities[first[1]], at, str(head.id)))
        generated[f"spaces/{entry.name}/reported"] = tree
    _commit(repo, generated, "bench: reported state from every WEC")
    return count


def commit_report_refs(path: str, at_day: str = "2026-11-23") -> int:
    """What 1,000 `ksgitops sync` agents push: per mailbox, a commit whose tree holds that mailbox's
    reported/ folder (a fresh report for each of its objects), at
    `refs/heads/ksgitops/reported/<mailbox>`. Returns how many refs."""
    repo = pygit2.Repository(path)
    head = repo.references[BRANCH].peel(pygit2.Commit)
    index = TreeIndex(repo, head.tree)
    writer = TreeWriter(repo)
    trees = {}
    for n, entry in enumerate(sorted(repo[index.get("spaces").id], key=lambda e: e.name)):
        reported = index.get(f"spaces/{entry.name}/reported")
        if "-mb-" not in entry.name or reported is None:
            continue
        tree: FileTree = {}
        for rel, oid, _ in blobs(repo, tree_at(repo, reported.id)):
            if rel == SYNC_FILE:  # the agent's sync report: unchanged while its outcome is
                put(tree, rel, repo[oid].data)
                continue
            doc = yaml.load(repo[oid].data, Loader=yaml.CSafeLoader)  # JSON is YAML
            doc["reportedAt"] = f"{at_day}T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z"
            put(tree, rel, dump_report(doc))
        trees[entry.name] = writer.apply(None, {f"spaces/{entry.name}/reported": tree}, flush=False)
    writer.flush()
    for mailbox, tree_id in trees.items():
        message = f"ksgitops sync: reported state of {mailbox}\n\nKsgitops-Source: {head.id}\nKsgitops-Mailbox: {mailbox}\n"
        repo.create_commit(f"refs/heads/ksgitops/reported/{mailbox}", SIGNATURE, SIGNATURE, message, tree_id, [head.id])
    return len(trees)


def change_one_report_ref(path: str) -> str:
    """One agent reports again: a new commit on the first report ref holding a Deployment report,
    one report changed."""
    repo = pygit2.Repository(path)
    for name in sorted(n for n in repo.references if n.startswith("refs/heads/ksgitops/reported/")):
        previous = repo.references[name].peel(pygit2.Commit)
        mailbox = name.rsplit("/", 1)[1]
        folder = TreeIndex(repo, previous.tree).get(f"spaces/{mailbox}/reported/apps/deployments")
        if folder is not None:
            break
    else:
        raise RuntimeError("no report ref holds a Deployment report")
    rel, oid, _ = next(iter(blobs(repo, tree_at(repo, folder.id))))
    doc = yaml.load(repo[oid].data, Loader=yaml.CSafeLoader)
    doc["reportedAt"] = "2026-11-24T00:00:00Z"
    tree = TreeWriter(repo).apply(previous.tree, {f"spaces/{mailbox}/reported/apps/deployments/{rel}": dump_report(doc)})
    message = f"ksgitops sync: reported state of {mailbox}\n\nKsgitops-Mailbox: {mailbox}\n"
    repo.create_commit(name, SIGNATURE, SIGNATURE, message, tree, [previous.id])
    return mailbox


def change_one_report(path: str, skip: int = 0) -> str:
    """The first Deployment report of the first mailbox (after `skip` mailboxes holding one) turns
    unavailable; returns its path."""
    repo = pygit2.Repository(path)
    head = repo.references[BRANCH].peel(pygit2.Commit)
    index = TreeIndex(repo, head.tree)
    for entry in sorted(repo[index.get("spaces").id], key=lambda e: e.name):
        reported = index.get(f"spaces/{entry.name}/reported/apps/deployments")
        if "-mb-" not in entry.name or reported is None:
            continue
        if skip:
            skip -= 1
            continue
        rel, oid, _ = next(iter(blobs(repo, tree_at(repo, reported.id))))
        doc = yaml.load(repo[oid].data, Loader=yaml.CSafeLoader)  # JSON is YAML
        doc["status"] = _status("Deployment", False)
        doc["reportedAt"] = "2026-11-23T00:00:00Z"
        path_in_repo = f"spaces/{entry.name}/reported/apps/deployments/{rel}"
        _commit(repo, {path_in_repo: dump_report(doc)}, "bench: one WEC reports a change")
        return path_in_repo
    raise RuntimeError("no Deployment report found")


if __name__ == "__main__":  # the harness runs these in a child, so its own memory stays small
    import sys
    actions = {"commit-reports": commit_reports, "change-one-report": change_one_report,
               "change-another-report": lambda repo: change_one_report(repo, skip=1),
               "commit-report-refs": commit_report_refs, "change-one-report-ref": change_one_report_ref}
    print(actions[sys.argv[1]](sys.argv[2]))
