"""Line ends as git checks a generated file out, in a work tree where git converts them.

With `core.autocrlf=true` (Git for Windows' default), or attributes such as `* text=auto eol=crlf`,
git writes text files with CRLF and reads them back as their LF blobs: `git status` is clean, and
git's index holds each file's size as written. ksgitops generates LF, the bare path's blobs byte for
byte, and commits those; in such a work tree it writes what git's checkout would (CRLF), and takes
a file for as generated when it holds either form: the LF one `git checkout` wrote before the
setting was made, or ksgitops' own checkout of a commit wrote. (A rewrite with LF of a file git had
written with CRLF changed its size, which `git status` takes for a change without reading it.)

Only the settings git reads are looked at, and without loading pygit2 unless one may convert: the
repository's, the user's and the system's config files mentioning `autocrlf`, `eol`, an include or
core.attributesFile, and attributes files (the repository's `info/attributes`, the user's or the
one core.attributesFile names, the system's, and each `.gitattributes` from the top of the work
tree down to the ksgitops folder and its `spaces/`). An attributes file further down is not looked
at (docs/REFERENCE.md says so). When one may convert, libgit2 reads them as git's convert.c
decides: once for every path when each attributes line names `*`, else path by path.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..git.discover import git_dir
from .durable import common_dir

TRUE = ("true", "yes", "on", "1")
MENTIONS = (b"autocrlf", b"eol", b"include", b"attributesfile")


class Checkout:
    """git's end-of-line conversion on checkout in one work tree."""

    def __init__(self, repo: Any, uniform: bool | None) -> None:
        self.repo = repo
        self.uniform = uniform  # the answer for every path; None: asked path by path
        self.workdir = os.path.join(str(repo.workdir), "")

    def crlf(self, path: str) -> bool:
        """Whether git checks the text file at `path` (absolute) out with CRLF line ends."""
        if self.uniform is not None:
            return self.uniform
        try:
            return _crlf(self.repo, os.path.relpath(path, self.workdir))
        except Exception:  # noqa: BLE001 - attributes libgit2 refuses: as git, take nothing for converted
            return False

    def form(self, path: str, data: bytes) -> bytes:
        """The bytes git's checkout writes at `path` for the blob `data`."""
        return data.replace(b"\n", b"\r\n") if _text(data) and b"\n" in data and self.crlf(path) else data

    def same(self, path: str, found: bytes, generated: bytes) -> bool:
        """`found` at `path` is `generated` as git's checkout, or an LF checkout, leaves it."""
        return found == generated or (len(found) == len(generated) + generated.count(b"\n") and _text(generated)
                                      and found == generated.replace(b"\n", b"\r\n") and self.crlf(path))


def same(checkout: Checkout | None, path: str, found: bytes, generated: bytes) -> bool:
    return found == generated if checkout is None else checkout.same(path, found, generated)


class AsGitReads:
    """A work tree's generated files read as git reads them: CRLF line ends as LF where git's
    checkout writes them, the blob ksgitops generated (the settings looked up at the first CR). Only
    a file as that checkout leaves it is read so: one with a lone LF or CR too is a hand edit, as
    `Checkout.same` (the writer's comparison) and `git status` take it."""

    def __init__(self, root: Path | str) -> None:
        self.root = root
        self.checkout: Checkout | None | bool = False

    def __call__(self, path: str, data: bytes) -> bytes:
        if b"\r" not in data:
            return data
        if self.checkout is False:
            self.checkout = checkout_of(self.root)
        if isinstance(self.checkout, Checkout):
            lf = data.replace(b"\r\n", b"\n")
            if self.checkout.same(path, data, lf):
                return lf
        return data


def _text(data: bytes) -> bool:
    """What git's `text=auto` converts: no NUL, and no CR already (ksgitops' files never hold one)."""
    return b"\0" not in data and b"\r" not in data


def checkout_of(root: Path | str) -> Checkout | None:
    """The conversion git's checkout makes in the work tree holding the ksgitops folder `root`
    (None: none, the usual case, told without pygit2)."""
    found = git_dir(root)
    if found is None:
        return None
    gd = Path(found)
    common = common_dir(gd)
    top = _top(Path(root), gd)
    attributes = [p for p in _attribute_files(Path(root), top, common) if os.path.isfile(p)]
    if not attributes and not _config_may_convert(gd, common):
        return None
    from ..pygit import pygit2
    try:
        repo = pygit2.Repository(found)
        if repo.workdir is None:
            return None
        named = _named_attributes(repo)
        if named:
            attributes.append(named)
        if not attributes:
            return Checkout(repo, _config(repo, "core.autocrlf") in TRUE)
        if all(_star_only(p) for p in attributes):
            return Checkout(repo, _crlf(repo, "spaces/a.yaml"))
        return Checkout(repo, None)
    except (pygit2.GitError, KeyError, ValueError, OSError):
        return None


def _top(root: Path, gd: Path) -> Path:
    """The top of the work tree: the folder whose `.git` is the git directory (else `root`)."""
    for folder in (root, *root.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return root


def _attribute_files(root: Path, top: Path, common: Path) -> list[str]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [str(common / "info" / "attributes"), "/etc/gitattributes", os.path.join(xdg, "git", "attributes"),
             str(root / "spaces" / ".gitattributes")]
    folder = root
    while True:
        files.append(str(folder / ".gitattributes"))
        if folder == top or folder == folder.parent:
            return files
        folder = folder.parent


def _config_may_convert(gd: Path, common: Path) -> bool:
    """Whether a config file git reads (or a `-c` setting) mentions a setting that converts line
    ends, or includes another file (read as text: a mention is enough to ask libgit2)."""
    env = os.environ
    if "GIT_CONFIG_PARAMETERS" in env or "GIT_CONFIG_COUNT" in env or "GIT_CONFIG" in env:
        return True
    home = os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for path in (common / "config", gd / "config.worktree", env.get("GIT_CONFIG_GLOBAL") or
                 os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config"),
                 env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"):
        try:
            with open(path, "rb") as f:
                text = f.read(1 << 20).lower()
        except OSError:
            continue
        if any(word in text for word in MENTIONS):
            return True
    return False


def _star_only(path: str) -> bool:
    """Whether every rule of an attributes file names `*`: the same attributes for every path."""
    try:
        with open(path, "rb") as f:
            lines = f.read(1 << 20).splitlines()
    except OSError:
        return False
    return all(not line.strip() or line.lstrip().startswith(b"#") or line.split()[0] == b"*" for line in lines)


def _crlf(repo: Any, rel: str) -> bool:
    """git's convert.c: the `text`, `eol` and (older) `crlf` attributes at `rel`, then core.autocrlf
    and core.eol, decide whether a text file is checked out with CRLF."""
    text, eol, crlf = (repo.get_attr(rel, name) for name in ("text", "eol", "crlf"))
    autocrlf = _config(repo, "core.autocrlf")
    if text is False or (text is None and crlf is False) or eol == "lf":
        return False
    if eol == "crlf":
        return True
    if text is None and crlf is None:  # no attribute: core.autocrlf alone decides
        return autocrlf in TRUE
    if crlf == "input":
        return False
    return autocrlf in TRUE or (autocrlf != "input" and _config(repo, "core.eol") == "crlf")


def _named_attributes(repo: Any) -> str | None:
    """The attributes file core.attributesFile names, when there is one (git and libgit2 read it in
    place of the user's default one)."""
    try:
        path = os.path.expanduser(str(repo.config["core.attributesFile"]))
    except (KeyError, ValueError):
        return None
    return path if os.path.isfile(path) else None


def _config(repo: Any, key: str) -> str:
    try:
        return str(repo.config[key]).lower()
    except (KeyError, ValueError):
        return ""
