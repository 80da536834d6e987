"""Per-(object, destination) customization: parameter expansion, Customizer replacements, jsonPatch.

Order (docs/REFERENCE.md, "Customization"): when the object carries `expand-parameters: "true"`, expand every
string leaf of the object; then apply the chosen Customizer's `replacements` in order; then its
`jsonPatch` ops in order. When the Customizer carries `expand-parameters: "true"`, each
replacement's `path` and `value` text are expanded before the path is parsed and the value is
decoded as JSON, and every string inside each jsonPatch op (`path`, `from`, string leaves of
`value`) is expanded before the op is applied. Any failure yields an error and no body: the
caller must never ship a half-customized object.

Bounds: a customization may add at most MAX_GROWTH bytes to the object (every parameter value it
puts, every replacement value at every place, every jsonPatch copy), and a path may visit at most
jsonpath.MAX_VISITS places: a Customizer or a parameter that would go beyond is an error for that
(object, WEC), never a run that exhausts memory or time. Messages about a Secret never quote what
may become its data: parameter names found in it, or a replacement value.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
import difflib
from typing import Any

import jsonpatch
import jsonpointer
from msgspec import Struct, field
import orjson

from ...model import Obj
from .jsonpath import PathError, parse_path, replace_all
from .params import ParamError, expand_leaves, expand_shared, expand_string, referenced_keys
from .patchdiff import copy_json
from ...model import is_secret

__all__ = [
    "CUSTOMIZER_ANNOTATION", "EXPAND_ANNOTATION", "CustomizeResult",
    "wants_expansion", "find_customizer", "customize", "customizer_errors", "Budget", "OverBudget", "Recorder",
]

MAX_GROWTH = 16 * 1024 * 1024  # far above what the API server stores (about 1.5 MiB an object)
CUSTOMIZER_ANNOTATION = "edge.kubestellar.io/customizer"
EXPAND_ANNOTATION = "edge.kubestellar.io/expand-parameters"

_PATCH_ERRORS = (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
                 KeyError, IndexError, TypeError, ValueError)  # ValueError: an index int() refuses


class CustomizeResult(Struct, frozen=True):
    """The customized body (None on error), the error message, the parameters looked up, and
    warnings (replacement paths that selected nothing)."""

    body: dict[str, Any] | None
    error: str | None
    params_used: dict[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


class _Failure(Exception):
    """Internal: aborts customization with a ready-to-report message."""


class OverBudget(_Failure):
    """A customization would grow its object past its budget."""


class Budget:
    """What one customization may still add to its object (MAX_GROWTH bytes unless told)."""

    def __init__(self, size: int = MAX_GROWTH) -> None:
        self.size = self.left = size

    def spend(self, size: int, what: str) -> None:
        self.left -= size
        if self.left < 0:
            raise OverBudget(f"{what}: the customized object would grow by more than {self.size // 2 ** 20} MiB "
                             "(a value put too many times); the API server stores objects of about 1.5 MiB at most")


class Recorder(Mapping[str, str]):
    """A read-only view of the parameters that remembers every key successfully looked up and
    charges every value it hands out to the budget."""

    def __init__(self, params: Mapping[str, str], budget: Budget) -> None:
        self._params = params
        self.used: dict[str, str] = {}
        self.budget = budget

    def __getitem__(self, key: str) -> str:
        value = self._params[key]
        self.used[key] = value
        self.budget.spend(len(value), "parameter expansion")
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)


def wants_expansion(annotations: Mapping[str, Any] | None) -> bool:
    """True when `edge.kubestellar.io/expand-parameters` is exactly "true"."""
    return annotations is not None and annotations.get(EXPAND_ANNOTATION) == "true"


def _customizer_key(obj: Obj, raw: Any) -> tuple[tuple[str, str] | None, str | None]:
    """(namespace, name) named by the customizer annotation value `raw`, or an error."""
    if not isinstance(raw, str):
        return None, f"annotation {CUSTOMIZER_ANNOTATION} must be a string"
    parts = raw.split("/")
    if len(parts) == 1:
        if not obj.namespace:
            return None, (f"annotation {CUSTOMIZER_ANNOTATION}: a cluster-scoped object must name "
                          f"its Customizer as <namespace>/<name>, got {raw!r}")
        return (obj.namespace, raw), None
    if len(parts) != 2 or not all(parts):
        return None, (f"annotation {CUSTOMIZER_ANNOTATION}: expected <name> or "
                      f"<namespace>/<name>, got {raw!r}")
    return (parts[0], parts[1]), None


def find_customizer(obj: Obj, customizers: Mapping[tuple[str, str], Obj]
                    ) -> tuple[Obj | None, str | None]:
    """The Customizer chosen by `obj` (keyed by (namespace, name)) and an error, one of them None.

    No annotation (or an empty one) gives (None, None).
    """
    if obj.annotations.get(CUSTOMIZER_ANNOTATION) in (None, ""):  # KubeStellar: "" names none
        return None, None
    key, error = _customizer_key(obj, obj.annotations[CUSTOMIZER_ANNOTATION])
    if key is None:
        return None, error
    found = customizers.get(key)
    if found is None:
        names = [f"{ns}/{name}" for ns, name in customizers]
        close = difflib.get_close_matches(f"{key[0]}/{key[1]}", names, n=1, cutoff=0.6)
        return None, f"unknown Customizer {key[0]}/{key[1]}" + (f" (did you mean {close[0]}?)" if close else "")
    return found, None


def customizer_errors(customizer: Obj) -> list[tuple[str, tuple[str | int, ...]]]:
    """What makes a Customizer unusable for every object and WEC alike: a replacement path that is
    no JSONPath, a value that is no JSON (each read before expansion, so text holding `%` under
    `expand-parameters` is checked per WEC instead), each with the field it is about. The shapes
    (strings, jsonPatch ops) are the schema's; KubeStellar's CRD takes any string, and its
    customizer would fail on each use."""
    expand = wants_expansion(customizer.annotations)
    items = customizer.body.get("replacements")
    found: list[tuple[str, tuple[str | int, ...]]] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        path, text = item.get("path"), item.get("value")
        if isinstance(path, str) and not (expand and "%" in path):
            try:
                parse_path(path)
            except PathError as exc:
                found.append((f"replacements[{i}].path: {exc}", ("replacements", i, "path")))
        if isinstance(text, str) and not (expand and "%" in text):
            try:
                orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                # not quoted: the value may be meant for a Secret
                found.append((f"replacements[{i}].value is not valid JSON ({exc}); write it JSON-encoded, "
                              "e.g. '\"text\"' or '3'", ("replacements", i, "value")))
    return found


_EXACT = 2 ** 53
SECRET_HIDDEN = "(not shown: it would be Secret data)"


def _decode(text: str, where: str, secret: bool) -> Any:
    """The JSON value encoded in a replacement's `value` text."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        shown = SECRET_HIDDEN if secret else repr(text)
        raise _Failure(f"{where}: value {shown} is not valid JSON ({exc})") from None
    return value if isinstance(value, (bool, str)) or value is None else _go_numbers(value)


def _go_numbers(value: Any) -> Any:
    """`value` with each number as KubeStellar's Go code decodes it (a float64): a whole one as the
    integer it equals (`2.0`, `1e3`), up to 2^53, past which a float64 holds no exact integer (the
    float itself: the number every reader of float64 gets, and one an integer type could not dump)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = float(value) if abs(value) > _EXACT else value
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) <= _EXACT else value
    if isinstance(value, list):
        return [_go_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _go_numbers(item) for key, item in value.items()}
    return value


def _expanded_value(text: str, params: Mapping[str, str], where: str, secret: bool) -> str:
    try:
        return expand_string(text, params)
    except ParamError as exc:
        raise _Failure(f"{where}: value: {_param_failure(exc, secret)}") from None


def _param_failure(exc: ParamError, secret: bool) -> str:
    """A ParamError's message; for a Secret without the parameter's name, which is Secret data."""
    if secret and exc.key is not None:
        return f"a parameter it references is not defined (no such Location label or annotation); its name " \
               f"is {SECRET_HIDDEN[1:-1]}"
    return str(exc)


def _replace(body: Any, item: Any, where: str, expand: bool, params: Recorder, secret: bool) -> str | None:
    """Apply one replacement {path, value} to `body` in place; a warning when it selects nothing."""
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        raise _Failure(f"{where}: must be a map with a string 'path'")
    path, text = item["path"], item.get("value")
    where = f"{where} (path {path!r})"
    if not isinstance(text, str):
        raise _Failure(f"{where}: 'value' must be a string holding JSON, e.g. '\"text\"' or '3'")
    if expand:
        text = _expanded_value(text, params, where, secret)
    try:
        if expand:
            path = expand_string(path, params)
        value, parsed = _decode(text, where, secret), parse_path(path)
        count = replace_all(body, parsed, value, max_places=max(params.budget.left // max(len(text), 1), 1))
    except (ParamError, PathError) as exc:
        raise _Failure(f"{where}: {exc}") from None
    params.budget.spend(count * len(text), where)
    return None if count else f"{where}: the path selects nothing in the object, so it changes nothing"


def _apply_op(body: Any, op: Any, where: str, expand: bool, params: Recorder, secret: bool) -> Any:
    """Apply one RFC 6902 op; returns the (possibly new) body."""
    if isinstance(op, dict):
        where = f"{where} ({op.get('op', 'no op')} {op.get('path')!r})"
    try:
        op = expand_leaves(op, params) if expand else copy_json(op)
        if isinstance(op, dict) and op.get("op") == "copy":
            params.budget.spend(_size_at(body, op.get("from")), where)
        return jsonpatch.apply_patch(body, [op], in_place=True)
    except ParamError as exc:
        raise _Failure(f"{where}: {_param_failure(exc, secret)}") from None
    except _PATCH_ERRORS as exc:  # never the library's text: it may quote object (Secret) data
        raise _Failure(f"{where}: {_patch_failure(exc)}") from None


def _size_at(body: Any, pointer: Any) -> int:
    """The size (as JSON) of what a copy op copies; 0 when `from` does not resolve (the op fails)."""
    try:
        return len(orjson.dumps(jsonpointer.resolve_pointer(body, pointer)))
    except _PATCH_ERRORS:
        return 0


def _patch_failure(exc: Exception) -> str:
    if isinstance(exc, jsonpatch.JsonPatchTestFailed):
        return "test op failed: the value at the path differs"
    if isinstance(exc, (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException, KeyError, IndexError,
                        ValueError)):
        return "the path does not resolve in the object"
    return f"invalid op ({type(exc).__name__})"


def _list_field(customizer: Obj, name: str, who: str) -> list[Any]:
    """A top-level list field of the Customizer (absent or null -> [])."""
    value = customizer.body.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Failure(f"{who}: {name} must be a list")
    return value


def _apply_customizer(body: Any, customizer: Obj, params: Recorder, warnings: list[str], secret: bool) -> Any:
    """Apply the Customizer's replacements then its jsonPatch; returns the new body."""
    who = f"Customizer {customizer.namespace}/{customizer.name}"
    expand = wants_expansion(customizer.annotations)
    for i, item in enumerate(_list_field(customizer, "replacements", who)):
        warning = _replace(body, item, f"{who}: replacements[{i}]", expand, params, secret)
        if warning:
            warnings.append(warning)
    for i, op in enumerate(_list_field(customizer, "jsonPatch", who)):
        body = _apply_op(body, op, f"{who}: jsonPatch[{i}]", expand, params, secret)
    if not isinstance(body, dict):
        raise _Failure(f"{who}: jsonPatch turned the object into {type(body).__name__}, not a map")
    return body


def _expand_object(base: dict[str, Any], params: Mapping[str, str], shared: bool = False) -> dict[str, Any]:
    """Every string leaf of the object expanded: a new structure, or with `shared` one that
    shares unchanged subtrees with `base` (when nothing will mutate it afterwards)."""
    try:
        return expand_shared(base, params) if shared else expand_leaves(base, params)
    except ParamError as exc:
        if is_secret(base):
            raise _Failure(f"{EXPAND_ANNOTATION} on the object: {_param_failure(exc, True)}") from None
        missing = sorted(k for k in referenced_keys(base) if k not in params)
        if exc.key is not None and len(missing) > 1:  # all of them, in an order keys cannot change
            names = ", ".join(repr(k) for k in missing)
            raise _Failure(f"{EXPAND_ANNOTATION} on the object: parameters {names} are not defined "
                           "(no such Location label or annotation)") from None
        raise _Failure(f"{EXPAND_ANNOTATION} on the object: {exc}") from None


def customize(base: dict[str, Any], obj_expand: bool, customizer: Obj | None,
              params: Mapping[str, str]) -> CustomizeResult:
    """Customize a copy of `base` for one destination (see the module docstring).

    `base` is never mutated, and the result may share unchanged subtrees with it: treat the result
    as read-only. On any failure the result has body None and a message naming the Customizer,
    the replacement index or jsonPatch op, and the path.
    """
    recorder = Recorder(params, Budget())
    warnings: list[str] = []
    try:
        if obj_expand:
            body = _expand_object(base, recorder, shared=customizer is None)
        else:
            body = copy_json(base)
        if customizer is not None:
            body = _apply_customizer(body, customizer, recorder, warnings, is_secret(base))
    except _Failure as exc:
        return CustomizeResult(None, str(exc), dict(sorted(recorder.used.items())))
    return CustomizeResult(body, None, dict(sorted(recorder.used.items())), tuple(warnings))
