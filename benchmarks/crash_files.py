"""What the crash harness (benchmarks/crash.py) reads and compares: a work tree's files (read once
while they stay the same), HEAD's tree, the generated roots a path belongs to, and the files
ksgitops did not generate (reports, an upsynced object, a person's note) placed in every mailbox."""
from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import yaml

from ksgitops.core.status.reported import dump_report


GIT_ENV = {"GIT_AUTHOR_NAME": "crash", "GIT_AUTHOR_EMAIL": "crash@example.invalid", "GIT_COMMITTER_NAME": "crash",
           "GIT_COMMITTER_EMAIL": "crash@example.invalid"}


@dataclass
class State:
    files: dict[str, bytes]  # the whole work tree (without .git)
    tree: str = ""  # HEAD's tree id (checkout modes)


Files = dict[str, bytes]


_READ: dict[str, tuple[tuple[int, int, int, int], bytes]] = {}  # path -> (stat key, content)


def snapshot(root: Path) -> Files:
    """The whole work tree (without .git). A file whose inode, size, mtime and ctime are those of
    an earlier read is not read again (ksgitops writes by rename, so a rewrite changes the inode);
    one changed in the last second is never cached, so a rewrite within one timestamp tick is seen."""
    out: Files = {}
    racy = time.time_ns() - 1_000_000_000
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                if not (folder == str(root) and entry.name == ".git"):
                    stack.append(entry.path)
                continue
            st = entry.stat(follow_symlinks=False)
            key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            cached = _READ.get(entry.path)
            if cached is not None and cached[0] == key:
                data = cached[1]
            else:
                with open(entry.path, "rb") as f:
                    data = f.read()
                if max(st.st_mtime_ns, st.st_ctime_ns) < racy:
                    _READ[entry.path] = (key, data)
            out[os.path.relpath(entry.path, root)] = data
    return out


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


def head_tree(repo: Path) -> str:
    return str(pygit2.Repository(str(repo)).head.peel(pygit2.Commit).tree_id)


def mailboxes(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "spaces").iterdir() if "-mb-" in p.name)


def root_of(path: str) -> str | None:
    """The generated root a path belongs to (None: a source file or a kept one)."""
    parts = path.split("/")
    if path == "STATUS.md":
        return path
    if len(parts) > 3 and parts[0] == "spaces" and parts[2] == ".ksgitops":
        return "/".join(parts[:4])
    if len(parts) > 2 and parts[0] == "spaces" and "-mb-" in parts[1]:
        owned = parts[2] in ("space.yaml", "syncerconfig.yaml", "kustomization.yaml", "objects", "patches")
        return "/".join(parts[:2]) if owned else None
    return None


def by_root(files: Files) -> dict[str, Files]:
    out: dict[str, Files] = {}
    for path, data in files.items():
        root = root_of(path)
        if root is not None:
            out.setdefault(root, {})[path] = data
    return out


# --- the files ksgitops did not generate ----------------------------------------------------------

_IDENTITIES: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = {}
_IDENTITY_OF: dict[bytes, dict[str, Any]] = {}  # base copies repeat across mailboxes: parse each once
_REPORTS: dict[tuple[str, str, int], Files] = {}


def identities(repo: Path, mailbox: str) -> list[tuple[str, dict[str, Any]]]:
    """(path under objects/, identity) of every object of a mailbox; the states toggle contents,
    never which objects a mailbox holds, so they are read once."""
    key = (str(repo), mailbox)
    if key not in _IDENTITIES:
        base = repo / "spaces" / mailbox / "objects"
        found = []
        for path in sorted(base.rglob("*.yaml")):
            data = path.read_bytes()
            if data not in _IDENTITY_OF:
                body = yaml.load(data, Loader=yaml.CSafeLoader)
                md = body["metadata"]
                identity = {"apiVersion": body["apiVersion"], "kind": body["kind"], "name": md["name"],
                            "generation": 1}
                if md.get("namespace"):
                    identity["namespace"] = md["namespace"]
                _IDENTITY_OF[data] = identity
            found.append((path.relative_to(base).as_posix(), _IDENTITY_OF[data]))
        _IDENTITIES[key] = found
    return _IDENTITIES[key]


def reports_for(repo: Path, mailbox: str, day: int) -> Files:
    """A report for every object of a mailbox, dated `day` (what collect or sync would write)."""
    key = (str(repo), mailbox, day)
    if key not in _REPORTS:
        _REPORTS[key] = {f"spaces/{mailbox}/reported/{rel}": dump_report(
            {"object": identity, "reportedAt": f"2026-11-{day:02d}T00:00:00Z", "status": {}})
            for rel, identity in identities(repo, mailbox)}
    return _REPORTS[key]


def place_kept(repo: Path, day: int) -> Files:
    """Reports, an upsynced object and a person's note in every mailbox; returns them."""
    kept: Files = {}
    for mb in mailboxes(repo):
        kept.update(reports_for(repo, mb, day))
        kept[f"spaces/{mb}/upsynced/core/configmaps/default/seen.yaml"] = f"seen by {mb}\n".encode()
        kept[f"spaces/{mb}/NOTES.md"] = f"# {mb}\nA person wrote this; ksgitops must keep it.\n".encode()
    for path, data in kept.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_bytes(data)
    return kept


def forget_reads() -> None:
    """Drop every file, identity and report kept from earlier reads."""
    for cache in (_READ, _IDENTITIES, _REPORTS):
        cache.clear()
