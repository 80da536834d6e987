"""A StatusSource over files in memory: tests, and a reconcile Result not yet written."""
from __future__ import annotations

import hashlib
from typing import Any, Mapping

from ..emit.problems import PROBLEMS_FILE
from ..load.snapshot import GENERATED_DIR
from .source import MailboxListing, digest
from .syncreport import mailbox_revision
from ..tree import Generated, put, walk


class MemorySource:
    """Mailboxes as FileTrees (e.g. a Result's `generated`) and problems files by space; keys are
    content digests."""

    def __init__(self, mailboxes: Mapping[str, Any], problems: Mapping[str, bytes] | None = None) -> None:
        self._blobs: dict[str, bytes] = {}
        self._listings: dict[str, MailboxListing] = {}
        self._revisions = {mb: mailbox_revision(tree) for mb, tree in mailboxes.items() if isinstance(tree, dict)}
        self._problems = {space: self._key(data) for space, data in (problems or {}).items()}
        for mb, tree in mailboxes.items():
            listing = MailboxListing()
            for part, target in (("objects", listing.objects), ("patches", listing.patches)):
                sub = tree.get(part) if isinstance(tree, dict) else None
                for path, data in walk(sub) if isinstance(sub, dict) else ():
                    if isinstance(data, bytes):
                        target[path.rsplit(".", 1)[0]] = self._key(data)
            sub = tree.get("reported") if isinstance(tree, dict) else None
            for path, data in walk(sub) if isinstance(sub, dict) else ():
                if isinstance(data, bytes):
                    listing.reports[path] = (f"spaces/{mb}/reported/{path}", self._key(data))
            self._listings[mb] = listing

    def _key(self, data: bytes) -> str:
        key = hashlib.blake2b(data, digest_size=20).hexdigest()
        self._blobs[key] = data
        return key

    def mailbox_key(self, mailbox: str) -> str:
        listing = self._listings.get(mailbox, MailboxListing())
        return digest(repr(sorted(listing.objects.items())), repr(sorted(listing.patches.items())),
                      repr(sorted(listing.reports.items())), self.revision(mailbox))

    def listing(self, mailbox: str) -> MailboxListing:
        return self._listings.get(mailbox, MailboxListing())

    def blob(self, key: str) -> bytes:
        return self._blobs[key]

    def revision(self, mailbox: str) -> str:
        return self._revisions.get(mailbox) or mailbox_revision({})

    def problems_file(self, space: str) -> str:
        return self._problems.get(space, "")


def with_reports(generated: Generated, reports: Mapping[str, Mapping[str, bytes]]) -> dict[str, Any]:
    """Mailbox trees of `generated` with `reports` ({mailbox: {name below reported/: bytes}}) added."""
    out: dict[str, Any] = {}
    for root, tree in generated.items():
        mb = root[len("spaces/"):]
        if root.startswith("spaces/") and "/" not in mb and isinstance(tree, dict):
            merged = {k: v for k, v in tree.items() if k != "reported"}
            for name, data in reports.get(mb, {}).items():
                put(merged.setdefault("reported", {}), name, data)  # type: ignore[arg-type]
            out[mb] = merged
    return out


def problems_in(generated: Generated) -> dict[str, bytes]:
    """{space: problems file} of a reconcile's output."""
    suffix = f"/{GENERATED_DIR}/{PROBLEMS_FILE}"
    return {root[len("spaces/"):-len(suffix)]: data for root, data in generated.items()
            if root.startswith("spaces/") and root.endswith(suffix) and isinstance(data, bytes)}


__all__ = ["MemorySource", "with_reports", "problems_in"]
