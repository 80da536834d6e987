"""The status step (DESIGN §6): reported state in the mailboxes -> CombinedStatus files + STATUS.md.

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
3. STATUS.md (status_md.py) from per-mailbox summaries.

The memo is plain data: the CLI keeps it in `.git/ksgitops/`, the runtime in memory. Output is
deterministic and the same with or without a memo. Secret data never reaches the output (the
rows hold no object data; combined.py strips Secrets before collectors or singletons see them).
"""
from __future__ import annotations

import hashlib
import pickle
from sys import intern
from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple, Protocol

import jsonpatch
import orjson

from ..model import Origin, Problem
from .base import rel_path
from .combined import Collectors, ObjectContext, combined_status, strip_secret
from .health import assess, reads_spec
from .reported import load_report, parse_report
from .serialize import dump_yaml, load_yaml
from .snapshot import GENERATED_DIR
from .status_md import MailboxSummary, markdown, time_key, total_counts
from .tree import FileTree, Generated, put, walk
from .what import ALONG

STATUS_DIR = "status"
STATUS_MD = "STATUS.md"
MEMO_FORMAT = 1  # bump when rows, summaries or CombinedStatus change shape


@dataclass
class MailboxListing:
    """What a mailbox holds, by content key: objects/<rel>.yaml, patches/<rel>.json, reported/<name>."""

    objects: dict[str, str] = field(default_factory=dict)  # rel -> key
    patches: dict[str, str] = field(default_factory=dict)  # rel -> key
    reports: dict[str, tuple[str, str]] = field(default_factory=dict)  # name below reported/ -> (path, key)


class StatusSource(Protocol):
    def mailbox_key(self, mailbox: str) -> str:
        """Changes whenever anything `listing` or `blob` would return for the mailbox changes."""

    def listing(self, mailbox: str) -> MailboxListing: ...

    def blob(self, key: str) -> bytes: ...


class Row(NamedTuple):
    """One placed object on one WEC, judged. No object data: health, times, content keys."""

    wds: str
    health: str
    message: str
    reported_at: str | None
    generation: int | None
    placements: tuple[str, ...]
    singleton: bool
    data: str
    patch: str
    report: str


Info = tuple[str, tuple[str, ...], bool, str]  # (wds, placements, wants singleton, object text)


@dataclass
class Detail:
    """Everything known about one mailbox's rows; kept pickled in the memo, decoded when it changes."""

    reports: dict[str, tuple[str, str | None, str | None]]  # name -> (key, rel, reportedAt); rel None: invalid
    rows: dict[str, Row]  # a row also records what it was computed from (`_same_inputs`)


@dataclass
class MailboxMemo:
    key: str
    summary: MailboxSummary
    problems: list[Problem]
    detail: bytes  # a pickled Detail


@dataclass
class ObjectMemo:
    context: str
    status: bytes  # the CombinedStatus file
    rows: bytes  # pickled {mailbox: Row}: every row of the object, kept in step with the mailboxes'


@dataclass
class StatusMemo:
    """What one run leaves for the next. Large parts stay pickled so an unchanged mailbox or
    object costs a few bytes to load, not its rows."""

    format: int = MEMO_FORMAT
    mailboxes: dict[str, MailboxMemo] = field(default_factory=dict)
    objects: dict[tuple[str, str], ObjectMemo] = field(default_factory=dict)
    changed: bool = False


@dataclass
class StatusOutput:
    """What `ksgitops status` writes: `generated` (the status roots) and `markdown` (STATUS.md)."""

    generated: Generated
    markdown: bytes
    combined: dict[tuple[str, str], bytes]  # (wds, rel) -> CombinedStatus file
    counts: dict[str, int]
    problems: list[Problem]
    recomputed: int = 0  # CombinedStatus files computed this run (the rest came from the memo)

    def status(self, wds: str, rel: str) -> dict[str, Any]:
        return load_yaml(self.combined[(wds, rel)])  # type: ignore[no-any-return]


def status_root(wds: str) -> str:
    return f"spaces/{wds}/{GENERATED_DIR}/{STATUS_DIR}"


def summarize(result: Any, source: StatusSource, memo: StatusMemo | None = None, limit: int = 20,
              broken_limit: int = 100) -> StatusOutput:
    """CombinedStatus files and STATUS.md; `memo` (updated in place) makes it incremental."""
    if memo is None or memo.format != MEMO_FORMAT:
        memo = StatusMemo()
    names = wec_names(result.wecs)
    contexts = _contexts(result)
    run = _Run(source)
    changes: dict[tuple[str, str], dict[str, Row | None]] = {}
    for mb in sorted(result.wecs):
        reaching = contexts.reaching(mb)
        key = _digest(names[mb], str(broken_limit), repr([p.digest for p in reaching]), source.mailbox_key(mb))
        old = memo.mailboxes.get(mb)
        if old is not None and old.key == key:
            continue
        before = _decode(old.detail) if old is not None else None
        detail, problems = _rows_of_mailbox(mb, before, reaching, run)
        summary = MailboxSummary.of(mb, names[mb], detail.rows, _infos(reaching), _last_report(detail),
                                    broken_limit)
        _note_changes(changes, mb, before, detail)
        memo.mailboxes[mb] = MailboxMemo(key, summary, problems, _encode(detail))
        memo.changed = True
    for mb in [m for m in memo.mailboxes if m not in result.wecs]:
        _note_changes(changes, mb, _decode(memo.mailboxes.pop(mb).detail), None)
        memo.changed = True
    output = _combine(result, contexts, memo, changes, names, run, limit)
    mailboxes = {mb: memo.mailboxes[mb] for mb in sorted(result.wecs)}
    summaries = {mb: m.summary for mb, m in mailboxes.items()}
    output.counts = total_counts(summaries)
    output.markdown = markdown(result, names, summaries, len(contexts.objects), broken_limit)
    output.problems = sorted(set(output.problems + [p for m in mailboxes.values() for p in m.problems]))
    return output


def _encode(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _decode(data: bytes) -> Any:
    return pickle.loads(data)  # noqa: S301 - bytes this module pickled, in a memo of our own


def wec_names(wecs: Mapping[str, Any]) -> dict[str, str]:
    """mailbox -> the SyncTarget name, or `<space>/<name>` when the name is not unique."""
    counts: dict[str, int] = {}
    for wec in wecs.values():
        counts[wec.name] = counts.get(wec.name, 0) + 1
    return {mb: wec.name if counts[wec.name] == 1 else f"{wec.space}/{wec.name}" for mb, wec in wecs.items()}


def _digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=20).hexdigest()


# --- what the placements say: per placement, per object -----------------------------------------------

@dataclass
class _PlanView:
    wds: str
    name: str
    singleton: bool
    mailboxes: Mapping[str, str]
    objects: dict[str, str]  # rel -> object text ("ConfigMap ns/name")
    digest: str
    along: frozenset[str] = frozenset()  # rels of CRDs that came along: never a singleton wish

    def wants_singleton(self, rel: str) -> bool:
        return self.singleton and rel not in self.along


class _Contexts:
    def __init__(self, plans: list[_PlanView], objects: dict[tuple[str, str], ObjectContext]) -> None:
        self.plans = plans
        self.objects = objects

    def reaching(self, mailbox: str) -> list[_PlanView]:
        return [p for p in self.plans if mailbox in p.mailboxes]


def _contexts(result: Any) -> _Contexts:
    plans: list[_PlanView] = []
    objects: dict[tuple[str, str], ObjectContext] = {}
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
            singleton = plan.spec.get("wantSingletonReportedState") is True
            digest = _digest(wds, plan.obj.name, str(singleton), repr(sorted(rels.items())), repr(sorted(along)))
            plans.append(_PlanView(wds, plan.obj.name, singleton, plan.mailboxes, rels, digest, frozenset(along)))
    return _Contexts(plans, objects)


def _infos(reaching: list[_PlanView]) -> dict[str, Info]:
    """rel -> (wds, placements, singleton wish, text) for one mailbox; two WDSes placing the same
    identity is a conflict (reconcile reports it): no row."""
    found: dict[str, tuple[str, list[str], bool, str]] = {}
    conflicts: set[str] = set()
    for plan in reaching:
        for rel, text in plan.objects.items():
            item = found.get(rel)
            if item is None:
                found[rel] = (plan.wds, [plan.name], plan.wants_singleton(rel), text)
            elif item[0] != plan.wds:
                conflicts.add(rel)
            else:
                item[1].append(plan.name)
                found[rel] = (item[0], item[1], item[2] or plan.wants_singleton(rel), text)
    return {rel: (w, tuple(sorted(ps)), s, t) for rel, (w, ps, s, t) in found.items() if rel not in conflicts}


# --- rows of one mailbox ---------------------------------------------------------------------------

class _Run:
    """Per-run memos of parsed content (by content key): sent objects and report documents."""

    def __init__(self, source: StatusSource) -> None:
        self.source = source
        self._sent: dict[tuple[str, str], dict[str, Any]] = {}
        self._docs: dict[str, dict[str, Any]] = {}
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    def sent(self, data: str, patch: str) -> dict[str, Any]:
        """The object as the WEC receives it (base + patch), a Secret's data removed."""
        found = self._sent.get((data, patch))
        if found is None:
            if patch:
                body = jsonpatch.apply_patch(self.sent(data, ""), orjson.loads(self.source.blob(patch)))
            else:
                body = load_yaml(self.source.blob(data))
            found = self._sent[(data, patch)] = strip_secret(body)
        return found

    def shared(self, placements: tuple[str, ...]) -> tuple[str, ...]:
        """One tuple object per distinct value (rows repeat them thousands of times)."""
        return self._tuples.setdefault(placements, placements)

    def judged(self, data: str, patch: str) -> dict[str, Any]:
        """What `assess` needs of the sent object: the base alone when its rule ignores the spec."""
        base = self.sent(data, "")
        return self.sent(data, patch) if patch and reads_spec(base) else base

    def report(self, name: str, path: str, key: str) -> tuple[str, Origin, dict[str, Any]] | list[Problem]:
        """A report file checked (parse_report); valid documents are kept for `doc`."""
        found = parse_report(name, path, self.source.blob(key))
        if isinstance(found, tuple):
            self._docs[key] = found[2]
        return found

    def doc(self, key: str) -> dict[str, Any]:
        """The document of a report checked valid (in this run or an earlier one)."""
        found = self._docs.get(key)
        if found is None:
            found = self._docs[key] = load_report(self.source.blob(key))
        return found


def _rows_of_mailbox(mb: str, old: Detail | None, reaching: list[_PlanView], run: _Run
                     ) -> tuple[Detail, list[Problem]]:
    listing = run.source.listing(mb)
    reports, problems, by_rel = _reports(listing, old, run)
    infos = _infos(reaching)
    rows: dict[str, Row] = {}
    for rel in sorted(set(listing.objects) & set(infos)):
        report = by_rel.get(rel)
        now = (listing.objects[rel], listing.patches.get(rel, ""), report, infos[rel])
        before = old.rows.get(rel) if old is not None else None
        rows[rel] = before if before is not None and _same_inputs(before, now) else _row(now, run)
    # a valid report that a row records is not kept twice (see _known_report)
    kept = {n: r for n, r in reports.items() if not (r[1] in rows and rows[r[1]].report == r[0])}
    return Detail(kept, rows), problems


def _known_report(detail: Detail, name: str) -> tuple[str, str | None, str | None] | None:
    """What an earlier run found in report `name`: kept in `reports`, or recorded by its row."""
    found = detail.reports.get(name)
    if found is not None:
        return found
    rel = name.rsplit(".", 1)[0]
    row = detail.rows.get(rel)
    return (row.report, rel, row.reported_at) if row is not None and row.report else None


def _same_inputs(row: Row, inputs: tuple[Any, ...]) -> bool:
    """The row was computed from these inputs (the object text follows from the object sent)."""
    data, patch, report, (wds, placements, singleton, _text) = inputs
    return (row.data, row.patch, row.report, row.wds, row.placements, row.singleton) == \
        (data, patch, report[1] if report else "", wds, placements, singleton)


def _last_report(detail: Detail) -> str | None:
    times = [at for _, rel, at in detail.reports.values() if rel is not None and at]
    times += [row.reported_at for row in detail.rows.values() if row.reported_at]
    return max(times, key=time_key) if times else None


def _reports(listing: MailboxListing, old: Detail | None, run: _Run
             ) -> tuple[dict[str, tuple[str, str | None, str | None]], list[Problem], dict[str, tuple[str, str]]]:
    """Each report file checked once per content (memo by key); rel -> (name, key) of the valid ones."""
    reports: dict[str, tuple[str, str | None, str | None]] = {}
    problems: list[Problem] = []
    by_rel: dict[str, tuple[str, str]] = {}
    for name in sorted(listing.reports):
        path, key = listing.reports[name]
        before = _known_report(old, name) if old is not None else None
        if before is not None and before[0] == key and before[1] is not None:
            rel, at = before[1], before[2]
        else:
            found = run.report(name, path, key)
            if isinstance(found, list):
                problems.extend(found)
                reports[name] = (key, None, None)
                continue
            rel, at = found[0], str(found[2]["reportedAt"])
        if rel in by_rel:  # e.g. name.yaml and name.json: keep the first (sorted), report the other
            problems.append(Problem(Origin(path), f"reported state: a second report for {rel}, skipped", "warning"))
            reports[name] = (key, None, None)
            continue
        reports[name] = (key, rel, at)
        by_rel[rel] = (name, key)
    return reports, problems, by_rel


def _row(inputs: tuple[Any, ...], run: _Run) -> Row:
    data, patch, report, (wds, placements, singleton, _text) = inputs
    doc = run.doc(report[1]) if report is not None else None
    verdict = assess(run.judged(data, patch), doc, None)
    identity = doc.get("object", {}) if doc else {}
    generation = identity.get("generation") if isinstance(identity.get("generation"), int) else None
    at = intern(str(doc["reportedAt"])) if doc else None
    # interned: rows of one object (or one WEC) then share their strings, in memory and in the memo
    return Row(intern(wds), verdict.health.value, intern(verdict.message), at, generation, run.shared(placements),
               singleton, intern(data), intern(patch), report[1] if report else "")


def _note_changes(changes: dict[tuple[str, str], dict[str, Row | None]], mb: str, old: Detail | None,
                  new: Detail | None) -> None:
    """Record, per object (wds, rel), the rows of mailbox `mb` that appeared, went or changed."""
    before = old.rows if old is not None else {}
    after = new.rows if new is not None else {}
    for rel in before.keys() | after.keys():
        a, b = before.get(rel), after.get(rel)
        if a == b:
            continue
        if a is not None and (b is None or b.wds != a.wds):
            changes.setdefault((a.wds, rel), {})[mb] = None
        if b is not None:
            changes.setdefault((b.wds, rel), {})[mb] = b


# --- CombinedStatus files --------------------------------------------------------------------------

def _combine(result: Any, contexts: _Contexts, memo: StatusMemo, changes: dict[tuple[str, str], dict[str, Row | None]],
             names: dict[str, str], run: _Run, limit: int) -> StatusOutput:
    problems: list[Problem] = []
    combined: dict[tuple[str, str], bytes] = {}
    collectors = Collectors(result)
    recomputed = 0
    for key in sorted(contexts.objects):
        context = contexts.objects[key]
        collectors.attach(context, problems)
        context_key = context.key(limit)
        cached = memo.objects.get(key)
        changed = changes.get(key)
        if cached is not None and cached.context == context_key and not changed:
            combined[key] = cached.status
            continue
        rows: dict[str, Row] = _decode(cached.rows) if cached is not None else {}
        for mb, row in (changed or {}).items():
            if row is None:
                rows.pop(mb, None)
            else:
                rows[mb] = row
        status = combined_status(context, sorted(rows.items()), names, run, limit, problems)
        combined[key] = dump_yaml(status)
        memo.objects[key] = ObjectMemo(context_key, combined[key], _encode(rows))
        memo.changed = True
        recomputed += 1
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
            generated[status_root(wds)] = trees.get(wds)
    return StatusOutput(generated, b"", combined, {}, problems, recomputed)


# --- a StatusSource over files in memory (tests, and a reconcile Result not yet written) -----------

class MemorySource:
    """Mailboxes as FileTrees (e.g. a Result's `generated`); keys are content digests."""

    def __init__(self, mailboxes: Mapping[str, Any]) -> None:
        self._blobs: dict[str, bytes] = {}
        self._listings: dict[str, MailboxListing] = {}
        for mb, tree in mailboxes.items():
            listing = MailboxListing()
            for part, target in (("objects", listing.objects), ("patches", listing.patches)):
                sub = tree.get(part) if isinstance(tree, dict) else None
                for path, data in walk(sub) if isinstance(sub, dict) else ():
                    if isinstance(data, bytes):
                        target[path.rsplit(".", 1)[0]] = self._key(data)
            sub = tree.get("reported") if isinstance(tree, dict) else None
            for path, data in walk(sub) if isinstance(sub, dict) else ():
                if isinstance(data, bytes):
                    listing.reports[path] = (f"spaces/{mb}/reported/{path}", self._key(data))
            self._listings[mb] = listing

    def _key(self, data: bytes) -> str:
        key = hashlib.blake2b(data, digest_size=20).hexdigest()
        self._blobs[key] = data
        return key

    def mailbox_key(self, mailbox: str) -> str:
        listing = self._listings.get(mailbox, MailboxListing())
        return _digest(repr(sorted(listing.objects.items())), repr(sorted(listing.patches.items())),
                       repr(sorted(listing.reports.items())))

    def listing(self, mailbox: str) -> MailboxListing:
        return self._listings.get(mailbox, MailboxListing())

    def blob(self, key: str) -> bytes:
        return self._blobs[key]


def with_reports(generated: Generated, reports: Mapping[str, Mapping[str, bytes]]) -> dict[str, Any]:
    """Mailbox trees of `generated` with `reports` ({mailbox: {name below reported/: bytes}}) added."""
    out: dict[str, Any] = {}
    for root, tree in generated.items():
        mb = root[len("spaces/"):]
        if root.startswith("spaces/") and "/" not in mb and isinstance(tree, dict):
            merged = {k: v for k, v in tree.items() if k != "reported"}
            for name, data in reports.get(mb, {}).items():
                put(merged.setdefault("reported", {}), name, data)  # type: ignore[arg-type]
            out[mb] = merged
    return out


__all__ = ["summarize", "StatusOutput", "StatusMemo", "StatusSource", "MailboxListing", "MemorySource",
           "with_reports", "status_root", "wec_names", "STATUS_MD", "Row"]
