"""Every command's summary line says a count of one in the singular (`1 placement`, `1 error`,
`1 status file`, `1 action planned`), through the one helper `model.counted`; `-o json` keeps
its numbers."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

from cli_run import run
from conftest import CliResult
from ksgitops.app.agent import ApplyOutcome, CycleOutcome
from ksgitops.app.runtimes import CycleResult
from ksgitops.model import counted

Tree = Callable[[dict[str, str | bytes]], Path]
# a count of one followed by a plural noun: what no summary says
ONE_PLURAL = re.compile(r"(?<![\d.,/])1 (?:[a-z]+ )?(?:WECs|placements|errors|warnings|objects|files|folders|mailboxes|"
                        r"reports|actions|cycles|problems)\b")

INVENTORY = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata: {name: east, labels: {id: east}}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {name: east, labels: {env: prod}}
spec: {instanceSelector: {matchLabels: {id: east}}}
"""
WORKLOAD = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: web, annotations: {edge.kubestellar.io/customizer: nope}}
data: {a: b}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: web}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync: [{apiGroup: "", resources: [configmaps], namespaces: [web]}]
  bogus: 1
"""
SPACE = "apiVersion: space.kubestellar.io/v1alpha1\nkind: Space\nmetadata: {name: wds2, namespace: spaces}\n" \
        "spec: {Type: managed}\n"


def said(res: CliResult) -> str:
    assert not ONE_PLURAL.search(res.out + res.err), res
    return res.out.splitlines()[-1]


def test_counted_is_singular_for_one_only() -> None:
    assert [counted(n, "error") for n in (0, 1, 2)] == ["0 errors", "1 error", "2 errors"]
    assert counted(1, "mailbox", "mailboxes") == "1 mailbox" and counted(3, "mailbox", "mailboxes") == "3 mailboxes"


def test_validate_status_reconcile_say_one_of_each_in_the_singular(tree: Tree, cli: Any) -> None:
    repo = tree({"spaces/inv/wecs.yaml": INVENTORY, "spaces/apps/web.yaml": WORKLOAD})
    assert said(run(cli, "validate", str(repo), code=2)) == "invalid: 1 WEC, 1 placement, 1 error, 1 warning"
    shown = json.loads(run(cli, "validate", "-o", "json", str(repo), code=2).out)
    assert (len(shown["errors"]), len(shown["problems"])) == (1, 2)  # the JSON is as it was
    said(run(cli, "reconcile", str(repo)))
    assert said(run(cli, "diff", str(repo))) == "0 WECs affected"
    bare = tree({"spaces/inv/wecs.yaml": INVENTORY})  # no workload: STATUS.md is the one status file
    run(cli, "reconcile", str(bare))
    assert said(run(cli, "status", str(bare))).endswith("; 1 status file changed")


def test_spaces_says_one_action_and_one_stale_file(tree: Tree, cli: Any) -> None:
    repo = tree({"spaces/ctl/wds2.yaml": SPACE, "spaces/ctl/cm.yaml":
                 "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\ndata: {a: b}\n"})
    run(cli, "spaces", "--apply", str(repo))
    (repo / "spaces/ctl/wds2.yaml").unlink()
    planned = run(cli, "spaces", str(repo)).out
    assert "\n1 action planned:\n" in planned and "\n1 stale generated file to remove:\n" in planned, planned
    applied = run(cli, "spaces", "--apply", str(repo))
    assert said(applied) == "applied: 1 done, 0 failed, 0 skipped, 0 left, 1 stale file removed"


def test_sync_and_run_cycle_lines_say_one_in_the_singular() -> None:
    cycle = CycleOutcome("imw1-mb-east", "a" * 40, ApplyOutcome(applied=["x"]), reports=1, upsynced=1)
    assert "; 1 report, 1 upsynced" in cycle.summary(), cycle.summary()
    result = CycleResult("reconciled", 0.5, "b" * 40, source="c" * 40, commit="d" * 40, changed_wecs=1, status_files=1,
                         errors=("spaces/a.yaml:1: broken",))
    line = result.describe()
    assert "(1 WEC changed, 1 status file changed)" in line and "; degraded: 1 error above" in line, line
    assert not ONE_PLURAL.search(line)


def test_what_reconcile_would_freeze_counts_one_more_wec_in_the_singular(tree: Tree, cli: Any) -> None:
    """Six WECs whose SyncTargets have errors: five named, then `and 1 more WEC` (validate's line,
    and the Ksgitops-Frozen trailer of the commit)."""
    sync_targets = "---\n".join(
        "apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncTarget\n"
        f"metadata: {{name: w{i}, labels: {{id: w{i}, bad: 'no!'}}}}\n" for i in range(6))
    repo = tree({"spaces/inv/wecs.yaml": sync_targets})
    shown = run(cli, "validate", str(repo), code=2).out.splitlines()[-1]
    assert shown.startswith("reconcile would freeze: wec inv/w0, ") and shown.endswith(", and 1 more WEC"), shown
    said(run(cli, "validate", str(repo), code=2))
