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

from typing import Any

from msgspec import Struct, field

from ...model import Problem
from . import budget as _budget
from .budget import allocate, skipped_warning, summed
from .combined import ObjectContext, combined_status
from ..serialize import dump_yaml, load_yaml
from ..emit.problems import ParsedProblems, entry, parse_problems, problems_root
from ..load.snapshot import GENERATED_DIR
from .markdown import MailboxSummary, markdown, total_counts
from .memo import MEMO_FORMAT, MemoLost as _MemoLost, ObjectMemo, StatusMemo, encode_rows
from .memory import MemorySource, with_reports
from .recompute import Changes, Spread, Todo, in_sequence, merge_changes, noted_changes, recompute
from .plans import Contexts as _Contexts, contexts as _contexts
from .rows import Detail, Row, Run
from .source import MailboxListing, StatusSource, digest as _digest
from .sync import state_counts
from ..tree import REUSE, FileTree, Generated, put
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
              broken_limit: int = 100, spread: Spread = in_sequence, budget: int | None = None) -> StatusOutput:
    """CombinedStatus files and STATUS.md; `memo` (updated in place) makes it incremental; `spread`
    may run the changed mailboxes' units of work (recompute.py) in other processes; `budget`: of the
    run's StatusCollector evaluations (budget.py; None: budget.BUDGET)."""
    if memo is None or memo.format != MEMO_FORMAT:
        memo = StatusMemo()
    spend = _budget.BUDGET if budget is None else budget
    try:
        return _summarize(result, source, memo, limit, broken_limit, spread, spend)
    except _MemoLost:
        memo.forget()
        return _summarize(result, source, memo, limit, broken_limit, spread, spend)


def _summarize(result: Any, source: StatusSource, memo: StatusMemo, limit: int, broken_limit: int,
               spread: Spread, budget: int) -> StatusOutput:
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
    output = _combine(result, contexts, memo, changes, names, run, limit, fresh, spread, budget)
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
             run: Run, limit: int, fresh: set[str], spread: Spread, budget: int) -> StatusOutput:
    """The CombinedStatus files: of the objects whose context, rows or collectors skipped for the
    run's budget (budget.py, decided over every object, with the estimates the memo keeps for
    those that did not change) changed, made anew."""
    problems: list[Problem] = list(contexts.problems)
    details: dict[str, Detail] = {}  # mailboxes' rows decoded for objects the memo held none for
    combined: dict[tuple[str, str], bytes] = {}
    pending: dict[tuple[str, str], tuple[str, dict[str, Row] | None]] = {}  # object -> (context key, its rows)
    costs: dict[tuple[str, str], tuple[int, ...]] = {}
    for key in sorted(contexts.objects):
        context = contexts.objects[key]
        context_key = context.key(limit)
        cached = memo.objects.get(key)
        changed = changes.get(key)
        combined[key] = cached.status if cached is not None else b""  # in order; recomputed below
        if cached is not None and cached.context == context_key and not changed:
            costs[key] = cached.costs
            pending[key] = (context_key, None)
            continue
        rows = memo.rows(key, cached) if cached is not None else _rows_kept(memo, contexts, context, details, fresh)
        for mb, row in (changed or {}).items():
            if row is None:
                rows.pop(mb, None)
            else:
                rows[mb] = row
        costs[key] = summed(tuple(context.fingerprints), (rows[mb] for mb in sorted(rows)))
        pending[key] = (context_key, rows)
    skipped = allocate({k: c for k, c in costs.items() if c}, budget)
    problems += skipped_warning(skipped, contexts.objects, budget)
    todo: list[tuple[tuple[str, str], str, dict[str, Row], frozenset[int]]] = []
    for key, (context_key, found) in pending.items():
        over = skipped.get(key, frozenset())
        if found is None:
            cached = memo.objects[key]
            if cached.skipped == over:
                continue
            found = memo.rows(key, cached)
        todo.append((key, context_key, found, over))

    def combine(unit: tuple[tuple[str, str], str, dict[str, Row], frozenset[int]]) -> tuple[bytes, bytes, list[Problem]]:
        found: list[Problem] = []
        status = combined_status(contexts.objects[unit[0]], sorted(unit[2].items()), names, run, limit, found, unit[3])
        return dump_yaml(status), encode_rows(unit[2]), found
    for (key, context_key, _, over), (status, encoded, found) in zip(todo, spread(todo, combine)):
        combined[key] = status
        memo.objects[key] = ObjectMemo(context_key, status, encoded, costs[key], over)
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
    left_out = set(result.config.skip_spaces)
    for wds in sorted(result.loaded.spaces):
        if wds not in left_out:
            generated[status_root(wds)] = REUSE if wds in result.frozen.broken else trees.get(wds)
    return StatusOutput(generated, b"", combined, {}, problems, recomputed)


__all__ = ["summarize", "StatusOutput", "StatusMemo", "StatusSource", "MailboxListing", "MemorySource",
           "with_reports", "status_root", "wec_names", "STATUS_MD", "Row"]
