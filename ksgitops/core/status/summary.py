"""The status step (docs/REFERENCE.md, "Generated files"): reported state in the mailboxes ->
CombinedStatus files + STATUS.md.

`summarize(result, source, memo, limit)` is pure over its inputs: a reconcile `Result` (which
placements put which objects on which WECs), a `StatusSource` (what each mailbox holds: the
objects and patches a WEC was sent, and its `reported/` files, by content key) and a `StatusMemo`
(what an earlier run computed; updated in place). Work is in proportion to what changed:

1. rows: per mailbox, one `Row` per placed object (health, message, report time, ...). A mailbox
   whose key (its source key, its WEC name and the placements reaching it) is unchanged keeps its
   rows; in a changed one, a row is recomputed only when its own inputs changed (the object and
   patch sent, the report, which placements place it);
2. CombinedStatus, per workload object (combined.py): recomputed when one of its rows or its
   context (placements, StatusCollectors, limit) changed;
3. STATUS.md (markdown.py) from per-mailbox summaries.

Besides reported state, status reads what reconcile and the agents wrote down: each space's
problems file (problems.py: reconcile errors and warnings, per object and WEC where known) and each
mailbox's sync report (syncreport.py: the revision a WEC applied, apply errors, drift), judged
against the mailbox's latest revision (sync.py). Per-object facts reach the CombinedStatus
files, per-WEC facts STATUS.md.

The memo is plain data: the CLI keeps it in `.git/ksgitops-state/`, the runtime in memory. Output is
deterministic and the same with or without a memo. Secret data never reaches the output (the
rows hold no object data; combined.py strips Secrets before collectors or singletons see them).
"""
from __future__ import annotations

from typing import Any, Mapping

from msgspec import Struct, field

from ...model import Problem
from ...names import rel_path
from .combined import Collectors, ObjectContext, combined_status
from ..serialize import dump_yaml, load_yaml
from ..emit.problems import ParsedProblems, entry, parse_problems, problems_root
from ..load.snapshot import GENERATED_DIR
from .markdown import MailboxSummary, markdown, total_counts
from .memo import MEMO_FORMAT, MemoLost as _MemoLost, ObjectMemo, StatusMemo, encode_rows
from .memory import MemorySource, with_reports
from .recompute import Changes, Spread, Todo, in_sequence, merge_changes, noted_changes, recompute
from .rows import Detail, Info, Row, Run
from .source import MailboxListing, StatusSource, digest as _digest
from .sync import state_counts
from ..tree import REUSE, FileTree, Generated, put
from ..place.what import ALONG
from ..place.where import wec_names

STATUS_DIR = "status"
STATUS_MD = "STATUS.md"


class StatusOutput(Struct):
    """What `ksgitops status` writes: `generated` (the status roots) and `markdown` (STATUS.md)."""

    generated: Generated
    markdown: bytes
    combined: dict[tuple[str, str], bytes]  # (wds, rel) -> CombinedStatus file
    counts: dict[str, int]
    problems: list[Problem]
    recomputed: int = 0  # CombinedStatus files computed this run (the rest came from the memo)
    reconcile: dict[str, ParsedProblems] = field(default_factory=dict)  # space ("": repo-wide) -> problems
    wecs: dict[str, MailboxSummary] = field(default_factory=dict)  # mailbox -> summary (health, sync)
    frozen: list[Any] = field(default_factory=list)  # core.isolation.FrozenUnit: what reconcile keeps frozen

    def status(self, wds: str, rel: str) -> dict[str, Any]:
        return load_yaml(self.combined[(wds, rel)])  # type: ignore[no-any-return]

    def facts(self) -> dict[str, Any]:
        """What STATUS.md shows beyond health, as JSON (`status -o json`)."""
        return {"reconcileProblems": [{"space": space, **e.as_json()} for space, parsed in sorted(self.reconcile.items())
                                      for e in parsed.entries],
                "spaces": {space: {"state": parsed.state, "errors": sum(e.is_error for e in parsed.entries),
                                   "warnings": sum(not e.is_error for e in parsed.entries)}
                           for space, parsed in sorted(self.reconcile.items()) if space},
                "frozen": [u.as_json() for u in self.frozen],
                "syncStates": state_counts(self.wecs.values()),
                "sync": {s.wec: {"mailbox": mb, **s.sync.as_json()} for mb, s in sorted(self.wecs.items())}}


def status_root(wds: str) -> str:
    return f"spaces/{wds}/{GENERATED_DIR}/{STATUS_DIR}"


def summarize(result: Any, source: StatusSource, memo: StatusMemo | None = None, limit: int = 20,
              broken_limit: int = 100, spread: Spread = in_sequence) -> StatusOutput:
    """CombinedStatus files and STATUS.md; `memo` (updated in place) makes it incremental; `spread`
    may run the changed mailboxes' units of work (recompute.py) in other processes."""
    if memo is None or memo.format != MEMO_FORMAT:
        memo = StatusMemo()
    try:
        return _summarize(result, source, memo, limit, broken_limit, spread)
    except _MemoLost:
        memo.forget()
        return _summarize(result, source, memo, limit, broken_limit, spread)


def _summarize(result: Any, source: StatusSource, memo: StatusMemo, limit: int, broken_limit: int,
               spread: Spread) -> StatusOutput:
    names = wec_names(result.wecs)
    reconcile = _space_problems(result, source, memo, names)
    contexts = _contexts(result, reconcile)
    run = Run(source)
    todo: list[Todo] = []
    for mb in sorted(result.wecs):
        reaching = contexts.reaching(mb)
        key = _digest(names[mb], str(broken_limit), repr([p.digest for p in reaching]), source.mailbox_key(mb))
        old = memo.mailboxes.get(mb)
        if old is None or old.key != key:
            todo.append(Todo(mb, key, names[mb], memo.detail_bytes(mb, old) if old is not None else None))
    held = memo.objects
    changes: Changes = {}
    for done in spread(todo, lambda unit: recompute(unit, contexts.infos(unit.mailbox), run, held,
                                                    broken_limit)):
        merge_changes(changes, done.mailbox, done.changes)
        memo.mailboxes[done.mailbox] = done.memo
        memo.changed = True
    fresh = {unit.mailbox for unit in todo}  # mailboxes whose rows this run recomputed
    for mb in [m for m in memo.mailboxes if m not in result.wecs]:
        merge_changes(changes, mb, noted_changes(memo.detail(mb, memo.mailboxes.pop(mb)), None, memo.objects))
        memo.changed = True
    output = _combine(result, contexts, memo, changes, names, run, limit, fresh, spread)
    mailboxes = {mb: memo.mailboxes[mb] for mb in sorted(result.wecs)}
    summaries = {mb: m.summary for mb, m in mailboxes.items()}
    output.counts = total_counts(summaries)
    output.frozen = result.frozen.units(names)
    output.markdown = markdown(result, names, summaries, contexts.placed(), broken_limit, reconcile, output.frozen)
    found = [p for m in mailboxes.values() for p in m.problems] + [p for r in reconcile.values() for p in r.problems]
    output.problems = sorted(set(output.problems + found))
    output.reconcile, output.wecs = reconcile, summaries
    return output


def _space_problems(result: Any, source: StatusSource, memo: StatusMemo, names: dict[str, str]
                    ) -> dict[str, ParsedProblems]:
    """Every owned space's problems file (parsed once per content, kept in the memo), and under ""
    this run's own repo-wide findings (no space holds them)."""
    found: dict[str, ParsedProblems] = {}
    skipped = set(result.config.skip_spaces)
    for space in sorted(s for s in result.loaded.spaces if s not in skipped):
        key = source.problems_file(space)
        if not key:
            memo.problems.pop(space, None)
            continue
        cached = memo.problems.get(space)
        if cached is None or cached[0] != key:
            cached = memo.problems[space] = (key, parse_problems(problems_root(space), source.blob(key)))
            memo.changed = True
        found[space] = cached[1]
    for space in [s for s in memo.problems if s not in found]:
        del memo.problems[space]
    repo_wide = sorted({entry(p, names) for p in result.problems if not p.space})
    if repo_wide:
        found[""] = ParsedProblems("", repo_wide, [])
    return found


# --- what the placements say: per placement, per object -----------------------------------------------

class _PlanView(Struct):
    wds: str
    name: str
    singleton: bool
    mailboxes: Mapping[str, str]
    objects: dict[str, str]  # rel -> object text ("ConfigMap ns/name")
    digest: str
    along: frozenset[str] = frozenset()  # rels of CRDs that came along: never a singleton wish
    frozen: bool = False  # a frozen WDS's placement, from its record
    whole: frozenset[str] = frozenset()  # rels of objects a StatusCollector of theirs reads `obj` of

    def wants_singleton(self, rel: str) -> bool:
        return self.singleton and rel not in self.along


class _Contexts:
    def __init__(self, plans: list[_PlanView], objects: dict[tuple[str, str], ObjectContext],
                 collectors: Collectors, problems: list[Problem]) -> None:
        self.plans = plans
        self.objects = objects
        self.collectors = collectors
        self.problems = problems  # what compiling the collectors found so far
        self._infos: dict[tuple[int, ...], dict[str, Info]] = {}

    def reaching(self, mailbox: str) -> list[_PlanView]:
        return [p for p in self.plans if mailbox in p.mailboxes]

    def infos(self, mailbox: str) -> dict[str, Info]:
        """`_infos` of the placements reaching `mailbox`, once per set of placements (a fleet's
        mailboxes share a few); not to be changed by the caller."""
        reaching = tuple(i for i, p in enumerate(self.plans) if mailbox in p.mailboxes)
        found = self._infos.get(reaching)
        if found is None:
            found = self._infos[reaching] = _infos([self.plans[i] for i in reaching])
        return found

    def placed(self) -> int:
        """Placed workload objects: those with a CombinedStatus, and those frozen WDSes keep."""
        return len(self.objects) + len({(p.wds, rel) for p in self.plans if p.frozen for rel in p.objects})


def _frozen_views(result: Any) -> list[_PlanView]:
    """The placements of frozen WDSes, from their records: their objects stay in the mailboxes (and
    the WECs report them), while their CombinedStatus files stay as they are."""
    views = []
    for placement, mailboxes in result.frozen.placements():
        rels = {o.rel: o.text for o in placement.objects}
        along = frozenset(o.rel for o in placement.objects if o.along)
        digest = _digest(placement.space, placement.name, "frozen", str(placement.singleton), repr(sorted(rels.items())),
                         repr(sorted(along)), repr(sorted(mailboxes)))
        views.append(_PlanView(placement.space, placement.name, placement.singleton, mailboxes, rels, digest, along, True))
    return views


def _contexts(result: Any, reconcile: Mapping[str, ParsedProblems], collectors: Collectors | None = None) -> _Contexts:
    """`whole`: the objects whose rows are judged from the object sent, patch and all, because a
    StatusCollector that some placement of theirs names reads `obj` (its CombinedStatus evaluates it
    over every WEC the object is on, whichever placement put it there)."""
    plans: list[_PlanView] = _frozen_views(result) if result.frozen else []
    collectors = collectors if collectors is not None else Collectors(result)
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
    for wds, plan, rels, along in made:
        singleton = plan.spec.get("wantSingletonReportedState") is True
        read = frozenset(rel for rel in rels if (wds, rel) in whole)
        digest = _digest(wds, plan.obj.name, str(singleton), repr(sorted(rels.items())), repr(sorted(along)),
                         repr(sorted(read)))
        plans.append(_PlanView(wds, plan.obj.name, singleton, plan.mailboxes, rels, digest, frozenset(along),
                               whole=read))
    _attach_errors(objects, reconcile)
    return _Contexts(plans, objects, collectors, problems)


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


def _infos(reaching: list[_PlanView]) -> dict[str, Info]:
    """rel -> (wds, placements, singleton wish, text, whole) for one mailbox; two WDSes placing the
    same identity is a conflict (reconcile reports it): no row."""
    found: dict[str, tuple[str, list[str], bool, str, bool]] = {}
    conflicts: set[str] = set()
    for plan in reaching:
        for rel, text in plan.objects.items():
            item = found.get(rel)
            if item is None:
                found[rel] = (plan.wds, [plan.name], plan.wants_singleton(rel), text, rel in plan.whole)
            elif item[0] != plan.wds:
                conflicts.add(rel)
            else:
                item[1].append(plan.name)
                found[rel] = (item[0], item[1], item[2] or plan.wants_singleton(rel), text, item[4])
    return {rel: (w, tuple(sorted(ps)), s, t, r) for rel, (w, ps, s, t, r) in found.items() if rel not in conflicts}


# --- CombinedStatus files --------------------------------------------------------------------------

def _rows_kept(memo: StatusMemo, contexts: _Contexts, context: ObjectContext, details: dict[str, Detail],
               fresh: set[str]) -> dict[str, Row]:
    """The rows of an object the memo holds none for (a new object, or one dropped while its WDS
    was frozen: its mailboxes may not have changed since) in the mailboxes it reaches that this run
    did not recompute (`noted_changes` gave those of the others), from their details (`details`:
    those decoded this run)."""
    found: dict[str, Row] = {}
    if memo.mailboxes.keys() <= fresh:  # every mailbox's rows were recomputed (a first run): none kept
        return found
    for plan in contexts.plans:
        if plan.wds != context.wds or plan.name not in context.placements:
            continue
        for mb in plan.mailboxes:
            kept = memo.mailboxes.get(mb)
            if mb in fresh or mb in found or kept is None:
                continue
            if mb not in details:
                details[mb] = memo.detail(mb, kept)
            row = details[mb].rows.get(context.rel)
            if row is not None and row.wds == context.wds:
                found[mb] = row
    return found


def _combine(result: Any, contexts: _Contexts, memo: StatusMemo, changes: Changes, names: dict[str, str],
             run: Run, limit: int, fresh: set[str], spread: Spread) -> StatusOutput:
    problems: list[Problem] = list(contexts.problems)
    details: dict[str, Detail] = {}  # mailboxes' rows decoded for objects the memo held none for
    combined: dict[tuple[str, str], bytes] = {}
    collectors = contexts.collectors
    todo: list[tuple[tuple[str, str], str, dict[str, Row]]] = []  # (object, context key, its rows)
    for key in sorted(contexts.objects):
        context = contexts.objects[key]
        collectors.attach(context, problems)
        context_key = context.key(limit)
        cached = memo.objects.get(key)
        changed = changes.get(key)
        combined[key] = cached.status if cached is not None else b""  # in order; recomputed below
        if cached is not None and cached.context == context_key and not changed:
            continue
        rows = memo.rows(key, cached) if cached is not None else _rows_kept(memo, contexts, context, details, fresh)
        for mb, row in (changed or {}).items():
            if row is None:
                rows.pop(mb, None)
            else:
                rows[mb] = row
        todo.append((key, context_key, rows))

    def combine(unit: tuple[tuple[str, str], str, dict[str, Row]]) -> tuple[bytes, bytes, list[Problem]]:
        found: list[Problem] = []
        status = combined_status(contexts.objects[unit[0]], sorted(unit[2].items()), names, run, limit, found)
        return dump_yaml(status), encode_rows(unit[2]), found
    for (key, context_key, _), (status, encoded, found) in zip(todo, spread(todo, combine)):
        combined[key] = status
        memo.objects[key] = ObjectMemo(context_key, status, encoded)
        memo.changed = True
        problems += found
    recomputed = len(todo)
    for key in [k for k in memo.objects if k not in contexts.objects]:
        del memo.objects[key]
        memo.changed = True
    trees: dict[str, FileTree] = {}
    for (wds, rel), data in combined.items():
        put(trees.setdefault(wds, {}), f"{rel}.yaml", data)
    generated: Generated = {}
    skipped = set(result.config.skip_spaces)
    for wds in sorted(result.loaded.spaces):
        if wds not in skipped:
            generated[status_root(wds)] = REUSE if wds in result.frozen.broken else trees.get(wds)
    return StatusOutput(generated, b"", combined, {}, problems, recomputed)


__all__ = ["summarize", "StatusOutput", "StatusMemo", "StatusSource", "MailboxListing", "MemorySource",
           "with_reports", "status_root", "wec_names", "STATUS_MD", "Row"]
