"""The record of a commit's reconcile: proof, from tree ids alone, that a commit needs nothing.

Reconcile's output over a commit depends only on `ksgitops.yaml`, on which names `spaces/` holds,
on every source space's files (`.ksgitops/status/` aside: status writes it, reconcile neither
reads nor writes it), and, in each mailbox, on `space.yaml` (what makes it a mailbox) and the
previous copies in `objects/` and `patches/` (kept on a per-(object, WEC) error). Those parts and
everything reconcile writes are summed up in a fingerprint: {path: mode and git id}. After a reconcile of a
commit the fingerprint of the resulting tree (the new commit's, or the source's when nothing
changed) is recorded with what the run reported. A later commit with an equal fingerprint has the
same inputs and already holds the same output, so reconciling it would commit nothing and report
the same problems: the record answers without parsing or building anything. A mailbox whose whole
tree id is the recorded one costs no lookup at all.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterator

from msgspec import Struct, field

from ...names import MAILBOX_PARTS
from ...core.load.snapshot import CONFIG_FILE, GENERATED_DIR
from ...core.results import PlacedResult, RecordedResult

NOT_READ = "status"  # in a source space's .ksgitops/: written by status only


class RunRecord(Struct):
    fingerprint: dict[str, str]
    mailboxes: dict[str, str]  # owned mailbox -> its tree id when recorded
    result: RecordedResult | PlacedResult  # what the run reported (a status run: what it placed)
    loaded_mailboxes: list[str] = field(default_factory=list)  # every mailbox space, read or written
    ref: str = ""  # the branch the run committed on, and the commit it left there: while the branch
    tip: str = ""  # still points at it, the record proves the run without opening the repository


def fingerprint(index: Any, mailboxes: dict[str, str] | set[str] | list[str],
                known: RunRecord | None = None) -> dict[str, str]:
    """The fingerprint of the tree behind `index` (io.git.TreeIndex), reading `mailboxes` as
    mailboxes; a mailbox whose tree id `known` recorded takes the recorded ids."""
    found: dict[str, str] = {}
    for part in _parts(index, mailboxes, known):
        found.update(part)
    return found


def _parts(index: Any, mailboxes: dict[str, str] | set[str] | list[str],
           known: RunRecord | None) -> Iterator[dict[str, str]]:
    """The fingerprint in parts, the inputs a person edits (the configuration, the source spaces)
    before the mailboxes: a proof that fails usually fails early."""
    yield {CONFIG_FILE: _entry(index, CONFIG_FILE)}
    spaces = index.get("spaces")
    if spaces is None or spaces.type_str != "tree":
        return
    listing = index.listing("spaces")
    for entry in listing:
        if entry.type_str != "tree":
            yield {f"spaces/{entry.name}": f"{entry.filemode:o}:{entry.id}"}
        elif str(entry.name) not in mailboxes:
            yield _source_space(index, f"spaces/{entry.name}")
    for entry in listing:
        if entry.type_str == "tree" and str(entry.name) in mailboxes:
            yield _mailbox(index, f"spaces/{entry.name}", str(entry.id), known)


def _mailbox(index: Any, path: str, tree_id: str, known: RunRecord | None) -> dict[str, str]:
    parts = [f"{path}/{part}" for part in MAILBOX_PARTS]
    if known is not None and known.mailboxes.get(path[len("spaces/"):]) == tree_id:
        return {p: known.fingerprint.get(p, "") for p in parts}
    return {p: _entry(index, p) for p in parts}


def _entry(index: Any, path: str) -> str:
    """The entry at `path` as mode and id ('' when absent): a file turned into a link to the same
    blob is read as absent, so its mode is an input too."""
    entry = index.get(path)
    return f"{entry.filemode:o}:{entry.id}" if entry is not None else ""


def _source_space(index: Any, path: str) -> dict[str, str]:
    digest = hashlib.blake2b(digest_size=20)
    found: dict[str, str] = {}
    for entry in index.listing(path):
        if entry.name == GENERATED_DIR and entry.type_str == "tree":
            for inner in index.listing(f"{path}/{GENERATED_DIR}"):
                if inner.name != NOT_READ:
                    found[f"{path}/{GENERATED_DIR}/{inner.name}"] = f"{inner.filemode:o}:{inner.id}"
        else:
            digest.update(f"{entry.name}\0{entry.filemode:o}\0{entry.id}\0".encode("utf-8", "surrogateescape"))
    found[path] = digest.hexdigest()
    return found


def record_of(index: Any, result: Any, ref: str = "", tip: str = "",
              known: RunRecord | None = None) -> RunRecord:
    """The record of a reconcile (core.pipeline.Result) whose output is the tree behind `index`
    (the commit `tip`, on branch `ref`); a mailbox whose tree is the one `known` (the last record)
    saw takes its recorded entries, as proves_unchanged reads them."""
    owned = {root.split("/", 1)[1] for root, tree in result.generated.items()
             if root.count("/") == 1 and tree is not None}
    boxes = {mb: index.entry_id(f"spaces/{mb}") for mb in sorted(owned)}
    return RunRecord(fingerprint(index, boxes, known), boxes, RecordedResult.of(result),
                     sorted(set(result.loaded.mailboxes) | owned), ref, tip)


def placed_record(index: Any, placed: PlacedResult, mailboxes: list[str]) -> RunRecord:
    """The record of where and what (`placed`, from a Result computed with every mailbox read as it
    stands; `mailboxes`: that Result's mailbox spaces) over the tree behind `index`: a later tree
    with the same fingerprint gives the same placements, whatever its mailboxes' reports say."""
    boxes = {mb: index.entry_id(f"spaces/{mb}") for mb in sorted(mailboxes)}
    return RunRecord(fingerprint(index, boxes), boxes, placed, sorted(boxes))


def proves_unchanged(record: RunRecord | None, index: Any) -> bool:
    """True when reconciling the tree behind `index` would change nothing (see the module): its
    fingerprint is the recorded one, compared part by part up to the first difference."""
    if record is None:
        return False
    expected, compared = record.fingerprint, 0
    for part in _parts(index, record.mailboxes, record):
        for path, value in part.items():
            if expected.get(path) != value:
                return False
            compared += 1
    return compared == len(expected)


__all__ = ["RunRecord", "fingerprint", "record_of", "placed_record", "proves_unchanged", "MAILBOX_PARTS"]
