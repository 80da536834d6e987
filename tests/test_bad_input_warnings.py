"""Input that is only a warning, end to end through the command line: exit 0, `file:line:
warning:` on stderr (exit 2 with `validate --strict`). What KubeStellar's CRDs accept (selectors
that match nothing, kinds nobody declared), a placement that selects nothing, SyncTarget names that
are no DNS label (a derived mailbox name); and an unknown kind placed once a CRD or RepoConfig
declares it (a RepoConfig with an unknown field is fatal and writes nothing).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from bad_input_checks import (EDGE, PLACEMENT, Files, assert_clean, assert_problem, edit, example_files, generated,
                              has_generated_folders, ks)

WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: commonstuff}\nspec: {size: 3}\n"


WIDGET_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"""


REPO_CONFIG = """apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
spec:
  kinds:
  - {group: example.com, kind: Widget, resource: widgets, namespaced: true}
"""


WIDGET_CLAUSE = "  - apiGroup: example.com\n    resources: [widgets]\n    namespaces: [commonstuff]\n"


@pytest.mark.parametrize("how", ["crd-in-same-space", "crd-in-other-space", "repoconfig"])
def test_unknown_kind_accepted_once_declared(how: str, tree: Callable[[Files], Path], cli) -> None:
    files = {**example_files(), "spaces/wmw-c/widget.yaml": WIDGET}
    repo = tree(files)
    unknown = cli("reconcile", str(repo))  # loaded, warned about once, placed nowhere
    assert unknown.code == 0 and unknown.err.count("kind Widget of apiVersion example.com/v1 is unknown") == 1, unknown
    assert not list(repo.glob("spaces/*/objects/example.com"))
    if how == "crd-in-same-space":
        (repo / "spaces/wmw-c/crd.yaml").write_text(WIDGET_CRD)
    elif how == "crd-in-other-space":
        (repo / "spaces/wmw-s/crd.yaml").write_text(WIDGET_CRD)
    else:
        (repo / "ksgitops.yaml").write_text(REPO_CONFIG)
    edit(repo, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState", WIDGET_CLAUSE + "  wantSingletonReportedState")
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    assert "is unknown" not in result.err
    for wec in ("florin", "guilder"):
        placed = repo / f"spaces/imw1-mb-{wec}/objects/example.com/widgets/commonstuff/w.yaml"
        assert placed.is_file(), sorted(generated(repo))
        assert "objects/example.com/widgets/commonstuff/w.yaml" in (placed.parents[4] / "kustomization.yaml").read_text()


def test_repoconfig_with_unknown_field_is_fatal(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "ksgitops.yaml": REPO_CONFIG + "  colour: blue\n"})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "ksgitops.yaml", 1, "colour")
    assert_clean(result.stderr)
    assert not has_generated_folders(repo)


# What KubeStellar's CRDs accept is never fatal (these were fatal before): exit 0, `file:line: warning:`.
# KubeStellar v0.14.2 pkg/placement/what-resolver.go labelsMatchAny: a selector that does not convert
# matches nothing; unknown kinds: loaded, one warning per kind.
WARNED: dict[str, tuple[Files, str, int | None, str]] = {
    "placement-bad-operator": (
        {"spaces/wmw-c/p2.yaml": "# p2\n" + PLACEMENT + "metadata: {name: p2}\nspec:\n  locationSelectors:\n"
                                 "  - matchExpressions:\n    - {key: env, operator: Near, values: [x]}\n"},
        "spaces/wmw-c/p2.yaml", 7, r"locationSelectors\[0\].*Near.*matches nothing"),  # the selector's line
    "placement-in-without-values": (
        {"spaces/wmw-c/p2.yaml": PLACEMENT + "metadata: {name: p2}\nspec:\n  locationSelectors: [{}]\n  downsync:\n"
                                 "  - labelSelectors:\n    - matchExpressions:\n      - {key: app, operator: In}\n"},
        "spaces/wmw-c/p2.yaml", 8, r"downsync\[0\]\.labelSelectors\[0\].*values?.*matches nothing"),
    "placement-namespace-selector-bad": (
        {"spaces/wmw-c/p2.yaml": PLACEMENT + "metadata: {name: p2}\nspec:\n  downsync:\n"
                                 "  - namespaceSelectors:\n    - matchExpressions:\n      - {key: app, operator: Exists, values: [a]}\n"},
        "spaces/wmw-c/p2.yaml", 7, r"namespaceSelectors\[0\].*matches nothing"),
    "location-selector-bad-operator": (
        {"spaces/imw1/loc.yaml": EDGE + "kind: Location\nmetadata: {name: loc2}\nspec:\n  instanceSelector:\n"
                                 "    matchExpressions:\n    - {key: env, operator: Like, values: [x]}\n"},
        "spaces/imw1/loc.yaml", 5, r"instanceSelector.*Like.*matches nothing"),
    "location-selector-in-without-values": (
        {"spaces/imw1/loc.yaml": EDGE + "kind: Location\nmetadata: {name: loc2}\nspec:\n  instanceSelector:\n"
                                 "    matchExpressions:\n    - {key: env, operator: In, values: []}\n"},
        "spaces/imw1/loc.yaml", 5, r"instanceSelector.*values?.*matches nothing"),
    "kcp-apibindings-clause": (  # KubeStellar v0.10-v0.14 docs place kcp's APIBindings: they never reach a WEC
        {"spaces/wmw-c/p2.yaml": PLACEMENT + "metadata: {name: p2}\nspec:\n  downsync:\n"
                                 "  - apiGroup: apis.kcp.io\n    resources: [apibindings]\n"},
        "spaces/wmw-c/p2.yaml", 7, r"'apibindings' is no resource.*kcp's APIBindings stay in KubeStellar's mailbox"),
    "unknown-kind": (
        {"spaces/wmw-c/w.yaml": "\n\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: commonstuff}\n"},
        "spaces/wmw-c/w.yaml", 4, r"kind Widget of apiVersion example.com/v1 is unknown"),  # the kind: line
}


@pytest.mark.parametrize("case", sorted(WARNED))
def test_what_the_crds_accept_is_a_warning(case: str, tree: Callable[[Files], Path]) -> None:
    added, path, line, pattern = WARNED[case]
    repo = tree({**example_files(), **added})
    for command in ("reconcile", "validate"):
        result = ks(command, repo)
        assert result.returncode == 0, result
        assert_clean(result.stderr)
        assert "warning:" in assert_problem(result.stderr, path, line, pattern)
    strict = ks("validate", "--strict", repo)
    assert strict.returncode == 2 and "--strict: warnings are errors" in strict.stdout, strict


@pytest.mark.parametrize("name", ["edge.one", "a" * 56, "Edge:One"])
def test_sync_target_names_that_are_no_dns_label_get_a_derived_mailbox(name: str, tree: Callable[[Files], Path],
                                                                       cli) -> None:
    """SyncTarget is a custom resource: its name is a path segment (apiextensions-apiserver), so dots,
    capitals and ':' are valid; the mailbox name is derived (core/place/where.py mailbox_name)."""
    from ksgitops.names import mailbox_name
    repo = tree({**example_files(), "spaces/imw1/odd.yaml": EDGE + f"kind: SyncTarget\nmetadata: {{name: '{name}'}}\n"})
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    mailbox = mailbox_name("imw1", name)
    assert mailbox != f"imw1-mb-{name}" and len(mailbox) <= 63
    space = yaml.safe_load((repo / "spaces" / mailbox / "space.yaml").read_text())
    assert space["metadata"]["annotations"]["edge.kubestellar.io/sync-target-name"] == name
    assert cli("render", name, str(repo)).code == 0


@pytest.mark.parametrize("spec, phrase, line", [
    ("  locationSelectors:\n  - matchLabels: {env: nowhere}\n  downsync:\n  - resources: [configmaps]\n", "selects no WEC", 6),
    ("  locationSelectors:\n  - matchLabels: {env: prod}\n  downsync:\n  - resources: [secrets]\n", "selects no object", 8),
    ("  locationSelectors: []\n  downsync: []\n", "selects no WEC", 6),
    ("  downsync: []\n", "selects no WEC", 5),  # no selectors to point at: the spec's line
])
def test_placement_selecting_nothing_is_a_warning_at_its_selectors(spec: str, phrase: str, line: int,
                                                                   example: Path) -> None:
    (example / "spaces/wmw-c/p2.yaml").write_text("# extra\n" + PLACEMENT + "metadata: {name: p2}\nspec:\n" + spec)
    for command in ("reconcile", "validate"):
        result = ks(command, example)
        assert result.returncode == 0, result
        assert_clean(result.stderr)
        found = assert_problem(result.stderr, "spaces/wmw-c/p2.yaml", line, phrase)
        assert "warning:" in found
    assert (example / "spaces/wmw-c/.ksgitops/singleplacementslices/p2.yaml").is_file()
