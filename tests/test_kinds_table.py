"""The built-in kind table holds every kind Kubernetes serves as a resource of its own, with the
scope and plural that decide mailbox paths (`objects/<group|core>/<resource>/...`), and the
top-level fields the unknown-field warning allows (ksgitops/kinds.py, core/load/workload.py).

Source: the Kubernetes Python client the lock file pins (its OpenAPI document is Kubernetes'
release-1.37): each API class's create and list operations name a resource's path (group,
version, `namespaces/{namespace}/` or not, plural) and its model, whose `attribute_map` holds
the kind's top-level fields. Read here, never by ksgitops: its table stays a literal.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, get_args

import pytest

from ksgitops.core.load.workload import top_level_fields
from ksgitops.core.pipeline import reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot
from ksgitops.kinds import REMOVED_KINDS, KindInfo, KindTable

from test_workload_checks import BASE, CASE, EDGE, case_warnings, obj

client = pytest.importorskip("kubernetes.client")
TABLE_RELEASE = "37."  # the client release kinds.py's table was read from
SAME_RELEASE = __import__("kubernetes").__version__.startswith(TABLE_RELEASE)

Tree = Callable[[dict[str, str]], Path]
_METHOD = re.compile(r"\n    def ((?:create|list)_\w+)\(\n(.*?)\) -> (\w+):", re.S)
_PATH = re.compile(r"\n    def _(\w+)_serialize\(.*?method='(\w+)',\s*resource_path='([^']+)'", re.S)
_VERSION_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:alpha\d+|beta\d+)?(?=[A-Z])")


def client_resources() -> dict[tuple[str, str], set[tuple[str, str, bool, str]]]:
    """(group, kind) -> {(version, plural, namespaced, model name)} of every top-level resource."""
    found: dict[tuple[str, str], set[tuple[str, str, bool, str]]] = {}
    for source in sorted((Path(client.__file__).parent / "api").glob("*_v*_api.py")):
        text = source.read_text()
        models = {}
        for name, params, returns in _METHOD.findall(text):
            if name.endswith(("_with_http_info", "_without_preload_content", "_for_all_namespaces")):
                continue
            body = re.search(r"\n\s+body: (\w+)", params)
            if name.startswith("create_") and body:
                models[name] = body.group(1)
            elif name.startswith("list_") and returns.endswith("List"):
                models[name] = get_args(getattr(client, returns).model_fields["items"].annotation)[0].__name__
        for name, method, path in _PATH.findall(text):
            if name not in models or method not in ("POST", "GET"):
                continue
            parts = path.strip("/").split("/")
            group, version, rest = ("", parts[1], parts[2:]) if parts[0] == "api" else (parts[1], parts[2], parts[3:])
            namespaced = rest[:2] == ["namespaces", "{namespace}"]
            rest = rest[2:] if namespaced else rest
            if len(rest) != 1 or "{" in rest[0]:
                continue  # a subresource, or one object
            kind = _VERSION_PREFIX.sub("", models[name])
            found.setdefault((group, kind), set()).add((version, rest[0], namespaced, models[name]))
    return found


RESOURCES = client_resources()


def test_no_kind_called_removed_is_served() -> None:
    """kinds.REMOVED_KINDS names kinds no release serves: none is in the table, nor in the client's API."""
    table = KindTable()
    assert [k for k in REMOVED_KINDS if table.is_builtin(*k) or k in RESOURCES] == []


def test_the_client_was_read() -> None:
    assert len(RESOURCES) >= 75 and ("flowcontrol.apiserver.k8s.io", "FlowSchema") in RESOURCES
    assert RESOURCES[("", "ComponentStatus")] == {("v1", "componentstatuses", False, "V1ComponentStatus")}


@pytest.mark.parametrize(("group", "kind"), sorted(RESOURCES), ids=[f"{g or 'core'}-{k}" for g, k in sorted(RESOURCES)])
def test_every_kind_kubernetes_serves_is_in_the_table_with_its_scope_and_plural(group: str, kind: str) -> None:
    table = KindTable()
    if not SAME_RELEASE and not table.is_builtin(group, kind):
        pytest.skip(f"{group}/{kind}: newer than the table's client release {TABLE_RELEASE}x (read it again)")
    assert table.is_builtin(group, kind)
    for version, plural, namespaced, _ in RESOURCES[(group, kind)]:
        assert table.lookup(group, kind) == KindInfo(plural, namespaced)
        assert version in table.served(group, kind), (version, table.served(group, kind))


@pytest.mark.parametrize(("group", "kind"), sorted(RESOURCES), ids=[f"{g or 'core'}-{k}" for g, k in sorted(RESOURCES)])
def test_the_top_level_fields_of_every_built_in_kind(group: str, kind: str) -> None:
    for _, _, _, model in RESOURCES[(group, kind)]:
        fields = set(getattr(client, model).attribute_map.values()) | {"status"}  # kubectl get shows it
        if SAME_RELEASE:
            assert set(top_level_fields(group, kind)) == fields, model
        elif KindTable().is_builtin(group, kind):  # a later release may add fields, not take them away
            assert set(top_level_fields(group, kind)) <= fields, model


@pytest.mark.parametrize("text", [
    obj("events.k8s.io/v1", "Event", "regarding: {kind: Pod, name: p}\nnote: started\nreason: Started\n"),
    obj("coordination.k8s.io/v1", "Lease", "spec: {holderIdentity: a}\n"),
    obj("coordination.k8s.io/v1alpha2", "LeaseCandidate", "spec: {}\n"),
    obj("discovery.k8s.io/v1", "EndpointSlice", "addressType: IPv4\nendpoints: []\n"),
    obj("resource.k8s.io/v1", "ResourceClaim", "spec: {}\n"),
    obj("resource.k8s.io/v1beta1", "ResourceClaimTemplate", "spec: {}\n"),
    obj("storage.k8s.io/v1", "CSIStorageCapacity", "storageClassName: fast\ncapacity: 1Gi\n"),
    "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: f}\nspec: {}\n",
    "apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: PriorityLevelConfiguration\nmetadata: {name: p}\n",
    "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: v}\nspec: {}\n",
    "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: v}\n",
    "apiVersion: storagemigration.k8s.io/v1alpha1\nkind: StorageVersionMigration\nmetadata: {name: m}\n",
    "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n",
    "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n",
    "apiVersion: storage.k8s.io/v1beta1\nkind: VolumeAttributesClass\nmetadata: {name: gold}\ndriverName: d\n",
    "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata: {name: '2001:db8::1'}\nspec: {}\n",
    "apiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {name: 'example.com:s:b'}\n",
    "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.example.com}\nspec: {}\n",
], ids=["event", "lease", "lease-candidate", "endpointslice", "resourceclaim", "resourceclaimtemplate",
        "csistoragecapacity", "flowschema", "prioritylevel-v1beta3", "vap", "vap-binding-v1beta1",
        "storageversionmigration", "runtimeclass", "priorityclass", "volumeattributesclass", "ipaddress",
        "clustertrustbundle", "apiservice"])
def test_kinds_kubernetes_serves_are_known(tree: Tree, text: str) -> None:
    assert case_warnings(tree, text) == []


@pytest.mark.parametrize(("text", "message"), [
    ("apiVersion: flowcontrol.apiserver.k8s.io/v1beta2\nkind: FlowSchema\nmetadata: {name: f}\n",
     "FlowSchema flowcontrol.apiserver.k8s.io/v1beta2: Kubernetes serves FlowSchema as "
     "flowcontrol.apiserver.k8s.io/v1 or flowcontrol.apiserver.k8s.io/v1beta3"),
    ("apiVersion: admissionregistration.k8s.io/v1beta1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: w}\n",
     "Kubernetes serves ValidatingWebhookConfiguration as admissionregistration.k8s.io/v1"),
    (obj("events.k8s.io/v1beta1", "Event"), "Event events.k8s.io/v1beta1: Kubernetes serves Event as events.k8s.io/v1"),
    (obj("v1", "Lease"), "Lease v1: Kubernetes serves Lease as coordination.k8s.io/v1; as written, no clause"),
    (obj("policy/v1", "Eviction"), "kind Eviction of apiVersion policy/v1 is unknown"),
], ids=["flowschema-v1beta2", "webhook-v1beta1", "event-v1beta1", "lease-in-core", "policy-eviction"])
def test_versions_and_groups_of_the_added_kinds(tree: Tree, text: str, message: str) -> None:
    (found,) = case_warnings(tree, text)
    assert message in found, found


@pytest.mark.parametrize(("text", "path"), [
    ("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: f}\n",
     "flowcontrol.apiserver.k8s.io/flowschemas/_cluster/f"),
    (obj("resource.k8s.io/v1", "ResourceClaimTemplate", name="gpu"), "resource.k8s.io/resourceclaimtemplates/ns/gpu"),
], ids=["flowschema", "resourceclaimtemplate"])
def test_an_added_kind_is_placed_at_its_resource(tree: Tree, text: str, path: str) -> None:
    group, resource = path.split("/")[:2]
    placement = (EDGE + "kind: EdgePlacement\nmetadata: {name: added}\nspec:\n  locationSelectors: [{matchLabels: "
                 f"{{env: prod}}}}]\n  downsync: [{{apiGroup: {group}, resources: [{resource}]}}]\n")
    result = reconcile(WorkTreeSnapshot(tree({**BASE, "spaces/wds/added.yaml": placement, CASE: text})))
    assert [str(p) for p in result.problems if CASE in str(p) or p.is_error] == []
    assert path in result.mailboxes["imw1-mb-florin"].entries
