"""The status step (DESIGN §6): reported state from the mailboxes -> CombinedStatus files + STATUS.md.

`summarize(result, reports, limit)` is pure: from a reconcile `Result` (which objects are placed on
which WEC, and what each WEC was sent) and the parsed `reported/` documents of each mailbox, it
computes

- one CombinedStatus per placed workload object, at
  `spaces/<wds>/.ksgitops/status/<group|core>/<resource>/<ns|_cluster>/<name>.yaml`
  (schema/combinedstatus.json): placements, executingCount, reportedCount, health counts, the
  `limit` worst WECs (worst health first, then WEC name), `singletonStatus` when a placement wants
  it, exactly one WEC executes the object and that WEC reported, and the StatusCollector `results`;
- STATUS.md: per placement, per WEC and the broken (object, WEC) pairs, as GitHub Markdown tables.

Health per (object, WEC) is `health.assess(object as sent, report)`; no report is Missing.
Secret data never reaches the output: a Secret's `data`/`stringData` are removed from the object
before anything reads it, and a Secret's reported status (Secrets have none) is never used.
Output is deterministic: same inputs, same bytes, whatever the order of the inputs; the only times
in it are the reports' own `reportedAt` values.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import jsonpatch
import orjson

from ..model import Obj, ObjRef, Origin, Problem
from .base import rel_path
from .collect import Collector, compile_collector
from .health import Health, assess
from .render import is_secret
from .serialize import deep_copy, dump_yaml, load_yaml
from .snapshot import GENERATED_DIR
from .tree import FileTree, Generated, put

STATUS_DIR = "status"
STATUS_MD = "STATUS.md"
API_VERSION = "control.kubestellar.io/v1alpha1"
#: Rows of STATUS.md's broken list; the rest is counted (every pair is in the CombinedStatus files).
BROKEN_LIMIT = 100
HEALTH_ORDER = (Health.HEALTHY, Health.PROGRESSING, Health.DEGRADED, Health.MISSING, Health.UNKNOWN)

Reports = Mapping[str, Mapping[str, tuple[Origin, dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class Pair:
    """One placed object on one WEC, judged."""

    wds: str
    rel: str
    ref: ObjRef
    mailbox: str
    wec: str
    health: Health
    message: str
    placements: tuple[str, ...]
    reported_at: str | None = None
    generation: int | None = None


@dataclass
class StatusOutput:
    """What `ksgitops status` writes: `generated` (the status roots) and `markdown` (STATUS.md)."""

    generated: Generated
    markdown: bytes
    combined: dict[tuple[str, str], dict[str, Any]]  # (wds, rel) -> CombinedStatus
    pairs: list[Pair]
    problems: list[Problem] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return _counts(p.health for p in self.pairs)


def status_root(wds: str) -> str:
    return f"spaces/{wds}/{GENERATED_DIR}/{STATUS_DIR}"


def summarize(result: Any, reports: Reports, limit: int = 20, broken_limit: int = BROKEN_LIMIT) -> StatusOutput:
    """CombinedStatus files and STATUS.md from a reconcile Result and the parsed reports."""
    names = wec_names(result.wecs)
    objects = _placed_objects(result)
    renderer = _Renderer()
    collectors = _Collectors(result)
    problems: list[Problem] = []
    combined: dict[tuple[str, str], dict[str, Any]] = {}
    pairs: list[Pair] = []
    trees: dict[str, FileTree] = {}
    for key in sorted(objects):
        wds, rel = key
        placed = objects[key]
        rows = []
        for mb in sorted(placed.entries, key=lambda m: (names.get(m, m), m)):
            entry = placed.entries[mb]
            sent = renderer.render(entry.data, entry.patch)
            found = reports.get(mb, {}).get(rel)
            doc = found[1] if found else None
            verdict = assess(sent, doc, None)
            identity = doc.get("object", {}) if doc else {}
            generation = identity.get("generation") if isinstance(identity.get("generation"), int) else None
            pair = Pair(wds, rel, placed.ref, mb, names.get(mb, mb), verdict.health, verdict.message,
                        tuple(sorted({v.placement for v in entry.via if v.wds == wds})),
                        str(doc["reportedAt"]) if doc else None, generation)
            rows.append((pair, sent, doc, entry))
            pairs.append(pair)
        status = _combined(placed, rows, limit)
        wanted = collectors.for_placements(wds, sorted(placed.placements), problems)
        if wanted:
            status["results"] = [_evaluate(c, rows, problems) for c in wanted]
        combined[key] = status
        put(trees.setdefault(wds, {}), f"{rel}.yaml", dump_yaml(status))
    generated: Generated = {}
    skipped = set(result.config.skip_spaces)
    for wds in sorted(result.loaded.spaces):
        if wds not in skipped:
            generated[status_root(wds)] = trees.get(wds)
    markdown = _markdown(result, names, pairs, reports, broken_limit)
    return StatusOutput(generated, markdown, combined, pairs, sorted(set(problems)))


def wec_names(wecs: Mapping[str, Any]) -> dict[str, str]:
    """mailbox -> the SyncTarget name, or `<space>/<name>` when the name is not unique."""
    counts: dict[str, int] = {}
    for wec in wecs.values():
        counts[wec.name] = counts.get(wec.name, 0) + 1
    return {mb: wec.name if counts[wec.name] == 1 else f"{wec.space}/{wec.name}" for mb, wec in wecs.items()}


# --- which objects, on which WECs -------------------------------------------------------------------

@dataclass
class _Placed:
    obj: Obj
    ref: ObjRef
    placements: set[str] = field(default_factory=set)
    entries: dict[str, Any] = field(default_factory=dict)  # mailbox -> Entry


def _placed_objects(result: Any) -> dict[tuple[str, str], _Placed]:
    """Every workload object a placement selects (also with no WEC yet), with its mailbox entries."""
    objects: dict[tuple[str, str], _Placed] = {}
    for wds, plans in result.placements.items():
        for plan in plans:
            for placed in plan.placed:
                info = result.kinds.lookup(placed.obj.group, placed.obj.kind)
                if info is None:
                    continue
                rel = rel_path(placed.obj.group, info.resource, placed.obj.namespace, placed.obj.name)
                item = objects.setdefault((wds, rel), _Placed(placed.obj, placed.obj.ref))
                item.placements.add(plan.obj.name)
    for mb, plan in result.mailboxes.items():
        for rel, entry in plan.entries.items():
            obj = entry.base.obj
            if obj is None:  # an implied Namespace: not a workload object of any WDS
                continue
            item = objects.setdefault((obj.space, rel), _Placed(obj, obj.ref))
            item.entries[mb] = entry
            item.placements.update(v.placement for v in entry.via if v.wds == obj.space)
    return objects


class _Renderer:
    """The object as a WEC receives it (base + patch), Secret data removed; shared per content."""

    def __init__(self) -> None:
        self._cache: dict[tuple[bytes, bytes | None], dict[str, Any]] = {}

    def render(self, data: bytes, patch: bytes | None) -> dict[str, Any]:
        key = (data, patch)
        found = self._cache.get(key)
        if found is None:
            body = load_yaml(data)
            if patch:
                body = jsonpatch.apply_patch(body, orjson.loads(patch))
            found = self._cache[key] = strip_secret(body)
        return found


def strip_secret(body: dict[str, Any]) -> dict[str, Any]:
    """`body` without a Secret's data and stringData (other kinds unchanged)."""
    if isinstance(body, dict) and is_secret(body):
        return {k: v for k, v in body.items() if k not in ("data", "stringData")}
    return body


def _reported_status(sent: dict[str, Any], doc: dict[str, Any] | None) -> dict[str, Any]:
    """The reported status as it may appear in output: never a Secret's (Secrets have none)."""
    if doc is None or is_secret(sent):
        return {}
    status = doc.get("status")
    return deep_copy(status) if isinstance(status, dict) else {}


# --- one CombinedStatus -------------------------------------------------------------------------------

def _combined(placed: _Placed, rows: list[tuple[Pair, dict[str, Any], dict[str, Any] | None, Any]],
              limit: int) -> dict[str, Any]:
    obj = placed.obj
    identity = {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.name}
    metadata = {"name": obj.name}
    if obj.namespace:
        identity["namespace"] = metadata["namespace"] = obj.namespace
    wecs = sorted((r[0] for r in rows), key=lambda p: (-p.health.rank, p.wec, p.mailbox))
    status: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "CombinedStatus", "metadata": metadata, "object": identity,
        "placements": sorted(placed.placements), "executingCount": len(rows),
        "reportedCount": sum(1 for r in rows if r[2] is not None),
        "health": _counts(r[0].health for r in rows),
        "wecs": [_wec_item(p) for p in wecs[:max(limit, 0)]],
    }
    if len(rows) == 1 and rows[0][2] is not None and rows[0][3].wants_singleton:
        status["singletonStatus"] = _reported_status(rows[0][1], rows[0][2])
    return status


def _wec_item(pair: Pair) -> dict[str, Any]:
    item: dict[str, Any] = {"name": pair.wec, "mailbox": pair.mailbox, "health": pair.health.value}
    if pair.message:
        item["message"] = pair.message
    if pair.reported_at is not None:
        item["reportedAt"] = pair.reported_at
    if pair.generation is not None:
        item["generation"] = pair.generation
    return item


def _counts(healths: Any) -> dict[str, int]:
    counts = {h.value: 0 for h in HEALTH_ORDER}
    for h in healths:
        counts[Health(h).value] += 1
    return {k: v for k, v in counts.items() if v}


# --- StatusCollectors ----------------------------------------------------------------------------------

class _Collectors:
    """StatusCollectors by name (the placement's own space first), compiled once each."""

    def __init__(self, result: Any) -> None:
        self._result = result
        self._by_space: dict[str, dict[str, Obj]] = {}
        for space in sorted(result.loaded.spaces):
            for obj in result.loaded.spaces[space]:
                if obj.kind == "StatusCollector" and obj.group == "control.kubestellar.io" and obj.name:
                    self._by_space.setdefault(space, {}).setdefault(obj.name, obj)
        self._compiled: dict[tuple[str, str], Collector | None] = {}
        self._specs = {(wds, p.obj.name): p for wds, plans in result.placements.items() for p in plans}

    def for_placements(self, wds: str, placements: list[str], problems: list[Problem]) -> list[Collector]:
        found: dict[str, Collector] = {}
        for name in placements:
            plan = self._specs.get((wds, name))
            if plan is None:
                continue
            wanted = plan.spec.get("statusCollectors") or []
            for cname in wanted if isinstance(wanted, list) else []:
                collector = self._get(wds, str(cname), plan.obj, problems)
                if collector is not None:
                    found.setdefault(collector.name, collector)
        return [found[n] for n in sorted(found)]

    def _get(self, wds: str, name: str, placement: Obj, problems: list[Problem]) -> Collector | None:
        obj = self._by_space.get(wds, {}).get(name)
        if obj is None:
            obj = next((objs[name] for _, objs in sorted(self._by_space.items()) if name in objs), None)
        if obj is None:
            problems.append(Problem(placement.origin, f"EdgePlacement {placement.name}: "
                                                      f"StatusCollector {name} not found", "warning"))
            return None
        key = (obj.space, name)
        if key not in self._compiled:
            collector, found = compile_collector(obj)
            problems.extend(Problem(p.origin, p.message, "warning") for p in found)
            self._compiled[key] = collector
        return self._compiled[key]


def _evaluate(collector: Collector, rows: list[tuple[Pair, dict[str, Any], dict[str, Any] | None, Any]],
              problems: list[Problem]) -> dict[str, Any]:
    bindings = [{"inventory": {"name": pair.wec}, "obj": sent,
                 "returned": {"status": _reported_status(sent, doc)}} for pair, sent, doc, _ in rows]
    out, found = collector.evaluate_with_problems(bindings)  # type: ignore[arg-type]
    problems.extend(Problem(p.origin, p.message, "warning") for p in found)
    return out


# --- STATUS.md ----------------------------------------------------------------------------------------

def _markdown(result: Any, names: dict[str, str], pairs: list[Pair], reports: Reports,
              broken_limit: int) -> bytes:
    counts = _counts(p.health for p in pairs)
    healthy = counts.get("Healthy", 0)
    others = ", ".join(f"{n} {h}" for h, n in counts.items() if h != "Healthy")
    objects = {(p.wds, p.rel) for p in pairs}
    lines = [
        "# Status", "",
        "Generated by `ksgitops status` from the reported state in the mailboxes' `reported/` folders; "
        "per object, see `spaces/<wds>/.ksgitops/status/`.", "",
        f"**{healthy}/{len(pairs)} healthy** ({len(objects)} objects on {len(result.wecs)} WECs"
        + (f"; {others}" if others else "") + ").", "",
        "## Placements", "",
        "| Placement | WECs | Objects | Healthy |",
        "|---|---:|---:|---:|",
    ]
    for wds in sorted(result.placements):
        for plan in sorted(result.placements[wds], key=lambda p: p.obj.name):
            mine = [p for p in pairs if p.wds == wds and plan.obj.name in p.placements]
            lines.append(_row(f"{wds}/{plan.obj.name}", str(len(plan.mailboxes)), str(len(plan.placed)),
                              _ratio(mine)))
    lines += ["", "## WECs", "",
              "| WEC | Mailbox | Last report | Healthy |",
              "|---|---|---|---:|"]
    by_mailbox: dict[str, list[Pair]] = {}
    for p in pairs:
        by_mailbox.setdefault(p.mailbox, []).append(p)
    for mb in sorted(result.wecs, key=lambda m: (names.get(m, m), m)):
        last = _last_report(reports.get(mb, {}))
        lines.append(_row(names.get(mb, mb), mb, last or "never", _ratio(by_mailbox.get(mb, []))))
    broken = sorted((p for p in pairs if p.health is not Health.HEALTHY),
                    key=lambda p: (-p.health.rank, p.wds, p.rel, p.wec, p.mailbox))
    lines += ["", "## Broken", ""]
    if not broken:
        lines.append("Nothing is broken.")
    else:
        lines += ["| Object | WEC | Health | Message |", "|---|---|---|---|"]
        for p in broken[:max(broken_limit, 0)]:
            lines.append(_row(f"{p.wds}: {p.ref}", p.wec, p.health.value, p.message))
        if len(broken) > broken_limit:
            lines += ["", f"... and {len(broken) - broken_limit} more (see the CombinedStatus files)."]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _ratio(pairs: list[Pair]) -> str:
    return f"{sum(1 for p in pairs if p.health is Health.HEALTHY)}/{len(pairs)}"


def _row(*cells: str) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;") or " "


_FRACTION = re.compile(r"(\.\d{6})\d+")


def _time_key(text: str) -> tuple[float, str]:
    try:
        moment = _dt.datetime.fromisoformat(_FRACTION.sub(r"\1", text.replace("z", "Z")).replace("Z", "+00:00"))
        return (moment.timestamp(), text)
    except ValueError:
        return (float("-inf"), text)


def _last_report(reports: Mapping[str, tuple[Origin, dict[str, Any]]]) -> str | None:
    times = [str(doc["reportedAt"]) for _, doc in reports.values() if doc.get("reportedAt")]
    return max(times, key=_time_key) if times else None


__all__ = ["summarize", "StatusOutput", "Pair", "strip_secret", "status_root", "wec_names", "STATUS_MD"]
