"""A checkout's index changes through `git update-index` in hostile repositories: a split or sparse
index configured, hooks and an fsmonitor, a path in conflict, a path git's own checks skip. Each
ends as libgit2 alone would leave it (each failed before `git update-index` ran as libgit2 does)."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import pygit2

from conftest import EXAMPLE, git, git_init
from ksgitops.io.git import indexupdate


def _fleet(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    return git_init(tmp_path / "repo")


def _edit(repo: Path) -> None:
    """A source change that rewrites mailbox files only (a file-by-file checkout: git update-index)."""
    page = repo / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("common web site", "edited web site"))
    git(repo, "commit", "-qam", "edit")


def _new_wec(repo: Path) -> None:
    """A new WEC: its mailbox appears whole (a checkout through libgit2's index)."""
    florin = (repo / "spaces/imw1/florin.yaml").read_text()
    (repo / "spaces/imw1/dollar.yaml").write_text(florin.replace("florin", "dollar"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a new WEC")


def _index_matches_head(repo: Path) -> None:
    tree = [line.split(" ", 2) for line in git(repo, "ls-tree", "-r", "HEAD").splitlines()]
    assert git(repo, "ls-files", "-s").splitlines() == [f"{mode} {rest.replace(chr(9), ' 0' + chr(9), 1)}"
                                                         for mode, _, rest in tree]


def _commit_aside(repo: Path, path: str, data: bytes, message: str) -> None:
    """A commit on the branch made without the repository's index (as a push or a fetch moves it)."""
    import os
    import subprocess
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git/aside-index"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}

    def run(*args: str, data: bytes | None = None) -> str:
        return subprocess.run(["git", "-C", str(repo), "-c", "core.splitIndex=false", *args], input=data, env=env,
                              check=True, capture_output=True).stdout.decode().strip()
    run("read-tree", "HEAD")
    blob = run("hash-object", "-w", "--stdin", data=data)
    run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", "HEAD", "-m", message)
    run("update-ref", "refs/heads/main", commit)
    (repo / ".git/aside-index").unlink()
    (repo / path).write_bytes(data)


def test_split_index_config_leaves_an_index_ksgitops_can_read(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """With `core.splitIndex=true` in the repository's config and only ksgitops writing its index
    (sources arrive by push or fetch), git writes a whole index all the same: a split one (`link`
    extension) is one libgit2 refuses, and the next checkout through libgit2 (a new mailbox) would
    fail after its branch moved, and every later command with it (recovery could not finish)."""
    repo = _fleet(tmp_path)
    assert cli("reconcile", str(repo), "--commit").code == 0
    git(repo, "config", "core.splitIndex", "true")
    page = (repo / "spaces/wmw-c/httpd.yaml").read_text().replace("common web site", "edited web site")
    _commit_aside(repo, "spaces/wmw-c/httpd.yaml", page.encode(), "edit")
    assert cli("reconcile", str(repo), "--commit").code == 0  # file by file: git update-index
    florin = (repo / "spaces/imw1/florin.yaml").read_text()
    _commit_aside(repo, "spaces/imw1/dollar.yaml", florin.replace("florin", "dollar").encode(), "a new WEC")
    result = cli("reconcile", str(repo), "--commit")  # imw1-mb-dollar appears whole: libgit2
    assert result.code == 0, result
    assert not (repo / ".git/ksgitops-state/checkout.json").exists()
    pygit2.Repository(str(repo)).index  # noqa: B018 - libgit2 reads what ksgitops wrote


def test_a_hook_s_background_child_does_not_hold_the_checkout(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """git would run the repository's post-index-change hook after it writes the index (libgit2
    runs no hooks), and a child the hook leaves running (`something &`) could hold the run open."""
    repo = _fleet(tmp_path)
    assert cli("reconcile", str(repo), "--commit").code == 0
    _edit(repo)
    ran = tmp_path / "hook-ran"
    hook = repo / ".git/hooks/post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch '{ran}'\nsleep 20 &\nexit 0\n")
    hook.chmod(0o755)
    started = time.monotonic()
    result = cli("reconcile", str(repo), "--commit")
    took = time.monotonic() - started
    assert result.code == 0, result
    assert not ran.exists(), "ksgitops ran the repository's post-index-change hook"
    assert took < 10, f"the checkout waited {took:.1f} s for a hook's child"


def test_fsmonitor_hook_is_not_run_by_a_checkout(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`core.fsmonitor` naming a program: git update-index would run it when it reads the index."""
    repo = _fleet(tmp_path)
    assert cli("reconcile", str(repo), "--commit").code == 0
    _edit(repo)
    ran = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor-hook"
    hook.write_text(f"#!/bin/sh\ntouch '{ran}'\nexit 1\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    assert cli("reconcile", str(repo), "--commit").code == 0
    assert not ran.exists(), "ksgitops ran the repository's core.fsmonitor program"


def test_without_git_a_conflicted_path_ends_as_with_git(tmp_path: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A path in conflict (stages 1-3) that the checkout rewrites: git update-index replaces the
    stages by the new stage-0 entry, and so does libgit2 (no git on PATH, git failing, or another
    thread alive): the same run leaves no `UU` in `git status`, whatever PATH holds."""
    import subprocess
    repo = _fleet(tmp_path)
    assert cli("reconcile", str(repo), "--commit").code == 0
    _edit(repo)
    path = "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
    oid = git(repo, "rev-parse", f"HEAD:{path}")
    info = f"0 {'0' * 40}\t{path}\n" + "".join(f"100644 {oid} {stage}\t{path}\n" for stage in (1, 2, 3))
    subprocess.run(["git", "-C", str(repo), "update-index", "--index-info"], input=info.encode(), check=True)
    monkeypatch.setattr(indexupdate.shutil, "which", lambda name: None)
    assert cli("reconcile", str(repo), "--commit").code == 0
    assert git(repo, "ls-files", "-s", path).splitlines() == [f"100644 {git(repo, 'rev-parse', f'HEAD:{path}')} 0\t{path}"]


def test_a_path_git_ignores_is_not_a_silent_success(tmp_path: Path) -> None:
    """`git update-index --index-info` skips a path its own checks refuse (`.GIT`, `GIT~1`, a
    `.git` component...) with "Ignoring path" on stderr and exit status 0: taken as done, the
    journal would go and the index lack the entry. Such a path comes from a WEC's report ref
    (fold-in takes its reported/ as it is); libgit2 refuses it loudly, keeping the journal."""
    from ksgitops.app import usecases as app
    from report_refs import CM, cm_report, reconciled_repo, report_ref
    repo = reconciled_repo(tmp_path)
    path = Path(repo.workdir)
    report_ref(repo, "imw1-mb-florin", {f"spaces/imw1-mb-florin/{CM}": cm_report("2030-01-01T00:00:00Z")})
    app.status_commit(path, "main")  # reported/ appears (whole: libgit2)
    report_ref(repo, "imw1-mb-florin", {f"spaces/imw1-mb-florin/{CM}": cm_report("2030-01-02T00:00:00Z"),
                                        "spaces/imw1-mb-florin/reported/.GIT": b"x: 1\n"})
    try:
        app.status_commit(path, "main")  # reported/ changes file by file: git update-index
    except Exception:  # noqa: BLE001 - a loud refusal (the journal kept) is what libgit2 gives
        assert (path / ".git/ksgitops-state/checkout.json").exists()
        return
    assert git(path, "status", "--porcelain") == "", "the run succeeded but the index does not match HEAD"
