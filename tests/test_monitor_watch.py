"""The change feed's parts, on real inotify: what the watch tree reports for each kind of change a
person, an editor, git or the writer makes (io/fs/watchtree.py), what a history answers for a token
(io/fs/monitor.py), and what a set of changed paths vouches for (io/fs/feed.py)."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import example, given, settings, strategies as st

from ksgitops.io.fs.feed import Changes
from ksgitops.io.fs.monitor import History

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


@pytest.fixture
def watched(tmp_path: Path):
    from ksgitops.io.fs.watchtree import WatchTree
    root = tmp_path / "wt"
    (root / "spaces/mb/objects/ns").mkdir(parents=True)
    (root / "spaces/mb/space.yaml").write_text("a\n")
    (root / "spaces/mb/objects/ns/x.yaml").write_text("x\n")
    (root / ".git/objects").mkdir(parents=True)
    tree = WatchTree(str(root), lambda path: path == str(root / ".git"))
    yield root, tree
    tree.close()


def covered(changed: list[str], path: str) -> bool:
    """`path`'s change is reported: it, or a folder above it, is among the changed paths."""
    return Changes(changed).tree_may_differ(path) and any(
        c == path or path.startswith(c + "/") for c in changed)


def test_every_kind_of_change_is_reported(watched) -> None:
    root, tree = watched
    assert tree.folders == 5  # wt, spaces, mb, objects, ns: the git directory is not watched
    steps: list[tuple[Callable[[], None], str]] = [
        (lambda: (root / "spaces/mb/objects/ns/x.yaml").write_text("y\n"), "spaces/mb/objects/ns/x.yaml"),
        (lambda: os.chmod(root / "spaces/mb/space.yaml", 0o600), "spaces/mb/space.yaml"),
        (lambda: os.utime(root / "spaces/mb/space.yaml", (1, 1)), "spaces/mb/space.yaml"),
        (lambda: (root / "spaces/mb/new.yaml").write_text("n\n"), "spaces/mb/new.yaml"),
        (lambda: (root / "spaces/mb/new.yaml").unlink(), "spaces/mb/new.yaml"),
        (lambda: os.rename(root / "spaces/mb/space.yaml", root / "spaces/mb/s2.yaml"), "spaces/mb/space.yaml"),
        (lambda: os.symlink("/etc", root / "spaces/mb/link"), "spaces/mb/link"),
        (lambda: os.chmod(root / "spaces/mb/objects", 0o700), "spaces/mb/objects"),
    ]
    for change, path in steps:
        change()
        found = tree.drain()
        assert covered(found, path), (path, found)
    (root / ".git/objects/pack").write_text("p")
    assert tree.drain() == []  # the git directory's changes are not the work tree's


def test_a_folder_created_with_content_is_watched_at_once(watched) -> None:
    root, tree = watched
    (root / "spaces/new/a/b").mkdir(parents=True)  # created before the monitor reads the event
    (root / "spaces/new/a/b/f.yaml").write_text("f\n")
    found = tree.drain()
    assert covered(found, "spaces/new/a/b/f.yaml")
    (root / "spaces/new/a/b/f.yaml").write_text("g\n")  # now under a watch of its own
    assert covered(tree.drain(), "spaces/new/a/b/f.yaml")


def test_a_renamed_folder_moves_with_its_watches(watched) -> None:
    root, tree = watched
    os.rename(root / "spaces/mb", root / "spaces/mb2")
    found = tree.drain()
    assert covered(found, "spaces/mb/objects/ns/x.yaml") and covered(found, "spaces/mb2/objects/ns/x.yaml")
    (root / "spaces/mb2/objects/ns/x.yaml").write_text("z\n")
    assert tree.drain() == ["spaces/mb2/objects/ns/x.yaml"]  # the path as it is now, not as it was


def test_the_writers_swap_leaves_no_watch_on_staging_or_trash(watched) -> None:
    root, tree = watched
    stage = root / "spaces/.mb.ksgitops-stage"
    (stage / "objects/ns").mkdir(parents=True)
    (stage / "objects/ns/x.yaml").write_text("new\n")
    tree.drain()
    folders = tree.folders
    assert folders == 5  # nothing in a staging sibling is watched
    os.rename(root / "spaces/mb", root / "spaces/.mb.ksgitops-trash")
    os.rename(stage, root / "spaces/mb")
    found = tree.drain()
    assert covered(found, "spaces/mb/objects/ns/x.yaml")
    assert tree.folders == 5  # the trash's watches dropped, the new root's put in place
    shutil.rmtree(root / "spaces/.mb.ksgitops-trash")
    assert all(".ksgitops-trash" in path for path in tree.drain())  # the trash's removal is only its own
    (root / "spaces/mb/objects/ns/x.yaml").write_text("hand edit\n")
    assert tree.drain() == ["spaces/mb/objects/ns/x.yaml"]


def test_a_folder_moved_out_is_forgotten_and_one_moved_in_is_watched(watched, tmp_path: Path) -> None:
    root, tree = watched
    os.rename(root / "spaces/mb", tmp_path / "outside")
    assert covered(tree.drain(), "spaces/mb")
    assert tree.folders == 2
    (tmp_path / "outside/objects/ns/x.yaml").write_text("out there\n")
    assert tree.drain() == []
    os.rename(tmp_path / "outside", root / "spaces/back")
    assert covered(tree.drain(), "spaces/back/objects/ns/x.yaml")
    (root / "spaces/back/objects/ns/x.yaml").write_text("in here\n")
    assert tree.drain() == ["spaces/back/objects/ns/x.yaml"]
    assert tree.folders == 5


def test_a_full_queue_is_an_overflow(watched) -> None:
    from ksgitops.io.fs.watchtree import Overflow
    root, tree = watched
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    folder = root / "spaces/mb/objects/ns"
    for i in range(limit // 2 + 10):  # a create and a delete each, unread
        path = folder / f"f{i}"
        path.write_bytes(b"")
        path.unlink()
    with pytest.raises(Overflow):
        tree.drain()


def test_a_history_answers_only_for_its_own_tokens() -> None:
    history = History()
    start = history.token
    history.add(["a/b", "c"])
    middle = history.token
    history.add([])
    assert history.token == middle  # nothing new, no new token
    history.add(["a/b", "d"])
    assert history.since(start) == ["a/b", "c", "d"]
    assert history.since(middle) == ["a/b", "d"]
    assert history.since(history.token) == []
    other = History()
    for token in (other.token, None, "", f"{history.name}:x", f"{history.name}:99", f"{history.name}:-1"):
        assert history.since(token) is None


def test_a_trimmed_history_answers_unknown_for_older_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from ksgitops.io.fs import monitor
    monkeypatch.setattr(monitor, "HISTORY_LIMIT", 3)
    history = History()
    old = history.token
    history.add(["a", "b"])
    kept = history.token
    history.add(["c", "d"])
    assert history.since(old) is None and history.since(kept) is None
    history.add(["e"])
    assert history.since(history.token) == []


NAMES = st.sampled_from(["spaces", "mb", "x.yaml", "objects", ".mb.ksgitops-stage", "a"])
PATHS = st.lists(NAMES, min_size=1, max_size=4).map("/".join)


@settings(max_examples=300, deadline=None)
@given(change=PATHS, path=PATHS)
def test_what_a_change_leaves_vouched_for(change: str, path: str) -> None:
    changes = Changes([change])
    parent = change.rpartition("/")[0]
    # a path's own stamp moves when it changed, an entry in it did, or a folder above it did
    must = change == path or parent == path or path.startswith(change + "/")
    if must or ".ksgitops-" in path:
        assert changes.stamp_may_differ(path) and changes.stamp_may_differ(path + "/")
    # anything in a tree moves when the change is in it, is it, or is above it
    if change == path or change.startswith(path + "/") or path.startswith(change + "/"):
        assert changes.tree_may_differ(path)
    if not must and ".ksgitops-" not in path and not change.startswith(path + "/"):
        assert not changes.tree_may_differ(path)  # and the rest is vouched for
    assert Changes([""]).stamp_may_differ(path) and Changes([""]).tree_may_differ(path)


def test_a_work_tree_beyond_the_kernels_watches_is_refused_with_the_reason(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel caps watches (fs.inotify.max_user_watches): past it, add_watch fails with ENOSPC,
    and the monitor says so instead of watching part of the work tree."""
    import errno
    from inotify_simple import INotify
    from ksgitops.io.fs import monitor, watchtree
    (tmp_path / "wt/spaces/a/b").mkdir(parents=True)
    (tmp_path / "wt/.git").mkdir()
    calls = []
    original = INotify.add_watch

    def limited(self: INotify, path: str, mask: int) -> int:
        calls.append(path)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, path, mask)
    monkeypatch.setattr(INotify, "add_watch", limited)
    with pytest.raises(watchtree.TooManyFolders, match="2 folders are watched.*max_user_watches"):
        watchtree.WatchTree(str(tmp_path / "wt"), lambda path: False)
    read, write = os.pipe()
    assert monitor.serve(tmp_path / "wt", tmp_path / "wt/.git", write) == 1
    told = os.read(read, 4096).decode()
    os.close(read)
    assert told.startswith("error: ") and "max_user_watches" in told
    assert not (tmp_path / "wt/.git/ksgitops-state/monitor.sock").exists()


def test_a_name_reused_before_the_monitor_caught_up_is_never_misplaced(watched) -> None:
    """A folder made under a temporary name and renamed into place, twice: the monitor reads the
    first one's events when the second already holds the temporary name. It must not put the
    second one's watch at the first one's new name (the first's would go unwatched): it starts
    again instead, as after lost events, and then sees every change."""
    from ksgitops.io.fs.watchtree import Overflow, WatchTree
    root, tree = watched
    for i in range(2):
        (root / "spaces/new/sub").mkdir(parents=True)
        (root / "spaces/new/sub/a.yaml").write_text("x\n")
        if i == 0:
            os.rename(root / "spaces/new", root / "spaces/team-0")
    try:
        tree.drain()
    except Overflow:
        tree.close()
        tree = WatchTree(str(root), lambda path: path == str(root / ".git"))
    (root / "spaces/team-0/sub/a.yaml").write_text("y\n")
    (root / "spaces/new/sub/a.yaml").write_text("y\n")
    found = tree.drain()
    assert covered(found, "spaces/team-0/sub/a.yaml") and covered(found, "spaces/new/sub/a.yaml"), found
    tree.close()


def test_a_hard_link_made_in_the_work_tree_starts_a_new_history(watched) -> None:
    """A file with two names is changed through one with no event for the other: the monitor makes
    everyone look at everything once (the record then keeps such files always looked at)."""
    from ksgitops.io.fs.watchtree import Overflow
    root, tree = watched
    os.link(root / "spaces/mb/space.yaml", root / "spaces/other-name.yaml")
    with pytest.raises(Overflow, match="hard link"):
        tree.drain()


def test_an_unreadable_folder_is_reported_until_it_can_be_watched(watched, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    from ksgitops.io.fs import watchtree
    root, tree = watched
    refused = {str(root / "spaces/locked")}
    real_open = os.open

    def guarded(path, flags, *args):  # type: ignore[no-untyped-def]
        if str(path) in refused:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)
    monkeypatch.setattr(watchtree.os, "open", guarded)
    (root / "spaces/locked").mkdir()
    folders = tree.folders
    assert "spaces/locked" in tree.drain() and tree.folders == folders
    assert tree.drain() == ["spaces/locked"]  # on every drain, so every answer names it
    refused.clear()
    os.chmod(root / "spaces/locked", 0o755)  # its attributes change: watched now
    assert "spaces/locked" in tree.drain() and tree.folders == folders + 1
    (root / "spaces/locked/x.yaml").write_text("x\n")
    assert set(tree.drain()) == {"spaces/locked/x.yaml"}


FOLDERS = st.sampled_from(["a", "b", "c", "a/x", "b/x", "c/y", "a/x/z"])
STEPS = st.lists(st.tuples(st.sampled_from(["mkdir", "rename", "rmtree", "out", "in", "file", "drain"]),
                           FOLDERS, FOLDERS), max_size=25)


@settings(max_examples=120, deadline=None)
@given(steps=STEPS)
@example(steps=[("mkdir", "a/x", "a"), ("rename", "a", "b"), ("mkdir", "a/x", "a"), ("file", "b/x", "a")])
@example(steps=[("mkdir", "a", "a"), ("mkdir", "c", "c"), ("rename", "a", "b"), ("rename", "c", "a"),
                ("file", "b", "a")])
def test_after_any_folder_shuffle_every_folder_is_watched_at_its_place(tmp_path_factory, steps) -> None:
    """Folders made, renamed (within, out and in), removed, with the monitor reading its queue at
    any point: once it has caught up (starting again where it must), its watches are the work tree's
    folders, each at its place (by inode), and a file written in any of them is reported."""
    import shutil as sh
    from ksgitops.io.fs.watchtree import Overflow, WatchTree
    base = tmp_path_factory.mktemp("shuffle")
    root, outside = base / "wt", base / "outside"
    root.mkdir()

    def fresh() -> WatchTree:
        return WatchTree(str(root), lambda path: False)
    tree = fresh()
    try:
        for op, one, two in steps:
            src, dst = root / one, root / two
            try:
                if op == "mkdir":
                    src.mkdir(parents=True, exist_ok=True)
                elif op == "rename" and src.is_dir() and not dst.exists() and not str(dst).startswith(f"{src}/"):
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(src, dst)
                elif op == "rmtree" and src.is_dir():
                    sh.rmtree(src)
                elif op == "out" and src.is_dir() and not outside.exists():
                    os.rename(src, outside)
                elif op == "in" and outside.is_dir() and not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(outside, dst)
                elif op == "file" and src.is_dir():
                    (src / "f").write_text(str(len(op)))
                elif op == "drain":
                    tree.drain()
            except Overflow:
                tree.close()
                tree = fresh()
        for _ in range(3):
            try:
                tree.drain()
                break
            except Overflow:
                tree.close()
                tree = fresh()
        on_disk = {os.path.relpath(folder, root).replace(".", "", 1) if folder == str(root) else
                   os.path.relpath(folder, root): os.lstat(folder).st_ino for folder, _, _ in os.walk(root)}
        watched = {tree.path(node): node.ino for node in tree.nodes.values()}
        assert watched == on_disk
        for folder in on_disk:
            (root / folder / "probe").write_text("p")
        found = tree.drain()
        assert all(covered(found, f"{folder}/probe".lstrip("/")) for folder in on_disk), found
    finally:
        tree.close()


def test_a_folder_made_just_before_its_parent_was_renamed_is_watched(watched) -> None:
    """The folder's creation is read when its parent already has another name (the rename further
    down the queue): the monitor tries it again from where the parent is once it has read on."""
    root, tree = watched
    (root / "spaces/mb/team-new/deep").mkdir(parents=True)
    os.rename(root / "spaces/mb", root / "spaces/mb2")
    tree.drain()
    (root / "spaces/mb2/team-new/deep/x.yaml").write_text("x\n")
    assert covered(tree.drain(), "spaces/mb2/team-new/deep/x.yaml")
    assert sorted(tree.path(n) for n in tree.nodes.values() if "team-new" in tree.path(n)) == \
        ["spaces/mb2/team-new", "spaces/mb2/team-new/deep"]


def test_a_folder_moved_in_with_a_file_of_two_names_starts_a_new_history(watched, tmp_path: Path) -> None:
    from ksgitops.io.fs.watchtree import Overflow
    root, tree = watched
    (tmp_path / "bring/sub").mkdir(parents=True)
    os.link(root / "spaces/mb/space.yaml", tmp_path / "bring/sub/same.yaml")
    os.rename(tmp_path / "bring", root / "spaces/brought")
    with pytest.raises(Overflow, match="another name"):
        tree.drain()


def test_the_same_folder_at_two_places_is_refused(tmp_path: Path) -> None:
    """A bind mount shows one folder at two paths, with one watch: the monitor could not tell at
    which one a change was made, so it does not watch such a work tree."""
    import subprocess
    from ksgitops.io.fs.watchtree import CannotWatch, WatchTree
    root = tmp_path / "wt"
    (root / "spaces/mb").mkdir(parents=True)
    (root / "mirror").mkdir()
    if subprocess.run(["mount", "--bind", str(root / "spaces/mb"), str(root / "mirror")],
                      capture_output=True).returncode != 0:
        pytest.skip("no bind mount here (needs root and a mount namespace that allows it)")
    try:
        with pytest.raises(CannotWatch, match="bind mount"):
            WatchTree(str(root), lambda path: False)
    finally:
        subprocess.run(["umount", str(root / "mirror")], check=True)


def test_a_file_gone_between_a_listing_and_its_stat_is_not_an_error(tmp_path: Path) -> None:
    """A walk lists a folder, then looks at each file's links: one removed in between (a writer's
    temporary file, a test's loop) has its removal queued; it must not stop the monitor."""
    from ksgitops.io.fs.watchtree import _linked
    (tmp_path / "f").write_text("x")
    entries = list(os.scandir(tmp_path))
    (tmp_path / "f").unlink()
    assert [_linked(e) for e in entries] == [False]


def test_a_walk_failing_as_the_tree_changes_starts_a_new_history(tmp_path: Path, monkeypatch) -> None:
    from ksgitops.io.fs.monitor import Monitor
    root = tmp_path / "wt"
    (root / ".git").mkdir(parents=True)
    monitor = Monitor(root, root / ".git")
    try:
        history = monitor.history.name

        def vanished() -> list[str]:
            raise FileNotFoundError(2, "No such file or directory", str(root / "racedir/f1"))
        monkeypatch.setattr(monitor.tree, "drain", vanished)
        monitor.catch_up()
        assert monitor.restarts == 1 and monitor.history.name != history
    finally:
        monitor.tree.close()
