"""One changed mailbox, summarized again (summary.py's first step): its rows (rows.py), its
summary and memo entry, and per object the rows that appeared, went or changed.

A mailbox's unit of work reads only its own listing and reports and what the parent run holds
(the placements reaching it, its earlier rows as bytes), so the units are independent of each
other: a caller may spread them over processes (`Spread`). A unit's result is plain, picklable
data, and the caller takes the results in the units' order, so the output is the same however the
work was spread.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from msgspec import Struct

from .markdown import MailboxSummary
from .memo import MailboxMemo, decode_detail, detail_name, encode_detail
from .rows import Detail, Info, Row, Run, last_report, rows_of_mailbox
from .sync import SyncSummary

T = TypeVar("T")
R = TypeVar("R")
Spread = Callable[[Sequence[T], Callable[[T], R]], Iterable[R]]  # items -> results, in the items' order
Changes = dict[tuple[str, str], dict[str, Row | None]]  # (wds, rel) -> mailbox -> its new row (None: gone)
Noted = list[tuple[tuple[str, str], Row | None]]  # one mailbox's changes: (wds, rel) -> its new row


def in_sequence(items: Sequence[T], work: Callable[[T], R]) -> Iterator[R]:
    """The plain `Spread`: every unit in this process, one after the other."""
    return (work(item) for item in items)


class Todo(Struct, frozen=True):
    """A mailbox to summarize again: its memo key, its WEC's name and its earlier rows (a pickled
    `Detail`, None: none)."""

    mailbox: str
    key: str
    wec: str
    before: bytes | None


class Recomputed(Struct, frozen=True):
    mailbox: str
    memo: MailboxMemo
    changes: Noted

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its rows as plain tuples: a forked child sends a fleet's rows to its
        parent, and a NamedTuple costs a call into Python per row each way (twice the time)."""
        return _recomputed, (self.mailbox, self.memo, [(key, tuple(row) if row is not None else None)
                                                       for key, row in self.changes])


def _recomputed(mailbox: str, memo: MailboxMemo, changes: list[tuple[tuple[str, str], tuple[Any, ...] | None]]
                ) -> Recomputed:
    make = tuple.__new__
    return Recomputed(mailbox, memo, [(key, make(Row, row) if row is not None else None) for key, row in changes])


def recompute(todo: Todo, infos: dict[str, Info], run: Run, held: Mapping[tuple[str, str], Any],
              broken_limit: int) -> Recomputed:
    """`infos`: what the placements reaching the mailbox place there; `held`: the objects the memo
    holds rows for (see `noted_changes`)."""
    mb = todo.mailbox
    before = decode_detail(todo.before, detail_name(mb)) if todo.before is not None else None
    detail, problems, report = rows_of_mailbox(mb, before, infos, run, todo.wec)
    sync = SyncSummary.of(report, run.source.revision(mb), broken_limit)
    summary = MailboxSummary.of(mb, todo.wec, detail.rows, infos, last_report(detail), broken_limit, sync)
    return Recomputed(mb, MailboxMemo(todo.key, summary, problems, encode_detail(detail)),
                      noted_changes(before, detail, held))


def noted_changes(old: Detail | None, new: Detail | None, held: Mapping[tuple[str, str], Any]) -> Noted:
    """Per object (wds, rel), a mailbox's rows that appeared, went (None) or changed, and every row
    of an object the memo holds no rows for (`held`: the objects it holds)."""
    before = old.rows if old is not None else {}
    after = new.rows if new is not None else {}
    noted: Noted = []
    for rel in before.keys() | after.keys():
        a, b = before.get(rel), after.get(rel)
        if a == b and (b is None or (b.wds, rel) in held):
            continue
        if a is not None and (b is None or b.wds != a.wds):
            noted.append(((a.wds, rel), None))
        if b is not None:
            noted.append(((b.wds, rel), b))
    return noted


def merge_changes(into: Changes, mb: str, noted: Noted) -> None:
    for key, row in noted:
        into.setdefault(key, {})[mb] = row


__all__ = ["Spread", "Changes", "in_sequence", "Todo", "Recomputed", "recompute", "noted_changes", "merge_changes"]
