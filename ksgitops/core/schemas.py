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
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # imported where used: jsonschema + referencing cost ~35 ms of start-up, and a
    # run whose per-object checks all come from the cache never needs them
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

from ..kinds import CONTROL_GROUPS
from ..model import Obj, Origin, Problem

MAX_MESSAGE = 200

# (apiVersion, kind) -> schema file name
SCHEMA_FILES: dict[tuple[str, str], str] = {
    ("edge.kubestellar.io/v2alpha1", "SyncTarget"): "synctarget.json",
    ("edge.kubestellar.io/v2alpha1", "Location"): "location.json",
    ("edge.kubestellar.io/v2alpha1", "EdgePlacement"): "edgeplacement-v2alpha1.json",
    ("edge.kubestellar.io/v1alpha1", "EdgePlacement"): "edgeplacement-v1alpha1.json",
    ("edge.kubestellar.io/v2alpha1", "Customizer"): "customizer.json",
    ("edge.kubestellar.io/v2alpha1", "SinglePlacementSlice"): "singleplacementslice.json",
    ("edge.kubestellar.io/v2alpha1", "SyncerConfig"): "syncerconfig.json",
    ("space.kubestellar.io/v1alpha1", "Space"): "space.json",
    ("space.kubestellar.io/v1alpha1", "SpaceProviderDesc"): "spaceproviderdesc.json",
    ("control.kubestellar.io/v1alpha1", "StatusCollector"): "statuscollector.json",
    ("control.kubestellar.io/v1alpha1", "CombinedStatus"): "combinedstatus.json",
    ("ksgitops.kubestellar.io/v1alpha1", "RepoConfig"): "repoconfig.json",
}
# Kinds ksgitops writes but never reads as input (so not in SCHEMA_FILES, which validate uses):
GENERATED_SCHEMAS: dict[tuple[str, str], str] = {
    ("ksgitops.kubestellar.io/v1alpha1", "SpaceProblems"): "problems.json",  # reconcile: .ksgitops/problems.yaml
    ("ksgitops.kubestellar.io/v1alpha1", "SyncReport"): "syncreport.json",  # `ksgitops sync`: reported/sync.yaml
}
REPORTED_SCHEMA = "reported.json"  # mailbox reported/ files: no apiVersion/kind, see validate_reported

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


# --- loading ---------------------------------------------------------------------------------

def schema_dir() -> Any:
    """The folder (a Traversable) holding the schema files, installed or in a source checkout."""
    try:
        return importlib.resources.files("ksgitops.schema")
    except ModuleNotFoundError:  # running from a source tree: schema/ sits at the repo root
        return Path(__file__).resolve().parent.parent.parent / "schema"


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
def validator_for(name: str) -> Draft202012Validator:
    """The cached validator of schema file `name`, with cross-file references resolvable."""
    from jsonschema import Draft202012Validator
    return Draft202012Validator(load_schema(name), registry=_registry())


def schema_for(obj: Obj) -> str | None:
    """The schema file for an object of a kind we own, by (apiVersion, kind); None for workload kinds."""
    return SCHEMA_FILES.get((obj.api_version, obj.kind))


# --- validation ------------------------------------------------------------------------------

def validate_schema(obj: Obj) -> list[Problem]:
    """Problems of one object against its schema, sorted; [] for workload kinds.

    An apiVersion/kind in one of our API groups that has no schema (a typo'd kind, an unsupported
    version) is a problem too: otherwise it would be silently taken for a control object.
    """
    label = _label(obj)
    name = schema_for(obj)
    if name is None:
        if obj.group in CONTROL_GROUPS:
            known = sorted({k for (v, k) in SCHEMA_FILES if v == obj.api_version})
            hint = f" (known in {obj.api_version}: {', '.join(known)})" if known else ""
            return [Problem(obj.origin, f"{label}: apiVersion {obj.api_version} kind {obj.kind} "
                                        f"is not a kind ksgitops understands{hint}")]
        return []
    return validate_document(name, obj.body, obj.origin, label)


def validate_reported(data: Any, origin: Origin) -> list[Problem]:
    """Problems of one reported-state document (mailbox `reported/` file, DESIGN section 6)."""
    return validate_document(REPORTED_SCHEMA, data, origin, "reported state")


def validate_document(name: str, data: Any, origin: Origin, label: str) -> list[Problem]:
    """Validate `data` against schema file `name`; each finding is `<label>: <path>: <message>`."""
    key_problems: list[tuple[str, str]] = []
    instance = _jsonable(data, [], key_problems)
    findings = set(key_problems)
    for error in validator_for(name).iter_errors(instance):
        findings.update(_findings(_deepest(error)))
    return [Problem(origin, f"{label}: {path}: {msg}" if path else f"{label}: {msg}")
            for path, msg in sorted(findings)]


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


def _findings(error: ValidationError) -> list[tuple[str, str]]:
    path = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [p for p in error.validator_value if p not in error.instance]
        return [(format_path([*path, p]), "required field is missing") for p in missing]
    if error.validator == "additionalProperties" and error.validator_value is False \
            and isinstance(error.instance, dict):
        return [(format_path([*path, k]), _unknown_field(k, error.schema)) for k in _extras(error)]
    return [(format_path(path), _shorten(_message(error)))]


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
        return f"must have at {word} {value} item{'s' if value != 1 else ''}"
    if v in ("minLength", "maxLength"):
        word = "least" if v == "minLength" else "most"
        return f"must be at {word} {value} character{'s' if value != 1 else ''} long"
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
