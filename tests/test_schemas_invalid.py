"""The JSON Schemas in schema/ against invalid objects: each fails naming the field (metadata.name
required, apiVersion and kind checked, invalid reported state), and the values KubeStellar's CRDs
accept are warnings of validation, not schema errors."""
from __future__ import annotations

from typing import Any

import pytest

from ksgitops.core.load.schemas import (SCHEMA_FILES, load_schema, validate_document, validate_reported,
                                        validate_schema)
from schema_examples import KIND_SCHEMAS, ORIGIN, base, messages, obj


# --- invalid objects fail, naming the field ------------------------------------------------------

def _set(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Set (or with value ... delete) a dotted path; integers index lists."""
    parts = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = body
    for part in parts[:-1]:
        node = node[part]
    if value is ...:
        del node[parts[-1]]
    else:
        node[parts[-1]] = value
    return body


INVALID = [
    # (schema, path to set, value (... deletes), expected path in message, expected text)
    ("synctarget.json", "spec", {"cells": {"zone": 1}}, "spec.cells.zone", "must be of type string"),
    ("synctarget.json", "metadata.labels.env", True, "metadata.labels.env", "label value"),
    ("synctarget.json", "specs", {}, "specs", "unknown field (did you mean 'spec'?)"),
    ("location.json", "spec.instanceSelector", {"matchLabel": {"id": "florin"}},
     "spec.instanceSelector.matchLabel", "did you mean 'matchLabels'?"),
    ("location.json", "spec.resource.resource", 7, "spec.resource.resource", "must be of type string"),
    ("location.json", "spec.instanceSelectors", {}, "spec.instanceSelectors", "unknown field"),
    ("edgeplacement-v2alpha1.json", "spec.downsync.0.resources", "configmaps",
     "spec.downsync[0].resources", "must be of type array (got string 'configmaps')"),
    ("edgeplacement-v2alpha1.json", "spec.downsync.0.resource", ["configmaps"],
     "spec.downsync[0].resource", "did you mean 'resources'?"),
    ("edgeplacement-v2alpha1.json", "spec.locationSelectors", {"matchLabels": {"env": "prod"}},
     "spec.locationSelectors", "must be of type array (got object)"),
    ("edgeplacement-v2alpha1.json", "spec.wantSingletonReportedState", "true",
     "spec.wantSingletonReportedState", "must be of type boolean"),
    ("edgeplacement-v2alpha1.json", "spec.upsync.0.resources", ..., "spec.upsync[0].resources",
     "required field is missing"),
    ("edgeplacement-v2alpha1.json", "spec.upsync.1.name", ["x"], "spec.upsync[1].name", "did you mean 'names'?"),
    ("edgeplacement-v2alpha1.json", "spec.statusCollectors", ["a", "a"], "spec.statusCollectors",
     "must not contain duplicates"),
    ("edgeplacement-v2alpha1.json", "spec.namespaceSelector", {}, "spec.namespaceSelector", "unknown field"),
    ("edgeplacement-v1alpha1.json", "spec.nonNamespacedObjects.0.names", ["x"],
     "spec.nonNamespacedObjects[0].names", "unknown field"),
    ("edgeplacement-v1alpha1.json", "spec.nonNamespacedObjects.1.resources", ...,
     "spec.nonNamespacedObjects[1].resources", "required field is missing"),
    ("edgeplacement-v1alpha1.json", "spec.downsync", [], "spec.downsync", "unknown field"),
    ("customizer.json", "replacements.0.value", 3, "replacements[0].value", "must be of type string (got integer 3)"),
    ("customizer.json", "replacements.1.extra", 1, "replacements[1].extra", "unknown field"),
    ("customizer.json", "replacements.1.value", ..., "replacements[1].value", "required field is missing"),
    ("customizer.json", "spec", {"replacements": []}, "spec", "unknown field"),
    ("customizer.json", "jsonPatch.0.value", ..., "jsonPatch[0].value", "required field is missing"),
    ("customizer.json", "jsonPatch.3.from", ..., "jsonPatch[3].from", "required field is missing"),
    ("customizer.json", "jsonPatch.1.op", "delete", "jsonPatch[1].op", "must be one of 'add'"),
    ("customizer.json", "jsonPatch.1.path", "spec/x", "jsonPatch[1].path", "JSON Pointer"),
    ("customizer.json", "metadata.annotations", {"edge.kubestellar.io/expand-parameters": True},
     "metadata.annotations['edge.kubestellar.io/expand-parameters']", "must be of type string"),
    ("singleplacementslice.json", "destinations.0.syncTargetUID", ..., "destinations[0].syncTargetUID",
     "required field is missing"),
    ("singleplacementslice.json", "destinations.0.cluster", 3, "destinations[0].cluster", "must be of type string"),
    ("syncerconfig.json", "spec.namespacedObjects.0.objectsByNamespace.0.name", ["x"],
     "spec.namespacedObjects[0].objectsByNamespace[0].name", "did you mean 'names'?"),
    ("syncerconfig.json", "spec.clusterScope.0.apiVersion", ..., "spec.clusterScope[0].apiVersion",
     "required field is missing"),
    ("syncerconfig.json", "spec.namespaceScope", {"namespaces": "a"}, "spec.namespaceScope.namespaces",
     "must be of type array"),
    ("space.json", "spec.Type", "Managed", "spec.Type", "must be one of 'managed', 'unmanaged', 'imported'"),
    ("space.json", "spec.type", "managed", "spec.type", "did you mean 'Type'?"),
    ("space.json", "status.Phase", "Running", "status.Phase", "must be one of 'Initializing'"),
    ("statuscollector.json", "spec.combinedFields.1.subject", ..., "spec.combinedFields[1].subject",
     "required field is missing"),
    ("statuscollector.json", "spec.combinedFields.0.type", "MEDIAN", "spec.combinedFields[0].type",
     "must be one of 'COUNT', 'SUM'"),
    ("statuscollector.json", "spec.select", [{"name": "x", "def": "obj.x"}], "spec.combinedFields",
     "must be empty when select is given"),
    ("statuscollector.json", "spec.combinedFields", ..., "spec.combinedFields", "required field is missing"),
    ("statuscollector.json", "spec.limit", -1, "spec.limit", "must be >= 0 (got integer -1)"),
    ("statuscollector.json", "spec.groupBy.0.def", ..., "spec.groupBy[0].def", "required field is missing"),
    ("combinedstatus.json", "health.Sick", 1, "health", "must be one of 'Healthy'"),
    ("combinedstatus.json", "wecs.0.health", "Fine", "wecs[0].health", "must be one of 'Healthy'"),
    ("combinedstatus.json", "executingCount", ..., "executingCount", "required field is missing"),
    ("combinedstatus.json", "object.name", ..., "object.name", "required field is missing"),
    ("repoconfig.json", "spec", {"pol": {}}, "spec.pol", "did you mean 'poll'?"),
]


# KubeStellar's CRDs accept these (plain strings, selectors of any content): validation warns that the
# clause or selector matches nothing (core/load/clauses.py), where the schema used to refuse them.
NOW_WARNINGS = [
    ("spec.downsync.0.resources", ["ConfigMaps"], "spec.downsync[0].resources[0]", "matches nothing"),
    ("spec.downsync.1.apiGroup", "apps/v1", "spec.downsync[1].apiGroup", "holds a version"),
    ("spec.downsync.0.namespaces", ["Common_Stuff"], "spec.downsync[0].namespaces[0]", "is not a namespace name"),
    ("spec.downsync.0.namespaceSelectors", [{"matchExpressions": [{"key": "a", "operator": "In"}]}],
     "spec.downsync[0].namespaceSelectors[0]", "operator In needs at least one value"),
    ("spec.downsync.0.labelSelectors", [{"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}],
     "spec.downsync[0].labelSelectors[0]", "operator Exists takes no values"),
    ("spec.locationSelectors.0.matchExpressions", [{"key": "a", "operator": "in"}],
     "spec.locationSelectors[0]", "operator 'in' is not one of In"),
]


@pytest.mark.parametrize(("path", "value", "where", "text"), NOW_WARNINGS, ids=[p for p, *_ in NOW_WARNINGS])
def test_values_the_crd_accepts_are_warnings_not_schema_errors(path: str, value: Any, where: str, text: str) -> None:
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = _set(base("edgeplacement-v2alpha1.json"), path, value)
    assert validate_schema(obj(body)) == []
    problems = validate({"wds": [obj(body)]}, KindTable())
    found = [p for p in problems if p.message.startswith(f"EdgePlacement edge-placement-c: {where}: ")]
    assert found and all(p.severity == "warning" for p in found), problems
    assert any(text in p.message for p in found), found


@pytest.mark.parametrize(("name", "path", "value", "where", "text"), INVALID,
                         ids=[f"{n}:{p}" for n, p, *_ in INVALID])
def test_invalid_objects_fail_naming_the_field(name: str, path: str, value: Any, where: str, text: str) -> None:
    body = _set(base(name), path, value)
    msgs = messages(body)
    label = f"{body['kind']} {body.get('metadata', {}).get('name')}" if body.get("metadata") else body["kind"]
    expected = f"{label}: {where}: "
    assert any(m.startswith(expected) and text in m for m in msgs), (expected, text, msgs)


@pytest.mark.parametrize("name", [n for n in KIND_SCHEMAS if n != "repoconfig.json"])
def test_metadata_name_is_required(name: str) -> None:
    body = base(name)
    del body["metadata"]["name"]
    assert f"{body['kind']}: metadata.name: required field is missing" in messages(body)
    del body["metadata"]
    assert f"{body['kind']}: metadata: required field is missing" in messages(body)


@pytest.mark.parametrize(("key", "name"), sorted(SCHEMA_FILES.items()))
def test_api_version_and_kind_are_checked_against_the_schema(key: tuple[str, str], name: str) -> None:
    body = base(name)
    body["apiVersion"] = "edge.kubestellar.io/v9"
    body["kind"] = "Other"
    msgs = [p.message for p in validate_document(name, body, ORIGIN, "X")]
    versions = load_schema(name)["properties"]["apiVersion"].get("enum")
    expected = f"one of {', '.join(map(repr, versions))}" if versions else repr(key[0])
    assert f"X: apiVersion: must be {expected} (got string 'edge.kubestellar.io/v9')" in msgs
    assert f"X: kind: must be {key[1]!r} (got string 'Other')" in msgs


@pytest.mark.parametrize(("data", "where", "text"), [
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}}, "reportedAt", "required field is missing"),
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap"}, "reportedAt": "2024-01-01T00:00:00Z"}, "object.name",
     "required field is missing"),
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}, "reportedAt": "yesterday"}, "reportedAt",
     "RFC 3339"),
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "generation": -1},
      "reportedAt": "2024-01-01T00:00:00Z"}, "object.generation", "must be >= 0"),
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}, "reportedAt": "2024-01-01T00:00:00Z",
      "health": "Healthy"}, "health", "unknown field"),
    ({"object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}, "reportedAt": "2024-01-01T00:00:00Z",
      "status": "ok"}, "status", "must be of type object"),
])
def test_invalid_reported_state_fails(data: dict[str, Any], where: str, text: str) -> None:
    msgs = [p.message for p in validate_reported(data, ORIGIN)]
    assert any(m.startswith(f"reported state: {where}: ") and text in m for m in msgs), msgs
