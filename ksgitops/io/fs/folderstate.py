"""Which part of a git directory's state folder belongs to one ksgitops folder.

`<git dir>/ksgitops-state/` holds what every ksgitops folder of the repository shares: what is
keyed by content (the blob-id cache), what is about commits (their records and status memos, the
checkout journal, the ref intent), `memos.lock` and the `clock` probe. What describes one folder
of the work tree — its stat record, its work-tree status memo, its monitor's lock, socket, plan
and log — is that folder's own, so that two ksgitops folders of one repository (a monorepo's
`infra/staging/` and `infra/prod/`) do not overwrite each other's:

- the folder at the top of the work tree (and a bare repository) keeps it in the state folder
  itself, where ksgitops always kept it;
- a folder below the top keeps it in `ksgitops-state/folders/<slug>-<digest>/`, named from its
  path relative to the top: the digest of that path tells folders apart, the slug tells a person.

The top is found as git finds it: the nearest folder at or above the ksgitops folder holding a
`.git` entry (a work tree set up only through GIT_DIR or core.worktree has none: its folders
share the top's state, as before). This module is loaded by every command before deciding on a
hand-off (handoff.py), so it imports nothing beyond `os`.
"""
from __future__ import annotations

import os

STATE = "ksgitops-state"  # as io/fs/paths.STATE_DIR (not imported: it would load pathlib)
FOLDERS = "folders"
SLUG = 40  # characters of the path kept in a folder's name


def relative(folder: str | os.PathLike[str]) -> str:
    """The path of `folder` from the top of the git work tree holding it, '/'-separated ("": it
    is the top, a bare repository, or in no work tree)."""
    real = os.path.realpath(folder)
    here = real
    while True:
        if os.path.lexists(os.path.join(here, ".git")) or is_git_dir(here):
            return "" if here == real else os.path.relpath(real, here).replace(os.sep, "/")
        parent = os.path.dirname(here)
        if parent == here:
            return ""
        here = parent


def is_git_dir(folder: str) -> bool:
    """`folder` is a git directory (a bare repository, or a work tree's `.git`), as git tells one."""
    return os.path.isfile(os.path.join(folder, "HEAD")) and os.path.isdir(os.path.join(folder, "objects"))


def name_of(rel: str) -> str:
    """The state sub-folder's name for the folder at `rel` below the top: a readable slug and a
    digest of the exact path (bytes), so two paths never share one."""
    import hashlib
    slug = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "+" if c == "/" else "_" for c in rel)
    return f"{slug[:SLUG].lstrip('.') or '_'}-{hashlib.sha256(os.fsencode(rel)).hexdigest()[:16]}"


def place_of(folder: str | os.PathLike[str]) -> str:
    """The state folder of the ksgitops folder `folder`, relative to its git directory."""
    rel = relative(folder)
    return f"{STATE}/{FOLDERS}/{name_of(rel)}" if rel else STATE


def shared(own: str | os.PathLike[str]) -> str:
    """The repository's state folder, given a folder's own (`place_of` below a git directory)."""
    own = os.fspath(own)
    up = os.path.dirname(own)
    if os.path.basename(up) == FOLDERS and os.path.basename(os.path.dirname(up)) == STATE:
        return os.path.dirname(up)
    return own
