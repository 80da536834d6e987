"""pygit2, loaded on its first use: a command that opens no repository (a work-tree run the record
proves) skips its import, ~0.09 s of libgit2, OpenSSL's certificate store and pygit2's enums."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pygit2 as pygit2
else:
    from ..lazy import lazy_module

    pygit2 = lazy_module("pygit2")
