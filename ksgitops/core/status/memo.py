"""What one status run leaves for the next (summary.py): per mailbox its key, summary, problems
and rows (`Detail`), per object its context key, CombinedStatus file and rows. Plain data, pickled
by parts so that an unchanged mailbox or object costs a few bytes to load, not its rows."""
from __future__ import annotations

import pickle
from operator import attrgetter
from typing import Any, Callable

from msgspec import Struct, field

from ...model import Problem
from ..emit.problems import ParsedProblems
from .markdown import MailboxSummary
from .rows import Detail, Row

MEMO_FORMAT = 6  # bump when rows, summaries or CombinedStatus change shape (3: rows pickled as tuples; 4: Broken a
# Struct; 5: rows record a report that does not read, and whether a StatusCollector reads the object; 6: rows
# and objects record what their StatusCollectors' evaluations may cost (a mailbox's rows, for which WEC), objects
# which were skipped)


class MailboxMemo(Struct):
    key: str
    summary: MailboxSummary
    problems: list[Problem]
    detail: bytes | None  # a pickled Detail; None: kept in the memo's store (fetched when needed)


class ObjectMemo(Struct):
    context: str
    status: bytes  # the CombinedStatus file
    rows: bytes | None  # pickled {mailbox: Row}: every row of the object, kept in step with the
    # mailboxes'; None: kept in the memo's store
    costs: tuple[int, ...] = ()  # per StatusCollector, the sum of its rows' estimates (budget.py)
    skipped: frozenset[int] = frozenset()  # its StatusCollectors not evaluated: past the run's budget


class StatusMemo(Struct):
    """What one run leaves for the next. Large parts stay pickled so an unchanged mailbox or
    object costs a few bytes to load, not its rows; on disk they stay in a store and are fetched
    only for what changed (`fetch(name)`, names from `detail_name` and `rows_name`)."""

    format: int = MEMO_FORMAT
    mailboxes: dict[str, MailboxMemo] = field(default_factory=dict)
    objects: dict[tuple[str, str], ObjectMemo] = field(default_factory=dict)
    problems: dict[str, tuple[str, ParsedProblems]] = field(default_factory=dict)  # space -> (key, parsed)
    changed: bool = False
    fetch: Callable[[str], bytes | None] | None = None  # never compared

    def __eq__(self, other: object) -> bool:
        if type(other) is not StatusMemo:
            return NotImplemented
        return _compared_memo(self) == _compared_memo(other)

    def detail(self, mailbox: str, memo: MailboxMemo) -> Detail:
        return decode_detail(self.detail_bytes(mailbox, memo), detail_name(mailbox))

    def detail_bytes(self, mailbox: str, memo: MailboxMemo) -> bytes:
        """A mailbox's pickled `Detail` (fetched from the store when it is kept there)."""
        return memo.detail if memo.detail is not None else self._fetch(detail_name(mailbox))

    def rows(self, key: tuple[str, str], memo: ObjectMemo) -> dict[str, Row]:
        data = memo.rows if memo.rows is not None else self._fetch(rows_name(key))
        return decode_rows(data, rows_name(key))

    def _fetch(self, name: str) -> bytes:
        found = self.fetch(name) if self.fetch is not None else None
        if found is None:
            raise MemoLost(name)
        return found

    def forget(self) -> None:
        """Empty it (in place: the caller saves this object)."""
        self.mailboxes.clear()
        self.objects.clear()
        self.problems.clear()
        self.fetch, self.changed = None, True


_compared_memo = attrgetter(*(f for f in StatusMemo.__struct_fields__ if f != "fetch"))


class MemoLost(Exception):
    """A part of the memo its store no longer holds: summarize from scratch."""


def detail_name(mailbox: str) -> str:
    return f"d:{mailbox}"


def rows_name(key: tuple[str, str]) -> str:
    return f"r:{key[0]}:{key[1]}"


def encode(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def decode(data: bytes) -> Any:
    return pickle.loads(data)  # noqa: S301 - bytes this module pickled, in a memo of our own


def encode_detail(detail: Detail) -> bytes:
    return encode((detail.reports, _plain(detail.rows), detail.sync, detail.wec))


def decode_detail(data: bytes, name: str) -> Detail:
    parts = decoded(data, name)
    try:
        reports, rows, sync, wec = parts
    except (TypeError, ValueError) as e:  # as decoded: a damaged part is a part lost
        raise MemoLost(name) from e
    return Detail(reports, _rows(rows, name), sync, wec)


def encode_rows(rows: dict[str, Row]) -> bytes:
    return encode(_plain(rows))


def decode_rows(data: bytes, name: str) -> dict[str, Row]:
    return _rows(decoded(data, name), name)


def _plain(rows: dict[str, Row]) -> dict[str, tuple[Any, ...]]:
    """Rows as plain tuples: pickled without a call into Python per row (a NamedTuple's
    __getnewargs__), at under half the cost for a fleet's 166k rows."""
    return {key: tuple(row) for key, row in rows.items()}


def _rows(plain: Any, name: str) -> dict[str, Row]:
    try:
        return {key: Row._make(fields) for key, fields in plain.items()}
    except Exception as e:  # noqa: BLE001 - as decoded: a damaged part is a part lost
        raise MemoLost(name) from e


def decoded(data: bytes, name: str) -> Any:
    """A part of the memo; one that does not unpickle (a damaged store) is a part lost."""
    try:
        return decode(data)
    except Exception as e:  # noqa: BLE001 - whatever garbage raises, it only costs time
        raise MemoLost(name) from e
