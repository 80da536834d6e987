"""The stat data of index entries for files a checkout has just written, as git's own checkout
records it: without it, an entry read from a tree holds zeros, and the next `git status` reads
and hashes every such file before it trusts it (4-5 s after a full write of 200,000 files).

libgit2 keeps each entry's stat in memory and writes what it holds; pygit2 gives no setter, so
the fields are set through pygit2's own cffi binding. Each entry is also marked up to date (an
in-memory flag libgit2 never writes): otherwise its write would take every entry newer than the
index it read for racily clean and diff it against the work tree. Anything unexpected (another
binding, another layout) leaves the zeros: git then hashes, as before.
"""
from __future__ import annotations

from typing import Any, Iterator

from ...core.status.gitobjects import BLOB_MODE
from ..fs.paths import INDEX_STAT, FileStats

UPTODATE = 1 << 2  # libgit2's GIT_INDEX_ENTRY_UPTODATE, kept in memory only
STAGES = 0x3000  # the stage bits of an entry's flags


def fill(index: Any, files: FileStats) -> int:
    """Set the stat data of the entries (stage 0, mode 100644) at `files`' paths (relative to the
    work tree, each file's `index_stat` as it was written or read, which holds the entry's
    content); the number set."""
    binding = _binding(index)
    if binding is None or not files:
        return 0
    ffi, lib, handle = binding
    count = lib.git_index_entrycount(handle)
    found: Iterator[tuple[Any, bytes | None]]
    if len(files) * 8 < count:  # a few paths: each looked up
        found = ((lib.git_index_get_bypath(handle, path.encode("utf-8", "surrogateescape"), 0), packed)
                 for path, packed in files.items())
    else:  # many: every entry in order, each found by its name
        get, name = lib.git_index_get_byindex, ffi.string
        found = ((e, files.get(name(e.path).decode("utf-8", "surrogateescape")))
                 for e in (get(handle, i) for i in range(count)))
    done, null, memmove, size = 0, ffi.NULL, ffi.memmove, INDEX_STAT.size
    for entry, packed in found:
        if packed is None or entry == null or entry.flags & STAGES or entry.mode != BLOB_MODE:
            continue  # a conflict's stage, or not a file ksgitops writes: not what was written
        memmove(entry, packed, size)
        entry.flags_extended |= UPTODATE
        done += 1
    return done


def _binding(index: Any) -> tuple[Any, Any, Any] | None:
    """pygit2's cffi binding and the index's handle, when the entry's stat fields are where this
    module writes them."""
    try:
        from pygit2.ffi import C, ffi  # type: ignore[attr-defined]
        handle = index._index
        if ffi.sizeof("git_index_time") != 8 or ffi.offsetof("git_index_entry", "file_size") != INDEX_STAT.size - 4:
            return None
        return ffi, C, handle
    except Exception:  # noqa: BLE001 - another pygit2: the zeros stay, git hashes
        return None
