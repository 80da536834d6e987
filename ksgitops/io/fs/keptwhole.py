"""What the work tree's record (statcache.py) vouches for of a mailbox kept whole while its WEC or a
workload space is frozen, so that reconcile reads it only when it may hold a file that does not
read (core/pipeline.py, `vouched`).

A root record's `input` is the input digest of a mailbox built without problems; a mailbox kept
whole that a run read and found readable is recorded with `READ_CLEAN` instead (never an input
digest: it is never reused by digest), its `objects/` and `patches/` stamped as the run read them.
Either way, while its stamps hold, the mailbox needs no reading: a record lost (other code, another
folder) costs the runs that read the mailboxes kept whole again, at most `KEPT_WHOLE_READS` each
(core/pipeline.py), not every run while they stay frozen.
"""
from __future__ import annotations

from typing import Any, Callable

from .statcache import RootRecord, newest, stamps_digest

READ_CLEAN = "read-clean"  # RootRecord.input of a mailbox kept whole, read and found readable
PARTS = ("objects", "patches")


def vouched_recorded(record: Any) -> Callable[[str], bool]:
    """Whether a mailbox holds no file that does not read, as the record knows (`check`ed): what a
    reconcile wrote there without problems, or what one read and found readable, its stamps holding."""
    def vouched(mailbox: str) -> bool:
        found = record.roots.get(root := f"spaces/{mailbox}")
        return found is not None and found.input is not None and record.intact.get(root, False)
    return vouched


def note_read_clean(record: Any, snapshot: Any, result: Any) -> None:
    """Record each mailbox kept whole that the run read (`snapshot`, a WorkTreeSnapshot, observed
    its files) and found readable, with the stamps it read them with, when they are settled."""
    if not record.enabled or not result.frozen:
        return
    troubled = {mb for p in result.problems for mb in p.mailboxes}
    clock = record.clock()
    for mb in result.frozen.kept_whole():
        root = f"spaces/{mb}"
        seen = [(rel, stamp) for path, stamp in snapshot.observed.items() if path.startswith(f"{root}/")
                and (rel := path[len(root) + 1:].rstrip("/")).split("/", 1)[0] in PARTS]
        if mb in troubled or not seen or any(newest(stamp) >= clock for _, stamp in seen):
            continue
        seen.sort()
        record.note_root(root, RootRecord(READ_CLEAN, b"", tuple(rel for rel, _ in seen),
                                          stamps_digest(stamp for _, stamp in seen)))
