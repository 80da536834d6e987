"""What the status step reads, as a protocol: the mailboxes (what each WEC was sent, its reports,
its revision) and the spaces' problems files. Implementations: io/status_sources.py (git, work
tree) and memory.py (in memory)."""
from __future__ import annotations

import hashlib
from typing import Protocol

from msgspec import Struct, field


class MailboxListing(Struct):
    """What a mailbox holds, by content key: objects/<rel>.yaml, patches/<rel>.json, reported/<name>."""

    objects: dict[str, str] = field(default_factory=dict)  # rel -> key
    patches: dict[str, str] = field(default_factory=dict)  # rel -> key
    reports: dict[str, tuple[str, str]] = field(default_factory=dict)  # name below reported/ -> (path, key)


class StatusSource(Protocol):
    def mailbox_key(self, mailbox: str) -> str:
        """Changes whenever anything `listing`, `blob` or `revision` would return for the mailbox changes."""

    def listing(self, mailbox: str) -> MailboxListing: ...

    def blob(self, key: str) -> bytes: ...

    def revision(self, mailbox: str) -> str:
        """The mailbox's latest revision (syncreport.py)."""

    def problems_file(self, space: str) -> str:
        """The content key of `spaces/<space>/.ksgitops/problems.yaml`, "" when there is none."""


def digest(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=20).hexdigest()


__all__ = ["MailboxListing", "StatusSource", "digest"]
