"""`status --commit` answers where and what from the record of the last status run when the
commit's reconcile inputs are those it recorded (reports and status files are not among them):
the same bytes as a run that computes them, and computed again as soon as a source changes."""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path
from typing import Any

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.app import status as status_room, usecases as app
from ksgitops.core.results import PlacedResult
from ksgitops.core.status.summary import STATUS_MD
from ksgitops.io.fs.paths import LinkError
from ksgitops.io.git.cache import PLACED_FILE, DiskCache
from ksgitops.kinds import KindInfo, KindTable
from status_reports import COMMOND, FLORIN, GUILDER, rs_report


@pytest.fixture
def reconciled(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    return git_init(repo)


@pytest.fixture
def computed(monkeypatch) -> list[int]:
    """Counts the runs of placements_only (the pipeline over the sources)."""
    calls: list[int] = []
    real = status_room.placements_only

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(status_room, "placements_only", counting)
    return calls


def committed_files(repo: Path) -> dict[str, bytes]:
    """STATUS.md and every status file of HEAD."""
    r = pygit2.Repository(str(repo))
    tree = r.revparse_single("HEAD").tree
    found = {STATUS_MD: r[tree[STATUS_MD].id].data}
    for space in ("wmw-c", "wmw-s"):
        path = f"spaces/{space}/.ksgitops/status"
        if path in tree:
            folder = r[tree[path].id]
            found.update({f"{path}/{name}": data for name, data in _blobs(r, folder)})
    return found


def _blobs(r: pygit2.Repository, tree: Any, prefix: str = "") -> list[tuple[str, bytes]]:
    out = []
    for entry in tree:
        if entry.type_str == "tree":
            out += _blobs(r, r[entry.id], f"{prefix}{entry.name}/")
        else:
            out.append((f"{prefix}{entry.name}", r[entry.id].data))
    return out


def report(repo: Path, mailbox: str, available: int, at: str) -> None:
    (repo / "spaces" / mailbox / "reported" / f"{COMMOND}.yaml").write_bytes(rs_report(available, at))
    git(repo, "commit", "-qam", f"{mailbox} reports")


def fresh_copy(repo: Path, where: Path) -> Path:
    """The same commit in a clone with no caches, records or memos."""
    git(repo.parent, "clone", "-q", str(repo), str(where))
    return where


def test_a_report_change_is_answered_from_the_record_with_the_same_bytes(reconciled: Path, tmp_path: Path,
                                                                         computed: list[int]) -> None:
    app.status_commit(reconciled, "HEAD")
    assert len(computed) == 1
    assert (Path(pygit2.discover_repository(str(reconciled))) / "ksgitops-state" / PLACED_FILE).is_file()
    report(reconciled, FLORIN, 0, "2027-05-05T00:00:00Z")
    second = app.status_commit(reconciled, "HEAD")
    assert len(computed) == 1 and second.commit is not None  # the record answered
    assert isinstance(second.result, PlacedResult)
    clone = fresh_copy(reconciled, tmp_path / "clone")
    git(clone, "reset", "-q", "--hard", "HEAD~1")  # the commit the second run summarized
    fresh = app.status_commit(clone, "HEAD")
    assert len(computed) == 2  # no record there: computed
    assert committed_files(clone) == committed_files(reconciled)
    assert "2027-05-05T00:00:00Z" in committed_files(reconciled)[STATUS_MD].decode()
    assert sorted(fresh.problems) == sorted(second.problems)


def test_a_source_change_is_computed_again(reconciled: Path, tmp_path: Path, computed: list[int]) -> None:
    app.status_commit(reconciled, "HEAD")
    report(reconciled, GUILDER, 1, "2027-06-06T00:00:00Z")
    app.status_commit(reconciled, "HEAD")
    assert len(computed) == 1
    florin = reconciled / "spaces" / "imw1" / "florin.yaml"
    florin.write_text(florin.read_text().replace("env: prod", "env: dev"))  # florin leaves the placements
    git(reconciled, "commit", "-qam", "florin leaves")
    moved = app.status_commit(reconciled, "HEAD")
    assert len(computed) == 2  # the record no longer proves anything
    assert FLORIN not in {mb for plans in moved.result.placements.values() for p in plans for mb in p.mailboxes}
    clone = fresh_copy(reconciled, tmp_path / "clone")
    git(clone, "reset", "-q", "--hard", "HEAD~1")
    app.status_commit(clone, "HEAD")
    assert committed_files(clone) == committed_files(reconciled)


def test_a_file_turned_into_a_link_to_the_same_blob_is_computed_again(reconciled: Path, tmp_path: Path,
                                                                     computed: list[int]) -> None:
    """A link is read as absent: a mailbox's space.yaml made a link whose target is its old text
    (the same blob id) turns the mailbox into a source space."""
    app.status_commit(reconciled, "HEAD")
    space_yaml = reconciled / "spaces" / FLORIN / "space.yaml"
    text = space_yaml.read_text()
    space_yaml.unlink()
    space_yaml.symlink_to(text)
    git(reconciled, "add", "-A")
    git(reconciled, "commit", "-qm", "a link")
    assert git(reconciled, "rev-parse", f"HEAD:spaces/{FLORIN}/space.yaml") == git(reconciled, "rev-parse", f"HEAD~1:spaces/{FLORIN}/space.yaml")
    source = git(reconciled, "rev-parse", "HEAD")
    linked = app.status_commit(reconciled, "HEAD")
    assert len(computed) == 2
    clone = fresh_copy(reconciled, tmp_path / "clone")
    git(clone, "reset", "-q", "--hard", source)
    fresh = app.status_commit(clone, "HEAD")
    assert committed_files(clone) == committed_files(reconciled)
    assert sorted(fresh.problems) == sorted(linked.problems)


def test_a_record_of_other_code_or_a_broken_one_is_not_used(reconciled: Path, computed: list[int]) -> None:
    app.status_commit(reconciled, "HEAD")
    state = Path(pygit2.discover_repository(str(reconciled))) / "ksgitops-state" / PLACED_FILE
    state.write_bytes(b"not a pickle")
    report(reconciled, FLORIN, 1, "2027-07-07T00:00:00Z")
    app.status_commit(reconciled, "HEAD")
    assert len(computed) == 2
    state.write_bytes(pickle.dumps({"format": "other-code", "record": None}))
    report(reconciled, FLORIN, 0, "2027-07-08T00:00:00Z")
    app.status_commit(reconciled, "HEAD")
    assert len(computed) == 3


def test_a_link_in_place_of_the_record_is_refused(reconciled: Path, tmp_path: Path) -> None:
    state = Path(pygit2.discover_repository(str(reconciled))) / "ksgitops-state"
    state.mkdir(exist_ok=True)
    outside = tmp_path / "outside"
    outside.write_bytes(b"kept")
    (state / PLACED_FILE).symlink_to(outside)
    with pytest.raises(LinkError):
        DiskCache.for_git_dir(str(state.parent))
    assert outside.read_bytes() == b"kept"


def test_a_kind_table_pickles_its_own_kinds_only() -> None:
    table = KindTable()
    table.add("example.org", "Widget", KindInfo("widgets", True))
    copy = pickle.loads(pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
    assert copy.entries() == table.entries() and copy.digest() == table.digest()
    assert copy.lookup("example.org", "Widget") == KindInfo("widgets", True)
    assert len(pickle.dumps(table)) < len(pickle.dumps(table._table))


@pytest.mark.parametrize("where", ["commit", "worktree"])
def test_the_summary_is_made_with_the_cyclic_gc_paused_and_resumed_after(reconciled: Path, monkeypatch,
                                                                         where: str) -> None:
    import gc

    from ksgitops.core.status import summary
    seen: list[bool] = []
    real = summary.summarize

    def noting(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)
    monkeypatch.setattr(summary, "summarize", noting)
    assert gc.isenabled()
    if where == "commit":
        status_room.status_commit(reconciled)
    else:
        status_room.status_worktree(reconciled)
    assert seen == [False] and gc.isenabled()
