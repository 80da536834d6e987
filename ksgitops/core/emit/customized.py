"""One customization's outcome for one (object, parameter values): the patch of the base copy, or
the error that keeps the WEC's previous copy, and the warnings about what the copy would be.

What a WEC receives is checked where a customization can make it differ from its source: the
identity (an error), labels and annotations (errors: `_metadata_error`), a ConfigMap's or Secret's
data (customdata.py), the top-level fields of a built-in kind (a definite path such as
`$.replicas` adds one; a warning, as at the source), and a parameter whose value holds a
reference to a parameter the copy uses (expansion is one pass: the WEC would receive the text
`%(key)`). A copy made by expansion alone (the fast path) only replaces string leaves the source
has: its top level and identity cannot change, so it costs no more than its parameter values.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ...model import Obj, is_secret
from ..customize.customizer import MAX_GROWTH, customize
from ..customize.params import referenced_keys
from ..customize.patchdiff import make_patch, unescape_pointer
from ..customize.templates import Templates, find_templates, label_values
from ..load.selectors import label_key_error, label_value_error
from ..load.workload import top_level_message
from ..place.base import Base, reprojected
from ..serialize import dump_json
from .customdata import DataCheck, data_warnings

__all__ = ["Customized", "TopCheck", "customized_copy", "templates_of", "metadata_error"]


class Customized(NamedTuple):
    """One customization's outcome: the patch (None: none needed or an error), the error, and
    the warnings (replacement paths that selected nothing, what the WEC's API server refuses)."""

    patch: bytes | None
    error: str | None
    warnings: tuple[str, ...] = ()


class TopCheck(NamedTuple):
    """The top-level fields of a built-in kind, and how its copies are customized, as messages say it."""

    kind: str
    allowed: tuple[str, ...]
    by: str


def customized_copy(base: Base, customizer: Obj | None, params: Mapping[str, str], needed: tuple[str, ...],
                    templates: Templates | None, check: DataCheck | None = None,
                    top: TopCheck | None = None, percent: bool = True) -> Customized:
    """The outcome for these parameters; `percent`: whether any of them may hold `%` (when none
    of the WEC's does, the echo check costs nothing)."""
    subset = {k: params[k] for k in needed if k in params}
    echoes = _echoes(subset, base) if percent and any("%" in value for value in subset.values()) else ()
    if templates is not None:
        ops = templates.patch(subset, MAX_GROWTH)
        if ops is not None and not any(label_value_error(value) for value in label_values(ops)):
            found = data_warnings(check, base.body, ops)
            return Customized(dump_json(ops) if ops else None, None, echoes + found if echoes else found)
    result = customize(base.body, base.expand, customizer, subset)
    if result.error or result.body is None:
        return Customized(None, result.error or "customization failed")
    body = reprojected(result.body) if customizer is not None else result.body
    if _identity(body) != _identity(base.body):
        return Customized(None, "customization must not change apiVersion, kind, metadata.name or "
                                "metadata.namespace", result.warnings)
    error = metadata_error(body)
    if error:
        return Customized(None, error, result.warnings)
    ops = make_patch(base.body, body)
    warnings = result.warnings + echoes + data_warnings(check, base.body, ops, body) + _top_warnings(top, ops)
    return Customized(dump_json(ops) if ops else None, None, warnings)


def _top_warnings(top: TopCheck | None, ops: list[dict[str, Any]]) -> tuple[str, ...]:
    """A top-level field the kind does not have, added by the customization (the diff adds each
    new top-level key with an `add` at `/key`; what the source has already is said at the source)."""
    if top is None:
        return ()
    added = sorted({unescape_pointer(op["path"][1:]) for op in ops
                    if op["op"] == "add" and op["path"].count("/") == 1})
    return tuple(f"{top.by}: {top_level_message(key, top.allowed, top.kind)}" for key in added
                 if key not in top.allowed)


def _echoes(used: dict[str, str], base: Base) -> tuple[str, ...]:
    """A parameter whose value holds `%(key)` of a parameter this copy uses (itself included): the
    expansion is not repeated, so the copy holds that text as written, surely not what was meant."""
    found: list[str] = []
    for key, value in sorted(used.items()):
        inner = sorted(k for k in referenced_keys(value) if k in used) if "%(" in value else ()
        if inner and is_secret(base.body):  # the names would be Secret data
            return ("the value of a parameter the Secret references holds %(...) naming a parameter it also "
                    "references (names not shown: they may be Secret data): parameters are expanded once, so "
                    "the WEC receives that reference as written",)
        found.extend(f"parameter {key!r} (a label or annotation of the WEC's Location) holds %({k}): parameters are "
                     f"expanded once, so the WEC receives the text %({k}) as written" for k in inner)
    return tuple(found)


def templates_of(base: Base) -> Templates | None:
    """The fast path's view of an expand-parameters object (customize.templates), when the labels
    expansion cannot change are as the general path's check wants them."""
    labels = _map(_map(base.body.get("metadata")).get("labels"))
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str) or label_key_error(key) or (
                "%" not in value and label_value_error(value)):
            return None
    return find_templates(base.body)


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def metadata_error(body: dict[str, Any]) -> str | None:
    """What the API server (and kustomize) would refuse in the customized labels and annotations:
    each a map of strings to strings (or absent, or null), with valid keys and valid label values.
    The source was checked before customization, with `%(...)` allowed in label values; a
    Customizer's replacement or jsonPatch may put any JSON value. Name and namespace are checked
    by `_identity`."""
    md = _map(body.get("metadata"))
    for part in ("labels", "annotations"):
        values = md.get(part)
        if values is None:
            continue
        if not isinstance(values, dict):
            return f"customized metadata.{part} is {_json_type(values)}, not a map of strings"
        for key, value in sorted(values.items(), key=lambda item: str(item[0])):  # the first by name: any order
            if not isinstance(value, str):
                return f"customized metadata.{part}.{key}: the value is {_json_type(value)}, not a string"
            error = label_key_error(key) or (label_value_error(value) if part == "labels" else None)
            if error:
                return f"customized metadata.{part}: {error}"
    return None


_JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list", dict: "a map"}


def _json_type(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _identity(body: dict[str, Any]) -> tuple[Any, ...]:
    md = _map(body.get("metadata"))
    return (body.get("apiVersion"), body.get("kind"), md.get("name"), md.get("namespace"))
