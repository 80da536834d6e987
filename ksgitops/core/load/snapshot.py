"""What the core reads: a snapshot of a repo (a commit's tree or a work tree), behind a protocol.

The core never touches git or the file system itself; `ksgitops.io` provides the implementations.
"""
from __future__ import annotations

from typing import Callable, Protocol

from msgspec import Struct

from ..tree import FileTree

MAX_FILE_BYTES = 10 * 1024 * 1024  # a source file larger is refused (parse.py)

SOURCE_SUFFIXES = (".yaml", ".yml", ".json")
GENERATED_DIR = ".ksgitops"
CONFIG_FILE = "ksgitops.yaml"


class SourceFile(Struct, frozen=True):
    """A file with a content key (git blob id, or a hash of the bytes) for the parse cache."""

    path: str
    key: str
    read: Callable[[], bytes]


class Snapshot(Protocol):
    def list_spaces(self) -> list[str]:
        """Names of the folders directly under spaces/ (not validated)."""

    def space_files(self, space: str) -> list[SourceFile]:
        """Every *.yaml|*.yml|*.json in the space, recursively, except under .ksgitops/."""

    def file(self, path: str) -> SourceFile | None:
        """One file by repo-relative path, or None."""

    def read(self, path: str) -> bytes | None:
        """The bytes of a (generated) file, or None: used for previous mailbox copies."""

    def read_tree(self, path: str) -> "FileTree | None":
        """Every file below a folder as a nested tree: used for previous generated output."""

    # Optional: `folder_key(path) -> str | None`, a key of a folder's whole content (a git tree id)
    # when the snapshot has one cheaper than reading the folder; see `folder_key` below.
    # Optional: `stray_files() -> list[str]`, see `stray_files` below.


def folder_key(snapshot: Snapshot, path: str) -> str | None:
    """The snapshot's content key of the folder at `path`, or None (no such folder, or a snapshot
    without folder keys: a work tree reads its files)."""
    key = getattr(snapshot, "folder_key", None)
    return key(path) if key is not None else None  # type: ignore[no-any-return]


def stray_files(snapshot: Snapshot) -> list[str]:
    """The source files (by repo-relative path) directly in `spaces/`, which no space holds and
    nothing reads: a space is a folder. Empty for a snapshot that does not tell."""
    strays = getattr(snapshot, "stray_files", None)
    return strays() if strays is not None else []  # type: ignore[no-any-return]


def is_source_path(path: str) -> bool:
    """A path (relative to its space) that holds input objects."""
    if not path.endswith(SOURCE_SUFFIXES):
        return False
    return GENERATED_DIR not in path.split("/")[:-1]


class Previous(Protocol):
    """Where reconcile reads the generated files as they stand (kept copies, a frozen space's
    records): HEAD's tree with --commit and in the runtime, else the work tree. A Snapshot is one."""

    def read(self, path: str) -> bytes | None:
        """The bytes of a generated file, or None."""

    def read_tree(self, path: str) -> "FileTree | None":
        """Every file below a generated folder as a nested tree, or None."""


class _Nothing:
    """No previous generated files (a first run, tests)."""

    def read(self, path: str) -> bytes | None:
        return None

    def read_tree(self, path: str) -> "FileTree | None":
        return None


NO_PREVIOUS: Previous = _Nothing()
