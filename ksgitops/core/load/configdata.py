"""What the API server (or kubectl before it) refuses in a ConfigMap's or a Secret's data: warnings
that name the field and key, and never show a Secret's value.

- a value that is not a string, or not base64 where base64 is wanted (`binaryData`, a Secret's
  `data`): kubectl cannot decode it;
- a key that is not a valid config key (`[-._a-zA-Z0-9]+`, at most 253 characters, not `.`, not
  `..` nor starting with `..`), and a ConfigMap key in both `data` and `binaryData`;
- a Secret of a built-in `type` without the keys the API server requires of that type (a Secret's
  `stringData` is merged into its `data` before the API server checks it). Any other type is the
  user's own and requires nothing;
- values that total more than the API server's 1 MiB (a ConfigMap's text and decoded binary
  values; a Secret's decoded `data` with `stringData` over it): the size is shown, no value.
"""
from __future__ import annotations

import binascii
import json
import re
from base64 import b64decode
from typing import Any, Iterator, NamedTuple

from ...model import Obj
from ..customize.customizer import wants_expansion
from .jsonshape import FieldPath

Finding = tuple[str, FieldPath]

_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+\Z")
_CONFIG_KEY_MAX = 253
_WORDS = {bool: "a boolean", int: "a number", float: "a number", dict: "a mapping", list: "a list"}

SERVICE_ACCOUNT_NAME = "kubernetes.io/service-account.name"
MAX_DATA_BYTES = 1024 * 1024  # the API server's limit on a ConfigMap's or a Secret's values together


class _Need(NamedTuple):
    """A Secret type's need: one of `keys`, with a value that is not empty or is a JSON object."""

    keys: tuple[str, ...]
    non_empty: bool = False
    json_object: bool = False


# What the API server requires of a Secret of each built-in type; Opaque and
# bootstrap.kubernetes.io/token require nothing, service-account-token an annotation.
_REQUIRED: dict[str, tuple[_Need, ...]] = {
    "kubernetes.io/tls": (_Need(("tls.crt",)), _Need(("tls.key",))),
    "kubernetes.io/dockerconfigjson": (_Need((".dockerconfigjson",), json_object=True),),
    "kubernetes.io/dockercfg": (_Need((".dockercfg",), json_object=True),),
    "kubernetes.io/ssh-auth": (_Need(("ssh-privatekey",), non_empty=True),),
    "kubernetes.io/basic-auth": (_Need(("username", "password")),),
}


def data_findings(obj: Obj) -> Iterator[Finding]:
    """Every warning of this module about a core ConfigMap or Secret (nothing for other objects)."""
    if obj.group != "" or obj.kind not in ("ConfigMap", "Secret"):
        return
    text: tuple[str, ...] = ("data",)
    base64: tuple[str, ...] = ("binaryData",)
    if obj.kind == "Secret":
        text, base64 = ("stringData",), ("data",)
    expands = wants_expansion(obj.annotations)
    for field in text + base64:
        values = obj.body.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            yield f"{field} must map keys to strings, not be {_WORDS.get(type(values), 'a value')}", (field,)
            continue
        for key, value in values.items():
            problem = _key_problem(key) or _value_problem(value, field in base64, expands)
            if problem:
                yield f"{field}.{_shown(key)}: {problem}", (field, key)
    if obj.kind == "ConfigMap":
        yield from _both_text_and_binary(obj.body)
        yield from _too_large(obj, None)
    else:
        merged = _merged_data(obj.body)  # decoded once, for the type's keys and for the size
        yield from _secret_type_findings(obj, expands, merged)
        yield from _too_large(obj, merged)


def _too_large(obj: Obj, merged: dict[str, bytes | None] | None) -> Iterator[Finding]:
    """`merged`: a Secret's data as the API server checks it (None for a ConfigMap)."""
    if merged is None:
        fields = ("data", "binaryData")
        sizes = [_size(v, decode=False) for v in _values(obj.body, "data")]
        sizes += [_size(v, decode=True) for v in _values(obj.body, "binaryData")]
    else:
        fields = ("data", "stringData")
        sizes = [len(v) for v in merged.values() if v is not None]
    total = sum(sizes)
    if total > MAX_DATA_BYTES:
        field = next(f for f in fields if isinstance(obj.body.get(f), dict))
        yield (f"{field}: the values total {total:,} bytes, more than the {MAX_DATA_BYTES:,} the API server accepts "
               f"in a {obj.kind}: split it"), (field,)


def _values(body: dict[str, Any], field: str) -> list[Any]:
    values = body.get(field)
    return list(values.values()) if isinstance(values, dict) else []


def _size(value: Any, decode: bool) -> int:
    if not isinstance(value, str):
        return 0  # another warning is about it
    if decode:
        found = _decoded(value)
        return len(found) if found is not None else 0
    return len(value.encode("utf-8", "replace"))


def _key_problem(key: str) -> str:
    if not isinstance(key, str):
        return ""  # parse.py refused the document already
    if len(key) > _CONFIG_KEY_MAX:
        why = f"is longer than {_CONFIG_KEY_MAX} characters"
    elif not _CONFIG_KEY.match(key):
        why = "may hold only letters, digits, '-', '_' and '.'"
    elif key in (".", ".."):
        why = f"must not be {key!r}"
    elif key.startswith(".."):
        why = "must not start with '..'"
    else:
        return ""
    return f"the key {why} (the API server refuses it): rename it"


def _shown(key: str) -> str:
    """A key as a message shows it: as written when it is a valid key, else quoted and cut short."""
    if not _key_problem(key):
        return key
    return repr(key if len(key) <= 60 else key[:60] + "...")


def _value_problem(value: Any, base64: bool, expands: bool) -> str:
    if value is None or (isinstance(value, str) and (not base64 or (expands and "%(" in value))):
        return ""  # null: read as ""; a parameter: expanded per WEC first
    if not isinstance(value, str):
        what = _WORDS.get(type(value), "not a string")
        if base64:
            return f"the value is {what}, but it must be base64 text (kubectl refuses it): encode it in base64"
        return f"the value is {what}, but it must be a string (kubectl refuses it): quote it"
    if _decoded(value) is None:
        return "the value is not base64 (kubectl refuses it): encode it, or use a field that takes text"
    return ""


def _decoded(value: str) -> bytes | None:
    try:
        return b64decode(value.replace("\n", "").replace("\r", ""), validate=True)
    except (binascii.Error, ValueError):
        return None


def _both_text_and_binary(body: dict[str, Any]) -> Iterator[Finding]:
    text, binary = body.get("data"), body.get("binaryData")
    if isinstance(text, dict) and isinstance(binary, dict):
        for key in binary:
            if key in text:
                yield (f"binaryData.{_shown(key)}: the key is in data too (the API server refuses a key in both): "
                       "keep one"), ("binaryData", key)


def _secret_type_findings(obj: Obj, expands: bool, merged: dict[str, bytes | None]) -> Iterator[Finding]:
    kind = obj.body.get("type")
    if not isinstance(kind, str):
        return
    if kind == "kubernetes.io/service-account-token":
        name = obj.annotations.get(SERVICE_ACCOUNT_NAME)
        if not (isinstance(name, str) and name):
            yield (f"type {kind} requires the annotation {SERVICE_ACCOUNT_NAME} (the API server refuses the Secret "
                   "without it): name the ServiceAccount"), ("type",)
        return
    needs = _REQUIRED.get(kind, ())
    for need in needs:
        present = [k for k in need.keys if k in merged and (not need.non_empty or merged[k] != b"")]
        if not present:
            what = ("a non-empty " if need.non_empty else "") + "data key " + " or ".join(need.keys)
            yield (f"type {kind} requires {what} (the API server refuses the Secret without it): add it to data "
                   "or stringData"), ("type",)
        elif need.json_object and not expands and not _is_json_object(merged[present[0]]):
            key = present[0]
            text = obj.body.get("stringData")
            field = "stringData" if isinstance(text, dict) and key in text else "data"
            yield (f"{field}.{key}: type {kind} requires a JSON object here (the API server refuses the Secret "
                   "otherwise)"), (field, key)


def _merged_data(body: dict[str, Any]) -> dict[str, bytes | None]:
    """The Secret's data as the API server checks it: `data` decoded, `stringData` over it; None
    for a value that cannot be read (another warning is about it)."""
    merged: dict[str, bytes | None] = {}
    data, text = body.get("data"), body.get("stringData")
    for key, value in (data.items() if isinstance(data, dict) else ()):
        merged[key] = b"" if value is None else _decoded(value) if isinstance(value, str) else None
    for key, value in (text.items() if isinstance(text, dict) else ()):
        merged[key] = b"" if value is None else value.encode("utf-8", "replace") if isinstance(value, str) else None
    return merged


def _is_json_object(value: bytes | None) -> bool:
    """What Go's json.Unmarshal into a map accepts (null too); None: unreadable, another warning names it."""
    if value is None:
        return True
    try:
        found = json.loads(value.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return False
    return found is None or isinstance(found, dict)
