"""A cluster-scoped object with a stray `metadata.namespace` is cluster-scoped, as the API server has it.

Kubernetes k8s.io/apiserver pkg/registry/rest (`EnsureObjectNamespaceMatchesRequestNamespace`,
called from BeforeCreate and BeforeUpdate) clears metadata.namespace of an object whose resource is
not namespace-scoped, so `kubectl apply` of such a file succeeds and the object is in no namespace.
ksgitops does the same for every kind its kind table knows to be cluster-scoped (built in, a CRD
in a space, a RepoConfig `kinds` entry): identity, mailbox path, implied Namespaces, duplicates,
clauses and the base copy treat it as cluster-scoped, with one located warning. An object of a kind
the table does not know keeps the scope its file gives.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.core.pipeline import Result, reconcile
from ksgitops.core.readout.explain import explain_object_on
from ksgitops.io.fs.tree import WorkTreeSnapshot
from minimal_fleet import gadget_crd, one_wec_inventory

Tree = Callable[[dict[str, str]], Path]
MAILBOX = "inv-mb-one"
INVENTORY = one_wec_inventory()
RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLE = f"apiVersion: {RBAC}/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n%s\nrules: []\n"
STRAY = "  namespace: foo"
NO_NAMESPACE = ""
GADGET_CRD = gadget_crd("%s")
GADGET = "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n%s\n"
CRD = GADGET_CRD.replace("metadata: {name: gadgets.example.com}", "metadata:\n  name: gadgets.example.com\n%s")
REPO_CONFIG = """\
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
spec:
  kinds: [{group: example.com, kind: Gadget, resource: gadgets, namespaced: false}]
"""


def placement(clause: str = "{resources: ['*']}") -> str:
    return ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: p}\nspec:\n"
            f"  locationSelectors: [{{matchLabels: {{env: prod}}}}]\n  downsync: [{clause}]\n")


def run(tree: Tree, files: dict[str, str]) -> Result:
    repo = tree({"spaces/inv/inv.yaml": INVENTORY, "spaces/wds/p.yaml": placement(), **files})
    return reconcile(WorkTreeSnapshot(repo))


def entries(result: Result) -> dict[str, Any]:
    return result.mailboxes[MAILBOX].entries


def warnings(result: Result) -> list[str]:
    return [str(p) for p in result.problems if not p.is_error and "cluster-scoped:" in p.message]


def without_problems(result: Result) -> dict[str, Any]:
    return {root: tree for root, tree in result.generated.items() if not root.endswith("problems.yaml")}


# each: (the object's file, with %s for more metadata; its kind and name; its mailbox path)
KNOWN: dict[str, tuple[str, str, str]] = {
    "ClusterRole": (CLUSTER_ROLE, "ClusterRole reader", f"{RBAC}/clusterroles/_cluster/reader"),
    "Namespace": ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n%s\n", "Namespace team",
                  "core/namespaces/_cluster/team"),
    "CustomResourceDefinition": (CRD % ("%s", "Cluster"), "CustomResourceDefinition gadgets.example.com",
                                 "apiextensions.k8s.io/customresourcedefinitions/_cluster/gadgets.example.com"),
    "custom resource, CRD in the space": (GADGET, "Gadget g", "example.com/gadgets/_cluster/g"),
}


def known_files(case: str, metadata: str) -> dict[str, str]:
    files = {"spaces/wds/obj.yaml": KNOWN[case][0] % metadata}
    if case.startswith("custom resource"):
        files["spaces/wds/crd.yaml"] = GADGET_CRD % "Cluster"
    return files


@pytest.mark.parametrize("case", sorted(KNOWN))
def test_a_stray_namespace_is_ignored_with_a_located_warning(case: str, tree: Tree) -> None:
    _, what, rel = KNOWN[case]
    result = run(tree, known_files(case, STRAY))
    assert warnings(result) == [f"spaces/wds/obj.yaml:1: warning: {what} is cluster-scoped: its metadata.namespace "
                                "'foo' is ignored, as the API server ignores it (remove it)"]
    assert not [p for p in result.problems if p.is_error]
    placed = entries(result)
    assert rel in placed and not [path for path in placed if "/foo/" in path or path.endswith("/_cluster/foo")]
    assert "namespace" not in placed[rel].base.body["metadata"]  # the base copy drops it, as the server does
    assert b"namespace: foo" not in placed[rel].data


@pytest.mark.parametrize("case", sorted(KNOWN))
def test_the_output_is_byte_for_byte_as_without_the_stray_namespace(case: str, tree: Tree) -> None:
    stray, clean = run(tree, known_files(case, STRAY)), run(tree, known_files(case, NO_NAMESPACE))
    assert without_problems(stray) == without_problems(clean)


@pytest.mark.parametrize("second", ["  namespace: bar", NO_NAMESPACE], ids=["another-stray", "none"])
def test_a_stray_namespace_does_not_make_another_identity(second: str, tree: Tree) -> None:
    result = run(tree, {"spaces/wds/a.yaml": CLUSTER_ROLE % STRAY, "spaces/wds/b.yaml": CLUSTER_ROLE % second})
    assert [str(p) for p in result.confined_errors] == [  # b's: kept as it is, or first in identity order
        f"spaces/wds/a.yaml:1: ClusterRole.{RBAC} reader is defined twice: here and at spaces/wds/b.yaml:1"]
    assert "wds" in result.frozen.spaces


@pytest.mark.parametrize("clause, placed", [
    (f"{{apiGroup: {RBAC}, resources: [clusterroles], namespaces: [foo]}}", False),
    (f"{{apiGroup: {RBAC}, resources: [clusterroles], namespaceSelectors: [{{matchLabels: {{team: a}}}}]}}", False),
    (f"{{apiGroup: {RBAC}, resources: [clusterroles], namespaces: ['*']}}", True),
    (f"{{apiGroup: {RBAC}, resources: [clusterroles]}}", True),
], ids=["namespaces-foo", "namespace-selector-foo", "namespaces-star", "no-namespace-criteria"])
def test_clauses_see_no_namespace(clause: str, placed: bool, tree: Tree) -> None:
    """A cluster-scoped object is in no namespace: `namespaces` must be empty or hold "*", and
    `namespaceSelectors` test no labels (the Namespace foo's included)."""
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: foo, labels: {team: a}}\n"
    result = run(tree, {"spaces/wds/cr.yaml": CLUSTER_ROLE % STRAY, "spaces/wds/ns.yaml": namespace,
                        "spaces/wds/p.yaml": placement(clause)})
    assert sorted(entries(result)) == ([f"{RBAC}/clusterroles/_cluster/reader"] if placed else [])


@pytest.mark.parametrize("how", ["crd", "repoconfig"])
def test_a_kind_the_repo_declares_cluster_scoped_is_rescoped(how: str, tree: Tree) -> None:
    files = {"spaces/wds/g.yaml": GADGET % STRAY}
    files.update({"spaces/wds/crd.yaml": GADGET_CRD % "Cluster"} if how == "crd" else {"ksgitops.yaml": REPO_CONFIG})
    result = run(tree, files)
    assert [str(o.ref) for o in result.loaded.spaces["wds"] if o.kind == "Gadget"] == ["Gadget.example.com g"]
    assert len(warnings(result)) == 1


@pytest.mark.parametrize("files", [
    {"spaces/wds/g.yaml": GADGET % STRAY},  # a kind nothing describes
    {"spaces/wds/g.yaml": GADGET % STRAY, "spaces/wds/crd.yaml": GADGET_CRD % "Namespaced"},
], ids=["unknown", "namespaced-crd"])
def test_a_kind_not_known_to_be_cluster_scoped_keeps_its_namespace(files: dict[str, str], tree: Tree) -> None:
    result = run(tree, files)
    assert [str(o.ref) for o in result.loaded.spaces["wds"] if o.kind == "Gadget"] == ["Gadget.example.com foo/g"]
    assert warnings(result) == []


@pytest.mark.parametrize("obj, query", [
    (CLUSTER_ROLE % STRAY, "ClusterRole/reader"),
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "ConfigMap/default/cm"),
], ids=["cluster-scoped-with-namespace", "namespaced-without"])
def test_explain_finds_the_object_as_placed(obj: str, query: str, tree: Tree) -> None:
    """explain sees each object in the scope the pipeline placed it in (a namespaced object without
    a namespace in `default`)."""
    result = run(tree, {"spaces/wds/obj.yaml": obj})
    [match] = explain_object_on(result, MAILBOX, query)["matches"]
    assert match["placed"] and match["placements"][0]["verdict"] == "places it on this WEC", match


def test_validate_prints_the_warning_and_exits_0(tree: Tree, cli: Any) -> None:
    repo = tree({"spaces/inv/inv.yaml": INVENTORY, "spaces/wds/p.yaml": placement(),
                 "spaces/wds/cr.yaml": "# a stray namespace\n" + CLUSTER_ROLE % STRAY})
    for command in ("validate", "reconcile"):
        result = cli(command, str(repo))
        assert result.code == 0, result
        assert ("spaces/wds/cr.yaml:2: warning: ClusterRole reader is cluster-scoped: its metadata.namespace 'foo' "
                "is ignored") in result.err, result
    assert (repo / f"spaces/{MAILBOX}/objects/{RBAC}/clusterroles/_cluster/reader.yaml").is_file()
    assert not (repo / f"spaces/{MAILBOX}/objects/core/namespaces/_cluster/foo.yaml").exists()
