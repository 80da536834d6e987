"""A StatusCollector expression is evaluated only when a bound of its cost over the binding's data
stays within Kubernetes' limit of 1,000,000 (ksgitops/core/status/celcost.py): the CEL library has
no limit, and a comprehension over a list the data holds ran for hours. Past the bound the
expression fails on that WEC as an expression that errors does (a located warning, a null column),
and the bound is sound: it is never below the steps the library takes."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, copy_example_sources
from ksgitops.core.status.celcompile import cel_library
from ksgitops.core.status.celcost import LIMIT, MAX_MEMBER_VISITS, Weights, bound, model, most_weight
from ksgitops.core.status.celparse import parse
from ksgitops.core.status.collectors import compile_collector
from ksgitops.model import Obj, Origin

WDS = "spaces/wmw-c"
HOSTILE = "size(returned.status.items.map(a, returned.status.items.map(b, returned.status.items.map(c, a + b + c))))"
ORDINARY = "returned.status.items.filter(a, a % 2 == 0).size()"
TOO_COSTLY = "not evaluated: its estimated cost over this object's data exceeds Kubernetes' limit of 1,000,000"


def collector(spec: dict[str, Any]) -> Any:
    body = {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "c"},
            "spec": spec}
    compiled, problems = compile_collector(Obj("wds", body, Origin("c.yaml", 3)))
    assert compiled is not None, problems
    return compiled


def binding(wec: str, items: list[Any]) -> dict[str, Any]:
    return {"inventory": {"name": wec}, "obj": {"metadata": {"name": "o"}}, "returned": {"status": {"items": items}}}


# --- what ksgitops status does -----------------------------------------------------------------------

def test_status_refuses_a_hostile_collector_quickly_and_runs_an_ordinary_one(tmp_path: Path) -> None:
    """Over a report of 1,000 items the hostile expression is 10^9 steps (it ran for hours); the
    ordinary one, a filter over the same items, still gives its value."""
    repo = copy_example_sources(tmp_path / "repo")
    (repo / WDS / "collectors.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": name},
         "spec": {"select": [{"name": "n", "def": expression}]}}
        for name, expression in (("hostile", HOSTILE), ("ordinary", ORDINARY))]))
    placement = repo / WDS / "edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace(
        "  wantSingletonReportedState: true", "  wantSingletonReportedState: true\n  statusCollectors: [hostile, ordinary]"))
    assert subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], capture_output=True).returncode == 0
    report = repo / "spaces/imw1-mb-florin/reported/apps/replicasets/commonstuff/commond.yaml"
    report.parent.mkdir(parents=True)
    report.write_text(yaml.safe_dump({
        "object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff", "name": "commond"},
        "reportedAt": "2026-01-01T00:00:00Z", "status": {"replicas": 1, "items": list(range(1000))}}))
    try:
        found = subprocess.run([sys.executable, "-m", "ksgitops", "status", str(repo)], capture_output=True,
                               text=True, cwd=ROOT, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("status still ran after 60 s")
    assert found.returncode == 0 and "Traceback" not in found.stderr, found.stderr
    assert (f"{WDS}/collectors.yaml:1: warning: StatusCollector hostile: spec.select[0].def: {TOO_COSTLY} "
            "on 1 WEC (florin)") in found.stderr.splitlines()
    assert not [line for line in found.stderr.splitlines() if "ordinary" in line and "not evaluated" in line]
    status = yaml.safe_load((repo / WDS / ".ksgitops/status/apps/replicasets/commonstuff/commond.yaml").read_text())
    hostile, ordinary = status["results"]
    assert [r["columns"] for r in hostile["rows"]] == [[{"type": "Null"}], [{"type": "Null"}]]  # florin, guilder
    assert ordinary["rows"][0]["columns"] == [{"type": "Number", "float": "500"}]


def test_a_refused_expression_fails_as_an_erring_one_does() -> None:
    """filter: the WEC is dropped; select and groupBy: a null column; an aggregate's subject: skipped."""
    rows = [binding("big", list(range(2000))), binding("small", list(range(10)))]
    nested = "returned.status.items.exists(a, returned.status.items.exists(b, a + b < 0))"
    selected, problems = collector({"select": [{"name": "n", "def": f"{nested} ? 1 : 2"}]}).evaluate_with_problems(rows)
    assert [r["columns"] for r in selected["rows"]] == [[{"type": "Null"}], [{"type": "Number", "float": "2"}]]
    assert [str(p) for p in problems] == [
        f"c.yaml:3: warning: StatusCollector c: spec.select[0].def: {TOO_COSTLY} on 1 WEC (big)"]
    filtered, problems = collector({"filter": f"!{nested}", "combinedFields": [
        {"name": "n", "type": "COUNT"}]}).evaluate_with_problems(rows)
    assert filtered["rows"][0]["columns"] == [{"type": "Number", "float": "1"}]
    assert [p.message for p in problems] == [f"StatusCollector c: spec.filter: {TOO_COSTLY} on 1 WEC (big)"]
    summed, problems = collector({"combinedFields": [
        {"name": "s", "type": "SUM", "subject": f"{nested} ? 1 : 2"}]}).evaluate_with_problems(rows)
    assert summed["rows"][0]["columns"] == [{"type": "Number", "float": "2"}]
    assert len(problems) == 1 and "spec.combinedFields[0].subject: not evaluated" in problems[0].message


@pytest.mark.parametrize("expression", [
    "returned.status.items.all(a, a >= 0)",
    "returned.status.items.exists_one(a, a == 7)",
    "returned.status.items.map(a, a * 2).size()",
    "returned.status.items.filter(a, a % 2 == 0).size()",
    "returned.status.items.exists(a, a == 999) && obj.metadata.name == 'o'",
])
def test_one_comprehension_over_a_thousand_elements_is_evaluated(expression: str) -> None:
    result, problems = collector({"select": [{"name": "n", "def": expression}]}).evaluate_with_problems(
        [binding("w", list(range(1000)))])
    assert problems == [] and result["rows"][0]["columns"][0]["type"] in ("Bool", "Number")


def test_an_expression_too_costly_over_any_data_does_not_compile() -> None:
    literal = "[" + ", ".join(map(str, range(1000))) + "]"
    expression = f"{literal}.map(x, '{'a' * 6000}').size()"  # copies 1,000 strings 500,000 times
    assert model(expression, ("obj",))[1] == "its estimated cost exceeds Kubernetes' limit of 1,000,000, whatever the data"
    assert model(f"{literal}.map(x, x).size()", ("obj",))[1] == ""


# --- the bound is sound ---------------------------------------------------------------------------

BODY = {  # a step of each macro that evaluates `inner` and never stops the comprehension early
    "all": "size([{inner}]) > 0", "exists": "size([{inner}]) < 0", "exists_one": "size([{inner}]) < 0",
    "filter": "size([{inner}]) > 0", "map": "[{inner}]",
}


def nest(macros: list[str]) -> str:
    expression = "t()"
    for depth, macro in reversed(list(enumerate(macros))):
        expression = f"l.{macro}(v{depth}, {BODY[macro].format(inner=expression)})"
    return expression


@pytest.mark.parametrize("macros", [[m] for m in BODY] + [[m, m] for m in BODY] + [
    ["map", "filter", "all"], ["exists", "map", "exists_one"], ["filter", "filter", "map"]],
    ids=lambda macros: "-".join(macros))
def test_the_bound_is_at_least_the_steps_the_library_takes(macros: list[str]) -> None:
    """Counted by a function the innermost step calls; and where the bound allows evaluating, the
    library finishes in well under a second (the bound counts the library's copies as well)."""
    tree = parse(nest(macros))
    for size in (3, 10, 40):
        steps = [0]

        def tick() -> bool:
            steps[0] += 1
            return False
        ctx = cel_library().Context(variables={"l": list(range(size))}, functions={"t": tick})
        cel_library().compile(nest(macros)).execute(ctx)
        assert steps[0] == size ** len(macros)
        assert bound(tree, {"l": list(range(size))}, Weights()) >= steps[0]
    largest = _largest(tree)
    ctx = cel_library().Context(variables={"l": list(range(largest))}, functions={"t": lambda: False})
    started = time.perf_counter()
    cel_library().compile(nest(macros)).execute(ctx)
    assert time.perf_counter() - started < 5, largest


def _largest(tree: Any) -> int:
    """The longest list `l` the bound lets an evaluation run over."""
    low, high = 1, 2
    while bound(tree, {"l": list(range(high))}, Weights()) <= LIMIT:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if bound(tree, {"l": list(range(middle))}, Weights()) <= LIMIT else (low, middle)
    return low


@pytest.mark.parametrize(("expression", "least"), [
    ("l.map(a, a)", 1000 * 999 / 2),  # the library copies its list so far at every step
    ("l.filter(a, true)", 1000 * 999 / 2),
    ("l.map(a, l)", 1000 * 1000 * 999 / 2),  # ... deeply
    ("l.all(a, size(m.x) > 0)", 1000 * 1001),  # reading a field copies it
    ("l.all(a, [m].all(b, size(b) > 0))", 1000 * 1001),  # a comprehension's variable is copied too
    ("l.map(a, l) == l.map(b, l)", 1000 * 1000),
])
def test_the_bound_counts_what_the_library_copies(expression: str, least: float) -> None:
    data = {"l": list(range(1000)), "m": {"x": list(range(1000))}}
    assert bound(parse(expression), data, Weights()) >= least


def test_light_data_needs_no_analysis() -> None:
    """Below the weight where the bound could reach the limit, rows are only weighed."""
    assert most_weight(parse("returned.status.availableReplicas")) > 100_000
    assert 300 < most_weight(parse("returned.status.conditions.exists(c, c.type == 'Ready')")) < 1_000
    assert most_weight(parse(HOSTILE)) < 20


def test_the_analysis_itself_is_bounded() -> None:
    """Thousands of selections over a union of 100,000 maps: past MAX_MEMBER_VISITS the values are
    known by their weight only."""
    expression = "l.all(x, " + " && ".join(f"x.f{i} == 0" for i in range(2000)) + ")"
    data = {"l": [{"f0": i} for i in range(100_000)]}
    started = time.perf_counter()
    assert bound(parse(expression), data, Weights()) > 100_000 * 2000
    assert time.perf_counter() - started < 10
    assert MAX_MEMBER_VISITS < 10 * 100_000
    cycle: list[Any] = [1]
    cycle.append(cycle)
    assert Weights().of({"a": cycle}) == float("inf")
