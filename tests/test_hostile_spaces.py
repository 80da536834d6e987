"""Spaces and source files as a careless or hostile user makes them: a space that only looks like a
mailbox, source files that are huge, or no regular files at all.
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_example_sources, git, git_init, run_cli_subprocess, write_tree

LOOKALIKE = """\
apiVersion: space.kubestellar.io/v1alpha1
kind: Space
metadata:
  name: team
  annotations: {edge.kubestellar.io/sync-target-name: florin}
spec: {Type: managed}
"""
WORK = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: precious, namespace: default}
data: {a: "1"}
"""


def test_a_space_that_only_looks_like_a_mailbox_is_never_deleted(tmp_path: Path) -> None:
    repo = write_tree(copy_example_sources(tmp_path / "repo"),
                      {"spaces/team/space.yaml": LOOKALIKE, "spaces/team/work.yaml": WORK})
    found = run_cli_subprocess("reconcile", str(repo))
    assert (repo / "spaces" / "team" / "work.yaml").read_text() == WORK, found
    assert (repo / "spaces" / "team" / "space.yaml").exists()


GIB = 1024 ** 3


def limited(*args: str, memory: int = GIB) -> subprocess.CompletedProcess[str]:
    """ksgitops in a process that may map at most `memory` bytes."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    return subprocess.run([sys.executable, "-m", "ksgitops", *args], capture_output=True, text=True,
                          preexec_fn=limit, timeout=600)


def test_a_huge_source_file_is_one_located_error_read_no_further_than_the_limit(tmp_path: Path) -> None:
    """A sparse 2 GiB file: read whole before the 10 MiB check, it needed 2 GiB of memory (under a
    memory limit the run died with an internal error, exit 4)."""
    repo = copy_example_sources(tmp_path / "repo")
    with open(repo / "spaces" / "wmw-c" / "dump.yaml", "wb") as f:
        f.truncate(2 * GIB)
    found = limited("validate", str(repo))
    assert found.returncode == 2, found.stderr
    assert found.stderr.splitlines()[0] == "spaces/wmw-c/dump.yaml: file is larger than 10 MiB", found.stderr
    assert all(line.startswith("spaces/wmw-c") for line in found.stderr.splitlines()), "its space is frozen, no more"


def test_a_huge_blob_in_a_commit_is_never_inflated(tmp_path: Path) -> None:
    """600 MiB of zeros are a few hundred kilobytes in git: a push of that size must not make the
    reconciler allocate the whole."""
    repo = git_init(copy_example_sources(tmp_path / "repo"))
    with open(repo / "spaces" / "wmw-c" / "dump.yaml", "wb") as f:
        f.truncate(600 * 1024 ** 2)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a dump")
    (repo / "spaces" / "wmw-c" / "dump.yaml").unlink()  # the work tree no longer has it: only the commit
    found = limited("reconcile", "--source", "HEAD", str(repo))
    assert found.returncode == 2, found.stderr
    assert found.stderr.splitlines()[0] == "spaces/wmw-c/dump.yaml: file is larger than 10 MiB", found.stderr
    assert all(line.startswith("spaces/wmw-c") for line in found.stderr.splitlines()), "its space is frozen, no more"


def test_a_fifo_and_a_folder_named_like_a_source_file_are_not_sources(tmp_path: Path) -> None:
    repo = copy_example_sources(tmp_path / "repo")
    os.mkfifo(repo / "spaces" / "wmw-c" / "pipe.yaml")  # reading it would wait for a writer forever
    (repo / "spaces" / "wmw-c" / "folder.yaml").mkdir()
    found = subprocess.run([sys.executable, "-m", "ksgitops", "validate", str(repo)], capture_output=True,
                           text=True, timeout=120)
    assert found.returncode == 0, found.stderr
