"""What a work tree's `.ksgitops-journal` may name: only roots ksgitops writes (see worktree.py,
"A journal is trusted only as far as it names what ksgitops writes"). A journal that names
anything else was not written by ksgitops and is refused before anything is touched."""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ...names import MAILBOX_PARTS
from ...core.load.snapshot import GENERATED_DIR, MAX_FILE_BYTES
from ...core.tree import KEEP, OTHERS, REUSE
from .staging import Change, sibling
from .paths import STATUS_FILE, LinkError, check_path

def made_names(change: Change) -> list[str] | None:
    """The top-level names a root that did not exist is made of (None: a file root, or it existed)."""
    if change.existed or not isinstance(change.content, dict):
        return None
    return sorted(name for name, value in change.content.items()
                  if name != OTHERS and value is not KEEP and value is not REUSE)


def change_of(entry: Any) -> Change | None:
    if not isinstance(entry, dict):
        return None
    path, existed, made = entry.get("path"), entry.get("existed"), entry.get("made")
    keep, reuse = entry.get("keep", []), entry.get("reuse", [])
    if not isinstance(path, str) or not isinstance(existed, bool) \
            or not all(isinstance(paths, list) and all(isinstance(k, str) for k in paths) for paths in (keep, reuse)) \
            or not (made is None or (isinstance(made, list) and all(isinstance(m, str) for m in made))):
        return None
    return Change(path, None, existed, list(keep), made, list(reuse))


def owned_root_problem(root: Path, rel: str, keep: list[str]) -> str | None:
    """Why `rel` (with kept or reused paths `keep`) is not a root ksgitops writes in the work tree
    `root`, or None."""
    shown = repr(rel[:200])
    if not _plain_relative(rel):
        return f"root {shown} is not a plain path inside the repository"
    bad = next((k for k in keep if not _plain_relative(k)), None)
    if bad is not None:
        return f"kept path {bad[:200]!r} of root {shown} is not a plain path inside it"
    try:
        check_path(root, rel)
    except LinkError:
        return f"root {shown} has a symbolic link on its way"
    trash = str(sibling(Path(rel), "trash"))
    for kept in keep:  # recovery moves each between the root and its old copy: never through a link
        try:
            check_path(root, f"{rel}/{kept}", last=False)
            check_path(root, f"{trash}/{kept}", last=False)
        except LinkError:
            return f"kept path {kept[:200]!r} of root {shown} has a symbolic link on its way"
    parts = rel.split("/")
    if parts == [STATUS_FILE] or (len(parts) == 4 and parts[0] == "spaces" and parts[2] == GENERATED_DIR):
        return None
    if parts[0] == "spaces" and (len(parts) == 2 or (len(parts) == 3 and parts[2] == "reported")):
        if _mailbox_or_absent(root / "spaces" / parts[1]):
            return None
        return f"root {shown} is a source space, not a mailbox ksgitops writes"
    return f"root {shown} is nothing ksgitops writes"


def unlisted_kept(root: Path, change: Change) -> str | None:
    """A journal's mailbox root whose folder holds what a mailbox keeps (reports, upsynced
    objects, a person's files) that is neither in its old copy nor among the paths the journal
    carries: rolling back would remove it with the folder, so the journal is not this work tree's."""
    parts = change.path.split("/")
    target = root / change.path
    trash = sibling(target, "trash")
    if len(parts) != 2 or not os.path.isdir(target) or not os.path.isdir(trash):
        return None
    carried = {p.split("/")[0] for p in change.carried}
    for name in sorted(os.listdir(target)):
        if name not in MAILBOX_PARTS and name not in carried and not os.path.lexists(trash / name):
            return f"root {change.path[:200]!r} holds {name[:200]!r}, which its journal does not carry back"
    return None


def _plain_relative(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\0" not in rel and \
        all(part not in ("", ".", "..") for part in parts) and parts[0] != ".git"


def _mailbox_or_absent(folder: Path) -> bool:
    """A folder that is not there (a new root: only its `.NAME.ksgitops-*` siblings can be), or
    one whose space.yaml makes it a ksgitops mailbox."""
    return not os.path.lexists(folder) or is_mailbox_file(folder / "space.yaml")


def is_mailbox_file(space_yaml: Path) -> bool:
    """Whether the file is a ksgitops mailbox's space.yaml (a regular file, small, that parses)."""
    try:
        st = os.lstat(space_yaml)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return False
        from ...core.load.parse import parse_file  # a journal's recovery only: YAML is not loaded otherwise
        from ...core.load.read import is_mailbox_document
        parsed = parse_file("space.yaml", space_yaml.read_bytes())  # the parser's limits: no alias bombs
    except OSError:
        return False
    return len(parsed.docs) == 1 and is_mailbox_document(parsed.docs[0][1])
