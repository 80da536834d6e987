"""Per-WEC assembly: OR across placements, the singleton wish, conflicts, implied Namespaces."""
from __future__ import annotations

from pathlib import Path

import pytest

from ksgitops.core.pipeline import reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot
from minimal_fleet import one_wec_inventory

INVENTORY = one_wec_inventory()


def placement(name: str, singleton: bool, names: list[str], downsync: str = "") -> str:
    """An EdgePlacement reaching every prod WEC: ConfigMaps by name, or the given downsync list."""
    downsync = downsync or f'[{{apiGroup: "", resources: [configmaps], objectNames: {names}}}]'
    return f"""\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {{name: {name}}}
spec:
  locationSelectors: [{{matchLabels: {{env: prod}}}}]
  downsync: {downsync}
  wantSingletonReportedState: {str(singleton).lower()}
"""


CONFIGMAPS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ns}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: ns}
"""


@pytest.mark.parametrize("a_wants, b_wants, expected", [
    (False, False, {"a": False, "b": False}),
    (True, False, {"a": True, "b": False}),
    (False, True, {"a": True, "b": True}),
])
def test_singleton_wish_is_ored_over_placements(tree, a_wants, b_wants, expected) -> None:
    repo: Path = tree({
        "spaces/inv/wec.yaml": INVENTORY,
        "spaces/wds/cms.yaml": CONFIGMAPS,
        "spaces/wds/p.yaml": placement("p-a", a_wants, ["a"]) + "---\n" + placement("p-ab", b_wants, ["a", "b"]),
    })
    result = reconcile(WorkTreeSnapshot(repo))
    entries = result.mailboxes["inv-mb-one"].entries
    wishes = {e.base.ref.name: e.wants_singleton for e in entries.values() if e.base.ref.kind == "ConfigMap"}
    assert wishes == expected
    a = entries["core/configmaps/ns/a"]
    assert [v.placement for v in a.via] == ["p-a", "p-ab"]  # placed by both: OR, listed once each
    assert "core/namespaces/_cluster/ns" in entries and entries["core/namespaces/_cluster/ns"].base.obj is None


def test_skipped_spaces_and_their_mailboxes_are_left_alone(tree) -> None:
    from ksgitops.io.fs.worktree import write_generated
    files = {"spaces/inv/wec.yaml": INVENTORY, "spaces/wds/cms.yaml": CONFIGMAPS,
             "spaces/wds/p.yaml": placement("p", False, ["a"])}
    repo: Path = tree(files)
    write_generated(repo, reconcile(WorkTreeSnapshot(repo)).generated)
    mailbox = repo / "spaces/inv-mb-one/kustomization.yaml"
    sps = repo / "spaces/wds/.ksgitops/singleplacementslices/p.yaml"
    assert mailbox.is_file() and sps.is_file()
    (repo / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                         "spec: {skipSpaces: [inv, wds]}\n")
    result = reconcile(WorkTreeSnapshot(repo))
    assert "spaces/inv-mb-one" not in result.generated
    assert "spaces/wds/.ksgitops/singleplacementslices" not in result.generated
    write_generated(repo, result.generated)
    assert mailbox.is_file() and sps.is_file()
    (repo / "spaces/wds/broken.yaml").write_text("kind: [\n")  # a skipped space is not even read
    again = reconcile(WorkTreeSnapshot(repo))
    assert not again.problems and again.loaded.skipped == ["inv", "wds"]
    assert "wds" not in again.loaded.spaces and "spaces/wds/.ksgitops/problems.yaml" not in again.generated


def test_label_made_invalid_by_expansion_is_a_per_wec_error(tree) -> None:
    inventory = INVENTORY.replace("labels: {env: prod}", "labels: {env: prod}, annotations: {note: 'has spaces'}")
    cms = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: ns
  labels: {env: "%(env)", note: "%(note)"}
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
"""
    repo: Path = tree({"spaces/inv/wec.yaml": inventory, "spaces/wds/cms.yaml": cms,
                       "spaces/wds/p.yaml": placement("p", False, ["a"])})
    result = reconcile(WorkTreeSnapshot(repo))
    [problem] = [p for p in result.problems if p.is_error]
    assert problem.wec == "inv-mb-one" and "customized metadata.labels" in problem.message
    assert "core/configmaps/ns/a" not in result.mailboxes["inv-mb-one"].entries


CUSTOMIZED = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: ns
  annotations: {edge.kubestellar.io/customizer: custom}
data: {zone: none}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: custom
  namespace: ns
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
replacements:
- {path: "$.data.missing.deeper", value: '"x"'}
- {path: "$.data.zone", value: '"%(env)"'}
"""


def test_path_selecting_nothing_is_a_per_wec_warning_and_the_object_is_delivered(tree) -> None:
    """KubeStellar v0.14.2 pkg/jsonpath/eval.go `Apply` changes nothing where a path selects nothing
    and the other replacements still apply (pkg/customize/customize.go)."""
    repo: Path = tree({"spaces/inv/wec.yaml": INVENTORY, "spaces/wds/cms.yaml": CUSTOMIZED,
                       "spaces/wds/p.yaml": placement("p", False, ["a"])})
    result = reconcile(WorkTreeSnapshot(repo))
    [problem] = result.problems
    assert problem.severity == "warning" and problem.wec == "inv-mb-one"
    assert problem.obj == "ConfigMap ns/a" and problem.origin.path == "spaces/wds/cms.yaml"
    assert "replacements[0]" in problem.message and "selects nothing" in problem.message
    entry = result.mailboxes["inv-mb-one"].entries["core/configmaps/ns/a"]
    assert entry.patch is not None and b'"prod"' in entry.patch and not entry.kept


def test_customization_error_names_the_object(tree) -> None:
    # a path of its own: two replacements of one path are a Customizer KubeStellar's API server refuses
    cms = CUSTOMIZED.replace('"$.data.missing.deeper", value: \'"x"\'', '"$.data.other", value: \'"%(nope)"\'')
    repo: Path = tree({"spaces/inv/wec.yaml": INVENTORY, "spaces/wds/cms.yaml": cms,
                       "spaces/wds/p.yaml": placement("p", False, ["a"])})
    result = reconcile(WorkTreeSnapshot(repo))
    [problem] = result.problems
    assert problem.is_error and problem.obj == "ConfigMap ns/a" and problem.wec == "inv-mb-one"
    assert "'nope'" in problem.message
    assert "core/configmaps/ns/a" not in result.mailboxes["inv-mb-one"].entries


def test_a_customizer_that_does_not_parse_is_warned_of_once_and_keeps_its_objects_per_wec(tree) -> None:
    """KubeStellar's CRD takes any string: the Customizer gets one warning per replacement, at its
    field, and its space is not frozen; each (object, WEC) using it is an error (no half-customized
    copy goes out; a path that expands parameters is only checked once expanded)."""
    cms = CUSTOMIZED.replace("$.data.missing.deeper", "$.data[").replace('''value: \'"%(env)"\'''', "value: 'x'")
    repo: Path = tree({"spaces/inv/wec.yaml": INVENTORY, "spaces/wds/cms.yaml": cms,
                       "spaces/wds/p.yaml": placement("p", False, ["a"])})
    result = reconcile(WorkTreeSnapshot(repo))
    warned = sorted((p.origin.line, p.obj, p.message) for p in result.problems if not p.is_error)
    assert [(line, obj) for line, obj, _ in warned] == [  # each at its replacement's field
        (16, "Customizer.edge.kubestellar.io ns/custom"), (17, "Customizer.edge.kubestellar.io ns/custom")]
    assert "replacements[0].path: invalid path '$.data['" in warned[0][2]
    assert "replacements[1].value is not valid JSON" in warned[1][2] and "'x'" not in warned[1][2]
    [error] = [p for p in result.problems if p.is_error]
    assert (error.obj, error.wec) == ("ConfigMap ns/a", "inv-mb-one") and "invalid path" in error.message
    assert "wds" not in result.frozen.spaces and "core/configmaps/ns/a" not in result.mailboxes["inv-mb-one"].entries
    expanded = CUSTOMIZED.replace("$.data.missing.deeper", "$.data[%(env)")
    (repo / "spaces/wds/cms.yaml").write_text(expanded)
    again = reconcile(WorkTreeSnapshot(repo))  # checked per WEC, once expanded: no warning of the Customizer
    assert not [p for p in again.problems if p.obj.startswith("Customizer")]
    assert [p.wec for p in again.problems if p.is_error] == ["inv-mb-one"]
