"""KubeStellar's kinds of every release load as one shape; what its CRDs accept is a warning at worst.

Sources:
- KubeStellar v0.7.0 config/crds (edge.kubestellar.io v1alpha1 SyncTarget, Location, Customizer,
  EdgePlacement with namespaceSelector and nonNamespacedObjects, SyncerConfig scope: Cluster);
- KubeStellar v0.6.0 config/crds (the same kinds in the group edge.kcp.io);
- KubeStellar v0.14.2 config/crds (v2alpha1; SyncTarget and Location have a status subresource),
  space-framework/config/crds and pkg/apis/space/v1alpha1 (Space.spec.Type; v0.7.0's Space had
  spec.Managed instead);
- the Kubernetes API server prunes fields a structural CRD schema does not define, drops a null
  where the schema does not allow one, ignores `status` of kinds with a status subresource, and
  sets metadata.resourceVersion, managedFields, creationTimestamp itself;
- `kubectl apply` puts a namespaced object without a namespace in its context's namespace
  (`default`), and ignores `metadata.namespace` of a cluster-scoped object.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.app import usecases as app
from ksgitops.core.load import validate as validate_module
from ksgitops.core.load.convert import read_source
from ksgitops.core.load.validate import validate, with_scopes
from ksgitops.kinds import KindTable
from ksgitops.model import Obj, Origin

Tree = Callable[[dict[str, str]], Path]
V1 = "apiVersion: edge.kubestellar.io/v1alpha1\n"
V2 = "apiVersion: edge.kubestellar.io/v2alpha1\n"
INVENTORY = (V1 + "kind: SyncTarget\nmetadata: {name: florin, labels: {id: florin}}\n---\n"
             + V1 + "kind: Location\nmetadata: {name: florin, labels: {env: prod}}\n"
             "spec:\n  resource: {group: edge.kubestellar.io, version: v1alpha1, resource: synctargets}\n"
             "  instanceSelector: {matchLabels: {id: florin}}\n")
WORKLOAD = ("apiVersion: v1\nkind: Namespace\nmetadata: {name: common, labels: {common: si}}\n---\n"
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: common}\ndata: {a: b}\n")


def read(text: str, path: str = "spaces/s/x.yaml") -> tuple[list[dict[str, Any]], list[str]]:
    parsed = read_source(path, text.encode())
    return [doc for _, doc in parsed.docs], [str(p) for p in parsed.problems]


def compute(repo: Path) -> Any:
    return app.compute(app.open_source(repo, app.WORKTREE))


def warnings_of(result: Any) -> list[str]:
    return [str(p) for p in result.problems if not p.is_error]


# --- versions and groups --------------------------------------------------------------------------

def test_v1alpha1_inventory_and_placement_reach_a_wec(tree: Tree) -> None:
    placement = (V1 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  locationSelectors: [{matchLabels: {env: prod}}]\n"
                 "  namespaceSelector: {matchLabels: {common: si}}\n")
    customizer = V1 + "kind: Customizer\nmetadata: {name: c, namespace: common}\nreplacements: []\n"
    repo = tree({"spaces/imw1/inv.yaml": INVENTORY, "spaces/wds/w.yaml": WORKLOAD + "---\n" + customizer,
                 "spaces/wds/p.yaml": placement})
    result = compute(repo)
    assert list(result.wecs) == ["imw1-mb-florin"] and result.errors == []
    assert [p.obj.name for p in result.placements["wds"][0].placed] == ["cm"]


def test_v06_group_is_read_as_edge_kubestellar_io_with_a_warning_to_rename() -> None:
    location = ("apiVersion: edge.kcp.io/v1alpha1\nkind: Location\nmetadata: {name: l}\n"
                "spec:\n  resource: {group: edge.kcp.io, version: v1alpha1, resource: synctargets}\n")
    (doc,), problems = read(location)
    assert doc["apiVersion"] == "edge.kubestellar.io/v1alpha1"
    assert doc["spec"]["resource"]["group"] == "edge.kubestellar.io"
    assert problems == ["spaces/s/x.yaml:1: warning: apiVersion edge.kcp.io/v1alpha1 is KubeStellar v0.6's API group: "
                        "read as edge.kubestellar.io/v1alpha1; rename it"]


def test_v06_annotations_are_read_with_their_new_names() -> None:
    cm = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: n\n"
          "  annotations: {edge.kcp.io/expand-parameters: 'true', other.io/x: y}\n")
    (doc,), problems = read(cm)
    assert doc["metadata"]["annotations"] == {"edge.kubestellar.io/expand-parameters": "true", "other.io/x": "y"}
    assert problems == ["spaces/s/x.yaml:1: warning: annotation edge.kcp.io/expand-parameters is KubeStellar v0.6's "
                        "name: read as edge.kubestellar.io/expand-parameters; rename it"]


# --- what the API server drops ------------------------------------------------------------------------

def test_fields_the_crd_does_not_define_are_dropped_with_a_warning() -> None:
    """KubeStellar v0.14.2's config/samples/edgeplacement_dev.yaml has v1alpha1's nonNamespacedObjects
    in a v2alpha1 EdgePlacement: the API server prunes it."""
    text = V2 + "kind: EdgePlacement\nmetadata: {name: dev}\nspec:\n  locationSelectors: [{}]\n" \
                "  nonNamespacedObjects: [{apiGroup: apis.kcp.io, resources: [apibindings]}]\n"
    (doc,), problems = read(text)
    assert doc["spec"] == {"locationSelectors": [{}]}
    assert problems == ["spaces/s/x.yaml:1: warning: EdgePlacement dev: spec.nonNamespacedObjects: unknown field "
                        "(allowed: downsync, locationSelectors, statusCollectors, upsync, wantSingletonReportedState); "
                        "dropped: KubeStellar's CRD does not define it (the API server prunes it); "
                        "nonNamespacedObjects is a field of edge.kubestellar.io/v1alpha1 EdgePlacements, and this one "
                        "is edge.kubestellar.io/v2alpha1"]


def test_a_v2alpha1_field_in_a_v1alpha1_edgeplacement_names_the_apiversion() -> None:
    """The commonest newcomer mistake: v2alpha1's downsync under apiVersion v1alpha1, where the
    absent namespaceSelector then places every namespaced object of the space."""
    (doc,), problems = read(V1 + "kind: EdgePlacement\nmetadata: {name: web}\n"
                                 "spec:\n  downsync: [{apiGroup: apps, resources: [deployments]}]\n")
    assert doc["spec"] == {}
    assert problems[0].endswith("; downsync is a field of edge.kubestellar.io/v2alpha1 EdgePlacements, and this "
                                "one is edge.kubestellar.io/v1alpha1, which without spec.namespaceSelector places "
                                "every namespaced object of its space (write apiVersion: edge.kubestellar.io/v2alpha1)")


def test_kubectl_get_output_loses_what_the_server_sets_and_keeps_the_uid() -> None:
    text = (V2 + "kind: SyncTarget\nmetadata:\n  name: florin\n  uid: 5b1c0e7e-0000-4000-8000-000000000001\n"
            "  resourceVersion: '42'\n  generation: 3\n  creationTimestamp: '2024-01-01T00:00:00Z'\n"
            "  managedFields: [{manager: kubectl}]\nspec: {}\nstatus: {lastSyncerHeartbeatTime: '2024-01-01T00:00:00Z'}\n")
    (doc,), problems = read(text)
    assert doc["metadata"] == {"name": "florin", "uid": "5b1c0e7e-0000-4000-8000-000000000001"}
    assert "status" not in doc
    assert problems == ["spaces/s/x.yaml:1: warning: SyncTarget florin: metadata.resourceVersion, metadata.managedFields, "
                        "metadata.creationTimestamp, metadata.generation, status dropped: the API server sets them "
                        "itself (as in `kubectl get -o yaml` output)"]


def test_a_null_spec_is_dropped_with_a_warning() -> None:
    """KubeStellar v0.14.2 config/samples/synctarget_dev.yaml has `spec:` with nothing after it."""
    (doc,), problems = read(V2 + "kind: SyncTarget\nmetadata: {name: dev, labels: {env: dev}}\nspec:\n")
    assert "spec" not in doc
    assert problems == ["spaces/s/x.yaml:1: warning: SyncTarget dev: spec: must be of type object (got null); dropped, "
                        "as the API server drops a null it does not allow (leave the field out, or give it a value)"]


def test_a_null_that_leaves_a_required_field_missing_is_an_error() -> None:
    (doc,), problems = read(V2 + "kind: Customizer\nmetadata: {name: c, namespace: n}\nreplacements:\n"
                                 "- {path: $.spec, value: null}\n")
    assert problems[-1] == "spaces/s/x.yaml:1: Customizer c: replacements[0].value: required field is missing"


def test_ksgitops_own_kinds_stay_strict() -> None:
    _, problems = read("apiVersion: control.kubestellar.io/v1alpha1\nkind: StatusCollector\nmetadata: {name: s}\n"
                       "spec: {combinedFields: [{name: n, type: COUNT}], colour: blue}\n")
    assert problems == ["spaces/s/x.yaml:1: StatusCollector s: spec.colour: unknown field (allowed: combinedFields, "
                        "filter, groupBy, limit, select)"]


def test_space_managed_of_v07_is_read_as_type() -> None:
    """KubeStellar v0.14.2 config/samples/my-org_space.yaml still has v0.7's spec.Managed."""
    text = "apiVersion: space.kubestellar.io/v1alpha1\nkind: Space\nmetadata: {name: x, namespace: n}\nspec: {Managed: false}\n"
    (doc,), problems = read(text)
    assert doc["spec"] == {"Type": "unmanaged"}
    assert problems == ["spaces/s/x.yaml:1: warning: Space x: spec.Managed: false is KubeStellar v0.7's field: read as "
                        "spec.Type: unmanaged; write that instead"]


def test_provider_types_ksgitops_does_not_drive_load() -> None:
    _, problems = read("apiVersion: space.kubestellar.io/v1alpha1\nkind: SpaceProviderDesc\nmetadata: {name: d}\n"
                       "spec: {ProviderType: kubeflex, SpacePrefixForDiscovery: ks-}\n")
    assert problems == []


# --- kinds, scope and namespaces -------------------------------------------------------------------

def _obj(text: str, space: str = "wds", line: int = 1) -> Obj:
    (doc,), _ = read(text)
    return Obj(space, doc, Origin(f"spaces/{space}/x.yaml", line), key=f"k{line}")


APIBINDING = "apiVersion: apis.kcp.io/v1alpha1\nkind: APIBinding\nmetadata: {name: %s}\nspec: {}\n"


def test_an_unknown_kind_is_warned_about_once_for_all_its_objects() -> None:
    objs = [_obj(APIBINDING % "bind-kube", line=1), _obj(APIBINDING % "bind-espw", line=11)]
    problems = validate({"wds": objs}, KindTable())
    assert [str(p) for p in problems] == [
        "spaces/wds/x.yaml:1: warning: kind APIBinding of apiVersion apis.kcp.io/v1alpha1 is unknown: its objects "
        "are loaded and never placed, whatever declares the kind: APIBinding of apis.kcp.io never reaches a WEC "
        "(KubeStellar keeps it in the mailbox and never sends it on to the WEC; KubeStellar's what-resolver ignores "
        "the resource) (2 objects; the first is here)"]


def test_objects_of_an_unknown_kind_are_not_placed_even_by_a_star(tree: Tree) -> None:
    """KubeStellar can only hold (and so deliver) an object whose resource its API server serves; an
    APIBinding goes to kcp's mailbox workspace, never to the WEC (what-resolver.go
    NaturedInCenterGoToMailbox). ksgitops places a kind only when it knows its resource."""
    placement = (V2 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  locationSelectors: [{matchLabels: {env: prod}}]\n"
                 "  downsync: [{resources: ['*']}]\n")
    inventory = INVENTORY.replace("v1alpha1", "v2alpha1")
    repo = tree({"spaces/imw1/inv.yaml": inventory, "spaces/wds/w.yaml": WORKLOAD + "---\n" + APIBINDING % "b",
                 "spaces/wds/p.yaml": placement})
    result = compute(repo)
    placed = {p.obj.kind for p in result.placements["wds"][0].placed}
    assert "APIBinding" not in placed and "ConfigMap" in placed


def test_syncer_config_is_cluster_scoped() -> None:
    """KubeStellar v0.14.2 config/crds/edge.kubestellar.io_syncerconfigs.yaml: scope: Cluster; the
    e2e SyncerConfigs have no namespace."""
    text = V2 + "kind: SyncerConfig\nmetadata: {name: syncer-config}\nspec: {namespaceScope: {}}\n"
    assert validate({"wds": [_obj(text)]}, KindTable()) == []
    spaces, stray = with_scopes({"wds": [_obj(text.replace("name: syncer-config", "name: s, namespace: n"))]},
                                KindTable())
    assert [str(p) for p in stray] == ["spaces/wds/x.yaml:1: warning: SyncerConfig s is cluster-scoped: its "
                                       "metadata.namespace 'n' is ignored, as the API server ignores it (remove it)"]
    assert [str(o.ref) for o in spaces["wds"]] == ["SyncerConfig.edge.kubestellar.io s"]


def test_an_edge_placement_with_a_namespace_is_a_warning() -> None:
    text = V2 + "kind: EdgePlacement\nmetadata: {name: p, namespace: wds}\nspec: {}\n"
    _, (problem,) = with_scopes({"wds": [_obj(text)]}, KindTable())
    assert not problem.is_error and "EdgePlacement p is cluster-scoped" in problem.message


def test_a_namespaced_object_without_a_namespace_is_read_in_default(tree: Tree) -> None:
    repo = tree({"spaces/wds/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"})
    result = compute(repo)
    assert [o.namespace for o in result.loaded.spaces["wds"]] == ["default"]  # as explain and status see it
    assert warnings_of(result) == ["spaces/wds/cm.yaml:1: warning: ConfigMap cm has no metadata.namespace: read in "
                                   "namespace default, where kubectl apply puts it with a default context; write the "
                                   "namespace"]


def test_defaulting_a_namespace_may_make_a_duplicate(tree: Tree) -> None:
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm%s}\n"
    repo = tree({"spaces/wds/a.yaml": cm % "", "spaces/wds/b.yaml": cm % ", namespace: default"})
    [error] = compute(repo).confined_errors  # an error of the space wds (which is then frozen)
    assert str(error) == "spaces/wds/a.yaml:1: ConfigMap default/cm is defined twice: here and at spaces/wds/b.yaml:1"


# --- clauses the CRD accepts that match nothing (or everything) ------------------------------------

@pytest.mark.parametrize(("clause", "said"), [
    ("{apiGroup: '', resources: [ConfigMap]}",
     "spec.downsync[0].resources[0]: 'ConfigMap' is a kind, not a resource (lowercase plural): it matches nothing; "
     "write configmaps"),
    ("{apiGroup: apps, resources: [deployment]}",
     "spec.downsync[0].resources[0]: 'deployment' is a singular, not a resource (lowercase plural): it matches "
     "nothing; write deployments"),
    ("{resources: [deployments.apps]}",
     "spec.downsync[0].resources[0]: 'deployments.apps' is kubectl's resource.group form, which KubeStellar does not "
     "read: it matches nothing; write apiGroup: apps and resources: [deployments]"),
    ("{apiGroup: '', resources: [configmaps], namespaces: ['']}",
     "spec.downsync[0].namespaces[0]: \"\" matches only cluster-scoped objects (their namespace is \"\" to "
     "KubeStellar's code; its API documentation admits them by \"*\" or an empty list): write \"*\", or leave "
     "namespaces empty"),
    ("{}",
     "spec.downsync[0]: the clause has no criteria: it matches every workload object of this space (KubeStellar's "
     "CRD also requires apiGroup); name an apiGroup and resources"),
    ("{apiGroup: core, resources: [configmaps]}",
     "spec.downsync[0].apiGroup: 'core' is not the core group but a group named core: it matches nothing; write "
     "apiGroup: \"\" for the core group (ConfigMaps, Secrets, ...)"),
])
def test_odd_clauses_are_located_warnings_saying_what_they_match(clause: str, said: str) -> None:
    text = V2 + f"kind: EdgePlacement\nmetadata: {{name: p}}\nspec:\n  downsync: [{clause}]\n"
    problems = validate({"wds": [_obj(text, line=4)]}, KindTable())
    assert [str(p) for p in problems] == [f"spaces/wds/x.yaml:4: warning: EdgePlacement p: {said}"]


# A multi-document file: each finding that names a field is at that field's line (the key's; a list
# item's), whether schema/ (convert.py), the clause checks or the selector checks found it.
FIELDS = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: default\n  annotations:\n"
          "    edge.kcp.io/expand-parameters: 'true'\n---\n"  # 1-8
          + V2 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  downsync:\n"  # 9-13
          "  - apiGroup: core\n    resources: [configmaps]\n  - {}\n"  # 14-16
          "  - apiGroup: ''\n    resources:\n    - configmaps\n    - ConfigMap\n"  # 17-20
          "  wantSingletonReportedState: 'yes'\n  bogus: 1\n---\n"  # 21-23
          + V2 + "kind: SyncTarget\nmetadata:\n  name: st\n  resourceVersion: '4'\n---\n"  # 24-29
          + V2 + "kind: Location\nmetadata: {name: l}\nspec:\n  instanceSelector:\n"  # 30-34
          "    matchExpressions: [{key: env, operator: Like, values: [x]}]\n")  # 35
FIELD_LINES = [(7, "annotation edge.kcp.io/expand-parameters is KubeStellar v0.6's name"),
               (14, "EdgePlacement p: spec.downsync[0].apiGroup: 'core' is not the core group"),
               (16, "EdgePlacement p: spec.downsync[1]: the clause has no criteria"),
               (20, "EdgePlacement p: spec.downsync[2].resources[1]: 'ConfigMap' is a kind"),
               (21, "EdgePlacement p: spec.wantSingletonReportedState: must be of type boolean"),  # an error
               (22, "EdgePlacement p: spec.bogus: unknown field"),
               (28, "SyncTarget st: metadata.resourceVersion dropped"),
               (34, "Location l: spec.instanceSelector: matchExpressions[0]: operator 'Like'")]
JSON_PLACEMENT = ('{\n  "apiVersion": "edge.kubestellar.io/v2alpha1",\n  "kind": "EdgePlacement",\n'
                  '  "metadata": {"name": "j"},\n  "spec": {\n    "downsync": [\n'
                  '      {"apiGroup": "", "resources": ["configmaps"]},\n      {}\n    ],\n'
                  '    "wantSingletonReportedState": "yes"\n  }\n}\n')


def test_findings_are_at_the_line_of_their_field(tree: Tree) -> None:
    problems = compute(tree({"spaces/wds/x.yaml": FIELDS, "spaces/wds/j.json": JSON_PLACEMENT})).problems
    found = [(p.origin.line, p.message) for p in problems if p.origin.path == "spaces/wds/x.yaml"]
    for line, start in FIELD_LINES:
        assert [at for at, message in found if message.startswith(start)] == [line], (start, found)
    in_json = sorted((p.origin.line, p.message.split(": ")[1]) for p in problems if p.origin.path.endswith(".json"))
    assert in_json == [(8, "spec.downsync[1]"), (10, "spec.wantSingletonReportedState")]


def test_a_resource_named_by_a_crd_in_the_repo_is_no_oddity() -> None:
    crd = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: crontabs.stable.example.com}\n"
           "spec: {group: stable.example.com, scope: Namespaced, names: {kind: CronTab, plural: crontabs}}\n")
    text = V2 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  downsync: [{apiGroup: stable.example.com, resources: [crontabs]}]\n"
    kinds = KindTable()
    kinds.add_crds([_obj(crd)])
    assert validate({"wds": [_obj(text)]}, kinds) == []
    assert validate({"wds": [_obj(text)]}, KindTable()) != []


def test_v1alpha1_clauses_are_checked_too() -> None:
    text = V1 + ("kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  nonNamespacedObjects:\n"
                 "  - {apiGroup: core, resources: [Namespace]}\n")
    messages = [p.message for p in validate({"wds": [_obj(text)]}, KindTable())]
    assert any("spec.nonNamespacedObjects[0].apiGroup: 'core' is not the core group" in m for m in messages)


# --- warnings reach every command; --strict -----------------------------------------------------------

ODD_PLACEMENT = V2 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  downsync: [{apiGroup: core, resources: [configmaps]}]\n"


def test_warnings_reach_validate_reconcile_and_diff(tree: Tree, cli: Callable[..., Any]) -> None:
    repo = tree({"spaces/wds/p.yaml": ODD_PLACEMENT, "spaces/wds/w.yaml": WORKLOAD})
    line = "spaces/wds/p.yaml:5: warning: EdgePlacement p: spec.downsync[0].apiGroup: 'core' is not the core group"
    for args in (("validate",), ("reconcile",), ("diff",)):
        result = cli(*args, str(repo))
        assert result.code == 0 and line in result.err, (args, result)
    for args in (("validate", "-o", "json"), ("reconcile", "-o", "json"), ("diff", "-o", "json")):
        data = json.loads(cli(*args, str(repo)).out)
        found = [p for p in data["problems"] if "'core' is not the core group" in p["message"]]
        assert found and found[0]["severity"] == "warning" and found[0]["line"] == 5, (args, data)


def test_strict_makes_warnings_errors(tree: Tree, cli: Callable[..., Any]) -> None:
    repo = tree({"spaces/wds/p.yaml": ODD_PLACEMENT, "spaces/wds/w.yaml": WORKLOAD})
    result = cli("validate", "--strict", str(repo))
    assert result.code == 2
    assert result.out.splitlines()[-1] == ("invalid: 0 WECs, 1 placement, 0 errors, 3 warnings "
                                           "(--strict: warnings are errors)")  # and: selects no WEC, no object
    assert cli("validate", "--strict", str(tree({"spaces/wds/w.yaml": WORKLOAD}))).code == 0


def test_per_object_warnings_are_memoized_by_content(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = validate_module._object_problems

    def counting(obj: Obj, kinds: KindTable) -> Any:
        calls.append(obj.name)
        return real(obj, kinds)
    monkeypatch.setattr(validate_module, "_object_problems", counting)
    objs = [_obj(ODD_PLACEMENT), _obj(APIBINDING % "b", line=7)]
    memo: dict[Any, Any] = {}
    first = validate({"wds": objs}, KindTable(), memo)
    again = validate({"wds": objs}, KindTable(), memo)
    assert first == again and len(first) == 2 and calls == ["p", "b"]


def test_generated_syncer_configs_and_spaces_agree_with_the_schemas_and_scopes(tmp_path: Path) -> None:
    """What the mailbox holds would be accepted by KubeStellar's CRDs: the SyncerConfig without a
    namespace (scope: Cluster), the Space and the SinglePlacementSlices valid against schema/."""
    import yaml

    from conftest import copy_example_sources
    from ksgitops.core.load.schemas import validate_schema
    repo = copy_example_sources(tmp_path / "repo")
    app.reconcile_worktree(repo)
    files = [*repo.glob("spaces/*-mb-*/syncerconfig.yaml"), *repo.glob("spaces/*-mb-*/space.yaml"),
             *repo.glob("spaces/*/.ksgitops/singleplacementslices/*.yaml")]
    assert len(files) == 6
    for path in files:
        body = yaml.safe_load(path.read_text())
        assert validate_schema(Obj("x", body, Origin(str(path)))) == [], path
        info = KindTable().lookup(body["apiVersion"].partition("/")[0], body["kind"])
        assert info is not None
        if body["kind"] != "Space":  # a mailbox's Space is never read back as input: its namespace is moot
            assert info.namespaced == ("namespace" in body["metadata"]), path


def test_a_selector_emptied_by_a_dropped_field_is_said_to_match_everything() -> None:
    """The API server prunes `matchLabel` (a typo): the Location then selects every SyncTarget."""
    (doc,), problems = read(V2 + "kind: Location\nmetadata: {name: l}\nspec:\n  instanceSelector: {matchLabel: {id: x}}\n")
    assert doc["spec"]["instanceSelector"] == {}
    assert problems == ["spaces/s/x.yaml:1: warning: Location l: spec.instanceSelector.matchLabel: unknown field (did "
                        "you mean 'matchLabels'?); dropped: KubeStellar's CRD does not define it (the API server "
                        "prunes it); the selector is now {}, which matches everything"]
    _, listed = read(V2 + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  locationSelectors: [{matchLabel: {a: b}}]\n")
    assert listed[0].endswith("the selector is now {}, which matches everything")


def test_a_customizer_path_that_does_not_parse_is_a_warning_of_the_customizer(tree: Tree) -> None:
    """KubeStellar v0.14.2's Customizer CRD takes any string as a replacement path, and its
    pkg/customize/customize.go skips a replacement whose path pkg/jsonpath does not parse: ksgitops
    warns once, at the field, and freezes nothing (each object using it is an error per WEC,
    test_bad_input_per_wec.py)."""
    _, problems = read(V2 + "kind: Customizer\nmetadata: {name: c, namespace: n}\n"
                            "replacements: [{path: spec.replicas, value: '3'}]\n")
    assert problems == []  # reading the file accepts it, as the CRD does
    repo = tree({"spaces/wds/c.yaml": V2 + "kind: Customizer\nmetadata: {name: c, namespace: n}\n"
                                          "replacements: [{path: spec.replicas, value: '3'}]\n"})
    result = compute(repo)
    assert result.confined_errors == [] and "wds" not in result.frozen.spaces
    [warning] = [str(p) for p in result.problems if "Customizer c" in p.message]
    assert warning.startswith("spaces/wds/c.yaml:4: warning: Customizer c: replacements[0].path: invalid path "
                              "'spec.replicas': must start with '$'")
