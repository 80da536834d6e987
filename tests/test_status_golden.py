"""STATUS.md, rendered, against a golden file: the bundled example (a copy) with a customization
error, a frozen space (a file of wmw-c that does not parse), one WEC OutOfSync and one drifted object.

The file holds mailbox revisions, so a change to what reconcile writes into mailboxes changes it:
look at the difference, then rewrite it with `KSGITOPS_UPDATE_GOLDEN=1 pytest tests/test_status_golden.py`.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import EXAMPLE
from ksgitops.app import usecases as app
from ksgitops.core.status.syncreport import SYNC_FILE, Drift, ObjectId, SyncReport, dump_sync_report
from ksgitops.io.status_sources import WorkTreeStatusSource

GOLDEN = Path(__file__).resolve().parent / "golden" / "STATUS.md"
FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
EARLIER = "4f0c9b1e5d2a7c3b8e6f1a0d9c4b7e2a5f8d3c6b"  # a revision florin applied before the last change
SOURCE = "9d1e4c7b2a5f8e3d6c9b0a7f4e1d8c5b2a9f6e3d"


BROKEN = "spaces/wmw-c/broken.yaml"


def scenario(repo: Path) -> None:
    httpd = repo / "spaces" / "wmw-s" / "httpd.yaml"
    httpd.write_text(httpd.read_text().replace("%(loc-name)", "%(region)"))  # guilder has no such label
    (repo / BROKEN).write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: commonstuff\n")
    app.reconcile_worktree(repo)  # wmw-c is frozen at the example's (last good) state
    latest = WorkTreeStatusSource(repo).revision(GUILDER)
    speciald = Drift("apps/deployments/specialstuff/speciald", ObjectId("apps/v1", "Deployment", "specialstuff", "speciald"),
                     "Modified", ("spec.replicas", "spec.template.spec.containers[0].image"), "2026-11-22T03:10:00Z")
    reports = {FLORIN: SyncReport(FLORIN, EARLIER, SOURCE, "2026-11-22T02:00:00Z"),
               GUILDER: SyncReport(GUILDER, latest, SOURCE, "2026-11-22T02:30:00Z", drifted=(speciald,))}
    for mailbox, report in reports.items():
        (repo / "spaces" / mailbox / "reported" / SYNC_FILE).write_bytes(dump_sync_report(report))
    app.status_worktree(repo)


def test_status_md_golden(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    scenario(repo)
    rendered = (repo / "STATUS.md").read_text()
    if os.environ.get("KSGITOPS_UPDATE_GOLDEN"):
        GOLDEN.write_text(rendered)
    assert rendered == GOLDEN.read_text()
    for shown in ("| florin | imw1-mb-florin | OutOfSync | 4f0c9b1e5d2a (2026-11-22T02:00:00Z) |",
                  "| guilder | imw1-mb-guilder | Synced |",
                  "| guilder | Deployment.apps specialstuff/speciald | Modified | spec.replicas, "
                  "spec.template.spec.containers[0].image | 2026-11-22T03:10:00Z |",
                  "| wmw-s | spaces/wmw-s/httpd.yaml:10 | ConfigMap specialstuff/httpd-htdocs | guilder | ",
                  f"| wmw-c | {BROKEN}:4 | - | - | malformed YAML",
                  "| space | wmw-c | the objects its placements (edge-placement-c) placed at its last good state stay in "
                  "2 mailboxes |", "| wmw-c/edge-placement-c (frozen) | 2 | 2 | 4/4 |"):
        assert shown in rendered
