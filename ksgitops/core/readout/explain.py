"""`ksgitops explain`: why an object is (or is not) in a WEC's mailbox, from a pipeline Result."""
from __future__ import annotations

from typing import Any

from ...kinds import is_control
from ...model import Obj
from ...names import printable
from ..emit.mailbox import FROZEN_CLAUSE, Entry, MailboxPlan, PlacementPlan, Via
from ..emit.parameters import object_location
from ..pipeline import Result
from ..load.selectors import selector_mismatch
from .suggest import did_you_mean
from ..place.edgeplacement import SOURCE, clause_label
from ..place.what import ALONG, along_line, explain_object, namespace_labels
from ..place.where import Wec, wec_names

OBJECT_FORMAT = "Kind[.group]/[namespace/]name"


def object_matches(obj: Obj, spec: str) -> bool:
    """OBJECT is `Kind[.group]/name` or `Kind[.group]/namespace/name` (kind case-insensitive)."""
    parts = spec.split("/")
    if len(parts) not in (2, 3):
        return False
    kind, _, group = parts[0].partition(".")
    if kind.lower() != obj.kind.lower() or (group and group != obj.group):
        return False
    if len(parts) == 3:
        return obj.namespace == parts[1] and obj.name == parts[2]
    return obj.name == parts[1]


def explain_wec(result: Result, mailbox: str) -> dict[str, Any]:
    plan = result.mailboxes[mailbox]
    wec, names = plan.wec, wec_names(result.wecs)
    return {
        "wec": wec.name, "inventorySpace": wec.space, "mailbox": mailbox,
        "locations": [loc.name for loc in wec.locations],
        "placements": [_placement_line(p, mailbox) for p in plan.placements],
        "objects": [_entry_info(rel, plan) for rel in plan.entries],
        "problems": [str(p.named(names)) for p in plan.problems],
    }


def _placement_line(p: PlacementPlan, mailbox: str) -> dict[str, Any]:
    """`location`: the first Location (by name) through which the placement reaches the WEC, the
    one its objects take their parameters from; `locations` every one, when there are several."""
    line: dict[str, Any] = {"space": p.obj.space, "name": p.obj.name, "location": p.mailboxes[mailbox]}
    through = sorted({d.location_name for d in p.dests if d.mailbox == mailbox})
    if len(through) > 1:
        line["locations"] = through
    line["source"] = str(p.obj.origin)
    return line


def _via_text(via: Via, specs: dict[tuple[str, str], dict[str, Any]]) -> str:
    if via.clause == FROZEN_CLAUSE:
        return f"{via.wds}/{via.placement} (frozen: placed at the space's last good state)"
    if via.clause == ALONG:
        return f"{via.wds}/{via.placement} (came along: the CustomResourceDefinition of placed custom resources)"
    clauses = specs.get((via.wds, via.placement), {}).get("downsync")
    clause = clauses[via.clause] if isinstance(clauses, list) and 0 <= via.clause < len(clauses) else None
    if isinstance(clause, dict) and isinstance(clause.get(SOURCE), str):  # as the placement spells it
        return f"{via.wds}/{via.placement} {clause_label(clause, via.clause)}"
    return f"{via.wds}/{via.placement} downsync[{via.clause}]"


def _verdict_lines(p: PlacementPlan, obj: Obj, result: Result, ns_labels: Any) -> list[str]:
    lines = explain_object(p.spec, obj, result.kinds, ns_labels)
    if any(placed.obj is obj and placed.clause == ALONG for placed in p.placed):
        lines.append(along_line(obj))
    return lines


def _entry_info(rel: str, plan: MailboxPlan) -> dict[str, Any]:
    entry = plan.entries[rel]
    base = entry.base
    info: dict[str, Any] = {"object": str(base.ref), "path": f"objects/{rel}.yaml"}
    if base.obj is None and not entry.via:
        info["implied"] = "namespace of placed objects"
    else:
        if base.obj is not None:
            info["source"] = str(base.obj.origin)
        specs = {p.key: p.spec for p in plan.placements}
        info["placedBy"] = [_via_text(v, specs) for v in entry.via]
        info["wantSingletonReportedState"] = entry.wants_singleton
    if base.customizer:
        info["customizer"] = base.customizer
    location = _parameter_location(entry, plan)
    if location is not None:
        info["parameterLocation"] = location
    if entry.params:
        info["parameters"] = dict(entry.params)
    if entry.patch is not None:
        info["patch"] = f"patches/{rel}.json"
    if entry.kept:
        info["kept"] = ("previous copy kept because of an error" if base.obj is not None
                        else "kept as the mailbox holds it: its space is frozen (it has errors)")
    return info


def _parameter_location(entry: Entry, plan: MailboxPlan) -> str | None:
    """The Location whose labels and annotations customize this object here (none for an object
    that is not customized, or one a frozen space keeps as the mailbox holds it)."""
    if not entry.base.customizable:
        return None
    location = object_location(plan.wec, plan.placements, ((v.wds, v.placement) for v in entry.via))
    return None if location is None else location.name


def explain_object_on(result: Result, mailbox: str, spec: str) -> dict[str, Any]:
    """Every candidate object matching OBJECT, with each placement's verdict for this WEC: does it
    reach the WEC (its locationSelectors against the WEC's Locations), does a clause select the object."""
    plan, names = result.mailboxes[mailbox], wec_names(result.wecs)
    candidates = [(wds, o) for wds, objs in result.loaded.spaces.items() for o in objs
                  if not is_control(o) and object_matches(o, spec)]
    reports = []
    for wds, obj in candidates:
        workload = [o for o in result.loaded.spaces[wds] if not is_control(o)]
        ns_labels = namespace_labels(workload)
        verdicts = [_verdict(p, obj, plan.wec, mailbox, result, ns_labels) for p in result.placements.get(wds, [])]
        entry = next((e for e in plan.entries.values() if e.base.obj is obj), None)
        report = {"object": str(obj.ref), "space": wds, "source": str(obj.origin),
                  "placed": entry is not None, "placements": verdicts,
                  "problems": [str(p.named(names)) for p in plan.problems if p.origin == obj.origin]}
        if wds in result.frozen.broken:
            report["why"] = (f"space {wds} has errors of its own, so it is frozen: what it placed at its last good "
                             "state stays as it is, its current objects are not used")
        elif not verdicts:
            report["why"] = f"space {wds} has no EdgePlacement, so nothing in it is placed anywhere"
        implied = None if entry is not None else next(
            (e for e in plan.entries.values() if e.base.obj is None and not e.via and e.base.ref == obj.ref), None)
        if implied is not None:
            report["implied"] = ("the mailbox holds a Namespace of this name all the same, implied by the placed "
                                 "objects in it: a plain one, without this object's labels and annotations")
        shown = entry or implied
        if shown is not None:
            report["mailboxEntry"] = _entry_info(shown.rel, plan)
        reports.append(report)
    return {"wec": plan.wec.name, "mailbox": mailbox, "query": spec, "matches": reports}


def _verdict(p: PlacementPlan, obj: Obj, wec: Wec, mailbox: str, result: Result,
             ns_labels: Any) -> dict[str, Any]:
    reaches = mailbox in p.mailboxes
    selects = any(placed.obj.ref == obj.ref for placed in p.placed)
    if reaches and selects:
        verdict = "places it on this WEC"
    elif selects:
        verdict = "selects it, but does not reach this WEC (see reach)"
    elif reaches:
        verdict = "reaches this WEC, but does not select the object (see clauses)"
    else:
        verdict = "does not reach this WEC (see reach), nor select the object (see clauses)"
    return {"placement": p.obj.name, "source": str(p.obj.origin), "verdict": verdict, "reachesWec": reaches,
            "location": p.mailboxes.get(mailbox), "reach": reach_lines(p.spec, wec),
            "clauses": _verdict_lines(p, obj, result, ns_labels)}


def reach_lines(spec: dict[str, Any], wec: Wec) -> list[str]:
    """Why a placement does (not) reach a WEC: each locationSelector against each Location that
    selects the WEC's SyncTarget (the where stage's rule, one line per pair)."""
    selectors = spec.get("locationSelectors")
    if not isinstance(selectors, list) or not selectors:
        return ["spec.locationSelectors is empty, so the placement reaches no WEC"]
    if not wec.locations:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(wec.sync_target.labels.items())) or "none"
        return [f"no Location in space {wec.space} selects SyncTarget {wec.name} (its labels: {labels}; a "
                "Location selects SyncTargets with spec.instanceSelector), so no placement reaches this WEC"]
    lines = []
    for loc in wec.locations:
        for i, sel in enumerate(selectors):
            why = selector_mismatch(sel, loc.labels)
            where = f"Location {loc.space}/{loc.name}"
            lines.append(f"spec.locationSelectors[{i}] " + (f"selects {where}" if why is None
                                                           else f"does not select {where}: {why}"))
    return lines


def no_match_message(result: Result, spec: str) -> str:
    """What to say when OBJECT matches no workload object: its format, or the closest names."""
    if len(spec.split("/")) not in (2, 3):
        return f"{spec!r} is not an object: write {OBJECT_FORMAT}, e.g. ConfigMap/default/settings"
    known = [f"{o.kind}/{o.namespace + '/' if o.namespace else ''}{o.name}"
             for objs in result.loaded.spaces.values() for o in objs if not is_control(o)]
    return f"no workload object matches {spec!r}{did_you_mean(spec, known)}; OBJECT is {OBJECT_FORMAT}"


def as_text(data: dict[str, Any], indent: int = 0) -> str:
    """A readable, stable rendering of explain's JSON-like answer."""
    pad = "  " * indent
    lines = []
    for key, value in data.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(as_text(value, indent + 1))
        elif isinstance(value, list):
            lines.append(f"{pad}{key}:" + ("" if value else " (none)"))
            for item in value:
                if isinstance(item, dict):
                    lines.append(f"{pad}  -")
                    lines.append(as_text(item, indent + 2))
                else:
                    lines.append(f"{pad}  - {printable(str(item))}")
        else:
            lines.append(f"{pad}{key}: {printable(_word(value))}")
    return "\n".join(line for line in lines if line)


def _word(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
