"""What the status-step tests (tests/test_status_combined.py, tests/test_status_md.py,
tests/test_status_collectors_secrets.py) share: reports of the bundled example's objects built as
documents, the status step over them in memory (`summarize`), a work tree reconciled with reports
written, and the example's mailboxes and object paths."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ksgitops.app import usecases as app
from ksgitops.core.serialize import dump_yaml
from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize as summarize_source, with_reports
from ksgitops.model import Origin

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
COMMON_CM = "core/configmaps/commonstuff/httpd-htdocs"
SPECIALD = "apps/deployments/specialstuff/speciald"
SPECIAL_CM = "core/configmaps/specialstuff/httpd-htdocs"


def report(api_version: str, kind: str, namespace: str, name: str, status: dict[str, Any] | None = None,
           at: str = "2026-01-01T00:00:00Z", generation: int | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "namespace": namespace, "name": name}
    if generation is not None:
        obj["generation"] = generation
    doc: dict[str, Any] = {"object": obj, "reportedAt": at}
    if status is not None:
        doc["status"] = status
    return doc


def rs(available: int, at: str = "2026-01-01T00:00:00Z", **extra: Any) -> dict[str, Any]:
    return report("apps/v1", "ReplicaSet", "commonstuff", "commond",
                  {"observedGeneration": 1, "replicas": 1, "availableReplicas": available, **extra}, at, 1)


RS_FAILED = {"conditions": [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                             "message": "quota | exceeded"}]}


def cm(namespace: str = "commonstuff", at: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    return report("v1", "ConfigMap", namespace, "httpd-htdocs", None, at)


def deploy(available: int) -> dict[str, Any]:
    return report("apps/v1", "Deployment", "specialstuff", "speciald",
                  {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1, "availableReplicas": available},
                  "2026-01-01T00:00:09Z", 1)


def as_reports(docs: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, tuple[Origin, dict[str, Any]]]]:
    return {mb: {rel: (Origin(f"spaces/{mb}/reported/{rel}.yaml", 1), doc) for rel, doc in rels.items()}
            for mb, rels in docs.items()}


def compute(repo: Path) -> Any:
    return app.compute(app.open_source(repo, app.WORKTREE))


def status_of(out: Any, wds: str, rel: str) -> dict[str, Any]:
    return out.status(wds, rel)


def summarize(result: Any, reports: dict[str, dict[str, tuple[Origin, dict[str, Any]]]], limit: int = 20,
              memo: StatusMemo | None = None) -> Any:
    """The status step over the reconciled mailboxes (in memory) with these reports written in."""
    files = {mb: {f"{rel}.yaml": dump_yaml(doc) for rel, (_, doc) in rels.items()} for mb, rels in reports.items()}
    return summarize_source(result, MemorySource(with_reports(result.generated, files)), memo, limit)


def edit(repo: Path, path: str, old: str, new: str) -> None:
    file = repo / path
    text = file.read_text()
    assert old in text, (path, old)
    file.write_text(text.replace(old, new))


def write_reports(repo: Path, docs: dict[str, dict[str, dict[str, Any]]]) -> None:
    """Reconcile first (a mailbox is known by its space.yaml), then write reported/ files."""
    app.reconcile_worktree(repo)
    for mb, rels in docs.items():
        for rel, doc in rels.items():
            path = repo / "spaces" / mb / "reported" / f"{rel}.yaml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(dump_yaml(doc))
