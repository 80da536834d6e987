"""A bare repository's branch tip read from its files, as git stores refs, without loading pygit2:
enough for `reconcile --commit` to see that the branch still points at the commit its record was
made on (app/usecases.py). Anything out of the plain case (an `[include]` in the config, reftable
refs, a detached or symbolic chain, a name that is also a tag or another ref) answers None, and
the caller asks libgit2."""
from __future__ import annotations

import os
import re
import stat

_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
_SECTION = re.compile(r"\s*\[\s*([A-Za-z0-9.-]+)\s*(\"[^\"]*\")?\s*\]\s*")


def bare_git_dir(path: str) -> str | None:
    """`path` (with a trailing slash) when it is a bare repository by its own config, else None."""
    top = path.rstrip("/")
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode) or not os.path.isfile(f"{top}/HEAD") \
                or not os.path.isdir(f"{top}/objects") or not os.path.isdir(f"{top}/refs"):
            return None
        with open(f"{top}/config", encoding="utf-8") as f:
            config = f.read()
    except (OSError, UnicodeDecodeError):
        return None
    return f"{top}/" if _config_says(config, "core", "bare") == "true" and \
        _config_says(config, "extensions", "refstorage") is None else None


def _config_says(text: str, section: str, key: str) -> str | None:
    """A key's last value in a plain section ('' when the config includes another, which is not read)."""
    current, found = "", None
    for line in text.splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if not line:
            continue
        header = _SECTION.fullmatch(line)
        if header is not None:
            current = header.group(1).lower() + (header.group(2) or "")
            if current.startswith(("include", "includeif")):
                return ""
            continue
        name, _, value = line.partition("=")
        if current == section and name.strip().lower() == key:
            found = value.strip().lower() if _ else "true"
    return found


def branch_tip(git_dir: str, source: str) -> tuple[str, str] | None:
    """(branch ref, commit id) that `source` (HEAD, a branch name, refs/heads/NAME) names in the
    bare repository `git_dir`, as libgit2 would resolve it; None when unsure."""
    if source == "HEAD":
        head = _read(git_dir, "HEAD")
        if head is None or not head.startswith("ref: refs/heads/"):
            return None
        ref = head[len("ref: "):]
    elif source.startswith("refs/heads/"):
        ref = source
    else:  # git's revision order: a name that is also a file in the git dir, a ref or a tag wins
        if any(_ref_id(git_dir, other) is not None or os.path.lexists(os.path.join(git_dir, other))
               for other in (source, f"refs/{source}", f"refs/tags/{source}")):
            return None
        ref = f"refs/heads/{source}"
    found = _ref_id(git_dir, ref)
    return (ref, found) if found is not None else None


def _ref_id(git_dir: str, ref: str) -> str | None:
    if ".." in ref.split("/") or not ref.startswith("refs/"):
        return None
    loose = _read(git_dir, ref)
    if loose is not None:
        return loose if _ID.fullmatch(loose) else None
    packed = _read(git_dir, "packed-refs")
    for line in (packed or "").splitlines():
        if line.endswith(f" {ref}"):
            found = line[: -len(ref) - 1]
            return found if _ID.fullmatch(found) else None
    return None


def _read(git_dir: str, name: str) -> str | None:
    path = os.path.join(git_dir, name)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
