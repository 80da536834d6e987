"""The StatusCollector budget of one status run (docs/STATUS.md, "The StatusCollector budget").

Kubernetes bounds CEL twice: each evaluation of an expression (1,000,000 units, celcost.py) and
everything evaluated for one request (its runtime cost budget). Status has the first; this
module is the second, over a whole run: the estimated cost of every StatusCollector evaluation
(one collector over the rows of one workload object) is summed, in the order of the objects (space,
then mailbox path) and of each object's collectors (by name), and an evaluation that would take the
sum past BUDGET is skipped (later, cheaper ones still fit). Its result keeps its columns with every
value null, as an expression refused by the per-evaluation limit shows; one warning names the
collectors skipped.

An evaluation's estimate is the sum over its rows of each expression's cost bound (celcost.py) over
that row's binding, where the bound is within Kubernetes' limit (an expression past it is not
evaluated there), and of the binding's own cost (BINDING, CONVERT). Rows record their estimates (rows.py), and the memo each object's sum, so the
same evaluations are skipped with or without a memo, and in every run, whatever changed.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ...model import Problem
from .celcost import LIMIT, Weights, bound

# the units of celcost.py cost ~0.3 us each: 100,000,000 is ~30 s of evaluation in one run,
# Kubernetes' limit for the estimated cost of a CustomResourceDefinition's rules, and 3 to 8 times
# what one typical collector over every object of the benchmark fleet costs (docs/STATUS.md)
BUDGET = 100_000_000
# besides what its expressions cost, a binding's own: its CEL context made (~15 us) and its
# variables that change row by row (`inventory`, `returned`; `obj` is one per object) converted,
# ~2.5 us per unit of weight (celcost.py) with the CEL library of celcost.py's measures (2026-11)
BINDING = 50
CONVERT = 8
NULL = {"type": "Null"}
FEW = 3  # the objects a warning names per collector


class Collected(NamedTuple):
    """The StatusCollectors that one workload object's placements name (sorted by name), and
    their fingerprints (combined.py's ObjectContext)."""

    fingerprints: tuple[str, ...]
    collectors: tuple[Any, ...]  # collectors.Collector


NONE = Collected((), ())


def expressions(collector: Any) -> Iterable[Any]:
    if collector.filter is not None:
        yield collector.filter
    for column in (*collector.group_by, *collector.combined, *collector.select):
        if column.expr is not None:
            yield column.expr


def estimate(collector: Any, binding: Mapping[str, Any], weights: Weights) -> int:
    """What evaluating `collector` over one binding may cost, in celcost.py's units."""
    total = float(BINDING) if collector.variables else 0.0
    for name in collector.variables:
        if name != "obj":
            total += CONVERT * weights.of(binding.get(name))
    for expr in expressions(collector):
        if expr.model is not None:
            cost = bound(expr.model.tree, dict(binding), weights)
            if cost <= LIMIT:
                total += cost
    return math.ceil(total)


def summed(fingerprints: tuple[str, ...], rows: Iterable[Any]) -> tuple[int, ...]:
    """Per collector, the estimates of an object's rows (a row judged for other collectors, which
    the memo's keys rule out, counts the per-evaluation limit)."""
    if not fingerprints:
        return ()
    totals = [0] * len(fingerprints)
    for row in rows:
        same = row.collectors == fingerprints
        for i in range(len(totals)):
            totals[i] += row.cost[i] if same else LIMIT
    return tuple(totals)


def allocate(costs: Mapping[tuple[str, str], tuple[int, ...]], budget: int = BUDGET
             ) -> dict[tuple[str, str], frozenset[int]]:
    """Per object (wds, rel), the indexes of its collectors whose evaluation is skipped (only
    objects with one), spending `budget` in the order of the objects, then of their collectors."""
    spent = 0
    skipped: dict[tuple[str, str], frozenset[int]] = {}
    for key in sorted(costs):
        over = []
        for i, cost in enumerate(costs[key]):
            if spent + cost > budget:
                over.append(i)
            else:
                spent += cost
        if over:
            skipped[key] = frozenset(over)
    return skipped


def not_evaluated(collector: Any, wecs: Sequence[str]) -> dict[str, Any]:
    """The result of a skipped evaluation: the rows it would have produced, every column null —
    with `select`, one per WEC (by name, cut at the limit; its filter was not evaluated either),
    else one."""
    width = len(collector.column_names)
    count = min(len(wecs), collector.limit) if collector.select else min(1, collector.limit)
    return {"name": collector.name, "columnNames": collector.column_names,
            "rows": [{"columns": [dict(NULL) for _ in range(width)]} for _ in range(count)]}


def skipped_warning(skipped: Mapping[tuple[str, str], frozenset[int]], contexts: Mapping[tuple[str, str], Any],
                    budget: int = BUDGET) -> list[Problem]:
    """One warning naming every collector skipped and the objects it was skipped for (the first
    few), at the first one's definition; none when nothing was."""
    by_name: dict[str, tuple[Any, list[str]]] = {}
    for key in sorted(skipped):
        context = contexts[key]
        for i in sorted(skipped[key]):
            collector = context.collectors[i]
            by_name.setdefault(f"{collector.origin.path}\0{collector.name}", (collector, []))[1].append(
                f"{context.wds}: {context.obj.ref}")
    if not by_name:
        return []
    named = []
    for _, (collector, objects) in sorted(by_name.items()):
        more = f", ... ({len(objects)} objects)" if len(objects) > FEW else ""
        named.append(f"StatusCollector {collector.name} for {', '.join(objects[:FEW])}{more}")
    first = sorted(by_name.items())[0][1][0]
    return [Problem(first.origin, f"not evaluated: the StatusCollector evaluations of this status run would cost "
                    f"more than its budget of {budget:,} (estimated): {'; '.join(named)}; their results' "
                    "columns are null", "warning")]


__all__ = ["BUDGET", "BINDING", "CONVERT", "Collected", "NONE", "estimate", "summed", "allocate", "not_evaluated",
           "skipped_warning"]
