"""git's lock on the index, `<git dir>/index.lock`: whose it is, and what a command does about one.

git and libgit2 write the index by creating `index.lock` exclusively, writing the new index into it
and renaming it over `index`. A writer killed in between leaves the lock, and every later index
write (git's, libgit2's, ksgitops') fails on it; git never removes one by itself. ksgitops removes
only the one it can prove it left: each index write of a checkout (libgit2's, or its `git
update-index`, which ends with it: PR_SET_PDEATHSIG) runs holding the repository's write lock
(`durable.exclusive`) and is named in `ksgitops-state/index-intent` for as long as it runs. A later
process that holds the same lock and still finds the intent knows that write's process died in it
(a live one would hold the lock): an `index.lock` there is that write's, and goes with the intent.

Any other `index.lock` may be a live git's (`git commit` holds it while its editor is open, for as
long as that takes: no age proves one dead), so it is never touched: a commit is refused before
its branch moves, and an interrupted checkout is left unfinished, each naming the file. One window
is left, as for ref locks (`durable.moving_refs`): a kill between the intent and the writer's
creating its lock (libgit2 creates it at once; git within its first milliseconds), then another
git taking the lock and still holding it when the next command starts.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ...model import EnvError
from ..fs.durable import exclusive
from ..fs.paths import STATE_DIR, write_state

LOCK = "index.lock"
INTENT = f"{STATE_DIR}/index-intent"
ADVICE = ("another git process is writing the index (a `git commit` waiting for its editor, say), or one was "
          "killed and left its lock; when no git is running in this repository, remove the file and run again")


@contextmanager
def writing(git_dir: str) -> Iterator[None]:
    """An index write of this process, named for as long as it runs (the caller holds `exclusive(git_dir)`)."""
    intent = Path(git_dir) / INTENT
    write_state(intent, b"")
    try:
        yield
    finally:
        intent.unlink(missing_ok=True)


def settle(git_dir: str) -> None:
    """What an index write killed in the middle left (its lock, its intent) removed; the caller holds
    `exclusive(git_dir)`."""
    intent = Path(git_dir) / INTENT
    if os.path.lexists(intent):
        (Path(git_dir) / LOCK).unlink(missing_ok=True)
        intent.unlink(missing_ok=True)


def refuse_held(git_dir: str, consequence: str) -> None:
    """Raise EnvError (exit 3) naming `index.lock` when one is there that is not a dead ksgitops
    write's (that one is removed); `consequence`: what stands, for the message."""
    lock = Path(git_dir) / LOCK
    if not os.path.lexists(lock):
        return
    with exclusive(git_dir):
        settle(git_dir)
        if os.path.lexists(lock):
            raise EnvError(str(lock), f"{ADVICE}; {consequence}")
