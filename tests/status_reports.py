"""Reports of the bundled example's objects as a WEC writes them (bytes), what a status run
produced (to compare with a run without memo), and the `result` fixture: the example's sources
computed in memory. Shared by the status memo tests (tests/test_status_incremental.py,
tests/test_status_memo_store.py) and others that summarize reports (tests/test_spread.py,
tests/test_status_record.py, ...)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksgitops.app import usecases as app
from ksgitops.core.serialize import dump_yaml

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
COMMON_CM = "core/configmaps/commonstuff/httpd-htdocs"
SPECIALD = "apps/deployments/specialstuff/speciald"


def rs_report(available: int, at: str) -> bytes:
    return dump_yaml({"object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff",
                                 "name": "commond", "generation": 1},
                      "status": {"observedGeneration": 1, "replicas": 1, "availableReplicas": available},
                      "reportedAt": at})


def cm_report(at: str) -> bytes:
    return dump_yaml({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff",
                                 "name": "httpd-htdocs"}, "reportedAt": at})


def outputs(out: Any) -> tuple[Any, bytes, list[Any]]:
    return out.generated, out.markdown, out.problems


@pytest.fixture
def result(example: Path) -> Any:
    return app.compute(app.open_source(example, app.WORKTREE))
