"""What the schema tests (tests/test_schemas*.py) share: valid examples, one or more per schema file
(KubeStellar example1 where it has one) and of reported state, and the validation messages of a
document checked against its schema."""
from __future__ import annotations

import copy
from typing import Any

import yaml

from ksgitops.core.load.schemas import GENERATED_SCHEMAS, SCHEMA_FILES, validate_document, validate_schema
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
