"""The status step's rows: per mailbox, one `Row` per placed object, judged from what the WEC was
sent, what it reported, and what its agent's sync report says about the object.

A row records the content keys it was computed from, so a later run recomputes only the rows whose
inputs moved (`rows_of_mailbox` with the mailbox's earlier `Detail`). Report files are checked once
per content (reported.py); the sync report (`reported/sync.yaml`) is not an object's report. A
report that does not read judges nothing, but its object's row says so (Unknown, where and why),
not that the WEC never reported it (Missing).
"""
from __future__ import annotations

from sys import intern
from typing import Any, NamedTuple

from msgspec import Struct

from ...model import Origin, Problem, is_secret
from ..customize.patchapply import patched, tree_shaped
from ..emit import readback
from .budget import Collected, estimate
from .celcost import Weights
from .combined import strip_secret
from .health import Health, assess, reads_spec
from .reported import Checked, ReportReader, load_report, report_rel, unread_message
from ..serialize import plain_copy
from .markdown import time_key
from .source import MailboxListing, StatusSource
from .sync import object_facts
from .syncreport import SYNC_FILE, Drift, SyncReport, parse_sync_report


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
    apply_error: str = ""  # the agent's last apply of this object failed (its sync report)
    drift: Drift | None = None  # the agent found it changed on the WEC (and corrected it)
    unread: str = ""  # the key of the WEC's report on it that does not read (`report` is then "")
    whole: bool = False  # judged from the object sent, patch applied: a StatusCollector reads `obj`
    collectors: tuple[str, ...] = ()  # the fingerprints of the object's StatusCollectors
    cost: tuple[int, ...] = ()  # per collector, what evaluating it over this row may cost (budget.py)


Info = tuple[str, tuple[str, ...], bool, str, bool, Collected]
# (wds, placements, wants singleton, object text, whole, the object's StatusCollectors)


class Detail(Struct):
    """Everything known about one mailbox's rows; kept pickled in the memo, decoded when it changes."""

    reports: dict[str, tuple[str, str | None, str | None]]  # name -> (key, rel, reportedAt); rel None: invalid
    rows: dict[str, Row]  # a row also records what it was computed from (`_same_inputs`)
    sync: tuple[str, SyncReport | list[Problem]] | None = None  # the sync report's key, read once per content
    wec: str = ""  # the WEC's name the rows were judged for (a row's cost reads it)


_OWN_SHAPE, _NO_REPORT = -1, -2  # Run.judgement's shapes besides ReportReader's
_MOST_VERDICTS = 65536
# a row judged without the object sent: its base copy or patch does not read (rows_of_mailbox says where)
UNREADABLE = "its base copy or patch in the mailbox does not read: `ksgitops reconcile` writes them anew"
_OBJECTS, _PATCHES = "objects", "patches"  # Run reads blobs: which file of the mailbox did not read


class Run:
    """Per-run memos of parsed content (by content key): sent objects and report documents."""

    def __init__(self, source: StatusSource) -> None:
        self.source = source
        self._sent: dict[tuple[str, str], dict[str, Any]] = {}
        self._unread: dict[tuple[str, str], readback.Unreadable] = {}
        self._docs: dict[str, dict[str, Any]] = {}
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._judged: dict[tuple[str, str, bool], dict[str, Any]] = {}
        self._shaped: dict[str, bool] = {}  # object sent -> tree_shaped (patched may apply its patches)
        self._reader = ReportReader()
        self._shapes: dict[str, int] = {}  # report key -> its shape (ReportReader), for those in _docs
        self._verdicts: dict[tuple[str, str, int, bool], tuple[str, str, int | None]] = {}
        self._costs: dict[tuple[tuple[str, ...], str, str, int, int], tuple[int, ...]] = {}
        self._weights = Weights()

    def sent(self, data: str, patch: str) -> dict[str, Any]:
        """The object as the WEC receives it (base + patch), a Secret's data removed. Raises
        readback.Unreadable (its path: `objects` or `patches`) when a file does not read."""
        found = self._sent.get((data, patch))
        if found is None:
            unread = self._unread.get((data, patch))
            if unread is not None:
                raise unread
            try:
                found = self._sent[(data, patch)] = strip_secret(self._read(data, patch))
            except readback.Unreadable as e:
                self._unread[(data, patch)] = e
                raise
        return found

    def _read(self, data: str, patch: str) -> dict[str, Any]:
        if not patch:
            return readback.read_object(_OBJECTS, self.source.blob(data))
        base = self.sent(data, "")
        if is_secret(base):  # the patch may change the data sent() leaves out
            base = readback.read_object(_OBJECTS, self.source.blob(data))
        text = self.source.blob(patch)
        ops = readback.read_patch(_PATCHES, text)
        body = patched(base, ops) if self._tree_shaped(data, base) else None
        if body is None:  # jsonpatch's own copy is copy.deepcopy
            body = readback.patched(_PATCHES, plain_copy(base), ops, text)
        return body

    def unreadable(self, mailbox: str, rel: str, row: Row) -> list[Problem]:
        """Where and why the object sent in `row` does not read (none when it reads)."""
        try:
            self.sent(row.data, row.patch)
        except readback.Unreadable as e:
            path = f"spaces/{mailbox}/objects/{rel}.yaml" if e.path == _OBJECTS else \
                f"spaces/{mailbox}/patches/{rel}.json"
            return [e.problem(path, "warning")]
        return []

    def _tree_shaped(self, data: str, base: dict[str, Any]) -> bool:
        found = self._shaped.get(data)
        if found is None:
            found = self._shaped[data] = tree_shaped(base)
        return found

    def shared(self, placements: tuple[str, ...]) -> tuple[str, ...]:
        """One tuple object per distinct value (rows repeat them thousands of times)."""
        return self._tuples.setdefault(placements, placements)

    def judged(self, data: str, patch: str, whole: bool = False) -> dict[str, Any]:
        """What `assess` needs of the sent object: the base alone when its rule ignores the spec
        and `whole` (the object sent must read, patch and all) is not asked."""
        found = self._judged.get((data, patch, whole))
        if found is None:
            base = self.sent(data, "")
            found = self.sent(data, patch) if patch and (whole or reads_spec(base)) else base
            self._judged[(data, patch, whole)] = found
        return found

    def report(self, name: str, path: str, key: str) -> Checked | list[Problem]:
        """A report file checked (parse_report); valid documents are kept for `doc`."""
        found = self._reader.read(name, path, self.source.blob(key))
        if isinstance(found, Checked):
            self._docs[key] = found.doc
            self._shapes[key] = found.shape
        return found

    def forget_documents(self) -> None:
        """Drop the report documents kept so far (`doc` reads one again when asked)."""
        self._docs.clear()
        self._shapes.clear()
        self._weights = Weights()  # it holds what it weighed

    def cost(self, collected: Collected, data: str, patch: str, report: str, wec: str) -> tuple[int, ...]:
        """Per collector of `collected`, what evaluating it over the row of the object sent (`data`,
        `patch`) and its report (a key; "": none) on WEC `wec` may cost (budget.py); once per report
        shape, as `judgement`, and length of the WEC's name in tens (its weight)."""
        if not collected.collectors:
            return ()
        shape = self._shapes.get(report, _OWN_SHAPE) if report else _NO_REPORT
        memo_key = (collected.fingerprints, data, patch, shape, len(wec) // 10)
        known = self._costs.get(memo_key) if shape != _OWN_SHAPE else None
        if known is not None:
            return known
        reads = {v for c in collected.collectors for v in c.variables}
        obj: dict[str, Any] | None = None
        status: Any = {}
        try:
            if "obj" in reads:
                obj = self.sent(data, patch)
            if report and "returned" in reads and not is_secret(self.sent(data, "")):
                status = self.doc(report).get("status")
        except readback.Unreadable:
            pass  # its expressions reading `obj` are not evaluated (combined.py), nor its status shown
        binding = {"inventory": {"name": wec}, "obj": obj, "returned": {"status": status if isinstance(status, dict) else {}}}
        found = tuple(estimate(c, binding, self._weights) for c in collected.collectors)
        if shape != _OWN_SHAPE:
            if len(self._costs) >= _MOST_VERDICTS:
                self._costs.clear()
            self._costs[memo_key] = found
        return found

    def judgement(self, data: str, patch: str, report: str, whole: bool = False) -> tuple[str, str, int | None]:
        """(health, message, reported generation) of the object sent (`data`, `patch`) by its
        report (a key; "": none), once per report shape: a verdict reads the report's object
        and status, which its shape fixes (the time is not read). `whole`: see `judged`."""
        shape = self._shapes.get(report, _OWN_SHAPE) if report else _NO_REPORT
        memo_key = (data, patch, shape, whole)
        if shape != _OWN_SHAPE:
            known = self._verdicts.get(memo_key)
            if known is not None:
                return known
        doc = self.doc(report) if report else None
        try:
            verdict = assess(self.judged(data, patch, whole), doc, None)
        except readback.Unreadable:
            found: tuple[str, str, int | None] = (Health.UNKNOWN.value, UNREADABLE, None)
        else:
            identity = doc.get("object", {}) if doc else {}
            generation = identity.get("generation") if isinstance(identity.get("generation"), int) else None
            found = (verdict.health.value, intern(verdict.message), generation)
        if shape != _OWN_SHAPE:
            if len(self._verdicts) >= _MOST_VERDICTS:
                self._verdicts.clear()
            self._verdicts[memo_key] = found
        return found

    def doc(self, key: str) -> dict[str, Any]:
        """The document of a report checked valid (in this run or an earlier one)."""
        found = self._docs.get(key)
        if found is None:
            found = self._docs[key] = load_report(self.source.blob(key))
        return found


def rows_of_mailbox(mb: str, old: Detail | None, infos: dict[str, Info], run: Run, wec: str = ""
                     ) -> tuple[Detail, list[Problem], SyncReport | None]:
    listing = run.source.listing(mb)
    sync = _sync_report(listing, old, run)
    parsed = sync[1] if sync is not None else None
    report = parsed if isinstance(parsed, SyncReport) else None
    problems = list(parsed) if isinstance(parsed, list) else []
    reports, found, by_rel, unread = _reports(listing, old, run)
    problems += found
    errors, drift = object_facts(report)
    rows: dict[str, Row] = {}
    objects, patches = listing.objects, listing.patches
    before_rows = old.rows if old is not None and old.wec == wec else {}
    for rel in sorted(objects.keys() & infos.keys()):
        now = (objects[rel], patches.get(rel, ""), by_rel.get(rel), infos[rel], errors.get(rel, ""), drift.get(rel),
               unread.get(rel))
        before = before_rows.get(rel)
        rows[rel] = before if before is not None and _same_inputs(before, now) else _row(now, run, wec)
    for rel in [rel for rel, row in rows.items() if row.message == UNREADABLE]:
        problems += run.unreadable(mb, rel, rows[rel])
    run.forget_documents()  # streaming: a mailbox's reports are not held once its rows are judged
    # a valid report that a row records is not kept twice (see _known_report)
    kept = {n: r for n, r in reports.items() if not (r[1] in rows and rows[r[1]].report == r[0])}
    return Detail(kept, rows, sync, wec), problems, report


def _sync_report(listing: MailboxListing, old: Detail | None, run: Run
                 ) -> tuple[str, SyncReport | list[Problem]] | None:
    """The sync report's key and what it says (or why it is ignored); an unchanged one is not read
    again (its schema check would cost a run that changed one object report the schema library)."""
    found = listing.reports.get(SYNC_FILE)
    if found is None:
        return None
    if old is not None and old.sync is not None and old.sync[0] == found[1]:
        return old.sync
    return found[1], parse_sync_report(found[0], run.source.blob(found[1]))


def _known_report(detail: Detail, name: str) -> tuple[str, str | None, str | None] | None:
    """What an earlier run found in report `name`: kept in `reports`, or recorded by its row."""
    found = detail.reports.get(name)
    if found is not None:
        return found
    rel = name.rsplit(".", 1)[0]
    row = detail.rows.get(rel)
    return (row.report, rel, row.reported_at) if row is not None and row.report else None


def _same_inputs(row: Row, inputs: tuple[Any, ...]) -> bool:
    """The row was computed from these inputs (the object text follows from the object sent); a
    row judged by a report that does not read is judged again (its message names the file)."""
    data, patch, report, (wds, placements, singleton, _text, whole, collected), error, drift, unread = inputs
    return unread is None and not row.unread and \
        (row.data, row.patch, row.report, row.wds, row.placements, row.singleton, row.apply_error, row.drift,
         row.whole, row.collectors) == (data, patch, report[1] if report else "", wds, placements, singleton, error,
                                        drift, whole, collected.fingerprints)


def last_report(detail: Detail) -> str | None:
    times = [at for _, rel, at in detail.reports.values() if rel is not None and at]
    times += [row.reported_at for row in detail.rows.values() if row.reported_at]
    return max(times, key=time_key) if times else None


def _reports(listing: MailboxListing, old: Detail | None, run: Run
             ) -> tuple[dict[str, tuple[str, str | None, str | None]], list[Problem],
                        dict[str, tuple[str, str, str | None]], dict[str, tuple[str, str]]]:
    """Each report file checked once per content (memo by key); rel -> (name, key, reportedAt) of
    the valid ones, and rel -> (key, row message) of an object whose only reports do not read (the
    first by name; a report whose path names no object is a warning only)."""
    reports: dict[str, tuple[str, str | None, str | None]] = {}
    problems: list[Problem] = []
    by_rel: dict[str, tuple[str, str, str | None]] = {}
    unread: dict[str, tuple[str, str]] = {}
    for name in sorted(n for n in listing.reports if n != SYNC_FILE):
        path, key = listing.reports[name]
        before = _known_report(old, name) if old is not None else None
        if before is not None and before[0] == key and before[1] is not None:
            rel, at = before[1], before[2]
        else:
            found = run.report(name, path, key)
            if isinstance(found, list):
                problems.extend(found)
                reports[name] = (key, None, None)
                named = report_rel(name)
                if named and named not in unread:
                    unread[named] = (key, unread_message(name, found))
                continue
            rel, at = found.rel, str(found.doc["reportedAt"])
        if rel in by_rel:  # e.g. name.yaml and name.json: keep the first (sorted), report the other
            problems.append(Problem(Origin(path), f"reported state: a second report for {rel}, skipped", "warning"))
            reports[name] = (key, None, None)
            continue
        reports[name] = (key, rel, at)
        by_rel[rel] = (name, key, at)
    return reports, problems, by_rel, {rel: bad for rel, bad in unread.items() if rel not in by_rel}


def _row(inputs: tuple[Any, ...], run: Run, wec: str) -> Row:
    data, patch, report, (wds, placements, singleton, _text, whole, collected), error, drift, unread = inputs
    key = report[1] if report is not None else ""
    health, message, generation = run.judgement(data, patch, key, whole)
    cost = run.cost(collected, data, patch, key if unread is None else "", wec)
    if unread is not None and message != UNREADABLE:  # the WEC reported, but nothing can be judged by it
        health, message = Health.UNKNOWN.value, unread[1]
    at = intern(report[2]) if report is not None and report[2] is not None else None  # a valid report's time
    # interned: rows of one object (or one WEC) then share their strings, in memory and in the memo;
    # made as the tuple it is (a NamedTuple's own constructor is a call into Python per row)
    return _make_row(Row, (intern(wds), health, message, at, generation, run.shared(placements), singleton,
                           intern(data), intern(patch), report[1] if report else "", error, drift,
                           unread[0] if unread is not None else "", whole, run.shared(collected.fingerprints), cost))


_make_row = tuple.__new__


__all__ = ["Row", "Info", "Detail", "Run", "rows_of_mailbox", "last_report"]
