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

Each base64 value is decoded once, for all three. The same checks run on a copy as customized for
a WEC (`customized_findings`, from emit/customdata.py), saying only what its source does not.
"""
from __future__ import annotations

import binascii
import json
import re
from base64 import b64decode
from typing import Any, Iterator, NamedTuple

from ...model import Obj
from ..customize.customizer import wants_expansion
from ..customize.patchdiff import unescape_pointer
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
    if checks_data(obj.group, obj.kind):
        for _, message, at in _findings(obj.kind, obj.body, wants_expansion(obj.annotations), True):
            yield message, at


def checks_data(group: str, kind: str) -> bool:
    """Whether this module has anything to say about objects of (group, kind)."""
    return group == "" and kind in ("ConfigMap", "Secret")


def finding_names(kind: str, body: dict[str, Any], expands: bool) -> frozenset[str]:
    """What the source object's findings are, as `customized_findings` compares them."""
    return frozenset(name for name, _, _ in _findings(kind, body, expands, False))


def customized_findings(kind: str, body: dict[str, Any], source: frozenset[str],
                        touched: frozenset[tuple[str, str]] | None = None) -> list[Finding]:
    """The findings of `body`, the source customized for a WEC (its parameters expanded), that
    the source (`finding_names`) does not have. The size is not shown, so that WECs whose
    customized copies are too large by different amounts share one message. `touched`: the only
    (field, key) pairs whose key or value may differ from the source's (None: any), the others'
    findings being the source's."""
    return [(message, at) for name, message, at in _findings(kind, body, False, False, touched) if name not in source]


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "replace"))


def config_map_total(body: dict[str, Any]) -> int:
    """A ConfigMap's size as the API server counts it: its text values and its decoded binary ones."""
    binary = [_decoded(v) for v in _values(body, "binaryData") if _decodable(v, False)]
    return sum(len(v.encode("utf-8", "replace")) for v in _values(body, "data") if isinstance(v, str)) + \
        sum(len(v) for v in binary if v is not None)


def replaced_text_findings(base: dict[str, Any], ops: list[dict[str, Any]], source: frozenset[str],
                           total: int) -> list[Finding] | None:
    """`customized_findings` of a ConfigMap copy whose ops each replace one `data` value that is
    text with text (`total`: the base's config_map_total): its keys, and what its values are, are
    the source's, so only the size can be new. None: other ops."""
    data, seen = base.get("data"), set()
    if not isinstance(data, dict):
        return None
    for op in ops:
        path = op.get("path")
        parts = path.split("/") if isinstance(path, str) else []
        key = unescape_pointer(parts[2]) if len(parts) == 3 else None
        if op.get("op") != "replace" or parts[:2] != ["", "data"] or key not in data or key in seen \
                or not isinstance(data[key], str) or not isinstance(op.get("value"), str):
            return None
        seen.add(key)
        total += _utf8_length(op["value"]) - _utf8_length(data[key])
    if "size" in source:
        return []
    return [(message, at) for _, message, at in _too_large(base, "ConfigMap", ("data", "binaryData"), [total], False)]


def _findings(kind: str, body: dict[str, Any], expands: bool, show_total: bool,
              only: frozenset[tuple[str, str]] | None = None) -> Iterator[tuple[str, str, FieldPath]]:
    """(name, message, field): the name is the message, except the size's, the same whatever the
    size; a key's own findings only for the (field, key) pairs in `only`, when given."""
    text: tuple[str, ...] = ("data",)
    base64: tuple[str, ...] = ("binaryData",)
    if kind == "Secret":
        text, base64 = ("stringData",), ("data",)
    decoded: dict[str, bytes | None] = {}  # each base64 value decoded once: checked, sized, a type's key
    for field in text + base64:
        values = body.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            message = f"{field} must map keys to strings, not be {_WORDS.get(type(values), 'a value')}"
            yield message, message, (field,)
            continue
        for key, value in values.items():
            if field in base64:
                decoded[key] = b"" if value is None else _decoded(value) if _decodable(value, expands) else None
            if only is not None and (field, key) not in only:
                continue
            problem = _key_problem(key) or _value_problem(value, field in base64, expands, decoded.get(key))
            if problem:
                message = f"{field}.{_shown(key)}: {problem}"
                yield message, message, (field, key)
    if kind == "ConfigMap":
        for message, at in _both_text_and_binary(body):
            yield message, message, at
        sizes = [len(v.encode("utf-8", "replace")) for v in _values(body, "data") if isinstance(v, str)]
        yield from _too_large(body, kind, ("data", "binaryData"), sizes + _lengths(decoded), show_total)
    else:
        merged = _merged_data(body, decoded)
        for message, at in _secret_type_findings(body, expands, merged):
            yield message, message, at
        yield from _too_large(body, kind, ("data", "stringData"), _lengths(merged), show_total)


def _decodable(value: Any, expands: bool) -> bool:
    """A base64 value to decode: text, and no parameter to expand per WEC first."""
    return isinstance(value, str) and not (expands and "%(" in value)


def _lengths(values: dict[str, bytes | None]) -> list[int]:
    return [len(v) for v in values.values() if v is not None]


def _too_large(body: dict[str, Any], kind: str, fields: tuple[str, str], sizes: list[int], show_total: bool
               ) -> Iterator[tuple[str, str, FieldPath]]:
    total = sum(sizes)
    if total > MAX_DATA_BYTES:
        field = next(f for f in fields if isinstance(body.get(f), dict))
        size = f"{total:,} bytes, more than the {MAX_DATA_BYTES:,}" if show_total else \
            f"more than the {MAX_DATA_BYTES:,} bytes"
        yield "size", f"{field}: the values total {size} the API server accepts in a {kind}: split it", (field,)


def _values(body: dict[str, Any], field: str) -> list[Any]:
    values = body.get(field)
    return list(values.values()) if isinstance(values, dict) else []


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


def _value_problem(value: Any, base64: bool, expands: bool, decoded: bytes | None) -> str:
    if value is None or (isinstance(value, str) and (not base64 or (expands and "%(" in value))):
        return ""  # null: read as ""; a parameter: expanded per WEC first
    if not isinstance(value, str):
        what = _WORDS.get(type(value), "not a string")
        if base64:
            return f"the value is {what}, but it must be base64 text (kubectl refuses it): encode it in base64"
        return f"the value is {what}, but it must be a string (kubectl refuses it): quote it"
    if decoded is None:
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


def _secret_type_findings(body: dict[str, Any], expands: bool, merged: dict[str, bytes | None]
                          ) -> Iterator[Finding]:
    kind = body.get("type")
    if not isinstance(kind, str):
        return
    if kind == "kubernetes.io/service-account-token":
        name = _map(_map(body.get("metadata")).get("annotations")).get(SERVICE_ACCOUNT_NAME)
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
            text = body.get("stringData")
            field = "stringData" if isinstance(text, dict) and key in text else "data"
            yield (f"{field}.{key}: type {kind} requires a JSON object here (the API server refuses the Secret "
                   "otherwise)"), (field, key)


def _merged_data(body: dict[str, Any], decoded: dict[str, bytes | None]) -> dict[str, bytes | None]:
    """The Secret's data as the API server checks it: `data` (`decoded`), `stringData` over it;
    None for a value that cannot be read (another warning is about it)."""
    merged = dict(decoded)
    text = body.get("stringData")
    for key, value in (text.items() if isinstance(text, dict) else ()):
        merged[key] = b"" if value is None else value.encode("utf-8", "replace") if isinstance(value, str) else None
    return merged


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_json_object(value: bytes | None) -> bool:
    """What Go's json.Unmarshal into a map accepts (null too); None: unreadable, another warning names it."""
    if value is None:
        return True
    try:
        found = json.loads(value.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return False
    return found is None or isinstance(found, dict)
