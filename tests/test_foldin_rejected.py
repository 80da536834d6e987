"""Report refs the fold-in rejects, the mailbox and the checkout left as they were: entries a
checkout cannot bring along (links, gitlinks, executables, names git refuses, folders leading out
of the mailbox), tree objects made by hand (names with slashes, named twice, entries that are not
what they say), shared and huge folders checked without comparing every pair; and the checkout's
own guard against a path out of its folder."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from conftest import git
from ksgitops.app import usecases as app
from ksgitops.io.git.repo import TreeWriter
from report_refs import BRANCH, CM, cm_report, reconciled_repo, report_ref


def _odd_report_ref(repo: pygit2.Repository, mailbox: str, name: str, mode: int) -> None:
    """A report ref whose reported/ holds, beside a good report, an entry `name` of `mode` (a plain
    file through ksgitops' own tree writer: libgit2's refuses names such as `.GIT`)."""
    if mode == pygit2.GIT_FILEMODE_BLOB:
        report_ref(repo, mailbox, {f"spaces/{mailbox}/{CM}": cm_report("2030-01-01T00:00:00Z"),
                                   f"spaces/{mailbox}/reported/{name}": b"x: 1\n"})
        return

    def tree_of(entries: dict[str, tuple[pygit2.Oid, int]]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        for entry_name, (oid, entry_mode) in entries.items():
            builder.insert(entry_name, oid, entry_mode)
        return builder.write()

    good = repo.create_blob(cm_report("2030-01-01T00:00:00Z"))
    odd = repo.head.target if mode == pygit2.GIT_FILEMODE_COMMIT else repo.create_blob(b"x: 1\n")
    reported = tree_of({"core": (tree_of({"configmaps": (tree_of({"commonstuff": (
        tree_of({"httpd-htdocs.yaml": (good, pygit2.GIT_FILEMODE_BLOB)}), pygit2.GIT_FILEMODE_TREE)}),
        pygit2.GIT_FILEMODE_TREE)}), pygit2.GIT_FILEMODE_TREE), name: (odd, mode)})
    tree = tree_of({"spaces": (tree_of({mailbox: (tree_of({"reported": (reported, pygit2.GIT_FILEMODE_TREE)}),
                                                  pygit2.GIT_FILEMODE_TREE)}), pygit2.GIT_FILEMODE_TREE)})
    head = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    sig = pygit2.Signature("agent", "agent@example.invalid")
    name = f"refs/heads/ksgitops/reported/{mailbox}"
    previous = repo.references.get(name)
    repo.create_commit(name, sig, sig, f"ksgitops sync\n\nKsgitops-Source: {head.id}\nKsgitops-Mailbox: {mailbox}\n",
                       tree, [previous.target if previous is not None else head.id])


@pytest.mark.parametrize("name, mode, message", [
    ("link.yaml", pygit2.GIT_FILEMODE_LINK, "is not a plain file (mode 120000)"),
    ("module", pygit2.GIT_FILEMODE_COMMIT, "is not a plain file (mode 160000)"),
    ("run.yaml", pygit2.GIT_FILEMODE_BLOB_EXECUTABLE, "is not a plain file (mode 100755)"),
    (".GIT", pygit2.GIT_FILEMODE_BLOB, "is a name git refuses"),
    ("git~1", pygit2.GIT_FILEMODE_BLOB, "is a name git refuses"),
    (".g\u200cit", pygit2.GIT_FILEMODE_BLOB, "is a name git refuses"),
    ("a\\b.yaml", pygit2.GIT_FILEMODE_BLOB, "is a name git refuses"),
    ("..", pygit2.GIT_FILEMODE_BLOB, "is a name git refuses"),
])
def test_a_report_ref_holding_what_a_checkout_cannot_bring_along_is_rejected(tmp_path: Path, name: str, mode: int,
                                                                             message: str) -> None:
    """A link, a gitlink, an executable or a name git refuses in a WEC's reported/: the ref is
    rejected with a warning, the mailbox stays as it is, and the checkout stays clean (such an
    entry used to give an internal error, or a checkout stuck on its journal)."""
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    _odd_report_ref(repo, "imw1-mb-florin", name, mode)
    report_ref(repo, "imw1-mb-guilder", {f"spaces/imw1-mb-guilder/{CM}": cm_report("2030-01-01T00:00:00Z")})
    outcome = app.fold_in(path, BRANCH)
    assert outcome.folded == ["imw1-mb-guilder"]
    assert [p.message for p in outcome.problems] == [
        f"report ref rejected: spaces/imw1-mb-florin/reported/{name} {message}; reports are plain files "
        f"(mode 100644) under names git accepts"]
    assert not (path / "spaces/imw1-mb-florin/reported").exists()
    assert git(path, "status", "--porcelain") == ""
    assert not (path / ".git/ksgitops-state/checkout.json").exists()


@pytest.mark.parametrize("way_out", ["../../../../../../../../../../tmp/{marker}.yaml", "../{marker}.yaml",
                                     "./core/{marker}.yaml"])
def test_a_report_ref_whose_folders_lead_out_of_its_mailbox_is_rejected(tmp_path: Path, way_out: str) -> None:
    """Folders named `..` or `.` in a WEC's reported/: the checkout after the fold-in wrote the
    report there, outside the mailbox (up to anywhere the process may write), then libgit2
    refused the path and every later command stopped on the checkout's journal."""
    import uuid
    marker = f"ksgitops-way-out-{uuid.uuid4().hex}"
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    report_ref(repo, "imw1-mb-florin", {f"spaces/imw1-mb-florin/{CM}": cm_report("2030-01-01T00:00:00Z"),
                                         f"spaces/imw1-mb-florin/reported/{way_out.format(marker=marker)}": b"x: 1\n"})
    outcome = app.fold_in(path, BRANCH)
    assert outcome.folded == []
    odd = way_out.split("/")[0]
    assert [p.message for p in outcome.problems] == [
        f"report ref rejected: spaces/imw1-mb-florin/reported/{odd} is a name git refuses; reports are plain "
        f"files (mode 100644) under names git accepts"]
    assert not list(Path("/tmp").glob(f"{marker}*")) and not list(path.rglob(f"{marker}*"))
    assert git(path, "status", "--porcelain") == ""
    assert not (path / ".git/ksgitops-state/checkout.json").exists()


def _raw_tree(repo: pygit2.Repository, entries: list[tuple[str, int, pygit2.Oid]]) -> pygit2.Oid:
    """A tree object as given (names with '/', names twice, any order): libgit2's builders refuse them."""
    data = b"".join(f"{mode:o} ".encode() + name.encode() + b"\0" + oid.raw for name, mode, oid in entries)
    return repo.odb.write(pygit2.GIT_OBJECT_TREE, data)


def _raw_report_ref(repo: pygit2.Repository, mailbox: str, mailbox_tree: pygit2.Oid) -> None:
    head = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    tree = _raw_tree(repo, [("spaces", 0o40000, _raw_tree(repo, [(mailbox, 0o40000, mailbox_tree)]))])
    sig = pygit2.Signature("agent", "agent@example.invalid")
    repo.create_commit(f"refs/heads/ksgitops/reported/{mailbox}", sig, sig,
                       f"ksgitops sync\n\nKsgitops-Source: {head.id}\nKsgitops-Mailbox: {mailbox}\n", tree, [head.id])


@pytest.mark.parametrize("shape", ["a name with slashes", "reported named twice", "a name too long"])
def test_a_hand_made_report_tree_is_rejected(tmp_path: Path, shape: str) -> None:
    """Tree objects made by hand (no git tool writes them; `git receive-pack` takes them unless
    transfer.fsckObjects is on): an entry named `../../…/x.yaml` was written outside the work tree
    on the bulk path; `reported` named twice had one tree checked and another folded in; a name
    longer than a folder can hold left the checkout's journal stuck."""
    import uuid
    marker = f"ksgitops-hand-made-{uuid.uuid4().hex}"
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    blob = repo.create_blob(b"x: 1\n")
    good = _raw_tree(repo, [("ok.yaml", 0o100644, blob)])
    if shape == "a name with slashes":
        reported = _raw_tree(repo, [("../" * 12 + f"tmp/{marker}.yaml", 0o100644, blob)])
        mailbox_tree = _raw_tree(repo, [("reported", 0o40000, reported)])
        expected = "is a name git refuses"
    elif shape == "reported named twice":
        evil = _raw_tree(repo, [("..", 0o40000, _raw_tree(repo, [(f"{marker}.yaml", 0o100644, blob)]))])
        mailbox_tree = _raw_tree(repo, [("reported", 0o40000, good), ("reported", 0o40000, good),
                                        ("reported", 0o40000, evil)])
        expected = "spaces/imw1-mb-florin/reported twice in one folder"
    else:
        mailbox_tree = _raw_tree(repo, [("reported", 0o40000, _raw_tree(repo, [("a" * 300 + ".yaml", 0o100644, blob)]))])
        expected = "is a name git refuses"
    _raw_report_ref(repo, "imw1-mb-florin", mailbox_tree)
    outcome = app.fold_in(path, BRANCH)
    assert outcome.folded == [] and len(outcome.problems) == 1, outcome
    assert expected in outcome.problems[0].message, outcome.problems[0].message
    assert not list(Path("/tmp").glob(f"{marker}*")) and not list(path.rglob(f"{marker}*"))
    assert git(path, "status", "--porcelain") == ""
    assert not (path / ".git/ksgitops-state/checkout.json").exists()


@pytest.mark.parametrize("shape", ["a file entry naming a folder's object", "a file entry naming no object",
                                   "a folder entry naming a file's object", "a folder entry naming no object",
                                   "entries out of git's order", "a mode git reads as 100644"])
def test_a_report_tree_whose_entries_are_not_what_they_say_is_rejected(tmp_path: Path, shape: str) -> None:
    """Entries whose object is not what the mode says (or is missing) got past the check: the
    branch then held a tree git calls broken, and the checkout failed after the branch moved
    (exit 3 or 4, the journal stuck for every later command); a folder entry naming a file's
    object stopped the whole fold-in. Entries out of order and odd modes (which libgit2 reads as
    100644) went into the branch as they were, a tree git's fsck refuses."""
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    blob = repo.create_blob(b"x: 1\n")
    good = _raw_tree(repo, [("ok.yaml", 0o100644, blob)])
    nothing = pygit2.Oid(hex="1" * 40)
    reported = {
        "a file entry naming a folder's object": [("a.yaml", 0o100644, good)],
        "a file entry naming no object": [("a.yaml", 0o100644, nothing)],
        "a folder entry naming a file's object": [("d", 0o40000, blob)],
        "a folder entry naming no object": [("d", 0o40000, nothing)],
        "entries out of git's order": [("z.yaml", 0o100644, blob), ("a.yaml", 0o100644, blob)],
        "a mode git reads as 100644": [("a.yaml", 0o100664, blob)],
    }[shape]
    _raw_report_ref(repo, "imw1-mb-florin", _raw_tree(repo, [("reported", 0o40000, _raw_tree(repo, reported))]))
    report_ref(repo, "imw1-mb-guilder", {f"spaces/imw1-mb-guilder/{CM}": cm_report("2030-01-01T00:00:00Z")})
    outcome = app.fold_in(path, BRANCH)
    assert outcome.folded == ["imw1-mb-guilder"], outcome
    assert [p.message.split(": ", 1)[0] for p in outcome.problems] == ["report ref rejected"], outcome.problems
    assert git(path, "status", "--porcelain") == ""
    assert not (path / ".git/ksgitops-state/checkout.json").exists()
    assert git(path, "ls-tree", BRANCH, "spaces/imw1-mb-florin/reported") == ""  # its mailbox as it was


def test_a_report_tree_of_shared_folders_is_checked_once_each(tmp_path: Path) -> None:
    """Two names for one folder at each of 40 levels (41 small objects): the check walked all 2^40
    paths, and the fold-in (and every cycle of `run`) never ended; had it passed, the checkout
    would have written 2^40 folders."""
    import os
    import sys
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    folder = _raw_tree(repo, [])
    for _ in range(40):
        folder = _raw_tree(repo, [("a", 0o40000, folder), ("b", 0o40000, folder)])
    _raw_report_ref(repo, "imw1-mb-florin", _raw_tree(repo, [("reported", 0o40000, folder)]))
    done = subprocess.run([sys.executable, "-m", "ksgitops", "fold-in", str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "KSGITOPS_HANDOFF": "0"})
    assert done.returncode == 0 and "report ref rejected" in done.stderr + done.stdout, done.stderr
    assert "holds too many entries" in done.stderr + done.stdout
    assert git(path, "ls-tree", BRANCH, "spaces/imw1-mb-florin/reported") == ""


def test_a_report_ref_of_a_huge_folder_is_rejected_without_comparing_every_pair(tmp_path: Path) -> None:
    """The folders on the way to a mailbox's were searched for a name held twice by comparing each
    name with every one before it: 200,000 names at the top of a ref's tree (one 6 MB object)
    made 2·10^10 comparisons before the ref could be rejected."""
    import os
    import sys
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    blob = repo.create_blob(b"x: 1\n")
    reported = _raw_tree(repo, [("ok.yaml", 0o100644, blob)])
    spaces = _raw_tree(repo, [("imw1-mb-florin", 0o40000, _raw_tree(repo, [("reported", 0o40000, reported)]))])
    top = _raw_tree(repo, [*((f"n{i:07d}", 0o100644, blob) for i in range(200_000)), ("spaces", 0o40000, spaces)])
    head = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    sig = pygit2.Signature("agent", "agent@example.invalid")
    repo.create_commit("refs/heads/ksgitops/reported/imw1-mb-florin", sig, sig,
                       f"ksgitops sync\n\nKsgitops-Source: {head.id}\nKsgitops-Mailbox: imw1-mb-florin\n", top,
                       [head.id])
    done = subprocess.run([sys.executable, "-m", "ksgitops", "fold-in", str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "KSGITOPS_HANDOFF": "0"})
    assert done.returncode == 0 and "it holds n0000000, outside" in done.stderr + done.stdout, done.stderr


def test_a_checkout_never_follows_a_path_out_of_its_folder(tmp_path: Path) -> None:
    """The last guard, should such a tree reach a commit: the checkout's plan refuses a path with
    a `..` component before the branch moves (the fold-in rejects such report refs first)."""
    from ksgitops.io.git import checkout
    from ksgitops.model import KsgitopsError
    repo = reconciled_repo(tmp_path)
    old = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit).tree
    new = repo[TreeWriter(repo).apply(old, {"spaces/imw1-mb-florin/reported/../evil.yaml": b"x: 1\n"})]
    with pytest.raises(KsgitopsError) as raised:
        checkout.plan(repo, old, new.peel(pygit2.Tree), ["spaces/imw1-mb-florin"], {})
    assert raised.value.problems[0].origin.path == "spaces/imw1-mb-florin/reported/../evil.yaml"
    assert not (Path(repo.workdir) / "spaces/imw1-mb-florin/evil.yaml").exists()


def test_an_odd_entry_beside_folders_the_head_already_holds_is_found(tmp_path: Path) -> None:
    """The check looks only into folders the branch head does not hold yet: a second report ref
    whose reports are those already folded in, plus a link, is rejected all the same."""
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    report_ref(repo, "imw1-mb-florin", {f"spaces/imw1-mb-florin/{CM}": cm_report("2030-01-01T00:00:00Z")})
    assert app.fold_in(path, BRANCH).folded == ["imw1-mb-florin"]
    _odd_report_ref(repo, "imw1-mb-florin", "link.yaml", pygit2.GIT_FILEMODE_LINK)
    outcome = app.fold_in(path, BRANCH)
    assert outcome.commit is None and outcome.folded == []
    assert [p.message for p in outcome.problems] == [
        "report ref rejected: spaces/imw1-mb-florin/reported/link.yaml is not a plain file (mode 120000); "
        "reports are plain files (mode 100644) under names git accepts"]
