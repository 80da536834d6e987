"""The StatusCollector budget of a status run (core/status/budget.py): evaluations that would take
the run's estimated cost past it are skipped, in the order of the objects and their collectors,
whatever the order of the files; their results' columns are null, one warning names them, and
the rest of status is as without a budget. With a memo or without, the same bytes. The budget
keeps typical collectors over every object of the benchmark fleet well within it."""
from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

from conftest import ROOT
from ksgitops.app import usecases as app
from ksgitops.core.serialize import dump_yaml
from ksgitops.core.status.budget import BUDGET, estimate
from ksgitops.core.status.celcost import Weights
from ksgitops.core.status.collectors import compile_collector
from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
from ksgitops.model import Obj, Origin

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
HTDOCS = "core/configmaps/commonstuff/httpd-htdocs"
COLLECTORS = {  # name -> spec: each reads `returned` (its rows' reports weigh in its cost)
    "phase": {"select": [{"name": "phase", "def": "returned.status.phase"}]},
    "ready": {"combinedFields": [{"name": "n", "type": "SUM", "subject": "returned.status.readyReplicas"}]},
}
NULL = {"type": "Null"}


def collectors_yaml(names: list[str]) -> str:
    return "".join(dump_yaml({"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector",
                              "metadata": {"name": n}, "spec": COLLECTORS[n]}).decode() + "---\n" for n in names)


def with_collectors(example: Path, order: list[str]) -> Any:
    """The example with the collectors (written in `order`) on edge-placement-c, computed."""
    (example / "spaces/wmw-c/collectors.yaml").write_text(collectors_yaml(order))
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().split("  statusCollectors:")[0].replace(
        "  wantSingletonReportedState: true",
        f"  wantSingletonReportedState: true\n  statusCollectors: [{', '.join(order)}]"))
    return app.compute(app.open_source(example, app.WORKTREE))


def report(rel: str, items: int = 0) -> bytes:
    kind, api = ("ReplicaSet", "apps/v1") if rel == COMMOND else ("ConfigMap", "v1")
    return dump_yaml({"object": {"apiVersion": api, "kind": kind, "namespace": "commonstuff", "name": rel.rsplit("/", 1)[1]},
                      "status": {"phase": "Running", "readyReplicas": 1, "extra": list(range(items))},
                      "reportedAt": "2026-01-01T00:00:00Z"})


def reports(items: int = 0) -> dict[str, dict[str, bytes]]:
    return {mb: {f"{COMMOND}.yaml": report(COMMOND, items), f"{HTDOCS}.yaml": report(HTDOCS)} for mb in (FLORIN, GUILDER)}


def status(result: Any, budget: int | None = None, memo: StatusMemo | None = None, items: int = 0) -> Any:
    return summarize(result, MemorySource(with_reports(result.generated, reports(items))), memo, 20, budget=budget)


def costs(result: Any, items: int = 0) -> dict[str, tuple[int, ...]]:
    memo = StatusMemo()
    status(result, memo=memo, items=items)
    return {rel: memo.objects[("wmw-c", rel)].costs for rel in (COMMOND, HTDOCS)}


def evaluated(out: Any, rel: str) -> list[bool]:
    """Per collector of the object (by name), whether its result holds a value."""
    return [any(column != NULL for row in result["rows"] for column in row["columns"])
            for result in out.status("wmw-c", rel)["results"]]


def test_evaluations_past_the_budget_are_skipped_with_one_warning_and_null_columns(example: Path) -> None:
    result = with_collectors(example, ["phase", "ready"])
    spent = costs(result)
    assert all(c > 0 for c in spent[COMMOND] + spent[HTDOCS]), spent
    whole = status(result)
    assert evaluated(whole, COMMOND) == evaluated(whole, HTDOCS) == [True, True]
    assert not [p for p in whole.problems if "budget" in p.message]
    # room for commond's two evaluations and nothing more: htdocs' are skipped
    out = status(result, budget=sum(spent[COMMOND]) + min(spent[HTDOCS]) - 1)
    assert evaluated(out, COMMOND) == [True, True] and evaluated(out, HTDOCS) == [False, False]
    assert out.status("wmw-c", HTDOCS)["results"] == [
        {"name": "phase", "columnNames": ["phase"], "rows": [{"columns": [NULL]}, {"columns": [NULL]}]},  # one per WEC
        {"name": "ready", "columnNames": ["n"], "rows": [{"columns": [NULL]}]}]
    warnings = [p for p in out.problems if "budget" in p.message]
    assert [str(p.origin) for p in warnings] == ["spaces/wmw-c/collectors.yaml:1"]
    assert warnings[0].severity == "warning" and warnings[0].message == (
        "not evaluated: the StatusCollector evaluations of this status run would cost more than its budget of "
        f"{sum(spent[COMMOND]) + min(spent[HTDOCS]) - 1:,} (estimated): StatusCollector phase for wmw-c: ConfigMap "
        "commonstuff/httpd-htdocs; StatusCollector ready for wmw-c: ConfigMap commonstuff/httpd-htdocs; their "
        "results' columns are null")
    # the rest of status is as without a budget
    assert out.markdown == whole.markdown and out.counts == whole.counts
    for key in whole.combined:
        assert {k: v for k, v in out.status(*key).items() if k != "results"} == \
            {k: v for k, v in whole.status(*key).items() if k != "results"}


def test_a_cheaper_evaluation_after_one_that_does_not_fit_still_runs(example: Path) -> None:
    result = with_collectors(example, ["phase", "ready"])
    spent = costs(result, items=50)  # commond's reports weigh more
    assert spent[COMMOND][0] > sum(spent[HTDOCS]) and spent[COMMOND][1] > sum(spent[HTDOCS])
    out = status(result, budget=sum(spent[HTDOCS]), items=50)
    assert evaluated(out, COMMOND) == [False, False] and evaluated(out, HTDOCS) == [True, True]


def test_the_same_evaluations_are_skipped_whatever_the_order_of_the_files(example: Path) -> None:
    first = with_collectors(example, ["phase", "ready"])
    spent = costs(first)
    budget = sum(spent[COMMOND]) + spent[HTDOCS][0]
    one = status(first, budget=budget)
    httpd = example / "spaces/wmw-c/httpd.yaml"
    docs = httpd.read_text().split("\n---\n")
    httpd.write_text("\n---\n".join(reversed(docs)))  # the objects in the other order
    other = status(with_collectors(example, ["ready", "phase"]), budget=budget)
    assert evaluated(one, HTDOCS) == evaluated(other, HTDOCS) == [True, False]
    assert one.combined == other.combined


def test_with_a_memo_the_budget_skips_what_a_fresh_run_skips(example: Path) -> None:
    """A change to one object's reports moves what the others' evaluations find left of the budget:
    an object whose rows did not change is made anew too."""
    result = with_collectors(example, ["phase", "ready"])
    budget = sum(costs(result)[COMMOND]) + sum(costs(result)[HTDOCS])
    memo = StatusMemo()
    for step, items in enumerate([0, 40, 0, 40, 40]):
        kept, fresh = status(result, budget, memo, items), status(result, budget, None, items)
        assert (kept.markdown, kept.combined, kept.problems) == (fresh.markdown, fresh.combined, fresh.problems), step
        assert evaluated(kept, HTDOCS) == ([True, True] if items == 0 else [False, False]), step


def test_typical_collectors_over_the_benchmark_fleet_stay_well_within_the_budget() -> None:
    """docs/STATUS.md: each of the StatusCollector expressions benchmarks/cel_compare.py calls
    typical, over every report of the benchmark fleet (1,000 WECs x 200 objects: 166,093 rows), is
    estimated under half of the budget."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from cel_compare import EXPRESSIONS
        from fleet_apps import workload_docs
        from reports import _status
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    _, objects = workload_docs(random.Random(1), 200)
    for i, expression in enumerate(EXPRESSIONS):
        body = {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "c"},
                "spec": {"select": [{"name": "v", "def": expression}]}}
        collector, problems = compile_collector(Obj("wds", body, Origin("c.yaml", 1)))
        assert collector is not None, problems
        per_row = sum(estimate(collector, {"inventory": {"name": "wec-0001"}, "obj": o,
                                           "returned": {"status": _status(o["kind"], True) or {}}}, Weights())
                      for o in objects) / len(objects)
        assert 0 < per_row * 166_093 < BUDGET / 2, (expression, per_row)
