"""A checkout that follows a ksgitops commit: the work tree and index of the generated roots that changed.

commit.py's `commit_generated` runs it in this order: the new tree's objects are written (one pack, fsynced),
the checkout is planned here (links refused; nothing is written), the commit object is created, a
journal `<git dir>/ksgitops-state/checkout.json` naming the commit is written (fsynced), the branch moves,
and only then does the work tree follow:

- a root that changed is brought along file by file from the tree diff (work in proportion to the
  change), each file replaced atomically;
- a root that appears or goes is written whole through worktree.py's transaction (kept folders
  such as `reported/` carried over);
- the index (written atomically and fsynced: by `git update-index` when only files changed and
  a git program is there, else by libgit2, each entry of a file written here holding its stat
  as `git checkout` leaves it, indexstat.py; indexupdate.py), and what was written made durable
  (ondisk.py: few files, each fsynced with the folders on its way; else the file system synced,
  after the command's answer when it leaves work until then); the journal is removed last.

So a failed commit leaves the work tree untouched, and a kill or failure after the branch moved
leaves every file old or new plus the journal: the next command on the repository finishes the
checkout (every step is idempotent) before it reads anything. When the branch does not point at
the journal's commit (it never moved for it, or moved on since), or the work tree is on another
branch now, there is nothing to finish: the journal goes, after the sync ondisk.py's marker says
is owed, if one does.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from ..pygit import pygit2

from ...core.tree import KEEP, FileTree, Generated
from ...model import EnvError, KsgitopsError, Origin, Problem
from ..fs.durable import exclusive, libgit2_fsync, os_reason, write_durably
from ..fs.eol import checkout_of
from ..fs.paths import PRIVATE_FILE, STATE_DIR, FileStats, check_path, index_stat, private_folder, write_file
from ..fs.rootplan import plan_root
from ..fs.worktree import write_generated
from . import indexlock, indexstat, ondisk
from .branch import is_checked_out
from .discover import git_dir
from .indexupdate import IndexUpdates, index_shape, make_readable, resolve_conflict
from .ondisk import Written
from .repo import TreeIndex, blobs, read_tree, tree_at

FORMAT = "ksgitops-checkout-1"
FILE, DELETE_FILE, TREE, REMOVE, DELTA = "file", "delete-file", "tree", "remove", "delta"


class Step(Struct):
    root: str
    op: str
    markers: list[str] = field(default_factory=list)  # top-level KEEP names of a whole root


class Plan(Struct):
    old: str  # tree ids, hex
    new: str
    steps: list[Step]
    deltas: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)  # per root, once computed
    folders: dict[tuple[str, str], Any] = field(default_factory=dict)  # (tree id, path) -> that folder's tree


def journal_path(repo: pygit2.Repository) -> Path:
    return Path(repo.path) / STATE_DIR / ondisk.JOURNAL


# Earlier versions kept their state in `<git dir>/ksgitops/`, a folder that, in a bare repository
# (or with `.git/` as the current directory), `python -m ksgitops` imported instead of the package.
# An interrupted checkout's journal left there is still finished; the caches there are not read.
LEGACY_JOURNAL = Path("ksgitops") / "checkout.json"


def _adopt_legacy_journal(repo: pygit2.Repository) -> None:
    old, new = Path(repo.path) / LEGACY_JOURNAL, journal_path(repo)
    if os.path.lexists(old) and not os.path.lexists(new):
        check_path(Path(repo.path), str(LEGACY_JOURNAL), shown=repo.path.rstrip("/"))
        new.parent.mkdir(exist_ok=True)
        os.rename(old, new)


def plan(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree, roots: list[str], generated: Generated) -> Plan:
    """The steps that bring the work tree from `old` to `new`, after refusing any link on the way."""
    old_index, new_index = TreeIndex(repo, old), TreeIndex(repo, new)
    workdir = Path(repo.workdir)
    steps = []
    for root in roots:
        before, after = old_index.get(root), new_index.get(root)
        if after is not None and after.type == pygit2.GIT_OBJECT_BLOB:
            step = Step(root, FILE)
        elif after is None:
            step = Step(root, DELETE_FILE if before is not None and before.type == pygit2.GIT_OBJECT_BLOB else REMOVE)
        elif before is None or not (workdir / root).is_dir() or (workdir / root).is_symlink():
            content = generated.get(root)
            step = Step(root, TREE, [n for n, v in content.items() if v is KEEP] if isinstance(content, dict) else [])
        else:
            step = Step(root, DELTA)
        steps.append(step)
    result = Plan(str(old.id), str(new.id), steps)
    _refuse_links(repo, result)
    indexlock.refuse_held(repo.path, "nothing was changed")
    make_readable(repo)  # a split or sparse index: made plain now, or refused before the branch moves
    return result


def _refuse_links(repo: pygit2.Repository, planned: Plan) -> None:
    """Every path the checkout will write or delete, checked for links (and, file by file, for
    components that lead out of its folder: a WEC's report ref is checked for them when folded in)
    before anything is written."""
    workdir = Path(repo.workdir)
    verified: set[str] = set()
    for step in planned.steps:
        check_path(workdir, step.root, verified)
        if step.op in (TREE, REMOVE) and os.path.lexists(workdir / step.root):
            plan_root(workdir, step.root, None)  # scans the folder there for links
        elif step.op == DELTA:
            for path, _ in _deltas(repo, planned, step.root):
                _refuse_way_out(path)
                check_path(workdir, path, verified)


def _refuse_way_out(path: str) -> None:
    if any(part in ("", ".", "..") for part in path.split("/")):
        raise KsgitopsError(Problem(Origin(path), "a path of the commit with an empty, `.` or `..` component: it "
                                                  "would be written outside its folder; nothing was changed"),
                            exit_code=2)


def begin(repo: pygit2.Repository, ref: str, commit: pygit2.Oid, planned: Plan) -> None:
    """Write the journal (durably) before the branch moves."""
    path = journal_path(repo)
    check_path(Path(repo.path), STATE_DIR, shown=repo.path.rstrip("/"))
    private_folder(path.parent)
    steps = [{"root": s.root, "op": s.op, "markers": s.markers} for s in planned.steps]
    ondisk.sync_if_owed(repo.path, Path(repo.workdir))  # an earlier checkout's sync, still owed, first
    write_durably(path, json.dumps({"format": FORMAT, "ref": ref, "commit": str(commit), "old": planned.old,
                                    "new": planned.new, "steps": steps}).encode(), PRIVATE_FILE)


def apply(repo: pygit2.Repository, planned: Plan, commit: str, generated: Generated | None = None) -> None:
    """Bring the work tree and index along to the journal's `commit` (idempotent), then the
    journal goes, or stays marked until its sync after the answer (ondisk.py). Whole roots come
    from `generated` when given (they are in memory already), else from the new tree."""
    workdir = Path(repo.workdir)
    files: FileStats = {}  # the stat of each file written, for its index entry
    if not any(s.op in (TREE, REMOVE) for s in planned.steps):  # file by file: indexupdate.py
        updates, written = IndexUpdates(), Written(workdir)
        _apply_files(repo, planned, updates, workdir, written, files)
        on_disk = False

        def make_durable() -> None:  # while git makes the index's changes
            nonlocal on_disk
            on_disk = written.make_durable()
        with indexlock.writing(repo.path):
            updates.write(repo, meanwhile=make_durable, files=files)
        ondisk.journal_done(repo.path, workdir, commit, on_disk)
        return
    index = repo.index
    # skip-worktree (a sparse checkout) and intent-to-add bits: libgit2's read_tree drops them
    bulk = _index_follows_tree(index, planned) and not index_shape(Path(repo.path) / "index").flagged
    entries: Any = _Unindexed() if bulk else index
    whole: dict[str, Any] = {}
    for step in planned.steps:
        if step.op in (TREE, REMOVE):
            given = (generated or {}).get(step.root)
            whole[step.root] = given if step.op == TREE and isinstance(given, dict) else _whole(repo, planned, step)
            if not bulk:
                index.remove_directory(step.root)
                if step.op == TREE:
                    _index_tree(repo, index, planned, step.root)
    _apply_files(repo, planned, entries, workdir, files=files)
    write_generated(workdir, whole, regenerable=True, files=files)  # on disk before the journal goes (ondisk.py)
    if bulk:
        index.read_tree(repo[planned.new].peel(pygit2.Tree))  # keeps the stat data of unchanged entries
    indexstat.fill(index, files)  # as git's checkout: the next `git status` trusts them unread
    on_disk = ondisk.synced_unless_deferred(workdir)
    with indexlock.writing(repo.path):
        index.write()
    ondisk.journal_done(repo.path, workdir, commit, on_disk)


def _apply_files(repo: pygit2.Repository, planned: Plan, entries: Any, workdir: Path,
                 written: Written | None = None, files: FileStats | None = None) -> None:
    """The steps that go file by file (a file, a file gone, a root's changed files), with their
    index changes made in `entries` (an Index, IndexUpdates, or _Unindexed) and what they wrote
    noted in `written` (and in `files`, with its stat once in place, for the index to take)."""
    made: set[Path] = set()
    written = written or Written(workdir)
    checkout = checkout_of(workdir)  # CRLF where git's own checkout writes it (fs/eol.py)
    for step in planned.steps:
        if step.op == FILE:
            entry = _entry(repo, planned, planned.new, step.root)
            (workdir / step.root).parent.mkdir(parents=True, exist_ok=True)  # problems.yaml: .ksgitops/ may be new
            _place(workdir, step.root, _blob(repo, entry.id), files, checkout)
            written.file(workdir / step.root)
            _add(entries, pygit2.IndexEntry(step.root, entry.id, entry.filemode))
        elif step.op == DELETE_FILE:
            (workdir / step.root).unlink(missing_ok=True)
            written.name(workdir / step.root)
            _unindex(entries, step.root)
        elif step.op not in (TREE, REMOVE):  # DELTA; files gone first: a folder emptied may become a file's name
            deltas = _deltas(repo, planned, step.root)
            for path, delta in sorted(deltas, key=lambda d: d[1].status != pygit2.GIT_DELTA_DELETED):
                _apply_delta(repo, entries, workdir, path, delta, made, step.root, files, checkout)
                if delta.status == pygit2.GIT_DELTA_DELETED:
                    written.name(workdir / path)
                else:
                    written.file(workdir / path)


BULK = 32  # whole roots from which the index is read from the new tree rather than entry by entry


def _index_follows_tree(index: pygit2.Index, planned: Plan) -> bool:
    """Many whole roots appear, and the index holds exactly the old tree (nothing staged): then
    the new index is the new tree, read at once (libgit2 keeps the stat data of every entry whose
    path, mode and id stay) instead of hundreds of thousands of single additions."""
    if sum(1 for s in planned.steps if s.op in (TREE, REMOVE)) < BULK:
        return False
    try:
        return str(index.write_tree()) == planned.old
    except pygit2.GitError:  # conflicts: entry by entry
        return False


class _Unindexed:
    """Index operations to skip: the index is read from the new tree afterwards."""

    def add(self, entry: pygit2.IndexEntry) -> None:
        pass

    def remove(self, path: str) -> None:
        pass

    def __contains__(self, path: str) -> bool:
        return False


def follow(repo: pygit2.Repository, planned: Plan, generated: Generated, commit: str) -> None:
    """`apply` right after the branch moved: a failure names the commit that stands and leaves
    the journal, so that the next run finishes."""
    try:
        apply(repo, planned, commit, generated)
    except EnvError as e:
        raise EnvError(e.problems[0].origin.path, f"committed {commit[:12]}, but the work tree could not follow: "
                                                  f"{e.problems[0].message}; run again to finish") from None
    except OSError as e:
        raise EnvError(str(e.filename or repo.workdir), f"committed {commit[:12]}, but the work tree could not "
                                                        f"follow: {os_reason(e)}; run again to finish") from None
    except pygit2.GitError as e:  # libgit2's index write: another git took the index's lock meanwhile
        lock = Path(repo.path) / indexlock.LOCK
        raise EnvError(str(lock) if lock.exists() else repo.path,
                       f"committed {commit[:12]}, but the work tree could not follow: {e}; run again to finish") from None


def _whole(repo: pygit2.Repository, planned: Plan, step: Step) -> FileTree | None:
    if step.op == REMOVE:
        return None
    tree = read_tree(repo, _entry(repo, planned, planned.new, step.root).id)
    tree.update({name: KEEP for name in step.markers})
    return tree


def _deltas(repo: pygit2.Repository, planned: Plan, root: str) -> list[tuple[str, Any]]:
    """(path, delta) of every file that differs in `root` between the old and the new tree."""
    if root not in planned.deltas:
        before, after = _entry(repo, planned, planned.old, root), _entry(repo, planned, planned.new, root)
        diff = repo[after.id].peel(pygit2.Tree).diff_to_tree(repo[before.id].peel(pygit2.Tree), swap=True)
        planned.deltas[root] = [(f"{root}/{(d.old_file if d.status == pygit2.GIT_DELTA_DELETED else d.new_file).path}", d)
                                for d in diff.deltas]
    return planned.deltas[root]


def _apply_delta(repo: pygit2.Repository, index: pygit2.Index, workdir: Path, path: str, delta: Any,
                 made: set[Path], root: str, files: FileStats | None = None, checkout: Any = None) -> None:
    target = workdir / path
    if delta.status == pygit2.GIT_DELTA_DELETED:
        target.unlink(missing_ok=True)
        _unindex(index, path)
        _prune_empty_dirs(target, workdir / root)
        return
    if target.parent not in made:
        target.parent.mkdir(parents=True, exist_ok=True)
        made.add(target.parent)
    _place(workdir, path, _blob(repo, delta.new_file.id), files, checkout)
    _add(index, pygit2.IndexEntry(path, delta.new_file.id, delta.new_file.mode))


def _place(workdir: Path, path: str, data: bytes, files: FileStats | None, checkout: Any = None) -> None:
    """One file replaced, as git's checkout writes it; with `files`, its index stat noted when it
    is in place as written."""
    target = workdir / path
    placed = write_file(target, data if checkout is None else checkout.form(str(target), data), files is not None)
    if files is not None and placed is not None:
        files[path] = index_stat(placed)


def _index_tree(repo: pygit2.Repository, index: pygit2.Index, planned: Plan, root: str) -> None:
    for path, oid, mode in blobs(repo, tree_at(repo, _entry(repo, planned, planned.new, root).id), f"{root}/"):
        _add(index, pygit2.IndexEntry(path, oid, mode))


def _add(entries: Any, entry: pygit2.IndexEntry) -> None:
    """A stage-0 entry in `entries`; in libgit2's index a conflict's stages (1-3) at its path go first, as
    git's addition drops them (libgit2's leaves them: "multiple stage entries for merged file")."""
    if isinstance(entries, pygit2.Index):
        resolve_conflict(entries, str(entry.path))
    entries.add(entry)


def _entry(repo: pygit2.Repository, planned: Plan, tree_id: str, path: str) -> Any:
    """The entry at `path` in the tree `tree_id`, its folder's tree held by the plan: libgit2
    caches no tree over 4 KiB, and `spaces/` of 10,000 mailboxes (~700 KB) was parsed again for
    each root a change touched (3.5 ms each)."""
    folder, _, name = path.rpartition("/")
    key = (tree_id, folder)
    tree = planned.folders.get(key)
    if tree is None:
        top = repo[tree_id].peel(pygit2.Tree)
        tree = planned.folders[key] = top[folder].peel(pygit2.Tree) if folder else top
    return tree[name]


def _blob(repo: pygit2.Repository, oid: Any) -> bytes:
    return repo[oid].peel(pygit2.Blob).data


def _unindex(index: pygit2.Index, path: str) -> None:
    """The path's entry gone, and a conflict's stages (1-3) with it, as git's own removal drops them."""
    if isinstance(index, pygit2.Index):
        resolve_conflict(index, path)
    if path in index:
        index.remove(path)


def _prune_empty_dirs(path: Path, stop: Path) -> None:
    folder = path.parent
    while folder != stop.parent and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def pending(workdir: Path) -> bool:
    """A checkout journal exists in the repository holding `workdir` (cheap: no repository opened)."""
    found = git_dir(workdir)
    return found is not None and any(os.path.lexists(Path(found) / part) for part in
                                     (Path(STATE_DIR) / ondisk.JOURNAL, LEGACY_JOURNAL))


def recover(repo: pygit2.Repository) -> bool:
    """Finish a checkout a kill or failure interrupted after its branch moved, or the sync one left
    for after its answer; True when there was one. Waits for a commit another live process is doing
    (it holds the git directory's lock)."""
    if repo.is_bare or repo.workdir is None:
        return False
    _adopt_legacy_journal(repo)
    if not os.path.lexists(journal_path(repo)):
        return False
    with exclusive(repo.path):
        return _recover(repo)


def _recover(repo: pygit2.Repository) -> bool:
    path = journal_path(repo)
    if not os.path.lexists(path):
        return False
    check_path(Path(repo.path), f"{STATE_DIR}/{ondisk.JOURNAL}", shown=repo.path.rstrip("/"))
    indexlock.settle(repo.path)
    try:
        data = json.loads(path.read_bytes())
        if data.get("format") != FORMAT:
            raise ValueError("unknown format")
    except (ValueError, AttributeError) as e:
        raise KsgitopsError(f"{path}: an interrupted checkout left a journal ksgitops cannot read ({e}); "
                            f"move it away and run `git checkout -- spaces STATUS.md`", exit_code=3) from None
    ref = repo.references.get(data["ref"])
    moved = ref is None or str(ref.resolve().target) != data["commit"] or not is_checked_out(repo, data["ref"])
    try:
        if moved or ondisk.written_in_this_boot(repo.path, data["commit"]):
            # the branch never moved for it (nothing was written), moved on since (a push's retry,
            # a person's commit), or another branch is checked out: only a sync left for later, if any
            ondisk.settle(repo.path, Path(repo.workdir))
            return True
        indexlock.refuse_held(repo.path, f"the checkout of {data['commit'][:12]} is not finished (run again once "
                                         f"the lock is gone: it finishes then)")
        make_readable(repo)
        planned = Plan(data["old"], data["new"], [Step(s["root"], s["op"], list(s["markers"])) for s in data["steps"]])
        _refuse_links(repo, planned)
        with libgit2_fsync():  # the index, when libgit2 writes it, on disk before the journal goes
            apply(repo, planned, data["commit"])
    except OSError as e:
        raise EnvError(str(e.filename or repo.workdir), f"{os_reason(e)} while finishing an interrupted checkout "
                                                        f"of {data['commit'][:12]} (run again)") from None
    return True

