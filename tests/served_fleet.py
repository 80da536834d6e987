"""A fleet served by a real `git daemon` for the runtime tests (tests/test_runtime*.py): the example
served as a bare repository that logs its ref updates, a "human" clone editing it with the git
CLI, RemoteRuntimes on it, and what a test reads back (heads, trailers, generated ids, and that no
update was forced)."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pygit2

from conftest import copy_example_sources, git, git_init
from gitdaemon import GitDaemon
from ksgitops.app import usecases as app, runtimes
from ksgitops.core.load.repoconfig import SOURCE_TRAILER
from ksgitops.io.serve import Observer


BRANCH = "main"


def served_example(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git") -> Path:
    """The example's sources, committed and served as `name`; ref updates are logged."""
    source = git_init(copy_example_sources(tmp_path / f"seed-{name}"))
    bare = daemon.bare(name, source)
    subprocess.run(["git", "-C", str(bare), "config", "core.logAllRefUpdates", "always"], check=True)
    return bare


def human_clone(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git", who: str = "human") -> Path:
    path = tmp_path / who
    subprocess.run(["git", "clone", "-q", daemon.url(name), str(path)], check=True)
    return path


def human_edit(clone: Path, path: str, old: str, new: str, message: str) -> str:
    """Commit a source edit in the human's clone and push it (rebasing on what reconcilers pushed)."""
    file = clone / path
    for _ in range(20):
        git(clone, "pull", "-q", "--rebase", "origin", BRANCH)
        file.write_text(file.read_text().replace(old, new))
        git(clone, "commit", "-qam", message)
        try:
            git(clone, "push", "-q", "origin", BRANCH)
            return git(clone, "rev-parse", "HEAD")
        except subprocess.CalledProcessError:
            git(clone, "reset", "-q", "--hard", "HEAD~1")
            time.sleep(0.05)
    raise AssertionError("the human could not push")


def flip_env(clone: Path, path: str, message: str) -> str:
    """Commit and push a change of the file's first `env:` label (prod <-> dev)."""
    git(clone, "pull", "-q", "--rebase", "origin", BRANCH)
    text = (clone / path).read_text()
    old, new = ("env: prod", "env: dev") if "env: prod" in text else ("env: dev", "env: prod")
    return human_edit(clone, path, old, new, message)


def remote_head(bare: Path) -> str:
    return git(bare, "rev-parse", BRANCH)


def fast_forward_only(bare: Path) -> list[str]:
    """The branch's logged heads, oldest first; asserts each update was a fast-forward."""
    lines = (bare / "logs" / "refs" / "heads" / BRANCH).read_text().splitlines()
    heads = []
    for line in lines:
        old, new = line.split()[:2]
        if set(old) != {"0"}:
            assert subprocess.run(["git", "-C", str(bare), "merge-base", "--is-ancestor", old, new]).returncode == 0, \
                f"forced update {old[:12]} -> {new[:12]}"
        heads.append(new)
    return heads


def fresh_generated(bare: Path, tmp_path: Path, label: str) -> dict[str, str]:
    """Tree ids of the generated roots a fresh reconcile + status of the head's sources gives."""
    clone = tmp_path / f"fresh-{label}"
    subprocess.run(["git", "clone", "-q", "--bare", str(bare), str(clone)], check=True)
    repo = pygit2.Repository(str(clone))
    src = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    app.reconcile_commit(clone, BRANCH)
    app.status_commit(clone, BRANCH)
    return generated_ids(clone, src)


def generated_ids(repo_path: Path, exclude_sources_of: Any = None) -> dict[str, str]:
    """{path: tree or blob id} of every generated root of the branch head (mailboxes, .ksgitops, STATUS.md)."""
    repo = pygit2.Repository(str(repo_path))
    tree = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit).tree
    ids = {"STATUS.md": str(tree["STATUS.md"].id)} if "STATUS.md" in tree else {}
    for space in repo[tree["spaces"].id]:
        sub = repo[space.id]
        if "-mb-" in space.name:
            ids[f"spaces/{space.name}"] = str(space.id)
        elif ".ksgitops" in sub:
            ids[f"spaces/{space.name}/.ksgitops"] = str(sub[".ksgitops"].id)
    return ids


def trailer(bare: Path, rev: str = BRANCH) -> str | None:
    message = git(bare, "log", "-1", "--format=%B", rev)
    found = [line.split(": ", 1)[1] for line in message.splitlines() if line.startswith(f"{SOURCE_TRAILER}: ")]
    return found[0] if found else None


def remote_runtime(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git", who: str = "rt") -> runtimes.RemoteRuntime:
    return runtimes.RemoteRuntime(daemon.url(name), BRANCH, tmp_path / f"work-{who}", Observer(), retries=8)
