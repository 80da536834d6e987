"""JSON Schema validation of the kinds ksgitops owns (files in the repo-root `schema/` folder).

The schema files are draft 2020-12, shipped as the package `ksgitops.schema`; cross-file `$ref`s
(`common.json#/$defs/...`) resolve through a `referencing.Registry` keyed by file name, the same
relative references an editor resolves next to the files. One validator per schema file, cached.

Messages are one line each: `<Kind> <name>: <path like spec.downsync[0].resources>: <message>`.
They are rewritten from jsonschema's so that they name the field (unknown and missing fields get
their own path) and never print a whole mapping or list: scalar values are quoted, containers are
only named by type. Schemas may carry `errorMessage` (the keyword VS Code and yaml-language-server
understand) to replace the generic text for the subschema it sits on.
"""
from __future__ import annotations

import difflib
import functools
import importlib.resources
import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from msgspec import Struct

if TYPE_CHECKING:  # imported where used: jsonschema + referencing cost ~120 ms of start-up, and a
    # run whose per-object checks all come from the cache never needs them
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

from ...model import Obj, Origin, Problem, counted

MAX_MESSAGE = 200

# (apiVersion, kind) -> schema file name. KubeStellar's v1alpha1 and v2alpha1 kinds share a file
# where their CRDs agree (its apiVersion is an enum); EdgePlacement changed shape between them.
_V1, _V2 = "edge.kubestellar.io/v1alpha1", "edge.kubestellar.io/v2alpha1"
SCHEMA_FILES: dict[tuple[str, str], str] = {
    **{(version, "SyncTarget"): "synctarget.json" for version in (_V1, _V2)},
    **{(version, "Location"): "location.json" for version in (_V1, _V2)},
    **{(version, "Customizer"): "customizer.json" for version in (_V1, _V2)},
    **{(version, "SinglePlacementSlice"): "singleplacementslice.json" for version in (_V1, _V2)},
    **{(version, "SyncerConfig"): "syncerconfig.json" for version in (_V1, _V2)},
    (_V2, "EdgePlacement"): "edgeplacement-v2alpha1.json",
    (_V1, "EdgePlacement"): "edgeplacement-v1alpha1.json",
    ("space.kubestellar.io/v1alpha1", "Space"): "space.json",
    ("space.kubestellar.io/v1alpha1", "SpaceProviderDesc"): "spaceproviderdesc.json",
    ("control.kubestellar.io/v1alpha1", "StatusCollector"): "statuscollector.json",
    ("ksgitops.kubestellar.io/v1alpha1", "RepoConfig"): "repoconfig.json",
}
# Kinds ksgitops writes but never reads as input (so not in SCHEMA_FILES, which validate uses):
GENERATED_SCHEMAS: dict[tuple[str, str], str] = {
    ("control.kubestellar.io/v1alpha1", "CombinedStatus"): "combinedstatus.json",  # status: .ksgitops/status/
    ("ksgitops.kubestellar.io/v1alpha1", "SpaceProblems"): "problems.json",  # reconcile: .ksgitops/problems.yaml
    ("ksgitops.kubestellar.io/v1alpha1", "SyncReport"): "syncreport.json",  # `ksgitops sync`: reported/sync.yaml
    ("ksgitops.kubestellar.io/v1alpha1", "PlacementRecord"): "placementrecord.json",  # reconcile: .ksgitops/placements/
}
# Kinds whose CRDs are KubeStellar's: what their schema does not know is dropped with a warning, as
# the API server prunes it. ksgitops' own kinds (StatusCollector, RepoConfig) are strict: an
# unknown field there is an error.
PRUNED_GROUPS = frozenset({"edge.kubestellar.io", "space.kubestellar.io"})
WARNING_KEYWORD = "x-ksgitops-warning"  # on a subschema: ksgitops is stricter there than the CRD
REPORTED_SCHEMA = "reported.json"  # mailbox reported/ files: no apiVersion/kind, see validate_reported

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")


# --- loading ---------------------------------------------------------------------------------

def schema_dir() -> Any:
    """The folder (a Traversable) holding the schema files, installed or in a source checkout."""
    try:
        return importlib.resources.files("ksgitops.schema")
    except ModuleNotFoundError:  # running from a source tree: schema/ sits at the repo root
        return Path(__file__).resolve().parents[3] / "schema"


@functools.lru_cache(maxsize=1)
def schema_names() -> tuple[str, ...]:
    """Every schema file name (common.json included), sorted."""
    return tuple(sorted(p.name for p in schema_dir().iterdir() if p.name.endswith(".json")))


@functools.lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema file `name` (e.g. "location.json"). Treat the result as read-only."""
    if name not in schema_names():
        raise KeyError(f"no schema file {name!r}")
    return json.loads(schema_dir().joinpath(name).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _registry() -> Registry:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
    resources = [(name, Resource.from_contents(load_schema(name), default_specification=DRAFT202012))
                 for name in schema_names()]
    return Registry().with_resources(resources).crawl()


@functools.lru_cache(maxsize=None)
def _fast_validator(name: str) -> Callable[[Any], Any]:
    """fastjsonschema's validator of schema file `name` (Python it generates: ~20 times faster than
    jsonschema), only asked whether a document is valid; jsonschema reports the findings of one
    that is not. fastjsonschema speaks draft-07, which reads our schemas alike once they are one
    file (`_bundled`) and a `$ref` no longer has siblings (draft-07 ignores them)."""
    import fastjsonschema
    return fastjsonschema.compile(_bundled(name), use_default=False, use_formats=False)  # type: ignore[no-any-return]


def compile_all() -> None:
    """Every schema's validator made now, once (~0.5 s): a process that forks workers (the
    monitor) saves each of them the compiling of those its documents need."""
    for name in schema_names():
        if name != "common.json":
            _fast_validator(name)


_COMMON, _SHARED = "common.json#/$defs/", "#/$defs/__common/"


def _bundled(name: str) -> dict[str, Any]:
    """Schema file `name` with common.json's definitions inside it, as draft-07."""
    schema = _draft07(load_schema(name), False)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema["$defs"] = {**schema.get("$defs", {}), "__common": _draft07(load_schema("common.json"), True)["$defs"]}
    return schema  # type: ignore[no-any-return]


def _draft07(node: Any, in_common: bool) -> Any:
    if isinstance(node, list):
        return [_draft07(item, in_common) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _draft07(value, in_common) for key, value in node.items() if key != "$ref"}
    ref = node.get("$ref")
    if isinstance(ref, str):
        ref = _SHARED + ref[len(_COMMON):] if ref.startswith(_COMMON) else ref
        ref = _SHARED + ref[len("#/$defs/"):] if in_common and ref.startswith("#/$defs/") else ref
        if out:
            out["allOf"] = [*out.get("allOf", []), {"$ref": ref}]
        else:
            out["$ref"] = ref
    return out


def _valid(name: str, instance: Any) -> bool:
    """True when fastjsonschema finds `instance` valid; any doubt is left to jsonschema."""
    try:
        _fast_validator(name)(instance)
    except Exception:  # noqa: BLE001 - invalid, or anything it cannot take: jsonschema decides
        return False
    return True


@functools.lru_cache(maxsize=None)
def validator_for(name: str) -> Draft202012Validator:
    """The cached validator of schema file `name`, with cross-file references resolvable."""
    from jsonschema import Draft202012Validator
    return Draft202012Validator(load_schema(name), registry=_registry())


def schema_for(obj: Obj) -> str | None:
    """The schema file for an object of a kind we own, by (apiVersion, kind); None for workload kinds."""
    return SCHEMA_FILES.get((obj.api_version, obj.kind))


# --- validation ------------------------------------------------------------------------------

class Finding(Struct, frozen=True):
    """One schema finding: `path` of the value in the document, the message (with the path), and
    what it means: "error"; "warning" (ksgitops is stricter than the CRD there); "unknown" (a field
    the schema does not know) or "null" (a null where none is allowed): both are dropped from
    KubeStellar's kinds, as the API server drops them."""

    path: tuple[str | int, ...]
    message: str
    action: str = "error"


def validate_schema(obj: Obj) -> list[Problem]:
    """Problems of one object against its schema, sorted; [] for kinds without a schema. For
    KubeStellar's kinds, unknown fields and disallowed nulls are warnings (load drops them)."""
    name = schema_for(obj)
    if name is None:
        return []
    prunes = obj.group in PRUNED_GROUPS
    return sorted(finding_problem(f, obj.origin, _label(obj), prunes) for f in schema_findings(name, obj.body))


def finding_problem(finding: Finding, origin: Origin, label: str, prunes: bool) -> Problem:
    """The Problem a finding makes: dropped fields of pruned kinds and stricter checks are warnings."""
    text = f"{label}: {finding.message}"
    if finding.action == "warning":
        return Problem(origin, text, "warning")
    if prunes and finding.action == "unknown":
        return Problem(origin, f"{text}; dropped: KubeStellar's CRD does not define it (the API server prunes it)",
                       "warning")
    if prunes and finding.action == "null":
        return Problem(origin, f"{text}; dropped, as the API server drops a null it does not allow "
                               "(leave the field out, or give it a value)", "warning")
    return Problem(origin, text)


def validate_reported(data: Any, origin: Origin) -> list[Problem]:
    """Problems of one reported-state document (docs/REFERENCE.md, "Reported state")."""
    return validate_document(REPORTED_SCHEMA, data, origin, "reported state")


def validate_document(name: str, data: Any, origin: Origin, label: str) -> list[Problem]:
    """Validate `data` against schema file `name`; each finding is `<label>: <path>: <message>`
    (an error, but where the schema marks ksgitops as stricter than the CRD: a warning)."""
    return [finding_problem(f, origin, label, False) for f in schema_findings(name, data)]


def schema_findings(name: str, data: Any) -> list[Finding]:
    """Every finding of `data` against schema file `name`, sorted by message."""
    key_problems: list[tuple[str, str]] = []
    instance = _jsonable(data, [], key_problems)
    if not key_problems and _valid(name, instance):  # the usual case: nothing to find
        return []
    found = {Finding(tuple(), f"{path}: {msg}" if path else msg) for path, msg in key_problems}
    for error in validator_for(name).iter_errors(instance):
        found.update(_findings(_deepest(error)))
    return sorted(found, key=lambda f: f.message)


def _label(obj: Obj) -> str:
    kind = obj.kind or "object"
    return f"{kind} {obj.name}" if obj.name else kind


def _jsonable(value: Any, path: list[str | int], problems: list[tuple[str, str]]) -> Any:
    """A JSON-typed copy for validation: YAML timestamps become RFC 3339 strings; non-string keys
    (YAML 1.1 turns `on:`, `yes:`, `1:` into booleans and numbers) are reported and stringified."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append((format_path(path), f"key {_short(key)} is not a string (quote it in YAML)"))
                key = str(key)
            out[key] = _jsonable(item, [*path, key], problems)
        return out
    if isinstance(value, (list, tuple)):
        return [_jsonable(item, [*path, i], problems) for i, item in enumerate(value)]
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return value


def format_path(parts: Iterable[str | int]) -> str:
    """['spec', 'downsync', 0, 'resources'] -> 'spec.downsync[0].resources'; odd keys as ['k']."""
    out = ""
    for part in parts:
        if isinstance(part, str) and len(part) > 60:
            part = part[:60] + "..."  # display only: an absurdly long key must not flood the line
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _deepest(error: ValidationError) -> ValidationError:
    """For anyOf/oneOf failures, the most relevant branch error (our schemas avoid them)."""
    from jsonschema.exceptions import best_match
    while error.context:
        error = best_match(error.context)
    return error


def _findings(error: ValidationError) -> list[Finding]:
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [p for p in error.validator_value if p not in error.instance]
        return [_finding([*path, p], "required field is missing") for p in missing]
    if error.validator == "additionalProperties" and error.validator_value is False \
            and isinstance(error.instance, dict):
        return [_finding([*path, k], _unknown_field(k, error.schema), "unknown") for k in _extras(error)]
    schema = error.schema if isinstance(error.schema, dict) else {}
    message = _shorten(_message(error))
    if isinstance(schema.get(WARNING_KEYWORD), str):
        return [_finding(path, f"{message} ({schema[WARNING_KEYWORD]})", "warning")]
    if error.validator == "type" and error.instance is None and path and isinstance(path[-1], str):
        return [_finding(path, message, "null")]
    return [_finding(path, message)]


def _finding(path: list[Any], message: str, action: str = "error") -> Finding:
    shown = format_path(path)
    return Finding(tuple(path), f"{shown}: {message}" if shown else message, action)


def _extras(error: ValidationError) -> list[str]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return sorted(k for k in error.instance
                  if k not in known and not any(re.search(p, k) for p in patterns))


def _unknown_field(key: str, schema: Any) -> str:
    known = sorted(schema.get("properties", {})) if isinstance(schema, dict) else []
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown field (did you mean {close[0]!r}?)"
    return _shorten(f"unknown field (allowed: {', '.join(known)})" if known else "unknown field")


def _message(error: ValidationError) -> str:
    custom = error.schema.get("errorMessage") if isinstance(error.schema, dict) else None
    got = _got(error.instance)
    v, value = error.validator, error.validator_value
    if isinstance(custom, str):
        return custom if isinstance(error.instance, (dict, list)) else f"{custom} (got {got})"
    if v == "type":
        types = value if isinstance(value, list) else [value]
        return f"must be of type {' or '.join(types)} (got {got})"
    if v == "enum":
        return f"must be one of {', '.join(_short(x) for x in value)} (got {got})"
    if v == "const":
        return f"must be {_short(value)} (got {got})"
    if v == "pattern":
        return f"must match the pattern {value} (got {got})"
    if v in ("minItems", "maxItems"):
        word = "least" if v == "minItems" else "most"
        return f"must have at {word} {counted(value, 'item')}"
    if v in ("minLength", "maxLength"):
        word = "least" if v == "minLength" else "most"
        return f"must be at {word} {counted(value, 'character')} long"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[v]
        return f"must be {op} {value} (got {got})"
    if v == "uniqueItems":
        return "must not contain duplicates"
    if v == "propertyNames":
        return f"invalid key (got {got})"
    if isinstance(error.instance, (dict, list)):
        return f"is invalid ({v})"  # never echo a whole mapping or list
    return error.message


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {_short(value)}"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _short(value: Any, limit: int = 60) -> str:
    """A scalar as it would be written: strings quoted, true/false/null as in JSON."""
    if isinstance(value, str):
        return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."
    text = json.dumps(value) if _is_json_scalar(value) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float))


def _shorten(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."
