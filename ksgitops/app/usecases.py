"""One place that composes the edges (git, file system) with the pure core, for every command.

The CLI calls these functions and maps their results and errors to output and exit codes; the
future runtimes (poller, action) call the same functions.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from msgspec import Struct, field
from msgspec.structs import replace

from ..core.results import PlannedResult, RecordedResult
from ..core.readout.wecs import find_wec, wec_display_names, wec_rows
from ..core.tree import REUSE, FileTree, same_files
from ..io.fs.afterwards import later
from ..io.git import branch
from ..io.git.branch import git_dir
from ..io.git.refs import bare_git_dir, branch_tip
from ..io.git.cache import DiskCache
from ..lazy import lazy_module
from ..model import Progress
from .sources import (WORKTREE, Source, commit_on_branch, compute, open_branch, open_source, parse_ahead,
                      worktree_cache)

# the use cases' face: the command line calls app.<use case>, wherever in app/ it is written; the
# status room (and YAML with it) loads when one of its names is first asked for
_STATUS_FACE = ("FoldOutcome", "STATUS_SUBJECT", "StatusOutcome", "collector_problems", "fold_in", "fold_subject",
                "placements_only", "plan_fold_in", "source_of", "status_commit", "status_worktree", "summarize_commit")

if TYPE_CHECKING:
    from .status import (FoldOutcome, STATUS_SUBJECT, StatusOutcome, collector_problems, fold_in, fold_subject,
                         placements_only, plan_fold_in, source_of, status_commit, status_worktree, summarize_commit)
    from ..core import pipeline
    from ..core.pipeline import Result
    from ..core.readout import diff as diffs
    from ..io.git import keptwhole as keptclean, repo as git, runrecord
    from ..io.fs import keptwhole, plan as plans, proof, statcache, tree as fstree, worktree
else:  # loaded by a run that computes, diffs or reads commits: a proven work tree answers without them
    pipeline = lazy_module("ksgitops.core.pipeline")
    diffs = lazy_module("ksgitops.core.readout.diff")
    git = lazy_module("ksgitops.io.git.repo")
    runrecord = lazy_module("ksgitops.io.git.runrecord")
    keptclean = lazy_module("ksgitops.io.git.keptwhole")
    # the work tree's rooms: a bare repository's run never enters them
    plans = lazy_module("ksgitops.io.fs.plan")
    proof = lazy_module("ksgitops.io.fs.proof")
    keptwhole = lazy_module("ksgitops.io.fs.keptwhole")
    statcache = lazy_module("ksgitops.io.fs.statcache")
    fstree = lazy_module("ksgitops.io.fs.tree")
    worktree = lazy_module("ksgitops.io.fs.worktree")

    def __getattr__(name: str) -> Any:
        if name in _STATUS_FACE:
            return getattr(lazy_module("ksgitops.app.status"), name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Reported:
    __slots__ = ()  # as core/results.py's Judged
    result: Any

    @property
    def problems(self) -> list[Any]:
        return self.result.problems  # type: ignore[no-any-return]

    @property
    def wec_count(self) -> int:
        return len(self.result.wecs)

    @property
    def config(self) -> Any:
        return self.result.config


class ReconcileOutcome(_Reported, Struct):
    result: Result | PlannedResult  # applied from a diff's plan (io/fs/plan.py)
    changed_roots: list[str]
    commit: str | None = None


class ProvenOutcome(_Reported, Struct):
    """A commit (io/git/runrecord.py) or a work tree (io/fs/proof.py) that the last reconcile's
    record proves reconciled: nothing was computed, written or committed; what it reports is the
    recorded run's."""

    result: RecordedResult
    changed_roots: list[str] = field(default_factory=list)
    commit: str | None = None
    roots: tuple[str, ...] = ()  # in a work tree: the generated roots, as they stand


def reconcile_worktree(path: Path, progress: Progress | None = None,
                       source: str = WORKTREE, advise: bool = True) -> ReconcileOutcome | ProvenOutcome:
    """Write the generated files into the work tree, from the work tree's sources or a commit's
    (`source` a REF); previous copies always come from the work tree, which is what is written.
    A mailbox whose inputs and files are as the work tree's record says is not rebuilt (REUSE);
    a work tree the record proves as the last reconcile left it is not computed at all, nor one
    the monitor saw unchanged since a `diff` computed it (that diff's plan is applied)."""
    src, record = open_recorded(path, source, advise)
    answer = proof.proven(record) if source == WORKTREE else None
    if answer is not None:
        record.save()  # as of the monitor's new token, when there is one
        return ProvenOutcome(answer.result, roots=answer.generated)
    planned = plans.take(record, src.snapshot) if source == WORKTREE else None
    result: Result | PlannedResult
    if planned is not None:  # what the diff before showed: nothing changed since
        result = planned.result
    else:
        previous = src.snapshot if source == WORKTREE else fstree.WorkTreeSnapshot(path)
        disk = worktree_cache(path)
        result = pipeline.reconcile(src.snapshot, previous, disk.content, progress, reuse_recorded(record),
                                     parse_ahead, keptwhole.vouched_recorded(record))
        later(disk.state, disk.save_content)
    changed = worktree.write_generated(path, result.generated, record, regenerable=True, progress=progress)
    plans.forget(record)

    def keep() -> None:  # the files are written: the record saves time
        if planned is None and previous is src.snapshot:  # what it read of the mailboxes kept whole
            keptwhole.note_read_clean(record, previous, result)
        keep_record(record, src, result)
    later(record.state, keep)
    return ReconcileOutcome(result, changed)


def open_recorded(path: Path, source: str = WORKTREE, advise: bool = True) -> tuple[Source, Any]:
    """open_source, with the work tree's stat record (io/fs/statcache.py): the sources of the work
    tree read through it, and every recorded generated root observed (lstat only); with `advise`
    (a command; not `run`'s loop, which logs in its own format and which a monitor it started
    would outlive by hours), a large one gets a monitor started or a hint (`_advise_monitor`)."""
    src = open_source(path, source)
    where = git_dir(path)
    record = statcache.WorkTreeRecord.load(path, where)
    if source == WORKTREE:
        src.snapshot = fstree.WorkTreeSnapshot(path, record)
    if record.enabled:
        record.follow(str(where))
        record.check(path)
        fstree.check_mailbox_tops(path, [root for root in record.roots if root.count("/") == 1 and record.may_differ(root)])
        if advise:
            _advise_monitor(record)
    return src, record


ADVISE_FROM = 50_000  # generated paths a run checks one by one from which a monitor pays (about 0.1 s of lstat)


def _advise_monitor(record: Any) -> None:
    """A work tree large enough for its checks to show, at a terminal, gets a monitor started for
    it after the answer (KSGITOPS_MONITOR=off: it is only told of one; app/monitor.py)."""
    if not record.followed:
        from .monitor import advise  # only for a run that no monitor answered
        advise(record, ADVISE_FROM)


def reuse_recorded(record: Any) -> Callable[[str, str], bool] | None:
    if not record.enabled:
        return None
    return lambda mailbox, digest: record.reusable(f"spaces/{mailbox}", digest)  # type: ignore[no-any-return]


def keep_record(record: Any, src: Source, result: Result | PlannedResult, inputs: bool = True) -> None:
    """Save the record after a run; with `inputs` (a run that wrote: every generated root is
    now what it recorded), each clean mailbox's input digest beside its root."""
    if inputs:
        troubled = {mb for p in result.problems for mb in p.mailboxes}  # as clean_mailboxes
        record.set_inputs({f"spaces/{mb}": (None if mb in troubled else d) for mb, d in result.digests.items()})
    record.forget_roots(set(result.generated))
    if isinstance(src.snapshot, fstree.WorkTreeSnapshot) and src.snapshot.record is not None:
        record.forget_sources(src.snapshot.seen)
        if inputs:  # every generated root is now what it computed
            record.keep_run(proof.run_of(record, src.snapshot, result))
    elif inputs:
        record.keep_run(None)
    record.save()


def reconcile_commit(path: Path, source: str, progress: Progress | None = None,
                     cache: Any = None) -> ReconcileOutcome | ProvenOutcome:
    """Reconcile a commit and commit the result on its branch, reusing what a local cache
    proves unchanged (a mailbox whose input digest and committed tree are both as cached); a
    commit the last run's record proves reconciled is answered from the record.
    `cache`: a DiskCache kept by a long-running caller (else the repository's is read)."""
    bare = bare_git_dir(str(path))
    if bare is not None:  # the branch still at the commit the record was made on: nothing to open
        cache = cache or DiskCache.for_git_dir(bare)
        record = cache.record
        if record is not None and record.tip and (record.ref, record.tip) == branch_tip(bare, source):
            return ProvenOutcome(record.result)
    src = open_branch(path, source)
    cache = cache or DiskCache.for_git_dir(src.repo.path)  # type: ignore[attr-defined]
    base = src.snapshot.index  # type: ignore[attr-defined]
    record = cache.record
    tip = (str(src.ref_name), str(src.commit.id))  # type: ignore[attr-defined]
    if runrecord.proves_unchanged(record, base):
        _warn_uncommitted(src, record.loaded_mailboxes)
        if (record.ref, record.tip) != tip:
            cache.save_record(replace(record, ref=tip[0], tip=tip[1]))
        return ProvenOutcome(record.result)
    result = reconcile_reusing(src, cache, progress)
    _warn_uncommitted(src, set(result.loaded.mailboxes) | set(result.wecs))  # a new WEC's mailbox too
    config = result.config

    def message(roots: list[str]) -> str:  # {affected}: the WECs whose mailbox the commit changes
        affected = sum(1 for root in roots if root.count("/") == 1)
        return config.commit_message(str(src.commit.id), affected, frozen=result.frozen.trailer())  # type: ignore[attr-defined]

    committed = commit_on_branch(src, result.generated, config, message)

    def keep_memos() -> None:  # for the next run only: a command handed to the monitor answers first
        written = git.TreeSnapshot(src.repo, src.repo[committed.tree])  # type: ignore[arg-type, index]
        new = written.index
        remember_mailbox_spaces(written, committed.roots, cache.content)
        keptclean.note_kept_clean(result, new, cache.content)
        cache.save(clean_mailboxes(result, new))
        # a run that left mailboxes kept whole unread proves nothing: the next one reads them
        cache.save_record(None if result.unread_whole else
                          runrecord.record_of(new, result, tip[0], committed.commit or tip[1], record))

    later(cache.state, keep_memos)
    return ReconcileOutcome(result, list(committed.roots), committed.commit)


def reconcile_reusing(src: Source, cache: Any, progress: Progress | None = None) -> Result:
    """The pipeline over a commit, reusing each mailbox whose input digest and committed tree are
    both as `cache` (a DiskCache) recorded."""
    base = src.snapshot.index  # type: ignore[attr-defined]

    def reuse(mailbox: str, digest: str) -> bool:
        cached = cache.mailboxes.get(mailbox)
        return cached is not None and cached == (digest, base.entry_id(f"spaces/{mailbox}"))

    vouched = keptclean.vouched_filed(src.repo, base, cache)  # type: ignore[arg-type]
    return compute(src, cache.content, progress, reuse, vouched)


def remember_mailbox_spaces(written: Any, roots: tuple[str, ...], content: Any) -> None:
    """Each space whose folder the commit rewrote (a mailbox, or a source space holding generated
    files) told mailbox from source now, as the next run's load would, by its new tree id: after
    a change that rewrote the fleet, that run reads no mailbox folder."""
    from ..core.load.read import mailbox_space  # after the answer: YAML's modules with it

    for space in dict.fromkeys(root.split("/")[1] for root in roots if root.startswith("spaces/")):
        mailbox_space(written, space, content)


def clean_mailboxes(result: Result, tree: Any) -> dict[str, tuple[str, str]]:
    """(digest, tree id) of every mailbox without problems: safe to reuse next time (a mailbox
    that keeps frozen content has no digest: it is never reused)."""
    troubled = {mb for p in result.problems for mb in p.mailboxes}
    return {mb: (digest, tree.entry_id(f"spaces/{mb}")) for mb, digest in result.digests.items()
            if mb not in troubled}


def _warn_uncommitted(src: Source, mailboxes: Any) -> None:
    if not branch.is_checked_out(src.repo, str(src.ref_name)):  # type: ignore[arg-type]
        return  # the work tree holds another commit: its differences are not uncommitted changes of this one
    dirty = git.uncommitted_sources(src.repo, src.snapshot, set(mailboxes))  # type: ignore[arg-type]
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        print(f"warning: uncommitted source changes are not used: {shown} (--commit reconciles the commit, not "
              "the work tree: commit them, then run it again)", file=sys.stderr)


def plan_diff(path: Path, against: str | None,
              progress: Progress | None = None) -> tuple[Result | RecordedResult, diffs.DiffResult]:
    """What reconcile (of the work tree) would change, against the work tree or REF's tree.
    Against the work tree it runs on reconcile's engine: nothing is computed when the record
    proves the work tree as the last reconcile left it, only mailboxes whose inputs or files
    moved are built, and only roots the record cannot vouch for are read. With a monitor, what it
    computed is kept for the reconcile that follows (io/fs/plan.py), and a plan kept is taken."""
    record, planned = None, None
    new: Result | RecordedResult
    if against:
        new = compute(open_source(path, WORKTREE), progress=progress)
        old_src = open_source(path, against)
    else:
        old_src, record = open_recorded(path)
        answer = proof.proven(record)
        if answer is not None:
            record.save()
            return answer.result, diffs.DiffResult(False, [], frozen_units(answer.result))
        planned = plans.take(record, old_src.snapshot)
        if planned is not None:
            new = planned.result
        else:
            disk = worktree_cache(path)
            new = pipeline.reconcile(old_src.snapshot, old_src.snapshot, disk.content, progress,
                                   reuse_recorded(record), parse_ahead, keptwhole.vouched_recorded(record))
            later(disk.state, disk.save_content)
    wec_names = wec_display_names(new)
    changed = False
    wecs = []
    others: list[str] = []  # generated roots that change while no WEC receives different objects
    for root, new_tree in new.generated.items():
        # kept as it stands (frozen, or reused), or as the record vouches: no change
        if new_tree is REUSE or (record is not None and record.enabled and record.unchanged(root, new_tree)):
            continue
        old_file = old_src.snapshot.read(root)
        if isinstance(new_tree, bytes) or old_file is not None:  # a file root (a problems file)
            if old_file != new_tree:
                changed = True
                others.append(root)
            continue
        old_tree = old_src.snapshot.read_tree(root)
        if same_files(old_tree, new_tree):
            continue
        changed = True
        if root.count("/") == 1:  # a mailbox root: spaces/<mailbox>
            mailbox = root.split("/", 1)[1]
            changes = diffs.mailbox_changes(old_tree, new_tree if isinstance(new_tree, dict) else None, mailbox)
            gone = diffs.files_not_written(old_tree) if new_tree is None and old_tree is not None else None
            if changes or gone is not None:
                wecs.append(diffs.WecDiff(wec_names.get(mailbox) or _old_wec_name(old_tree, mailbox), mailbox,
                                          diffs.changes_diff(mailbox, changes), changes, gone))
                continue
        others.append(root)
    if record is not None:
        def keep_memos() -> None:  # a diff answers first: its record and plan only save the next run time
            keep_record(record, old_src, new, inputs=False)
            if planned is None:
                plans.keep(record, old_src.snapshot, new)  # for the reconcile that follows
        later(record.state, keep_memos)
    wecs.sort(key=lambda w: w.wec)
    return new, diffs.DiffResult(changed, wecs, frozen_units(new), others)


def _old_wec_name(old: FileTree | None, mailbox: str) -> str:
    from ..core.load.read import SYNC_TARGET_ANNOTATION
    from ..core.serialize import load_yaml
    data = old.get("space.yaml") if old else None
    try:
        return str(load_yaml(data)["metadata"]["annotations"][SYNC_TARGET_ANNOTATION])  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a broken old file just loses its nicer name
        return mailbox


def compute_for_wec(path: Path, name: str, progress: Progress | None = None) -> tuple[Result, str]:
    """The pipeline for one WEC (render, explain): other mailboxes are not built."""
    src = open_source(path, WORKTREE)
    disk = worktree_cache(path)
    from .status import placements_only
    mailbox = find_wec(placements_only(src, disk.content, progress), name)
    result = compute(src, disk.content, reuse=lambda mb, digest: mb != mailbox)
    later(disk.state, disk.save_content)
    return result, mailbox


def mailbox_tree(path: Path, result: Result, mailbox: str) -> FileTree | None:
    """What a WEC receives: its mailbox as computed, or as it stands when it is kept (frozen)."""
    tree = result.generated.get(f"spaces/{mailbox}")
    if tree is REUSE:
        return fstree.WorkTreeSnapshot(path).read_tree(f"spaces/{mailbox}")
    return tree if isinstance(tree, dict) else None


def frozen_units(result: Result | RecordedResult) -> list[Any]:
    """What the run froze (core.isolation.FrozenUnit), one per space, WEC or WECs of a space."""
    return result.frozen.units(wec_display_names(result)) if result.frozen else []


def frozen_facts(result: Result | RecordedResult | None) -> dict[str, Any]:
    """A reconcile's frozen parts and its errors of spaces and WECs, as a `run` cycle reports them."""
    if result is None:
        return {}
    return {"frozen": result.frozen.trailer(), "frozen_parts": len(result.frozen.spaces) + len(result.frozen.wecs),
            "errors": tuple(str(p) for p in result.confined_errors)}


def list_wecs(path: Path, progress: Progress | None = None) -> tuple[list[dict[str, Any]], Result]:
    """Every WEC with its labels, mailbox and the placements that reach it (`ksgitops wecs`)."""
    from .status import placements_only
    result = placements_only(open_source(path, WORKTREE), progress=progress)
    return wec_rows(result, wec_display_names(result)), result

