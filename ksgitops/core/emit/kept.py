"""Mailbox files reconcile keeps as they stand: the previous copy of an object with an error on
one WEC, and the objects a frozen WDS placed at its last good state.

Such a file is kept byte for byte and stays listed in the mailbox's kustomization.yaml whatever it
holds: leaving it out would have `kubectl apply -k --prune` and `ksgitops sync` prune the object
from the WEC, the worst outcome of a broken file. One that does not read (a hand edit, a merge's
conflict markers), or holds another object than its path names, gets a located warning saying so
and what makes reconcile write it anew, never quoting it (it may be a Secret's). A frozen WDS's
file that does not read is listed under the identity its placement record gives. A mailbox a
frozen part keeps whole gets the same warnings (`whole`), when the pipeline reads it.
"""
from __future__ import annotations

from typing import Any, Callable

from ...kinds import KindTable
from ...model import ObjRef, Origin, Problem, split_api_version
from ..place.base import Base
from ..place.records import Recorded
from ..serialize import load_yaml, plain_copy
from ..tree import FileTree, walk
from .readback import Unreadable, patched, read_object, read_patch

Reader = Callable[[str], "bytes | None"]


class KeptFiles:
    """Reads kept copies from the mailboxes as they stand, and judges them (memoized by content)."""

    def __init__(self, read_previous: Reader, kinds: KindTable) -> None:
        self._read = read_previous
        self._kinds = kinds
        self._bases: dict[tuple[str, bytes], Base | None] = {}
        # (file in the mailbox, line, what is wrong, whether the mailbox no longer applies) or None
        self._troubles: dict[tuple[str, bytes, bytes | None], tuple[str, int, str, bool] | None] = {}
        self._versions: dict[str, dict[tuple[str, str, str, str], str]] = {}
        self._read_bases: dict[tuple[str, bytes], tuple[str, int, str, bool] | dict[str, Any]] = {}

    def files(self, mailbox: str, rel: str) -> tuple[bytes | None, bytes | None]:
        """The base copy (None: there is none) and patch of `objects/<rel>.yaml` in the mailbox."""
        data = self._read(f"spaces/{mailbox}/objects/{rel}.yaml")
        if data is None:
            return None, None
        return data, self._read(f"spaces/{mailbox}/patches/{rel}.json")

    def base(self, mailbox: str, item: Recorded, data: bytes) -> Base | None:
        """What a frozen WDS's kept file stands for in kustomization.yaml and the SyncerConfig: the
        object it holds, or, when it does not read as the object its path names, the identity of
        the record (None only when the record's identity does not fit the path either)."""
        key = (item.rel, data)
        if key not in self._bases:
            self._bases[key] = _read_base(item.rel, data)
        return self._bases[key] or self._recorded_base(mailbox, item)

    def trouble(self, mailbox: str, rel: str, data: bytes, patch: bytes | None, obj: str, why: str,
                fix: str) -> Problem | None:
        """The warning a kept copy gets when it does not read as reconcile writes it (None: it does);
        `why` it is kept, `fix` what has reconcile write it anew."""
        found = self._trouble(rel, data, patch)
        return self._warning(mailbox, obj, found, why, fix) if found is not None else None

    def whole(self, mailbox: str, files: FileTree, why: str, fix: str) -> list[Problem]:
        """The warnings of a mailbox a frozen part keeps whole, `files` its `objects` and `patches`
        folders as they stand: each base copy or patch that does not read, as render and sync find it."""
        objects, patches = files.get("objects"), files.get("patches")
        patch_files = dict(walk(patches)) if isinstance(patches, dict) else {}
        found = []
        for path, data in walk(objects) if isinstance(objects, dict) else ():
            rel = path[: -len(".yaml")]
            if not isinstance(data, bytes) or not path.endswith(".yaml") or rel.count("/") != 3:
                continue  # no path reconcile writes: render and sync do not send it either
            patch = patch_files.get(f"{rel}.json")
            trouble = self._trouble(rel, data, patch if isinstance(patch, bytes) else None)
            if trouble is not None:
                base = _read_base(rel, data)
                found.append(self._warning(mailbox, str(base.ref) if base is not None else "", trouble, why, fix))
        return found

    def _trouble(self, rel: str, data: bytes, patch: bytes | None) -> tuple[str, int, str, bool] | None:
        key = (rel, data, patch)
        if key not in self._troubles:
            base = self._read_bases.get((rel, data))
            if base is None:
                base = self._read_bases[(rel, data)] = _base_trouble(rel, data)
            self._troubles[key] = _trouble(base, rel, patch)
        return self._troubles[key]

    @staticmethod
    def _warning(mailbox: str, obj: str, found: tuple[str, int, str, bool], why: str, fix: str) -> Problem:
        file, line, what, refused = found
        effect = ", so `kubectl apply -k` and `ksgitops sync` refuse this mailbox" if refused else ""
        return Problem(Origin(f"spaces/{mailbox}/{file}", line),
                       f"{what}; kept as it stands ({why}){effect}; reconcile writes it anew once {fix} "
                       "(or restore the file from git)", "warning", mailbox, obj)

    def _recorded_base(self, mailbox: str, item: Recorded) -> Base | None:
        _, resource, namespace, _ = item.rel.split("/")
        kind, _, rest = item.text.partition(" ")
        kind, _, group_named = kind.partition(".")
        ns_named, _, name_named = rest.rpartition("/")
        ref = ObjRef(group_named, kind, ns_named, name_named)
        version = self._version(mailbox, ref, resource) or next(iter(self._kinds.served(ref.group, kind)), "")
        api_version = f"{ref.group}/{version}" if ref.group and version else version
        base = Base(ref, api_version, resource, namespace != "_cluster", {}, b"", None)
        return base if base.rel == item.rel and kind else None

    def _version(self, mailbox: str, ref: ObjRef, resource: str) -> str:
        """The version the mailbox's SyncerConfig as it stands gives the object ("" if none)."""
        if mailbox not in self._versions:
            self._versions[mailbox] = _syncer_versions(self._read(f"spaces/{mailbox}/syncerconfig.yaml"))
        return self._versions[mailbox].get((ref.group, resource, ref.namespace, ref.name), "")


def _base_trouble(rel: str, data: bytes) -> tuple[str, int, str, bool] | dict[str, Any]:
    """What is wrong with a base copy, else the object it holds (WECs share most base copies)."""
    path = f"objects/{rel}.yaml"
    try:
        body = read_object(path, data)
    except Unreadable as e:
        return path, e.line, e.what, True
    if _base_of(rel, data, body) is None:
        return path, 1, "not the object its path names (kind, apiVersion, namespace or name edited)", False
    return body


def _trouble(base: tuple[str, int, str, bool] | dict[str, Any], rel: str, patch: bytes | None
             ) -> tuple[str, int, str, bool] | None:
    if isinstance(base, tuple):
        return base
    if patch is None:
        return None
    path = f"patches/{rel}.json"
    try:
        patched(path, plain_copy(base), read_patch(path, patch), patch)
    except Unreadable as e:
        return path, e.line, e.what, True
    return None


def _read_base(rel: str, data: bytes) -> Base | None:
    """A kept object file read back as a base copy; None when it does not read as one this mailbox
    path can hold."""
    try:
        body = load_yaml(data)
    except Exception:  # noqa: BLE001 - the record says what it stands for
        return None
    return _base_of(rel, data, body)


def _base_of(rel: str, data: bytes, body: Any) -> Base | None:
    md = body.get("metadata") if isinstance(body, dict) else None
    if not isinstance(md, dict) or not isinstance(body.get("apiVersion"), str) or not isinstance(body.get("kind"), str):
        return None
    _, resource, namespace, _ = rel.split("/")
    ref = ObjRef(split_api_version(body["apiVersion"])[0], body["kind"], str(md.get("namespace") or ""),
                 str(md.get("name") or ""))
    base = Base(ref, body["apiVersion"], resource, namespace != "_cluster", body, data, None)
    return base if base.rel == rel else None


def _syncer_versions(data: bytes | None) -> dict[tuple[str, str, str, str], str]:
    """(group, resource, namespace, name) -> version, of every object a SyncerConfig lists."""
    try:
        spec = load_yaml(data)["spec"] if data is not None else None  # type: ignore[index]
    except Exception:  # noqa: BLE001 - no versions from a SyncerConfig that does not read
        return {}
    found: dict[tuple[str, str, str, str], str] = {}
    if not isinstance(spec, dict):
        return found
    for item in _dicts(spec.get("namespacedObjects")):
        for by_ns in _dicts(item.get("objectsByNamespace")):
            for name in by_ns.get("names") or []:
                found[(str(item.get("group") or ""), str(item.get("resource")), str(by_ns.get("namespace")),
                       str(name))] = str(item.get("apiVersion") or "")
    for item in _dicts(spec.get("clusterScope")):
        for name in item.get("objects") or []:
            found[(str(item.get("group") or ""), str(item.get("resource")), "", str(name))] = \
                str(item.get("apiVersion") or "")
    return found


def _dicts(value: object) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


__all__ = ["KeptFiles"]
