"""Read KubeStellar's YAML of every release as one shape, once per file (memoized with the parse).

What the rest of the pipeline then never has to know about:
- v0.6's API group `edge.kcp.io` is read as `edge.kubestellar.io` (the apiVersion, a Location's
  `spec.resource.group`, and `edge.kcp.io/...` annotation keys on any object), with a warning to
  rename it;
- KubeStellar's kinds (`edge.kubestellar.io`, `space.kubestellar.io`) are checked against
  schema/, which follows their CRDs: a field the schema does not know, or a null it does not
  allow, is dropped with a warning, as the API server prunes it; so are what the API server sets
  itself (`metadata.resourceVersion`, `managedFields`, `creationTimestamp`, `selfLink`,
  `generation`, as `kubectl get -o yaml` shows them) and the `status` of kinds whose CRD has a
  status subresource (SyncTarget, Location: the API server ignores it in what is applied);
- a Space's `spec.Managed` (KubeStellar v0.7's field) is read as `spec.Type` (true: managed,
  false: unmanaged), with a warning;
- ksgitops' own kinds (StatusCollector, CombinedStatus) are checked strictly: an unknown field is
  an error. (RepoConfig is checked by repoconfig.py.)

Findings under `metadata` are left to validation, which checks names, namespaces, labels and
annotations for every kind alike. With a memo (the persistent parse cache), schema findings are
memoized by the document's content: a file that changed mostly holds documents that did not
(one Location edited in a file of a hundred WECs checks one document, not two hundred). So a
problem about one field keeps that field's path, not its line (a `FieldProblem`, locate.py):
the line is looked up when the file's problems are collected (read.py), and only for those.
"""
from __future__ import annotations

import hashlib
from typing import Any, MutableMapping

from msgspec import Struct, field
from msgspec.structs import replace
import orjson

from ...model import Origin, Problem, split_api_version
from .locate import at_field
from .parse import ParsedFile, parse_file
from .schemas import PRUNED_GROUPS, SCHEMA_FILES, Finding, finding_problem, load_schema, schema_findings

OLD_GROUP = "edge.kcp.io"
EDGE_GROUP = "edge.kubestellar.io"
SERVER_SET = ("resourceVersion", "managedFields", "creationTimestamp", "selfLink", "generation")
STATUS_SUBRESOURCE = frozenset({(EDGE_GROUP, "SyncTarget"), (EDGE_GROUP, "Location")})
UNCHECKED = frozenset({"RepoConfig"})


class FindingsMemo(Struct):
    """Schema findings by document content, kept in a persistent cache; `used`: the keys taken
    (the caller keeps them alive while the file they came from is unchanged)."""

    cache: MutableMapping[Any, Any]
    used: list[Any] = field(default_factory=list)


def read_source(path: str, data: bytes, memo: FindingsMemo | None = None) -> ParsedFile:
    """parse_file, then every document converted: its problems (warnings, errors) are added."""
    parsed = parse_file(path, data)
    if not parsed.docs:
        return parsed
    return ParsedFile(parsed.docs, parsed.problems + converted(path, parsed.docs, memo))


def converted(path: str, docs: tuple[tuple[int, dict[str, Any]], ...],
              memo: FindingsMemo | None = None) -> tuple[Problem, ...]:
    """Convert freshly parsed documents in place; what they gave, in document order."""
    return tuple(p for line, body in docs for p in convert(body, Origin(path, line), memo))


def convert(body: dict[str, Any], origin: Origin, memo: FindingsMemo | None = None) -> list[Problem]:
    """Convert one freshly parsed document in place; returns what it found."""
    problems = _rename_old_group(body, origin)
    group, _ = split_api_version(str(body.get("apiVersion", "")))
    kind = body.get("kind")
    schema = SCHEMA_FILES.get((str(body.get("apiVersion", "")), str(kind)))
    if schema is None or kind in UNCHECKED:
        return problems
    label = _label(body)
    prunes = group in PRUNED_GROUPS
    if prunes:
        problems += _drop_server_set(body, origin, label, (group, str(kind)) in STATUS_SUBRESOURCE)
    problems += _check(schema, body, origin, label, prunes, memo)
    if kind == "Space" and not any(p.is_error for p in problems):
        problems += _managed_as_type(body, origin, label)
    return problems


def _label(body: dict[str, Any]) -> str:
    md = body.get("metadata")
    name = md.get("name") if isinstance(md, dict) else None
    return f"{body.get('kind')} {name}" if isinstance(name, str) and name else str(body.get("kind"))


def _rename_old_group(body: dict[str, Any], origin: Origin) -> list[Problem]:
    problems = []
    api_version = body.get("apiVersion")
    if isinstance(api_version, str) and split_api_version(api_version)[0] == OLD_GROUP:
        new = f"{EDGE_GROUP}/{split_api_version(api_version)[1]}"
        body["apiVersion"] = new
        resource = body.get("spec", {}).get("resource") if isinstance(body.get("spec"), dict) else None
        if isinstance(resource, dict) and resource.get("group") == OLD_GROUP:
            resource["group"] = EDGE_GROUP
        problems.append(at_field(Problem(origin, f"apiVersion {api_version} is KubeStellar v0.6's API group: "
                                                 f"read as {new}; rename it", "warning"), ("apiVersion",)))
    md = body.get("metadata")
    annotations = md.get("annotations") if isinstance(md, dict) else None
    if isinstance(annotations, dict):
        for key in [k for k in annotations if isinstance(k, str) and k.startswith(f"{OLD_GROUP}/")]:
            new_key = EDGE_GROUP + key[len(OLD_GROUP):]
            value = annotations.pop(key)
            annotations.setdefault(new_key, value)
            warning = Problem(origin, f"annotation {key} is KubeStellar v0.6's name: read as {new_key}; rename it",
                              "warning")
            problems.append(at_field(warning, ("metadata", "annotations", key)))
    return problems


def _drop_server_set(body: dict[str, Any], origin: Origin, label: str, has_status_subresource: bool) -> list[Problem]:
    md = body.get("metadata")
    dropped: list[tuple[str, ...]] = [("metadata", key) for key in SERVER_SET
                                      if isinstance(md, dict) and md.pop(key, None) is not None]
    if has_status_subresource and body.pop("status", None) is not None:
        dropped.append(("status",))
    if not dropped:
        return []
    fields = ", ".join(".".join(d) for d in dropped)
    return [at_field(Problem(origin, f"{label}: {fields} dropped: the API server sets "
                                     f"{'them' if len(dropped) > 1 else 'it'} itself (as in `kubectl get -o yaml` "
                                     "output)", "warning"), dropped[0])]


def _check(schema: str, body: dict[str, Any], origin: Origin, label: str, prunes: bool,
           memo: FindingsMemo | None) -> list[Problem]:
    """Schema findings; on KubeStellar's kinds unknown fields and disallowed nulls are dropped,
    then what remains is checked again (a dropped null may leave a required field missing)."""
    found = list(_findings(schema, body, memo))
    dropped = [f for f in found if f.action in ("unknown", "null")] if prunes else []
    if dropped:
        for finding in dropped:
            _delete(body, finding.path)
        found = dropped + list(_findings(schema, body, memo))
    problems = [at_field(finding_problem(f, origin, label, prunes), f.path) for f in found]
    return [_other_version(_emptied_selector(p, f, body), f, body) if f in dropped else p
            for p, f in zip(problems, found)]


def _findings(schema: str, body: dict[str, Any], memo: FindingsMemo | None) -> tuple[Finding, ...]:
    """schema_findings outside `metadata` (left to validation), memoized by the document's content
    without its metadata: what the schemas find outside `metadata` does not depend on what is in
    it (tests/test_convert_memo.py checks the schemas keep it so), and documents that differ only
    in names and labels (every mailbox's Space, a Location relabelled) share one entry. Not
    memoized: a document JSON cannot tell apart from another (a timestamp, a non-string key, an
    integer beyond 64 bits), nor one whose metadata has a non-string key (reported at the top)."""
    metadata = body.get("metadata", _ABSENT)
    if memo is None or not _string_keys(metadata):
        return _outside_metadata(schema_findings(schema, body))
    keyed = {**body, "metadata": type(metadata).__name__} if metadata is not _ABSENT else body
    try:
        content = orjson.dumps(keyed, option=orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME)
    except TypeError:  # orjson.JSONEncodeError is one
        return _outside_metadata(schema_findings(schema, body))
    key = ("schema-findings", schema, hashlib.blake2b(content, digest_size=20).digest())
    memo.used.append(key)
    found = memo.cache.get(key)
    if found is None:
        found = memo.cache[key] = _outside_metadata(schema_findings(schema, body))
    return found  # type: ignore[no-any-return]


_ABSENT = object()


def _outside_metadata(found: list[Finding]) -> tuple[Finding, ...]:
    return tuple(f for f in found if f.path[:1] != ("metadata",))


def _string_keys(value: Any) -> bool:
    """Every mapping key in `value` a string (else the finding about it is not under `metadata`)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _string_keys(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_string_keys(item) for item in value)
    return True


def _emptied_selector(problem: Problem, finding: Finding, body: dict[str, Any]) -> Problem:
    """A selector left empty by the drop selects everything (`{}`): say so."""
    parent = finding.path[:-1]
    holder = parent[-1] if parent and isinstance(parent[-1], str) else parent[-2] if len(parent) > 1 else ""
    if not (isinstance(holder, str) and holder.endswith(("Selector", "Selectors")) and _at(body, parent) == {}):
        return problem
    return replace(problem, message=f"{problem.message}; the selector is now {{}}, which matches everything")


def _other_version(problem: Problem, finding: Finding, body: dict[str, Any]) -> Problem:
    """An EdgePlacement field of the other version (`downsync` under v1alpha1): say so, as the
    apiVersion is then the likelier mistake; a v1alpha1 one without namespaceSelector places every
    namespaced object of its space."""
    group, version = split_api_version(str(body.get("apiVersion", "")))
    other = {"v1alpha1": "v2alpha1", "v2alpha1": "v1alpha1"}.get(version)
    if body.get("kind") != "EdgePlacement" or group != EDGE_GROUP or other is None \
            or len(finding.path) != 2 or finding.path[0] != "spec":
        return problem
    key = finding.path[1]
    if key not in load_schema(f"edgeplacement-{other}.json")["properties"]["spec"]["properties"]:
        return problem
    hint = f"; {key} is a field of {group}/{other} EdgePlacements, and this one is {group}/{version}"
    spec = body.get("spec")
    if version == "v1alpha1" and isinstance(spec, dict) and spec.get("namespaceSelector") is None:
        hint += (", which without spec.namespaceSelector places every namespaced object of its space "
                 f"(write apiVersion: {group}/{other})")
    return replace(problem, message=problem.message + hint)


def _at(body: Any, path: tuple[str | int, ...]) -> Any:
    node = body
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _delete(body: Any, path: tuple[str | int, ...]) -> None:
    node = _at(body, path[:-1])
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _managed_as_type(body: dict[str, Any], origin: Origin, label: str) -> list[Problem]:
    spec = body.get("spec")
    if not isinstance(spec, dict) or "Managed" not in spec:
        return []
    managed = spec.pop("Managed")
    read_as = "managed" if managed else "unmanaged"
    at = ("spec", "Managed")
    if "Type" in spec:
        return [at_field(Problem(origin, f"{label}: spec.Managed (KubeStellar v0.7's field) is ignored: spec.Type "
                                         f"{spec['Type']!r} says what the space is; remove spec.Managed",
                                 "warning"), at)]
    spec["Type"] = read_as
    return [at_field(Problem(origin, f"{label}: spec.Managed: {str(managed).lower()} is KubeStellar v0.7's field: "
                                     f"read as spec.Type: {read_as}; write that instead", "warning"), at)]


__all__ = ["read_source", "convert"]
