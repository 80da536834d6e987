"""What the fold-in tests (tests/test_foldin*.py) share: the example with a third WEC (ducat),
reconciled in a local repository, and report refs made with pygit2 as `ksgitops sync` makes them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pygit2

from conftest import copy_example_sources, git_init
from kube_fixtures import KubeNames, isolate
from ksgitops.app import usecases as app
from ksgitops.core.status.reported import dump_report
from ksgitops.io.git.repo import TreeIndex, TreeWriter


BRANCH = "main"
WECS = ("florin", "guilder", "ducat")
DUCAT = """apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: ducat
  labels: {id: ducat, loc-name: ducat, env: prod}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: ducat
  labels: {loc-name: ducat, env: prod}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: ducat}
"""


def three_wec_sources(tmp_path: Path, names: KubeNames | None = None) -> Path:
    repo = copy_example_sources(tmp_path / "sources")
    if names:
        isolate(repo, names)  # the example's namespaces, the test's own
    (repo / "spaces/imw1/ducat.yaml").write_text(DUCAT)
    return git_init(repo)


def reconciled_repo(tmp_path: Path) -> pygit2.Repository:
    repo_path = three_wec_sources(tmp_path)
    app.reconcile_commit(repo_path, BRANCH)
    return pygit2.Repository(str(repo_path))


def report_ref(repo: pygit2.Repository, mailbox: str, changes: dict[str, Any], *, trailer_mailbox: str | None = None,
               ref_mailbox: str | None = None) -> str:
    """A commit like `ksgitops sync` makes: a tree of `changes` only (its mailbox's folders)."""
    head = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    tree = TreeWriter(repo).apply(None, changes)
    sig = pygit2.Signature("agent", "agent@example.invalid")
    message = (f"ksgitops sync: reported state of {mailbox}\n\nKsgitops-Source: {head.id}\n"
               f"Ksgitops-Mailbox: {trailer_mailbox or mailbox}\n")
    name = f"refs/heads/ksgitops/reported/{ref_mailbox or mailbox}"
    previous = repo.references.get(name)
    parents = [previous.target] if previous is not None else [head.id]
    return str(repo.create_commit(name, sig, sig, message, tree, parents))


def cm_report(at: str) -> bytes:
    return dump_report({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff",
                                   "name": "httpd-htdocs"}, "reportedAt": at})


CM = "reported/core/configmaps/commonstuff/httpd-htdocs.yaml"


def head_ids(repo: pygit2.Repository) -> TreeIndex:
    return TreeIndex(repo, repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit).tree)
