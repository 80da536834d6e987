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
from ..customize.patchdiff import copy_json, escape_pointer, pointer_tokens
from ..load.configdata import (SERVICE_ACCOUNT_NAME, checks_data, config_map_total, customized_findings,
                               finding_names, replaced_text_findings)
from ..place.base import Base

__all__ = ["DataCheck", "data_check", "data_warnings"]

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
    how = [f"its parameters ({EXPAND_ANNOTATION})"] if base.expand else []
    if customizer is not None:
        how.append(f"Customizer {customizer.namespace}/{customizer.name} ({customizer.origin})")
    by = "customized for the WEC by " + " and ".join(how)
    return DataCheck(base.ref.kind, base.body, base.expand, by)


def data_warnings(check: DataCheck | None, ops: list[dict[str, Any]], body: dict[str, Any] | None = None
                  ) -> tuple[str, ...]:
    """The warnings of the copy `ops` make of the check's base (`body`: that copy, when the caller has it)."""
    if check is None:
        return ()
    read = [op for op in ops if _reads(op.get("path")) or _reads(op.get("from"))]
    if not read:
        return ()
    # what is checked is the base's, changed only by these ops, unless one copies or moves in a value
    # another op put there: many WECs' copies (a region label each, a few tiers) then share one check
    key = None if any(op.get("op") in ("copy", "move") for op in ops) else \
        hashlib.blake2b(orjson.dumps(read), digest_size=16).digest()  # not the ops: their values may be large
    found = check.found.get(key) if key is not None else None
    if found is None:
        found = tuple(f"{check.by}: {message}" for message, _ in _findings(check, ops, read, body))
        if key is not None:
            check.found[key] = found
    return found


def _findings(check: DataCheck, ops: list[dict[str, Any]], read: list[dict[str, Any]],
              body: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """configdata's findings of the copy: a ConfigMap whose `read` ops replace text values sized
    from the base and the ops; else the copy (made unless given) checked for the keys they change."""
    keyed = _keyed(read)
    if check.kind == "ConfigMap" and keyed is not None and all(op == "replace" and field == "data"
                                                               for op, field, _, _ in keyed):
        fast = replaced_text_findings(check.body, {key: value for _, _, key, value in keyed}, check.source,
                                      check.total)
        if fast is not None:
            return fast
    if body is None:
        body = patched(check.body, ops)
        if body is None:
            body = jsonpatch.apply_patch(copy_json(check.body), ops)
    touched = None if keyed is None else frozenset((field, key) for _, field, key, _ in keyed)
    return customized_findings(check.kind, body, check.source, touched)


def _reads(pointer: Any) -> bool:
    """Whether a patch at `pointer` may change what configdata's checks read."""
    if not isinstance(pointer, str):
        return False
    return pointer in _WHOLE or pointer[:1] == "/" and pointer.split("/", 2)[1] in _READ


_KEYED = ("data", "binaryData", "stringData")


def _keyed(ops: list[dict[str, Any]]) -> list[tuple[Any, str, str, Any]] | None:
    """(op, field, key, value) of each op and of its `from`, when each changes one key's value of a
    data field (None: one changes more, or something else that is checked); a key once per op."""
    keyed: list[tuple[Any, str, str, Any]] = []
    for op in ops:
        for pointer in (op.get("path"), op.get("from")):
            if pointer is None:
                continue
            tokens = pointer_tokens(pointer) if isinstance(pointer, str) and pointer[:1] == "/" else []
            if len(tokens) != 2 or tokens[0] not in _KEYED or not tokens[1]:
                return None
            keyed.append((op.get("op"), tokens[0], tokens[1], op.get("value")))
    keys = [(field, key) for _, field, key, _ in keyed]
    return keyed if len(set(keys)) == len(keys) else None
