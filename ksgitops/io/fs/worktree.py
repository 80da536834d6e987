"""Crash-safe writes of generated roots into a work tree: a journalled rename protocol.

An owned root is a folder or file that one writer replaces as a whole: a mailbox folder, a WDS's
`.ksgitops/status` and `.ksgitops/singleplacementslices`, `STATUS.md`, a mailbox's `reported/`
(collect). A root whose content is unchanged is not touched. Inside a root, what the generated
tree marks KEEP (`reported/`, `upsynced/`, and in a mailbox every entry reconcile does not own)
is carried over from the old root to the new one, by rename, never copied; so is every folder of
the old root whose files are all as generated (`reuse`): a change that touched a few files of a
mailbox stages those folders, not the mailbox's thousand files.

For a root D = <parent>/<name>, a batch of roots is written in these steps (S and T are siblings of D):

    S = .<name>.ksgitops-stage     the new content (generated files only, nothing kept or reused)
    T = .<name>.ksgitops-trash     the old root, once moved aside
    J = <work tree>/.ksgitops-journal    {"state": "started" | "done", "roots": [{path, existed, keep, reuse, made}]}

    1. J := started, fsynced: every root of the batch, whether it existed, the kept and reused paths in it
    2. every S written
    3. per root: D -> T (when it existed), S -> D (unless the root goes), each kept or reused path T/p -> D/p
    4. syncfs: the new files and every rename are on disk (reconcile's own output, which the
       next run repairs: only the folders kept paths were renamed into, and their parents, fsynced)
    5. J := done, fsynced
    6. every T removed
    7. J removed

Every state in between is recognisable from J and which of S, T, D exist, and is recovered by the
next command that reads or writes the work tree (`recover`), before it reads anything:

    no J          nothing in flight.
    J started     roll back, per root in reverse order: when T exists, move each kept or reused
                  path that is in D and not in T back into T, remove D, rename T -> D; when it does not and the
                  root did not exist before, remove D — only when D holds nothing but the entries
                  the write staged (`made`, the new root's top-level names): a D holding anything
                  else is not this write's, and is left whole; remove S. The old roots are back,
                  with every kept file in them (a kill never loses one: each is in D or in T, never
                  elsewhere).
    J done        roll forward: remove what is left of every T and S.

A journal is trusted only as far as it names what ksgitops writes (`owned_root_problem`): every
root a relative path inside the work tree, without `..` or links on the way, of one of the shapes
ksgitops writes (`STATUS.md`; `spaces/<space>/.ksgitops/<name>`; a mailbox `spaces/<mailbox>` or
its `reported`, where the mailbox folder, if it is there, has a ksgitops mailbox's `space.yaml`),
every kept path inside its root. A journal naming anything else was not written by ksgitops (planted in the work
tree or committed): it is refused, exit 3, before anything is touched.

Each recovery step is idempotent, so a kill during recovery is recovered by the next run. Writes
and recoveries hold a lock on the work tree's folder (durable.exclusive): a journal in flight
belongs to a live writer while its lock is held, and is only recovered once it is not. A
failure while writing (a full disk, EIO, a read-only folder) rolls back at once and is an EnvError
(exit 3) naming the path; nothing is left half-written. Before step 4 a power loss rolls back to
the old roots, which were on disk before the run began; from step 5 on, everything step 4 made
durable is (for reconcile's output: every kept path; a generated file may come back empty, and
the next reconcile finds it by its stamp or its bytes).

Leftovers of the earlier protocol (`.NAME.ksgitops-new` holding the kept folders, `.NAME.ksgitops-old`:
staging.resolve_legacy)
are resolved before a root is planned, without deleting anything that could hold a kept file.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from ...core.tree import REUSE, Generated
from ...model import EnvError, KsgitopsError, Progress
from .durable import exclusive, fsync_dir, os_reason, sync_filesystem, write_durably
from .eol import checkout_of
from .paths import FileStats, check_path, lstat_mode
from .owned import change_of, made_names, owned_root_problem, unlisted_kept
from .rootplan import plan_root
from .staging import Change, remove as _remove, resolve_legacy, sibling, stage_all

JOURNAL = ".ksgitops-journal"
FORMAT = "ksgitops-journal-2"  # 2: roots carry `reuse`; an earlier ksgitops refuses it rather than lose them
READ_FORMATS = ("ksgitops-journal-1", FORMAT)
BATCH = 256  # roots per transaction: bounds the extra disk a full rewrite holds at once


def write_generated(root: Path, generated: Generated, record: Any = None, regenerable: bool = False,
                    progress: Progress | None = None, files: FileStats | None = None) -> list[str]:
    """Bring every owned root to its generated content; returns the roots that changed. With a
    `record` (statcache.WorkTreeRecord), a root whose content and stamps are as recorded is not
    read, and each root written or found equal is recorded. `regenerable`: what is written is
    reconcile's own output, which the next run repairs (see `_make_durable`). `progress` hears
    ("writing", done, total): roots compared, then folders written. `files` gets each file
    written, or found as generated, with its stat as written or as read (a git index follows them)."""
    root = Path(root)
    record = record if record is not None and record.enabled else None
    with exclusive(root):
        recover(root)
        checkout = checkout_of(root)  # git's end-of-line conversion here: None, but where it writes CRLF
        verified: set[str] = set()
        changes = []
        for done, (rel, tree) in enumerate(generated.items()):
            if progress is not None:
                progress("writing", done, len(generated) + len(generated))
            if tree is REUSE:
                continue
            check_path(root, rel, verified)
            content: Any = tree
            resolve_legacy(root, rel, content)
            if record is not None:
                if record.unchanged(rel, content):
                    continue
                record.clock()  # before the comparison it vouches for
            change = plan_root(root, rel, content, files, checkout)
            if change is not None:
                changes.append(change)
            elif record is not None:
                record.verified(rel, content)
        for start in range(0, len(changes), BATCH):
            if progress is not None:
                progress("writing", len(generated) + start * len(generated) // len(changes), 2 * len(generated))
            transact(root, changes[start:start + BATCH], record, regenerable, files, checkout)
        if record is not None:
            _settle(root, [c for c in changes if c.content is not None and c.path not in record.roots], record,
                    checkout)
        if progress is not None:
            progress("writing", 2 * len(generated), 2 * len(generated))
    return [c.path for c in changes]


SETTLE_AT_MOST = 16  # roots written in the clock tick they were recorded in, read back at once


def _settle(root: Path, racy: list[Change], record: Any, checkout: Any = None) -> None:
    """Record the few roots just written in the file system's current clock tick (their stamps
    cannot vouch for them yet): once the clock has moved on, each is compared and recorded as
    found equal, so that the next run can trust it (a large write leaves them to the next run).
    Roots reused folders were moved into are always compared: reading them back costs less than
    the writing the move saved, and the next run need not."""
    if len(racy) > SETTLE_AT_MOST:
        racy = [c for c in racy if c.reuse]
    if not racy:
        return
    since = record.tick()
    if since < 0:
        return
    for change in racy:
        if plan_root(root, change.path, change.content, checkout=checkout) is None:
            record.verified(change.path, change.content, since)


def transact(root: Path, changes: list[Change], record: Any = None, regenerable: bool = False,
             files: FileStats | None = None, checkout: Any = None) -> None:
    """Steps 1-7 of the protocol for one batch; on a failure, roll back and raise EnvError.
    With a `record`, what was written is recorded (its stamps taken as it was written)."""
    if not changes:
        return
    journal = _Journal(root)
    try:
        journal.write("started", changes)
        stamps = stage_all(root, changes, record is not None, files, checkout)
        swapped_at = record.now() if record is not None else 0
        for change in changes:
            _swap(root, change)
        _make_durable(root, changes, regenerable)
        journal.write("done", changes)
    except OSError as e:
        _fail(root, journal, e)
    try:
        for change in changes:
            _remove(sibling(root / change.path, "trash"))
        journal.remove()
    except OSError as e:
        raise EnvError(_shown(root, e), f"{os_reason(e)} (the new files are in place; the next run "
                                        f"removes what is left of the old ones)") from None
    if record is not None:
        for change, written in zip(changes, stamps):
            record.written(change.path, change.content, written, swapped_at)


def _make_durable(root: Path, changes: list[Change], regenerable: bool) -> None:
    """Step 4: what must be on disk before the journal says `done`. Everything, for files only
    this write has (reports, summaries). For reconcile's own output only the renames that carry
    kept paths (their folders fsynced): a power loss can then cost generated files their data
    (the next run finds them by their stamps or content and rewrites them), never a kept file."""
    if not regenerable:
        sync_filesystem(root)
        return
    folders: set[Path] = set()
    for change in changes:
        if change.keep:
            target = root / change.path
            folders.add(target.parent)  # D -> T, S -> D
            folders.update((target / kept).parent for kept in change.keep)  # T/p -> D/p
    for folder in sorted(folders):
        fsync_dir(folder)


def _swap(root: Path, change: Change) -> None:
    target = root / change.path
    trash = sibling(target, "trash")
    if change.existed:
        _remove(trash)
        os.rename(target, trash)
    if change.content is None:
        return
    os.rename(sibling(target, "stage"), target)
    for kept in change.carried:
        _move(trash / kept, target / kept)


def _move(source: Path, dest: Path) -> None:
    """Rename `source` to `dest` (making `dest`'s folder), unless it is gone or `dest` exists."""
    if not os.path.lexists(source) or os.path.lexists(dest):
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.rename(source, dest)


# --- recovery -------------------------------------------------------------------------------------

def recover(root: Path) -> bool:
    """Finish or undo an interrupted transaction (see the module docstring); True when there was one.
    Waits for a write another live process is doing (it holds the work tree's lock)."""
    with exclusive(root):
        return _recover(Path(root))


def _recover(root: Path) -> bool:
    journal = _Journal(root)
    _remove(sibling(journal.path, "tmp"))  # a kill while the journal was being rewritten
    data = journal.read()
    if data is None:
        return False
    changes = journal.changes(data)
    try:
        if data["state"] == "done":
            _roll_forward(journal.root, changes)
        else:
            _roll_back(journal.root, changes)
        journal.remove()
    except OSError as e:
        raise EnvError(_shown(journal.root, e), f"{os_reason(e)} while recovering an interrupted write "
                                                f"(run again)") from None
    return True


def _roll_back(root: Path, changes: list[Change]) -> None:
    for change in reversed(changes):
        target = root / change.path
        trash = sibling(target, "trash")
        if os.path.lexists(trash):
            for kept in change.carried:
                _move(target / kept, trash / kept)
            _remove(target)
            os.rename(trash, target)
        elif not change.existed and _only_made(target, change.made):
            _remove(target)
        _remove(sibling(target, "stage"))


def _only_made(target: Path, made: list[str] | None) -> bool:
    """Whether `target` holds nothing but what a write that created it staged (a file root: yes)."""
    if not stat.S_ISDIR(lstat_mode(target)):
        return True
    return set(os.listdir(target)) <= set(made or ())  # a journal without `made` staged nothing we know of


def _roll_forward(root: Path, changes: list[Change]) -> None:
    for change in changes:
        target = root / change.path
        _remove(sibling(target, "trash"))
        _remove(sibling(target, "stage"))


def _fail(root: Path, journal: "_Journal", error: OSError) -> None:
    """Undo a batch that failed before it was done, then raise the failure as an EnvError."""
    where = _shown(root, error)
    try:
        _remove(sibling(journal.path, "tmp"))  # the journal itself may be what could not be written
        data = journal.read()
        if data is not None:
            _roll_back(root, journal.changes(data))
            journal.remove()
    except OSError as again:
        raise EnvError(where, f"{os_reason(error)}; undoing the write failed too ({os_reason(again)}): the next "
                              f"run finishes the recovery") from None
    raise EnvError(where, f"{os_reason(error)} (nothing was changed)") from None


def _shown(root: Path, error: OSError) -> str:
    """The path an OSError names, relative to the work tree, staging names shown as their root."""
    name = error.filename if isinstance(error.filename, str) else str(root)
    try:
        rel = os.path.relpath(name, root)
    except ValueError:
        rel = name
    parts = rel.split("/")
    for i, part in enumerate(parts):
        for role in ("stage", "trash"):
            suffix = f".ksgitops-{role}"
            if part.startswith(".") and part.endswith(suffix):
                parts[i] = part[1:-len(suffix)]
    return "/".join(parts)


class _Journal:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / JOURNAL

    def read(self) -> dict[str, Any] | None:
        if not os.path.lexists(self.path):
            return None
        check_path(self.root, JOURNAL)
        try:
            data = json.loads(self.path.read_bytes())
            if data.get("format") not in READ_FORMATS or data.get("state") not in ("started", "done"):
                raise ValueError("unknown format")
            return data  # type: ignore[no-any-return]
        except (ValueError, AttributeError) as e:
            raise KsgitopsError(f"{JOURNAL}: an interrupted write left a journal ksgitops cannot read ({e}); "
                                f"move it away and check the generated folders", exit_code=3) from None

    def changes(self, data: dict[str, Any]) -> list[Change]:
        """The roots of a journal read, each checked to be one ksgitops writes (else KsgitopsError,
        exit 3, with nothing touched)."""
        roots = data.get("roots")
        if not isinstance(roots, list):
            raise self._refused("it names no roots")
        changes = []
        for entry in roots:
            change = change_of(entry)
            problem = (owned_root_problem(self.root, change.path, change.carried) or unlisted_kept(self.root, change)) \
                if change else "an entry is malformed"
            if problem or change is None:
                raise self._refused(problem or "an entry is malformed")
            changes.append(change)
        return changes

    def _refused(self, problem: str) -> KsgitopsError:
        return KsgitopsError(f"{JOURNAL}: {problem}: ksgitops did not write this journal, so nothing was recovered "
                             f"or changed; remove the file and check the generated folders", exit_code=3)

    def write(self, state: str, changes: list[Change]) -> None:
        check_path(self.root, JOURNAL)
        roots = [{"path": c.path, "existed": c.existed, "keep": c.keep, "reuse": c.reuse, "made": made_names(c)}
                 for c in changes]
        write_durably(self.path, json.dumps({"format": FORMAT, "state": state, "roots": roots}).encode())

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
