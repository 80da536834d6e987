"""One CombinedStatus (docs/REFERENCE.md, "CombinedStatus"; schema/combinedstatus.json) from the rows
of one workload object.

A row per WEC the object was sent to (summary.py computes them); this module orders them (worst
health first, then WEC name), counts, adds `singletonStatus` when a placement wants it, exactly
one WEC executes the object and that WEC reported, and evaluates the placements' StatusCollectors.
Secret data never reaches the output: Secrets are stripped of `data`/`stringData` before any
collector sees them, and a Secret's reported status (Secrets have none) is never used.
"""
from __future__ import annotations

import hashlib
import heapq
from typing import Any, Protocol, Sequence

from msgspec import Struct, field

from ...model import Obj, Problem
from .budget import not_evaluated
from .collectors import Collector, compile_collector
from .health import Health
from .verdict import rank_of
from ..emit.problems import SpaceProblem
from ..emit.readback import Unreadable
from ...model import is_secret
from ..serialize import deep_copy
from .syncreport import Drift

API_VERSION = "control.kubestellar.io/v1alpha1"
HEALTH_ORDER = (Health.HEALTHY, Health.PROGRESSING, Health.DEGRADED, Health.MISSING, Health.UNKNOWN)


class RowLike(Protocol):
    """status.Row, read only."""

    @property
    def health(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def reported_at(self) -> str | None: ...
    @property
    def generation(self) -> int | None: ...
    @property
    def singleton(self) -> bool: ...
    @property
    def data(self) -> str: ...
    @property
    def patch(self) -> str: ...
    @property
    def report(self) -> str: ...
    @property
    def unread(self) -> str: ...
    @property
    def apply_error(self) -> str: ...
    @property
    def drift(self) -> Drift | None: ...


class Contents(Protocol):
    def sent(self, data: str, patch: str) -> dict[str, Any]: ...

    def doc(self, key: str) -> dict[str, Any]: ...


class ObjectContext(Struct):
    """A placed workload object: which placements select it, which collectors they name."""

    wds: str
    rel: str
    obj: Obj
    placements: set[str] = field(default_factory=set)
    collectors: list[Collector] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)
    problems: list[SpaceProblem] = field(default_factory=list)  # reconcile errors naming the object

    def key(self, limit: int) -> str:
        """Everything but the rows that the CombinedStatus depends on."""
        obj = self.obj
        text = repr((obj.api_version, obj.kind, obj.namespace, obj.name, sorted(self.placements),
                     self.fingerprints, limit, sorted(self.problems)))
        return hashlib.blake2b(text.encode(), digest_size=20).hexdigest()


def strip_secret(body: dict[str, Any]) -> dict[str, Any]:
    """`body` without a Secret's data and stringData (other kinds unchanged)."""
    if isinstance(body, dict) and is_secret(body):
        return {k: v for k, v in body.items() if k not in ("data", "stringData")}
    return body


def combined_status(context: ObjectContext, rows: Sequence[tuple[str, RowLike]], names: dict[str, str],
                    contents: Contents, limit: int, problems: list[Problem],
                    skipped: frozenset[int] = frozenset()) -> dict[str, Any]:
    """The CombinedStatus document; `rows` are (mailbox, row) for every WEC executing the object;
    `skipped`: the indexes of its collectors past the run's budget (budget.py), not evaluated."""
    obj = context.obj
    identity = {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.name}
    metadata = {"name": obj.name}
    if obj.namespace:
        identity["namespace"] = metadata["namespace"] = obj.namespace
    # sorted(...)[:limit], without sorting the rows of a thousand WECs
    shown = heapq.nsmallest(max(limit, 0), rows, key=lambda r: (-rank_of(r[1].health), names.get(r[0], r[0]), r[0]))
    status: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "CombinedStatus", "metadata": metadata, "object": identity,
        "placements": sorted(context.placements), "executingCount": len(rows),
        "reportedCount": sum(1 for _, r in rows if r.report or r.unread),
        "health": counts(r.health for _, r in rows),
        "wecs": [_wec_item(mb, names.get(mb, mb), r) for mb, r in shown],
    }
    _sync_facts(status, context, rows, names, limit)
    if len(rows) == 1 and rows[0][1].report and rows[0][1].singleton:
        status["singletonStatus"] = _reported_status(contents, rows[0][1])
    if context.collectors:
        status["results"] = _results(context, rows, names, contents, problems, skipped)
    return status


def _results(context: ObjectContext, rows: Sequence[tuple[str, RowLike]], names: dict[str, str],
             contents: Contents, problems: list[Problem], skipped: frozenset[int]) -> list[dict[str, Any]]:
    """Each collector's result. A row whose object sent does not read binds `obj` to null: the
    expressions reading it are not evaluated there (its row and a warning say why)."""
    evaluated = [c for i, c in enumerate(context.collectors) if i not in skipped]
    bindings: list[dict[str, Any]] = []
    if evaluated:
        reads = any("obj" in c.variables for c in evaluated)
        bindings = [{"inventory": {"name": names.get(mb, mb)}, "obj": _sent(contents, r) if reads else None,
                     "returned": {"status": _reported_status(contents, r)}} for mb, r in rows]
    results = []
    for i, collector in enumerate(context.collectors):
        if i in skipped:
            results.append(not_evaluated(collector, sorted(names.get(mb, mb) for mb, _ in rows)))
            continue
        out, found = collector.evaluate_with_problems(bindings)  # type: ignore[arg-type]
        problems.extend(Problem(p.origin, p.message, "warning") for p in found)
        results.append(out)
    return results


def _sync_facts(status: dict[str, Any], context: ObjectContext, rows: Sequence[tuple[str, RowLike]],
                names: dict[str, str], limit: int) -> None:
    """`problems`: the object's reconcile errors and its apply errors per WEC; `drifted`: the WECs
    where the agent found it changed. Each at most `limit` long, with its full count."""
    problems = [{"source": "reconcile", **_problem_item(p)} for p in sorted(context.problems)]
    def by_wec(item: tuple[str, Any]) -> str:
        return names.get(item[0], item[0])
    # only the rows that say something are sorted (a stable sort: the order of all rows sorted)
    errors = sorted(((mb, r.apply_error) for mb, r in rows if r.apply_error), key=by_wec)
    problems += [{"source": "sync", "wec": names.get(mb, mb), "mailbox": mb, "message": error} for mb, error in errors]
    drifts = sorted(((mb, r.drift) for mb, r in rows if r.drift is not None), key=by_wec)
    drifted = [{"wec": names.get(mb, mb), "mailbox": mb, "change": d.change, "fields": list(d.fields),
                "detectedAt": d.detected_at} for mb, d in drifts]
    if problems:
        status["problemCount"], status["problems"] = len(problems), problems[:max(limit, 0)]
    if drifted:
        status["driftedCount"], status["drifted"] = len(drifted), drifted[:max(limit, 0)]


def _problem_item(problem: SpaceProblem) -> dict[str, Any]:
    item: dict[str, Any] = {"file": problem.where, "message": problem.message}
    if problem.wec:
        item["wec"], item["mailbox"] = problem.wec, problem.mailbox
    if problem.wec_count:
        item["wecCount"], item["wecs"] = problem.wec_count, list(problem.wecs)
    return item


def _reported_status(contents: Contents, row: RowLike) -> dict[str, Any]:
    """The reported status as it may appear in output: never a Secret's (Secrets have none). The
    base copy must read and be no Secret, and so must the object sent when its patch reads (a
    patch that does not read leaves the status shown: ksgitops' customizations keep the kind)."""
    if not row.report:
        return {}
    try:
        base = contents.sent(row.data, "")
    except Unreadable:
        return {}
    sent = _sent(contents, row) if row.patch else base
    if is_secret(base) or (sent is not None and is_secret(sent)):
        return {}
    status = contents.doc(row.report).get("status")
    return deep_copy(status) if isinstance(status, dict) else {}


def _sent(contents: Contents, row: RowLike) -> dict[str, Any] | None:
    """The object sent, None when its mailbox files do not read (the row says so)."""
    try:
        return contents.sent(row.data, row.patch)
    except Unreadable:
        return None


def _wec_item(mailbox: str, wec: str, row: RowLike) -> dict[str, Any]:
    item: dict[str, Any] = {"name": wec, "mailbox": mailbox, "health": row.health}
    if row.message:
        item["message"] = row.message
    if row.reported_at is not None:
        item["reportedAt"] = row.reported_at
    if row.generation is not None:
        item["generation"] = row.generation
    return item


def counts(healths: Any) -> dict[str, int]:
    """{health: count}, in HEALTH_ORDER, zero counts left out."""
    found = {h.value: 0 for h in HEALTH_ORDER}
    for h in healths:
        found[h] += 1  # a str Enum hashes as its value: no Health(h) per row (166k rows a run)
    return {k: v for k, v in found.items() if v}


class Collectors:
    """StatusCollectors by name (the placement's own space first), compiled once each."""

    def __init__(self, result: Any) -> None:
        self._by_space: dict[str, dict[str, Obj]] = {}
        for space in sorted(result.loaded.spaces):
            for obj in result.loaded.spaces[space]:
                if obj.kind == "StatusCollector" and obj.group == "control.kubestellar.io" and obj.name:
                    self._by_space.setdefault(space, {}).setdefault(obj.name, obj)
        self._compiled: dict[tuple[str, str], Collector | None] = {}
        self._specs = {(wds, p.obj.name): p for wds, plans in result.placements.items() for p in plans}

    def attach(self, context: ObjectContext, problems: list[Problem]) -> None:
        """Set the context's collectors (and their fingerprints) from its placements."""
        found = self._named(context.wds, sorted(context.placements), problems)
        context.collectors = [found[n][0] for n in sorted(found)]
        context.fingerprints = [f"{found[n][1].space}/{n}@{found[n][1].key}" for n in sorted(found)]

    def reads_obj(self, wds: str, placement: str, problems: list[Problem]) -> bool:
        """Whether a StatusCollector the placement names reads `obj`: the object as sent to each
        WEC, so status must read its patch too."""
        return any("obj" in c.variables for c, _ in self._named(wds, [placement], problems).values())

    def may_read_obj(self, wds: str, names: Sequence[str]) -> bool:
        """Whether a StatusCollector of these names (a frozen placement's record) reads `obj`, or
        may: its definition at the last good state is not known, so one that does not resolve or
        compile now counts. What compiling finds is not said here (status uses no result of theirs)."""
        for name in names:
            got = self._get(wds, str(name), [])
            if got is None or "obj" in got[0].variables:
                return True
        return False

    def _named(self, wds: str, placements: list[str], problems: list[Problem]) -> dict[str, tuple[Collector, Obj]]:
        """The compiled collectors the placements name, by name (those that compile)."""
        found: dict[str, tuple[Collector, Obj]] = {}
        for name in placements:
            plan = self._specs.get((wds, name))
            if plan is None:
                continue
            wanted = plan.spec.get("statusCollectors") or []
            for cname in wanted if isinstance(wanted, list) else []:
                got = self._get(wds, str(cname), problems)
                if got is not None:
                    found.setdefault(got[0].name, got)
        return found

    def compile_all(self) -> list[Problem]:
        """Every StatusCollector compiled, placed or not: what `validate` says of them (warnings)."""
        problems: list[Problem] = []
        for space, objs in sorted(self._by_space.items()):
            for name, obj in sorted(objs.items()):
                self._compile((space, name), obj, problems)
        return problems

    def _compile(self, key: tuple[str, str], obj: Obj, problems: list[Problem]) -> None:
        if key not in self._compiled:
            collector, found = compile_collector(obj)
            problems.extend(Problem(p.origin, p.message, "warning") for p in found)
            self._compiled[key] = collector

    def _get(self, wds: str, name: str, problems: list[Problem]) -> tuple[Collector, Obj] | None:
        obj = self._by_space.get(wds, {}).get(name)
        if obj is None:
            obj = next((objs[name] for _, objs in sorted(self._by_space.items()) if name in objs), None)
        if obj is None:
            return None  # reconcile's problems say so (place/dangling.py), at the name's line
        key = (obj.space, name)
        self._compile(key, obj, problems)
        compiled = self._compiled[key]
        return (compiled, obj) if compiled is not None else None


__all__ = ["ObjectContext", "combined_status", "strip_secret", "counts", "Collectors", "API_VERSION"]
