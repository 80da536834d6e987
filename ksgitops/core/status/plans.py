"""What the placements say, for the status step (summary.py): per placement the mailboxes it
reaches and the objects it places there, per workload object its context (placements,
StatusCollectors, reconcile errors), and per mailbox what each placed object's row is judged with
(`Info`, rows.py)."""
from __future__ import annotations

from typing import Any, Mapping

from msgspec import Struct, field

from ...model import Problem
from ...names import rel_path
from ..emit.problems import ParsedProblems
from ..place.what import ALONG
from .budget import NONE, Collected
from .combined import Collectors, ObjectContext
from .rows import Info
from .source import digest as _digest


class PlanView(Struct):
    wds: str
    name: str
    singleton: bool
    mailboxes: Mapping[str, str]
    objects: dict[str, str]  # rel -> object text ("ConfigMap ns/name")
    digest: str
    along: frozenset[str] = frozenset()  # rels of CRDs that came along: never a singleton wish
    frozen: bool = False  # a frozen WDS's placement, from its record
    whole: frozenset[str] = frozenset()  # rels of objects a StatusCollector of theirs reads `obj` of
    collected: Mapping[str, Collected] = field(default_factory=dict)  # rel -> the object's StatusCollectors

    def wants_singleton(self, rel: str) -> bool:
        return self.singleton and rel not in self.along


class Contexts:
    def __init__(self, plans: list[PlanView], objects: dict[tuple[str, str], ObjectContext],
                 collectors: Collectors, problems: list[Problem]) -> None:
        self.plans = plans
        self.objects = objects
        self.collectors = collectors
        self.problems = problems  # what compiling the collectors found
        self._infos: dict[tuple[int, ...], dict[str, Info]] = {}

    def reaching(self, mailbox: str) -> list[PlanView]:
        return [p for p in self.plans if mailbox in p.mailboxes]

    def infos(self, mailbox: str) -> dict[str, Info]:
        """`infos` of the placements reaching `mailbox`, once per set of placements (a fleet's
        mailboxes share a few); not to be changed by the caller."""
        reaching = tuple(i for i, p in enumerate(self.plans) if mailbox in p.mailboxes)
        found = self._infos.get(reaching)
        if found is None:
            found = self._infos[reaching] = infos([self.plans[i] for i in reaching])
        return found

    def placed(self) -> int:
        """Placed workload objects: those with a CombinedStatus, and those frozen WDSes keep."""
        return len(self.objects) + len({(p.wds, rel) for p in self.plans if p.frozen for rel in p.objects})


def frozen_views(result: Any, collectors: Collectors) -> list[PlanView]:
    """The placements of frozen WDSes, from their records: their objects stay in the mailboxes (and
    the WECs report them), while their CombinedStatus files stay as they are. Their rows are judged
    from the objects sent, patches and all, when a StatusCollector their records name reads `obj`,
    or may (one that no space defines now, or that does not compile)."""
    views = []
    for placement, mailboxes in result.frozen.placements():
        rels = {o.rel: o.text for o in placement.objects}
        along = frozenset(o.rel for o in placement.objects if o.along)
        whole = frozenset(rels) if collectors.may_read_obj(placement.space, placement.collectors) else frozenset()
        digest = _digest(placement.space, placement.name, "frozen", str(placement.singleton), repr(sorted(rels.items())),
                         repr(sorted(along)), repr(sorted(mailboxes)), str(bool(whole)))
        views.append(PlanView(placement.space, placement.name, placement.singleton, mailboxes, rels, digest, along, True,
                              whole))
    return views


def contexts(result: Any, reconcile: Mapping[str, ParsedProblems], collectors: Collectors | None = None) -> Contexts:
    """`whole`: the objects whose rows are judged from the object sent, patch and all, because a
    StatusCollector that some placement of theirs names reads `obj` (its CombinedStatus evaluates it
    over every WEC the object is on, whichever placement put it there)."""
    collectors = collectors if collectors is not None else Collectors(result)
    plans: list[PlanView] = frozen_views(result, collectors) if result.frozen else []
    problems: list[Problem] = []
    objects: dict[tuple[str, str], ObjectContext] = {}
    made: list[tuple[str, Any, dict[str, str], set[str]]] = []
    whole: set[tuple[str, str]] = set()
    for wds in sorted(result.placements):
        for plan in result.placements[wds]:
            rels: dict[str, str] = {}
            along: set[str] = set()
            for placed in plan.placed:
                obj = placed.obj
                info = result.kinds.lookup(obj.group, obj.kind)
                if info is None:
                    continue
                rel = rel_path(obj.group, info.resource, obj.namespace, obj.name)
                rels[rel] = str(obj.ref)
                if placed.clause == ALONG:
                    along.add(rel)
                context = objects.setdefault((wds, rel), ObjectContext(wds, rel, obj))
                context.placements.add(plan.obj.name)
            made.append((wds, plan, rels, along))
            if collectors.reads_obj(wds, plan.obj.name, problems):
                whole.update((wds, rel) for rel in rels)
    collected: dict[tuple[str, str], Collected] = {}
    for key in sorted(objects):
        context = objects[key]
        collectors.attach(context, problems)
        if context.collectors:
            collected[key] = Collected(tuple(context.fingerprints), tuple(context.collectors))
    for wds, plan, rels, along in made:
        singleton = plan.spec.get("wantSingletonReportedState") is True
        read = frozenset(rel for rel in rels if (wds, rel) in whole)
        theirs = {rel: collected[(wds, rel)] for rel in rels if (wds, rel) in collected}
        digest = _digest(wds, plan.obj.name, str(singleton), repr(sorted(rels.items())), repr(sorted(along)),
                         repr(sorted(read)), repr(sorted((rel, c.fingerprints) for rel, c in theirs.items())))
        plans.append(PlanView(wds, plan.obj.name, singleton, plan.mailboxes, rels, digest, frozenset(along),
                              whole=read, collected=theirs))
    _attach_errors(objects, reconcile)
    return Contexts(plans, objects, collectors, problems)


def _attach_errors(objects: dict[tuple[str, str], ObjectContext], reconcile: Mapping[str, ParsedProblems]) -> None:
    """Each placed object's reconcile errors (its WDS's problems file names the object)."""
    if not any(e.is_error and e.object for parsed in reconcile.values() for e in parsed.entries):
        return
    by_text = {(wds, str(c.obj.ref)): c for (wds, _rel), c in objects.items()}
    for space, parsed in reconcile.items():
        for found in parsed.entries:
            context = by_text.get((space, found.object)) if found.is_error and found.object else None
            if context is not None:
                context.problems.append(found)


def infos(reaching: list[PlanView]) -> dict[str, Info]:
    """rel -> (wds, placements, singleton wish, text, whole, collectors) for one mailbox; two WDSes
    placing the same identity is a conflict (reconcile reports it): no row."""
    found: dict[str, tuple[str, list[str], bool, str, bool, Collected]] = {}
    conflicts: set[str] = set()
    for plan in reaching:
        for rel, text in plan.objects.items():
            item = found.get(rel)
            if item is None:
                found[rel] = (plan.wds, [plan.name], plan.wants_singleton(rel), text, rel in plan.whole,
                              plan.collected.get(rel, NONE))
            elif item[0] != plan.wds:
                conflicts.add(rel)
            else:
                item[1].append(plan.name)
                found[rel] = (item[0], item[1], item[2] or plan.wants_singleton(rel), text, item[4] or rel in plan.whole,
                              item[5])
    return {rel: (w, tuple(sorted(ps)), s, t, r, c) for rel, (w, ps, s, t, r, c) in found.items() if rel not in conflicts}


__all__ = ["PlanView", "Contexts", "frozen_views", "contexts", "infos"]
