"""The JSON Schemas in schema/ and ksgitops.core.load.schemas (validation messages, lookup, caching)."""
from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from ksgitops.core.load import schemas
from ksgitops.core.load.schemas import (GENERATED_SCHEMAS, SCHEMA_FILES, format_path, load_schema, schema_for, schema_names, validate_document, validate_reported, validate_schema, validator_for)
from ksgitops.model import Obj, Origin

ORIGIN = Origin("spaces/wds/objects.yaml", 7)


def obj(body: dict[str, Any], space: str = "wds") -> Obj:
    return Obj(space, body, ORIGIN)


def schema_name(body: dict[str, Any]) -> str | None:
    """The schema of an input kind, or of CombinedStatus (status writes it; checked the same way)."""
    key = (str(body.get("apiVersion")), str(body.get("kind")))
    return SCHEMA_FILES.get(key) or GENERATED_SCHEMAS.get(key)


def messages(body: dict[str, Any]) -> list[str]:
    key = (str(body.get("apiVersion")), str(body.get("kind")))
    if key in SCHEMA_FILES:
        return [p.message for p in validate_schema(obj(body))]
    name = body.get("metadata", {}).get("name") if isinstance(body.get("metadata"), dict) else None
    label = f"{body['kind']} {name}" if name else str(body["kind"])
    return [p.message for p in validate_document(GENERATED_SCHEMAS[key], body, ORIGIN, label)]


# --- valid examples, one or more per schema file (KubeStellar example1 where it has one) -------

EXAMPLES: dict[str, list[str]] = {
    "synctarget.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: florin
  labels: {id: florin, env: prod}
""", """
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata: {name: guilder, labels: {id: guilder, env: prod, extended: si}, uid: 5b1c0e7e-0000-4000-8000-000000000001}
spec:
  unschedulable: false
  evictAfter: "2030-01-01T00:00:00Z"
  cells: {zone: eu-1}
  supportedAPIExports: [{export: kubernetes, path: "root:compute"}]
status: {lastSyncerHeartbeatTime: "2024-01-01T00:00:00Z"}
"""],
    "location.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: florin
  labels: {env: prod}
  annotations: {region: "south of the river"}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: florin}
""", """
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {name: nowhere}
spec:
  availableSelectorLabels: [{key: id, values: [a, b]}]
"""],
    "edgeplacement-v2alpha1.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata:
  name: edge-placement-c
spec:
  locationSelectors:
  - matchLabels: {"env": "prod"}
  downsync:
  - apiGroup: ""
    resources: [ configmaps ]
    namespaces: [ commonstuff ]
    objectNames: [ httpd-htdocs ]
  - apiGroup: apps
    resources: [ replicasets ]
    namespaces: [ commonstuff ]
  - apiGroup: null
    resources: ["*"]
    namespaceSelectors: [{matchExpressions: [{key: team, operator: In, values: [a]}]}]
    labelSelectors: [{}, {matchExpressions: [{key: tier, operator: Exists}]}]
  wantSingletonReportedState: true
  upsync:
  - apiGroup: "group1.test"
    resources: ["sprockets", "flanges"]
    namespaces: ["orbital"]
    names: ["george", "cosmo"]
  - apiGroup: "group2.test"
    resources: ["cogs"]
    names: ["William"]
  statusCollectors: [replicas-ready]
""", """
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: empty}
spec: {}
"""],
    "edgeplacement-v1alpha1.json": ["""
apiVersion: edge.kubestellar.io/v1alpha1
kind: EdgePlacement
metadata: {name: edge-placement-old}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  namespaceSelector: {matchLabels: {common: "true"}}
  nonNamespacedObjects:
  - apiGroup: apis.kcp.io
    resources: [apibindings]
    resourceNames: [bind-kubernetes, bind-apps]
  - resources: [namespaces]
    labelSelectors: [{matchLabels: {x: y}}]
  upsync:
  - {apiGroup: group1.test, resources: [sprockets], namespaces: [orbital], names: ["*"]}
"""],
    "customizer.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  namespace: specialstuff
  name: example-customizer
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
replacements:
- path: "$.spec.template.spec.containers.0.env.0.value"
  value: '"env is %(env)"'
- path: "$['metadata']['labels']['tier']"
  value: '"gold"'
jsonPatch:
- {op: add, path: /metadata/annotations/region, value: "%(region)"}
- {op: remove, path: /spec/template/spec/nodeSelector}
- {op: replace, path: /spec/replicas, value: null}
- {op: copy, from: /metadata/name, path: /metadata/labels/app}
- {op: test, path: "/metadata/labels/a~1b", value: x}
"""],
    "singleplacementslice.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: SinglePlacementSlice
metadata: {name: edge-placement-c}
destinations:
- {cluster: inventory, locationName: florin, syncTargetName: florin, syncTargetUID: 8a6bd4b8-0e0d-5f38-a4c7-0a3f1f9f0f4d}
- {cluster: inventory, locationName: guilder, syncTargetName: guilder, syncTargetUID: x}
"""],
    "syncerconfig.json": ["""
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncerConfig
metadata: {name: the-one}
spec:
  namespaceScope: {}
  namespacedObjects:
  - apiVersion: v1
    group: ""
    resource: configmaps
    objectsByNamespace:
    - {namespace: commonstuff, names: [httpd-htdocs]}
  - apiVersion: v1
    group: apps
    resource: replicasets
    objectsByNamespace:
    - {namespace: commonstuff, names: [commond]}
  clusterScope:
  - {apiVersion: v1, group: "", resource: namespaces, objects: [commonstuff]}
  upsync:
  - {apiGroup: group1.test, resources: [sprockets, flanges], namespaces: [orbital], names: [george, cosmo]}
"""],
    "space.json": ["""
apiVersion: space.kubestellar.io/v1alpha1
kind: Space
metadata:
  name: inventory-mb-florin
  annotations: {edge.kubestellar.io/sync-target-name: florin}
spec: {SpaceProviderDescName: default, Type: managed}
status: {Phase: Ready}
""", """
apiVersion: space.kubestellar.io/v1alpha1
kind: Space
metadata: {name: wds1}
"""],
    "spaceproviderdesc.json": ["""
apiVersion: space.kubestellar.io/v1alpha1
kind: SpaceProviderDesc
metadata: {name: clusters}
spec: {ProviderType: kubeconfig, Config: /etc/ksgitops/kubeconfig, SpacePrefixForDiscovery: wec-}
status: {Phase: Ready}
"""],
    "statuscollector.json": ["""
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: count-available}
spec:
  filter: "returned.status.availableReplicas > 0"
  groupBy: [{name: ready, def: "returned.status.readyReplicas == obj.spec.replicas"}]
  combinedFields:
  - {name: count, type: COUNT}
  - {name: total, type: SUM, subject: returned.status.availableReplicas}
  limit: 10
""", """
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: select-ready}
spec:
  select: [{name: wec, def: inventory.name}, {name: ready, def: returned.status.readyReplicas}]
"""],
    "combinedstatus.json": ["""
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata: {name: commond, namespace: commonstuff}
object: {apiVersion: apps/v1, kind: ReplicaSet, namespace: commonstuff, name: commond}
placements: [edge-placement-c]
executingCount: 2
reportedCount: 1
health: {Healthy: 1, Missing: 1}
wecs:
- {name: guilder, health: Missing, mailbox: inventory-mb-guilder}
- {name: florin, health: Healthy, reportedAt: "2024-05-01T12:00:00Z", generation: 3}
results:
- name: count-available
  columnNames: [ready, count]
  rows: [{columns: [{type: Bool, bool: true}, {type: Number, float: "1"}]}]
"""],
    "repoconfig.json": ["""
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
""", """
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
metadata: {name: config}
spec:
  commit: {authorName: Fleet Bot, authorEmail: fleet@example.com, messageTemplate: "sync {source}", skipCi: false}
  status: {limit: 5}
  skipSpaces: [scratch]
  kinds: [{group: example.com, kind: Widget, resource: widgets, namespaced: false}]
  push: {retries: 0}
  poll: {intervalSeconds: 0.5}
"""],
}

REPORTED_EXAMPLES = [
    {"object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff", "name": "commond",
                "generation": 3},
     "status": {"replicas": 2, "readyReplicas": 2}, "reportedAt": "2024-05-01T12:00:00Z"},
    {"object": {"apiVersion": "v1", "kind": "Namespace", "name": "commonstuff"},
     "reportedAt": "2024-05-01T12:00:00.123+02:00"},
]

KIND_SCHEMAS = sorted(set(SCHEMA_FILES.values()) | {"combinedstatus.json"})


def example_bodies(name: str) -> list[dict[str, Any]]:
    return [yaml.safe_load(text) for text in EXAMPLES[name]]


def base(name: str) -> dict[str, Any]:
    return copy.deepcopy(example_bodies(name)[0])


# --- the schema files themselves --------------------------------------------------------------

@pytest.mark.parametrize("name", schema_names())
def test_every_schema_file_is_a_valid_draft_2020_12_schema(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_schema_folder_holds_exactly_the_expected_files() -> None:
    expected = set(SCHEMA_FILES.values()) | {"common.json", "reported.json"} | set(GENERATED_SCHEMAS.values())
    assert set(schema_names()) == expected
    assert len(expected) == 17


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


@pytest.mark.parametrize("name", schema_names())
def test_refs_are_relative_to_sibling_files_and_resolve(name: str) -> None:
    """Editors resolve `common.json#...` next to the file, so only those two ref forms are used."""
    resolver = validator_for(name)._resolver
    for ref in _refs(load_schema(name)):
        assert re.match(r"^(common\.json)?#/\$defs/[A-Za-z0-9]+$", ref), ref
        resolver.lookup(ref)  # raises when it does not resolve


@pytest.mark.parametrize(("key", "name"), sorted(SCHEMA_FILES.items()))
def test_kind_schemas_pin_api_version_and_kind(key: tuple[str, str], name: str) -> None:
    """One file per kind; KubeStellar's v1alpha1 and v2alpha1 share it where their CRDs agree."""
    api_version, kind = key
    props = load_schema(name)["properties"]
    assert props["apiVersion"] == {"const": api_version} or api_version in props["apiVersion"]["enum"]
    assert props["kind"] == {"const": kind}


def test_validators_are_cached() -> None:
    assert validator_for("location.json") is validator_for("location.json")
    assert validator_for("location.json") is not validator_for("synctarget.json")


def test_unknown_schema_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        load_schema("nope.json")


def test_every_kind_schema_has_examples() -> None:
    assert sorted(EXAMPLES) == KIND_SCHEMAS


# --- valid objects pass -----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "index"), [(n, i) for n in sorted(EXAMPLES) for i in range(len(EXAMPLES[n]))])
def test_valid_examples_pass(name: str, index: int) -> None:
    body = example_bodies(name)[index]
    assert schema_name(body) == name
    assert messages(body) == []


@pytest.mark.parametrize("data", REPORTED_EXAMPLES)
def test_valid_reported_state_passes(data: dict[str, Any]) -> None:
    assert validate_reported(data, Origin("spaces/inventory-mb-florin/reported/x.yaml")) == []


def test_yaml_timestamps_are_accepted_as_strings() -> None:
    data = yaml.safe_load("object: {apiVersion: v1, kind: ConfigMap, namespace: a, name: b}\n"
                          "reportedAt: 2024-05-01T12:00:00Z\n")
    assert not isinstance(data["reportedAt"], str)  # PyYAML made it a datetime
    assert validate_reported(data, ORIGIN) == []


# --- lookup ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": 3},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": 1}},
    {"apiVersion": "example.com/v1", "kind": "EdgePlacement", "metadata": {"name": "look-alike"}},
])
def test_workload_kinds_have_no_schema_and_no_problems(body: dict[str, Any]) -> None:
    assert schema_for(obj(body)) is None
    assert validate_schema(obj(body)) == []


@pytest.mark.parametrize(("api_version", "kind", "hint"), [
    ("edge.kubestellar.io/v2alpha1", "EdgePlacment", " (did you mean EdgePlacement?)"),
    ("edge.kubestellar.io/v2alpha1", "EdgeSyncConfig", ""),
    ("control.kubestellar.io/v1alpha1", "BindingPolicy", ""),
])
def test_unknown_kinds_in_our_groups_are_warnings(api_version: str, kind: str, hint: str) -> None:
    """No schema, so no schema problem; validation warns once per unknown kind, never fatally (a
    KubeStellar release has kinds ksgitops does not read, e.g. EdgeSyncConfig, BindingPolicy)."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    assert validate_schema(obj(body)) == []
    problems = validate({"wds": [obj(body)]}, KindTable())
    assert len(problems) == 1 and problems[0].severity == "warning" and problems[0].origin == ORIGIN
    assert problems[0].message.startswith(f"kind {kind} of apiVersion {api_version} is unknown")
    assert problems[0].message.endswith(f"entry to place them{hint}")


def test_a_version_of_a_control_kind_nobody_defines_is_an_error() -> None:
    """The API server refuses it (no CRD serves that version), and read as a control object it
    would be misread."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": "edge.kubestellar.io/v1beta1", "kind": "EdgePlacement", "metadata": {"name": "x"}}
    (problem,) = validate({"wds": [obj(body)]}, KindTable())
    assert problem.is_error and problem.message == (
        "EdgePlacement x: apiVersion edge.kubestellar.io/v1beta1 is not a version of EdgePlacement (KubeStellar and "
        "ksgitops define edge.kubestellar.io/v1alpha1, edge.kubestellar.io/v2alpha1)")


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


# --- message hygiene ---------------------------------------------------------------------------

def test_problems_carry_the_object_origin_and_are_sorted_and_deterministic() -> None:
    body = base("edgeplacement-v2alpha1.json")
    body["spec"]["downsync"][1]["resources"] = "x"
    body["spec"]["upsync"][0]["resources"] = 3
    body["spec"]["zzz"] = 1
    body["aaa"] = 1
    problems = validate_schema(obj(body))
    assert len(problems) == 4
    assert all(p.origin == ORIGIN for p in problems)
    assert sum(p.is_error for p in problems) == 2  # the two unknown fields are warnings (dropped)
    assert [p.message for p in problems] == sorted(p.message for p in problems)
    shuffled = dict(reversed(list(body.items())))
    shuffled["spec"] = dict(reversed(list(body["spec"].items())))
    assert validate_schema(obj(shuffled)) == problems


def test_each_unknown_and_each_missing_field_is_its_own_problem() -> None:
    body = base("customizer.json")
    body["replacements"][0] = {"pth": "$.x", "vale": "1"}
    msgs = messages(body)
    for field in ("path", "value"):
        assert f"Customizer example-customizer: replacements[0].{field}: required field is missing" in msgs
    for typo, field in (("pth", "path"), ("vale", "value")):
        assert any(m.startswith(f"Customizer example-customizer: replacements[0].{typo}: unknown field (did you mean "
                                f"'{field}'?); dropped") for m in msgs), msgs


def test_messages_never_echo_mappings_or_lists() -> None:
    body = base("spaceproviderdesc.json")
    body["spec"]["Config"] = {"users": [{"user": {"token": "s3cr3t-t0ken"}}]}
    msgs = messages(body)
    assert msgs == ["SpaceProviderDesc clusters: spec.Config: must be of type string (got object)"]
    body["spec"]["Config"] = ["s3cr3t-t0ken"]
    assert "s3cr3t" not in " ".join(messages(body))


def test_long_messages_are_shortened() -> None:
    body = base("edgeplacement-v2alpha1.json")
    body["spec"]["wantSingletonReportedState"] = "N" * 5000  # long value: quoted in part
    body["metadata"]["labels"] = {"Bad key " * 500: "v"}  # long rule text + long value: cut at 200
    msgs = messages(body)
    assert len(msgs) == 2
    details = [m.split(": ", 2)[2] for m in msgs]
    assert all(len(d) <= 200 for d in details)
    assert details[0].endswith("...")  # metadata.labels sorts first
    assert details[1].endswith("NNN'...)")


def test_non_string_yaml_keys_are_reported() -> None:
    body = yaml.safe_load("""
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {name: florin, labels: {on: "x"}}
spec: {instanceSelector: {matchLabels: {id: florin}}}
""")
    assert True in body["metadata"]["labels"]  # YAML 1.1 made `on` a boolean
    msgs = messages(body)
    assert "Location florin: metadata.labels: key true is not a string (quote it in YAML)" in msgs


@pytest.mark.parametrize(("parts", "text"), [
    ([], ""),
    (["spec", "downsync", 0, "resources"], "spec.downsync[0].resources"),
    (["metadata", "annotations", "edge.kubestellar.io/customizer"],
     "metadata.annotations['edge.kubestellar.io/customizer']"),
    ([0, "a"], "[0].a"),
])
def test_format_path(parts: list[Any], text: str) -> None:
    assert format_path(parts) == text


def test_schema_dir_falls_back_to_the_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(_: str) -> Any:
        raise ModuleNotFoundError("ksgitops.schema")
    monkeypatch.setattr(schemas.importlib.resources, "files", missing)
    folder = schemas.schema_dir()
    assert json.loads(folder.joinpath("common.json").read_text())["$defs"]["LabelSelector"]


def test_long_keys_are_shortened_in_paths() -> None:
    body = base("location.json")
    body["spec"]["x" * 1000] = 1
    (msg,) = messages(body)
    assert msg.startswith(f"Location florin: spec['{'x' * 60}...']: unknown field (allowed: availableSelectorLabels, "
                          "description, instanceSelector, resource); dropped")


def test_compile_all_makes_every_validator_once() -> None:
    from ksgitops.core.load import schemas
    schemas._fast_validator.cache_clear()
    schemas.compile_all()
    names = [n for n in schemas.schema_names() if n != "common.json"]
    assert names and schemas._fast_validator.cache_info().currsize == len(names)
    schemas.compile_all()
    assert schemas._fast_validator.cache_info().misses == len(names)  # the second call compiles nothing
