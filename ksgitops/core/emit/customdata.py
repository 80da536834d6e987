"""A ConfigMap or Secret as customized for a WEC, checked as its source was (load/configdata.py).

A Customizer, or a parameter the object expands, may put on a WEC what the WEC's API server
refuses while the source passes: a Secret's `data` value that is no base64, a key its type
requires removed, values past 1 MiB. Each is a warning naming the customization (the source's
own checks are warnings too: KubeStellar's WDS takes the object and its Customizer, and only the
WEC's API server refuses the copy, when `ksgitops sync` applies it; the copy is delivered).

Cost follows customization, not the fleet: the source's findings are found once per object, and a
customized copy is checked only when its patch touches what these checks read (`data`,
`binaryData`, `stringData`, `type`, a service account token's annotation), once per distinct set
of those ops (copies that differ elsewhere, a region label each, share one check). What the source
has already is not said again for each WEC. Messages name keys and fields, never a value.
"""
from __future__ import annotations

import hashlib
from functools import cached_property
from typing import Any

import jsonpatch
import orjson

from ...model import Obj
from ..customize.customizer import EXPAND_ANNOTATION
from ..customize.patchapply import patched
from ..customize.patchdiff import copy_json, escape_pointer, unescape_pointer
from ..load.configdata import (SERVICE_ACCOUNT_NAME, checks_data, config_map_total, customized_findings,
                               finding_names, replaced_text_findings)
from ..place.base import Base

__all__ = ["DataCheck", "customized_by", "data_check", "data_warnings"]

_READ = frozenset(("data", "binaryData", "stringData", "type"))  # top-level fields, and all below them
_WHOLE = frozenset(("", "/metadata", "/metadata/annotations", "/metadata/annotations/" + escape_pointer(SERVICE_ACCOUNT_NAME)))


class DataCheck:
    """What checking one object's customized copies needs: its kind, its source (the base copy's
    body, whether it expands parameters), how it is customized as messages say it, and the names of
    the source's findings (configdata.finding_names), found on the first check that needs them."""

    def __init__(self, kind: str, body: dict[str, Any], expands: bool, by: str) -> None:
        self.kind, self.body, self.expands, self.by = kind, body, expands, by
        self.found: dict[bytes, tuple[str, ...]] = {}  # the ops that change what is checked -> the warnings

    @cached_property
    def source(self) -> frozenset[str]:
        return finding_names(self.kind, self.body, self.expands)

    @cached_property
    def total(self) -> int:
        return config_map_total(self.body)


def data_check(base: Base, customizer: Obj | None) -> DataCheck | None:
    """The check of a customizable object's copies; None when configdata has nothing to say of its kind."""
    if base.obj is None or not checks_data(base.ref.group, base.ref.kind):
        return None
    return DataCheck(base.ref.kind, base.body, base.expand, customized_by(base, customizer))


def customized_by(base: Base, customizer: Obj | None) -> str:
    """How an object's copies are customized, as the warnings about them begin."""
    how = [f"its parameters ({EXPAND_ANNOTATION})"] if base.expand else []
    if customizer is not None:
        how.append(f"Customizer {customizer.namespace}/{customizer.name} ({customizer.origin})")
    return "customized for the WEC by " + " and ".join(how)


def data_warnings(check: DataCheck | None, base: dict[str, Any], ops: list[dict[str, Any]],
                  body: dict[str, Any] | None = None) -> tuple[str, ...]:
    """The warnings of the copy `ops` make of `base` (`body`: that copy, when the caller has it)."""
    if check is None:
        return ()
    read = [op for op in ops if _reads(op.get("path")) or _reads(op.get("from"))]
    if not read:
        return ()
    # what is checked is the base's, changed only by these ops, unless one copies or moves in a value
    # another op put there: many WECs' copies (a region label each, a few tiers) then share one check
    key = None if any(op.get("op") in ("copy", "move") for op in ops) else \
        hashlib.blake2b(orjson.dumps(read), digest_size=16).digest()  # not the ops: their values may be large
    known = check.found.get(key) if key is not None else None
    if known is not None:
        return known
    fast = replaced_text_findings(base, read, check.source, check.total) if check.kind == "ConfigMap" else None
    if fast is not None:
        found = tuple(f"{check.by}: {message}" for message, _ in fast)
        if key is not None:
            check.found[key] = found
        return found
    if body is None:
        body = patched(base, ops)
        if body is None:
            body = jsonpatch.apply_patch(copy_json(base), ops)
    found = tuple(f"{check.by}: {message}" for message, _ in customized_findings(check.kind, body, check.source,
                                                                                  _touched(read)))
    if key is not None:
        check.found[key] = found
    return found


def _reads(pointer: Any) -> bool:
    """Whether a patch at `pointer` may change what configdata's checks read."""
    if not isinstance(pointer, str):
        return False
    return pointer in _WHOLE or pointer[:1] == "/" and pointer.split("/", 2)[1] in _READ


_KEYED = ("data", "binaryData", "stringData")


def _touched(ops: list[dict[str, Any]]) -> frozenset[tuple[str, str]] | None:
    """The (field, key) pairs these ops change, when each changes one key's value of a data field
    (None: one changes more, or something else that is checked)."""
    touched = set()
    for op in ops:
        for pointer in (op.get("path"), op.get("from")):
            if pointer is None:
                continue
            parts = pointer.split("/") if isinstance(pointer, str) else []
            if len(parts) != 3 or parts[0] or parts[1] not in _KEYED or not parts[2]:
                return None
            touched.add((parts[1], unescape_pointer(parts[2])))
    return frozenset(touched)
