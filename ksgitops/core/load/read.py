"""Stage 1: read every space of a snapshot into objects with provenance.

Parsing is cached by content key (git blob id), so a long-running reconciler parses each blob
once. Mailbox spaces are recognised by their space.yaml and never read as input.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterator, MutableMapping

from msgspec import Struct, field

from ...model import Obj, ObjRef, Origin, Problem, Progress, body_digest, ref_order
from ...names import dns1123_label_error, not_utf8
from .convert import FindingsMemo, read_source
from .documents import read_by_document
from .locate import FieldLines
from .mailboxspace import INVENTORY_ANNOTATION, SPACE_API, SYNC_TARGET_ANNOTATION, own_space_document
from .parse import ParsedFile
from .snapshot import CONFIG_FILE, Snapshot, SourceFile, folder_key, stray_files

NOT_UTF8_FIX = "rename it (Kubernetes, YAML and git tools spell names in UTF-8)"
FINDINGS_OF = "schema-findings-of"  # parse cache: a file blob -> the schema-findings keys of its documents
MAILBOX_OF = "mailbox-space-of"  # parse cache: (space, folder key) -> its mailbox Space (body, line, blob) or ()
OBJECTS_OF = "objects-of"  # parse cache: (a file blob, space, path) -> its objects, made once
IDENTIFIED = "identified-of"  # parse cache: (a file blob, space, path) -> each object with its identity, or why none
LAST_READ = "last-read-of"  # parse cache: a path -> the blob its multi-document file was last read from

ParseCache = MutableMapping[Any, Any]  # parse results by blob id, plus other memos keyed by tuples
ParseAhead = Callable[[ParseCache, list[tuple[str, SourceFile]]], None]


class Loaded(Struct):
    """Everything read from a snapshot: objects per (non-mailbox) space, in identity order (the
    pipeline then puts each object in its kind's scope: validate.with_scopes). The spaces
    RepoConfig's `skipSpaces` names are not read at all (`skipped`)."""

    spaces: dict[str, list[Obj]] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # space -> digest of its source files
    mailboxes: dict[str, Obj] = field(default_factory=dict)
    config: Obj | None = None
    problems: list[Problem] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def load(snapshot: Snapshot, cache: ParseCache | None = None, progress: Progress | None = None,
         ahead: ParseAhead | None = None) -> Loaded:
    """Read the snapshot; fatal problems are collected, never raised. `progress` hears
    ("loading", files read, files to read) after each space. `ahead(cache, files)` is first
    given the (space, file) pairs to read whose parse the cache lacks (the first file of each
    content), to store their `parsed_entries` as it likes (made in other processes)."""
    cache = {} if cache is None else cache
    loaded = Loaded()
    lines = FieldLines(snapshot, cache)
    sources = _sources(snapshot, cache, loaded, lines)
    if ahead is not None:
        ahead(cache, _to_parse(sources, cache))
    total, done = sum(len(files) for _, files in sources), 0
    for space, files in sources:
        loaded.digests[space] = _digest(files)
        loaded.spaces[space] = _load_space(space, files, cache, loaded.problems, lines)
        done += len(files)
        if progress is not None:
            progress("loading", done, total)
    return loaded


def _to_parse(sources: list[tuple[str, list[SourceFile]]], cache: ParseCache) -> list[tuple[str, SourceFile]]:
    wanted: dict[str, tuple[str, SourceFile]] = {}
    for space, files in sources:
        for source in files:
            key = parse_key(source)
            if key not in wanted and key not in cache:
                wanted[key] = (space, source)
    return list(wanted.values())


def parsed_entries(space: str, source: SourceFile, cache: ParseCache) -> tuple[dict[Any, Any], list[Any]]:
    """What `load` does to `cache` for one file of a space, undone: the entries it adds (its
    parse, its objects and their identities, its documents' schema findings) and the keys of
    those it reads (a cache that keeps what was used keeps them), returned instead: plain data
    a forked process may make for the caller to apply."""
    overlay = _Overlay(cache)
    _identified(space, source, overlay, [])
    return overlay.added, list(overlay.read)


class _Overlay(MutableMapping[Any, Any]):
    """Reads `base` and what was added; adds to `added` only, notes in `read` the keys of `base` read."""

    def __init__(self, base: ParseCache) -> None:
        self.base = base
        self.added: dict[Any, Any] = {}
        self.read: dict[Any, None] = {}

    def __getitem__(self, key: Any) -> Any:
        if key in self.added:
            return self.added[key]
        value = self.base[key]
        self.read[key] = None
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self.added:
            return self.added[key]
        value = self.base.get(key, _MISSING)
        if value is _MISSING:
            return default
        self.read[key] = None
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.added or key in self.base

    def __setitem__(self, key: Any, value: Any) -> None:
        self.added[key] = value

    def __delitem__(self, key: Any) -> None:
        raise TypeError("parsing ahead removes nothing from the cache")

    def __iter__(self) -> Iterator[Any]:
        return iter({**dict.fromkeys(self.base), **self.added})

    def __len__(self) -> int:
        return sum(1 for _ in self)


_MISSING = object()


def _sources(snapshot: Snapshot, cache: ParseCache, loaded: Loaded,
             lines: FieldLines) -> list[tuple[str, list[SourceFile]]]:
    """The files of each space to read as input, in order; the repository's config, the skipped
    and mailbox spaces and the names refused go into `loaded`."""
    config_file = snapshot.file(CONFIG_FILE)
    if config_file is not None:
        objs = _objects("", config_file, cache, loaded.problems, lines)
        loaded.config = objs[0] if len(objs) == 1 else None
        if len(objs) > 1:
            loaded.problems.append(Problem(objs[1].origin, f"{CONFIG_FILE} must hold one RepoConfig"))
    sources: list[tuple[str, list[SourceFile]]] = []
    skip = _skip_spaces(loaded.config)
    for space in sorted(snapshot.list_spaces()):
        if space in skip and mailbox_space(snapshot, space, cache) is None:
            loaded.skipped.append(space)
            continue
        shown = not_utf8(space)
        error = f"is not UTF-8 (its bytes are shown as \\xNN): {NOT_UTF8_FIX}" if shown else dns1123_label_error(space)
        if error:
            loaded.problems.append(Problem(Origin(f"spaces/{shown or space}"), f"space name {error}"))
            continue
        mailbox = mailbox_space(snapshot, space, cache)
        if mailbox is not None:
            loaded.mailboxes[space] = mailbox
            continue
        sources.append((space, _named_in_utf8(snapshot.space_files(space), loaded.problems)))
    for path in stray_files(snapshot):
        if path.rpartition("/")[2] in KUSTOMIZE_FILES:
            continue  # kustomize's, which ksgitops never reads (in a space either); put there on purpose
        stem = path.rpartition("/")[2].rpartition(".")[0]
        folder = f"spaces/{stem}/" if stem and not dns1123_label_error(stem) else "spaces/<space>/"
        loaded.problems.append(Problem(Origin(path), (
            f"a file directly in spaces/ is read by nothing: a space is a folder, and ksgitops reads the files "
            f"below each spaces/<space>/; move it into one ({folder}, or a space that exists)"), "warning"))
    return sources


def _named_in_utf8(files: list[SourceFile], problems: list[Problem]) -> list[SourceFile]:
    """The files in path order; one whose path holds a name that is not UTF-8 is an error of its
    space (which isolation then freezes) and is not read: such a name could not be shown, nor
    written into a problems file, as it is."""
    kept, shown = [], set()
    for source in files:
        bad = not_utf8(source.path)
        if bad is None:
            kept.append(source)
        elif bad not in shown:
            shown.add(bad)
            problems.append(Problem(Origin(bad), f"this name is not UTF-8 (its bytes are shown as \\xNN): "
                                                 f"{NOT_UTF8_FIX}; the space stays as it was until then"))
    return sorted(kept, key=lambda f: f.path)


def _digest(files: list[SourceFile]) -> str:
    digest = hashlib.blake2b(digest_size=20)
    for source in files:
        digest.update(f"{source.path}\0{source.key}\0".encode())
    return digest.hexdigest()


def _skip_spaces(config: Obj | None) -> set[str]:
    """RepoConfig's `skipSpaces`, read before the spaces are (its checks are parse_repo_config's)."""
    spec = config.body.get("spec") if config is not None else None
    names = spec.get("skipSpaces") if isinstance(spec, dict) else None
    return {n for n in names if isinstance(n, str)} if isinstance(names, list) else set()


def is_mailbox_space(obj: Obj) -> bool:
    """A managed Space carrying the sync-target annotation and ksgitops' own inventory-space
    annotation: generated, never input. A Space without ksgitops' annotation (one copied from a
    KubeStellar mailbox, or written by hand) is a source space: ksgitops never replaces or removes
    a folder it did not write."""
    return is_mailbox_document(obj.body)


def is_mailbox_document(body: Any) -> bool:
    """is_mailbox_space, for a document as parsed."""
    if not isinstance(body, dict):
        return False
    metadata, spec = body.get("metadata"), body.get("spec")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return (body.get("apiVersion") == SPACE_API and body.get("kind") == "Space"
            and isinstance(spec, dict) and spec.get("Type") == "managed" and isinstance(annotations, dict)
            and SYNC_TARGET_ANNOTATION in annotations and INVENTORY_ANNOTATION in annotations)


def mailbox_space(snapshot: Snapshot, space: str, cache: ParseCache | None = None) -> Obj | None:
    """The Space object of `spaces/<space>/space.yaml` when it makes the space a mailbox, else None.
    Over a snapshot that keys folders by content (a git tree), the answer is memoized by the
    space's folder key: a fleet's unchanged mailboxes cost a lookup, not a read of their folders."""
    cache = {} if cache is None else cache
    folder = folder_key(snapshot, f"spaces/{space}")
    if folder is not None:
        known = cache.get((MAILBOX_OF, space, folder))
        if known is not None:
            return Obj(space, known[0], Origin(f"spaces/{space}/space.yaml", known[1]), known[2]) if known else None
    found = _mailbox_space(snapshot, space, cache)
    if folder is not None:
        cache[(MAILBOX_OF, space, folder)] = (found.body, found.origin.line, found.key) if found is not None else ()
    return found


def _mailbox_space(snapshot: Snapshot, space: str, cache: ParseCache) -> Obj | None:
    source = snapshot.file(f"spaces/{space}/space.yaml")
    if source is None:
        return None
    if source.key not in cache:
        own = own_space_document(source.read())  # as reconcile wrote it: no YAML parser needed
        if own is not None:
            cache[source.key] = ParsedFile(((1, own),))
            cache[(FINDINGS_OF, source.key)] = ()
    objs = _objects(space, source, cache, [])
    return objs[0] if len(objs) == 1 and is_mailbox_space(objs[0]) else None


def _load_space(space: str, files: list[SourceFile], cache: ParseCache, problems: list[Problem],
                lines: FieldLines) -> list[Obj]:
    seen: dict[tuple[str, str, str, str], Obj] = {}  # by ref_order: an ObjRef's fields, hashed and sorted in C
    for source in files:
        for obj, order, missing in _identified(space, source, cache, problems, lines):
            if order is None:
                problems.extend(missing)
                continue
            first = seen.get(order)
            if first is not None:
                problems.append(Problem(obj.origin, f"{ObjRef(*order)} is defined twice: here and at {first.origin}"))
                continue
            seen[order] = obj
    return [seen[order] for order in sorted(seen)]


def _identified(space: str, source: SourceFile, cache: ParseCache, problems: list[Problem],
                lines: FieldLines | None = None
                ) -> tuple[tuple[Obj, tuple[str, str, str, str] | None, tuple[Problem, ...]], ...]:
    """Each of the file's objects with its ref's order, or None and why it has no identity: made
    once per blob (a fleet's inventory is thousands of objects), in the file's order."""
    objs = _objects(space, source, cache, problems, lines)
    key = (IDENTIFIED, source.key, space, source.path)
    found = cache.get(key)
    if found is None:
        made = []
        for obj in objs:
            missing: list[Problem] = []
            made.append((obj, ref_order(obj.ref), ()) if _has_identity(obj, missing) else (obj, None, tuple(missing)))
        found = cache[key] = tuple(made)
    return found  # type: ignore[no-any-return]


def parse_key(source: SourceFile) -> str:
    """The parse cache's key of a file: its blob id, marked for JSON (the same bytes may read
    differently as JSON and as YAML: `0.1e1` is a number in one and text in the other)."""
    return f"{source.key}:json" if source.path.endswith(".json") else source.key


def _objects(space: str, source: SourceFile, cache: ParseCache, problems: list[Problem],
             lines: FieldLines | None = None) -> tuple[Obj, ...]:
    """The file's objects, made once per blob; its problems go into `problems`, each about one
    field at that field's line when `lines` is given (else they are not reported)."""
    parsed_as = parse_key(source)
    parsed = cache.get(parsed_as)
    if parsed is None:
        memo = FindingsMemo(cache)
        last = cache.get((LAST_READ, source.path))
        before = cache.get(last) if last is not None else None
        parsed = cache[parsed_as] = read_by_document(source.path, source.read(), memo,
                                                     before if isinstance(before, ParsedFile) else None)
        used = dict.fromkeys(memo.used)
        if parsed.pieces and last is not None:  # the documents taken from `before` were checked with these
            used.update((key, None) for key in cache.get((FINDINGS_OF, last), ()) if cache.get(key) is not None)
        cache[(FINDINGS_OF, parsed_as)] = tuple(used)
        if parsed.pieces:
            cache[(LAST_READ, source.path)] = parsed_as
    else:
        for key in cache.get((FINDINGS_OF, parsed_as), ()):  # kept for the next edit of this file
            cache.get(key)
        if parsed.pieces and cache.get((LAST_READ, source.path)) != parsed_as:
            cache[(LAST_READ, source.path)] = parsed_as
        if parsed.problems and parsed.problems[0].origin.path != source.path:
            parsed = read_source(source.path, source.read(), FindingsMemo(cache))  # same bytes elsewhere: re-anchor
    problems.extend(lines.resolved(parsed.problems, source.key) if lines is not None else parsed.problems)
    key = (OBJECTS_OF, source.key, space, source.path)  # anchored on the blob: kept in its shard
    objs = cache.get(key)
    if objs is None:
        objs = cache[key] = tuple(Obj(space, body, Origin(source.path, line), source.key, body_digest(body))
                                   for line, body in parsed.docs)
    return objs  # type: ignore[no-any-return]


KUSTOMIZE_FILES = frozenset({"kustomization.yaml", "kustomization.yml"})
KUSTOMIZE_GROUP = "kustomize.config.k8s.io/"


def _has_identity(obj: Obj, problems: list[Problem]) -> bool:
    """apiVersion, kind and metadata.name are required strings; a kustomize file is no object."""
    body: dict[str, Any] = obj.body
    if _is_kustomization(obj):
        problems.append(Problem(obj.origin, "a kustomize Kustomization, not an object: skipped (ksgitops reads "
                                            "every object file of a space itself and runs no kustomize: its "
                                            "resources, patches and generators are not applied)", "warning"))
        return False
    missing = [f for f in ("apiVersion", "kind") if not isinstance(body.get(f), str) or not body.get(f)]
    md = body.get("metadata")
    if not isinstance(md, dict) or not isinstance(md.get("name"), str) or not md.get("name"):
        missing.append("metadata.name")
    elif md.get("namespace") is not None and not isinstance(md.get("namespace"), str):
        problems.append(Problem(obj.origin, "metadata.namespace must be a string"))
        return False
    if missing:
        problems.append(Problem(obj.origin, f"missing {', '.join(missing)}"))
        return False
    return True


def _is_kustomization(obj: Obj) -> bool:
    api_version = obj.body.get("apiVersion")
    if isinstance(api_version, str) and api_version.startswith(KUSTOMIZE_GROUP):
        return True
    # kustomize reads a kustomization file without apiVersion (and kind) as a Kustomization too
    return obj.origin.path.rpartition("/")[2] in KUSTOMIZE_FILES and "apiVersion" not in obj.body and \
        obj.body.get("kind", "Kustomization") in ("Kustomization", "Component")
