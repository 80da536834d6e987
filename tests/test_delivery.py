"""What reaches a WEC, end to end through the pipeline: kinds kept off the edge, fields not
transported, and CustomResourceDefinitions that come along with their custom resources."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ksgitops.core.place.base import base_body, reprojected
from ksgitops.core.place.delivery import KUSTOMIZE_ANNOTATIONS, LOCAL_CONFIG, is_kcp_key
from ksgitops.core.readout.explain import explain_object_on, explain_wec
from ksgitops.core.pipeline import reconcile
from ksgitops.core.serialize import load_yaml
from ksgitops.io.fs.tree import WorkTreeSnapshot
from test_mailbox import INVENTORY as ONE_WEC
from test_mailbox import placement as _placement




def placement(name: str, downsync: str, singleton: bool = False) -> str:
    return _placement(name, singleton, [], downsync)


INVENTORY = ONE_WEC.replace("labels: {env: prod}", "labels: {env: prod, zone: z1}")
EVERYTHING = placement("everything", '[{resources: ["*"], namespaces: ["*"], objectNames: ["*"]}]')

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true,
              schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
"""

GADGETS = """\
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1, namespace: ns}
spec: {size: 1}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g2, namespace: ns}
spec: {size: 2}
"""

GADGET_CLAUSE = '[{apiGroup: example.com, resources: [gadgets]}]'


def run(tree: Any, files: dict[str, str]) -> Any:
    repo: Path = tree({"spaces/inv/wec.yaml": INVENTORY, **files})
    return reconcile(WorkTreeSnapshot(repo))


def mailbox_files(result: Any, mailbox: str = "inv-mb-one") -> dict[str, Any]:
    return result.generated[f"spaces/{mailbox}"]


# --- kinds kept off the edge --------------------------------------------------------------------

def test_star_placement_delivers_no_kind_kept_off_the_edge(tree: Any) -> None:
    """KubeStellar v0.14.2 pkg/placement/what-resolver.go: `GRsNotForEdge`, `GroupsNotForEdge` and
    workload-projector.go `ObjectIsSystem` win over `resources: ["*"]`."""
    workload = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-root-ca.crt, namespace: ns}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: default, namespace: ns}
---
apiVersion: v1
kind: Secret
metadata: {name: sa-token, namespace: ns}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: Event
metadata: {name: e1, namespace: ns}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: r1, namespace: ns}
revision: 1
---
apiVersion: v1
kind: Node
metadata: {name: n1}
"""
    result = run(tree, {"spaces/wds/p.yaml": EVERYTHING, "spaces/wds/w.yaml": workload})
    entries = sorted(result.mailboxes["inv-mb-one"].entries)
    assert entries == ["core/configmaps/ns/kept", "core/namespaces/_cluster/ns"]
    answer = explain_object_on(result, "inv-mb-one", "Event/ns/e1")
    [match] = answer["matches"]
    assert not match["placed"]
    assert match["placements"][0]["clauses"][-1].startswith("never downsynced: Event of the core group")


def test_a_combined_status_in_a_source_space_is_never_delivered(tree: Any) -> None:
    """KubeStellar v0.29.0-rc.1 pkg/binding/binding-controller.go `excludedGroups`: nothing of the
    control.kubestellar.io group reaches a WEC. A CombinedStatus is what `status` writes; one in a
    source space is a control object (a warning), not workload."""
    combined = """\
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata: {name: x, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kept, namespace: ns}
"""
    result = run(tree, {"spaces/wds/p.yaml": EVERYTHING, "spaces/wds/w.yaml": combined})
    assert sorted(result.mailboxes["inv-mb-one"].entries) == ["core/configmaps/ns/kept", "core/namespaces/_cluster/ns"]
    [warning] = [p for p in result.problems if "CombinedStatus" in p.message]
    assert warning.severity == "warning" and "never placed" in warning.message and not result.errors


# --- fields not transported ----------------------------------------------------------------------

def test_base_body_clears_what_kubestellar_does_not_transport() -> None:
    """KubeStellar v0.14.2 pkg/placement/workload-projector.go `xformForDestination` (managedFields,
    ownerReferences, resourceVersion, selfLink, uid, clusterName) and `genericObjectMerge` (no
    status; `kvIsSystem` keys); the API server sets creationTimestamp, generation and the deletion
    fields itself."""
    body = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "c", "namespace": "ns", "uid": "u", "resourceVersion": "7", "selfLink": "/x",
            "managedFields": [{"manager": "kubectl"}], "ownerReferences": [{"uid": "o"}],
            "creationTimestamp": "2024-01-01T00:00:00Z", "generation": 3, "clusterName": "root:wds",
            "deletionTimestamp": "2024-01-02T00:00:00Z", "deletionGracePeriodSeconds": 30,
            "finalizers": ["example.com/keep"],
            "labels": {"app": "x", "kcp.io/cluster": "root", "state.workload.kcp.io/abc": "Sync",
                       "example.kcp.io.other/x": "kept", "kcp.io": "kept"},
            "annotations": {"kcp.io/cluster": "root", "note": "kept"},
        },
        "data": {"k": "v"},
        "status": {"phase": "Active"},
    }
    assert base_body(body) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "ns", "finalizers": ["example.com/keep"],
                     "labels": {"app": "x", "example.kcp.io.other/x": "kept", "kcp.io": "kept",
                                "edge.kubestellar.io/projected": "yes"},
                     "annotations": {"note": "kept"}},
        "data": {"k": "v"},
    }
    assert body["metadata"]["uid"] == "u" and "status" in body  # the input is not touched


def test_annotations_that_are_all_kcp_keys_leave_no_empty_map() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "annotations": {"kcp.io/cluster": "root"}}}
    assert "annotations" not in base_body(body)["metadata"]


@pytest.mark.parametrize("key,expected", [
    ("kcp.io/cluster", True), ("workload.kcp.io/cluster", True), ("experimental.status.workload.kcp.io/x", True),
    ("kcp.io", False), ("example.com/kcp.io", False), ("kcp.iox/y", False), ("app", False),
    ("edge.kubestellar.io/projected", False),
])
def test_kcp_key_rule(key: str, expected: bool) -> None:
    """workload-projector.go `kvIsSystem`: contains ".kcp.io/" or starts with "kcp.io/"."""
    assert is_kcp_key(key) is expected


def test_kustomize_bookkeeping_annotations_are_not_in_base_copies() -> None:
    """`kubectl kustomize` drops these from what it prints (a mailbox would otherwise render one way
    and build another), and one of them renames the object; the rest of the annotations stay."""
    bookkeeping = {"config.kubernetes.io/index": "3", "internal.config.kubernetes.io/index": "3",
                   "internal.config.kubernetes.io/needsHashSuffix": "enabled", "config.k8s.io/id": "1"}
    kept = {"note": "kept", "config.kubernetes.io/depends-on": "x", "kustomize.config.k8s.io/id": "k",
            "internal.config.kubernetes.io/other": "kept"}
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "ns", "annotations": {**bookkeeping, **kept}}}
    assert set(bookkeeping) <= KUSTOMIZE_ANNOTATIONS and not set(kept) & KUSTOMIZE_ANNOTATIONS
    assert base_body(body)["metadata"]["annotations"] == kept
    only = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": bookkeeping}}
    assert "annotations" not in base_body(only)["metadata"]
    # a customization that puts one back (a Customizer's path $.metadata.annotations) loses it again
    customized = reprojected({**body, "metadata": {**body["metadata"], "labels": {}}})
    assert customized["metadata"]["annotations"] == kept
    assert body["metadata"]["annotations"] == {**bookkeeping, **kept}  # the input is not touched


def test_a_local_config_mark_that_kustomize_would_drop_the_object_for_is_not_in_base_copies() -> None:
    """KubeStellar delivers the object; `kubectl kustomize` would leave it out of the mailbox unless
    the value is exactly "false", so the mark goes (and "false" stays, as kustomize keeps it)."""
    for value, kept in (("true", False), ("yes", False), ("", False), ("false", True)):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c", "annotations": {LOCAL_CONFIG: value, "note": "n"}}}
        expected = {"note": "n", **({LOCAL_CONFIG: value} if kept else {})}
        assert base_body(body)["metadata"]["annotations"] == expected
        assert reprojected(body)["metadata"]["annotations"] == expected


# --- CRDs come along -----------------------------------------------------------------------------

def test_crd_comes_along_once_with_its_own_base(tree: Any) -> None:
    """KubeStellar v0.13.0+ pkg/placement/what-resolver.go `getPartsLocked` adds the definers
    (CRDs of the WDS) of every placed resource; two placements bring it once."""
    result = run(tree, {"spaces/wds/crd.yaml": CRD, "spaces/wds/g.yaml": GADGETS,
                        "spaces/wds/p.yaml": placement("a", GADGET_CLAUSE, singleton=True) + "---\n"
                        + placement("b", '[{apiGroup: example.com, objectNames: [g2]}]')})
    plan = result.mailboxes["inv-mb-one"]
    rel = "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com"
    assert sorted(plan.entries) == [rel, "core/namespaces/_cluster/ns", "example.com/gadgets/ns/g1",
                                    "example.com/gadgets/ns/g2"]
    entry = plan.entries[rel]
    assert [(v.placement, v.clause) for v in entry.via] == [("a", -1), ("b", -1)]
    assert not entry.wants_singleton  # KubeStellar: a definer's ReturnSingletonState is false
    written = load_yaml(mailbox_files(result)["objects"]["apiextensions.k8s.io"]["customresourcedefinitions"]
                        ["_cluster"]["gadgets.example.com.yaml"])
    assert written["spec"]["names"]["kind"] == "Gadget"
    assert written["metadata"]["labels"] == {"edge.kubestellar.io/projected": "yes"}
    syncer = yaml.safe_load(mailbox_files(result)["syncerconfig.yaml"])
    assert {"apiVersion": "v1", "group": "apiextensions.k8s.io", "resource": "customresourcedefinitions",
            "objects": ["gadgets.example.com"]} in syncer["spec"]["clusterScope"]
    info = explain_wec(result, "inv-mb-one")
    crd_info = next(o for o in info["objects"] if o["object"] == "CustomResourceDefinition.apiextensions.k8s.io "
                    "gadgets.example.com")
    assert crd_info["placedBy"] == [
        "wds/a (came along: the CustomResourceDefinition of placed custom resources)",
        "wds/b (came along: the CustomResourceDefinition of placed custom resources)"]
    answer = explain_object_on(result, "inv-mb-one", "CustomResourceDefinition/gadgets.example.com")
    lines = answer["matches"][0]["placements"][0]["clauses"]
    assert lines[-1].startswith("comes along: it defines the Gadget objects this placement places")


@pytest.mark.parametrize("group, usable", [("example.com", True), ("core", False), ("widgets", False)])
def test_a_crd_group_without_a_dot_declares_no_kind(group: str, usable: bool) -> None:
    """The API server requires a dot in a CRD's group. A group `core` declared `core/v1` objects
    whose files went to the core group's folder: one workload space's object silently replaced
    another's ConfigMap of the same name in every mailbox."""
    from ksgitops.kinds import crd_kind
    from ksgitops.model import Obj, Origin
    crd = Obj("wds", {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                      "metadata": {"name": f"configmaps.{group}"},
                      "spec": {"group": group, "scope": "Namespaced",
                               "names": {"kind": "ConfigMap", "plural": "configmaps"}}}, Origin("spaces/wds/crd.yaml", 1))
    assert (crd_kind(crd) is not None) == usable


def test_crd_not_along_when_no_custom_resource_is_placed(tree: Any) -> None:
    result = run(tree, {"spaces/wds/crd.yaml": CRD, "spaces/wds/g.yaml": GADGETS,
                        "spaces/wds/p.yaml": placement("a", '[{apiGroup: example.com, objectNames: [none]}]')})
    assert result.mailboxes["inv-mb-one"].entries == {}


def test_crd_along_is_customized_like_any_object(tree: Any) -> None:
    crd = CRD.replace("metadata: {name: gadgets.example.com}", """\
metadata:
  name: gadgets.example.com
  annotations: {edge.kubestellar.io/customizer: ns/crd-custom}""")
    customizer = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: crd-custom
  namespace: ns
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
replacements:
- {path: "$.metadata.labels.zone", value: '"%(zone)"'}
"""
    result = run(tree, {"spaces/wds/crd.yaml": crd, "spaces/wds/g.yaml": GADGETS,
                        "spaces/wds/c.yaml": customizer, "spaces/wds/p.yaml": placement("a", GADGET_CLAUSE)})
    entry = result.mailboxes["inv-mb-one"].entries[
        "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com"]
    assert entry.patch is not None and b'"z1"' in entry.patch
    assert dict(entry.params) == {"zone": "z1"}


def test_two_wdses_bringing_the_same_crd_conflict(tree: Any) -> None:
    """The per-(object, WEC) rule for two WDSes placing one identity applies to a CRD along too."""
    result = run(tree, {
        "spaces/wds1/crd.yaml": CRD, "spaces/wds1/g.yaml": GADGETS,
        "spaces/wds1/p.yaml": placement("a", GADGET_CLAUSE),
        "spaces/wds2/crd.yaml": CRD, "spaces/wds2/g.yaml": GADGETS.replace("namespace: ns", "namespace: ns2"),
        "spaces/wds2/p.yaml": placement("b", GADGET_CLAUSE),
    })
    [problem] = [p for p in result.problems if p.is_error]
    assert problem.wec == "inv-mb-one" and "placed by two workload description spaces" in problem.message
    assert problem.obj == "CustomResourceDefinition.apiextensions.k8s.io gadgets.example.com"
    entries = result.mailboxes["inv-mb-one"].entries
    assert "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com" not in entries
    assert {"example.com/gadgets/ns/g1", "example.com/gadgets/ns2/g1"} <= set(entries)


def test_mailbox_digest_follows_the_crd_that_comes_along(tree: Any) -> None:
    files = {"spaces/wds/crd.yaml": CRD, "spaces/wds/g.yaml": GADGETS,
             "spaces/wds/p.yaml": placement("a", GADGET_CLAUSE)}
    first = run(tree, files).digests["inv-mb-one"]
    changed = run(tree, {**files, "spaces/wds/crd.yaml": CRD.replace("singular: gadget", "singular: gizmo")})
    assert changed.digests["inv-mb-one"] != first
    crd = load_yaml(mailbox_files(changed)["objects"]["apiextensions.k8s.io"]["customresourcedefinitions"]
                    ["_cluster"]["gadgets.example.com.yaml"])
    assert crd["spec"]["names"]["singular"] == "gizmo"
