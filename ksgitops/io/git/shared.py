"""A repository shared by a group (`git init --shared`, core.sharedRepository): what this process
creates in it gets the permissions git would give it.

git adjusts each file and folder it makes (path.c, `calc_shared_perm`, `adjust_shared_perm`): for
`group` (`true`) the group may read and write, for `all` (`world`, `everybody`) others may also
read, and an octal mode is taken as it is; a read-only file (an object) stays read-only, a folder
gets the execute bits of its read bits (and keeps the set-group-id bit its parent passes on).
libgit2 applies none of it, and ksgitops writes through libgit2 (objects, refs, the index) and on
its own (packs, its state folder). So the process's umask is loosened (or, for an octal mode, set)
once the repository is opened: every file and folder made afterwards, by any of them, is as git
would make it. The work tree's files follow the same umask (git leaves them to the user's).
"""
from __future__ import annotations

import os
from typing import Any

GROUP, EVERYBODY = 0o660, 0o664


def permission(value: str | None) -> int | None:
    """git's reading of core.sharedRepository: 0 (the umask decides), a mode git adds (group,
    everybody), or minus an exact mode (octal); None: a value git refuses."""
    if value is None:
        return 0
    word = value.strip().lower()
    if word == "":  # the key alone: true
        return GROUP
    if word in ("umask", "false", "no", "off", "0"):
        return 0
    if word in ("group", "true", "yes", "on", "1"):
        return GROUP
    if word in ("all", "world", "everybody", "2"):
        return EVERYBODY
    try:
        mode = int(word, 8)
    except ValueError:
        return None
    if mode & 0o600 != 0o600:  # git: "the owner of files must always have read and write permissions"
        return None
    return -(mode & 0o666)


def umask_for(perm: int, current: int) -> int:
    """The umask under which files (0666, or 0444 for an object) and folders (0777) are made as
    git's adjustment would leave them."""
    if perm == 0:
        return current
    tweak = -perm if perm < 0 else perm
    allowed = tweak | (tweak & 0o444) >> 2  # folders: the read bits' execute bits too
    return (~allowed & 0o777) if perm < 0 else current & ~allowed


def follow(repo: Any) -> None:
    """Set this process's umask for `repo` (a pygit2.Repository) when it is shared."""
    try:
        value = repo.config["core.sharedRepository"]
    except (KeyError, ValueError):
        return
    except Exception:  # noqa: BLE001 - an unreadable config: git would refuse it before anything here
        return
    perm = permission(str(value))
    if not perm:
        return
    current = os.umask(0)
    os.umask(umask_for(perm, current))


def current_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
