"""What `kubectl apply` into KubeStellar's WDS (or the WEC's API server) would refuse, or what a
typo makes do nothing, in ordinary objects and in references: warnings, each at the line of the
field it is about (core/load/workload.py, core/load/locate.py, core/place/dangling.py).

Sources:
- Kubernetes 1.29 to 1.31 serves apps, batch, policy, rbac and the other built-in groups of the
  kind table at v1 only, autoscaling at v1 and v2 (batch/v1beta1 CronJob and autoscaling/v2beta2
  went in 1.25 and 1.26; extensions/v1beta1 Deployment in 1.16); a custom resource's API server
  serves the versions its CRD marks `served: true`;
- kubectl decodes a ConfigMap's `data` and a Secret's `stringData` as map[string]string ("cannot
  unmarshal number into Go struct field ConfigMap.data of type string") and `binaryData`, a
  Secret's `data`, as []byte (base64); with strict field validation it refuses a top-level field
  the kind does not have;
- KubeStellar v0.14.2 pkg/customize/customize.go and pkg/placement/workload-projector.go expand
  parameters only when `edge.kubestellar.io/expand-parameters` is exactly "true".
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.app import usecases as app
from ksgitops.core.customize.customizer import wants_expansion
from ksgitops.core.load import convert, locate
from ksgitops.core.pipeline import reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot

Tree = Callable[[dict[str, str]], Path]
EDGE = "apiVersion: edge.kubestellar.io/v2alpha1\n"
INVENTORY = (EDGE + "kind: SyncTarget\nmetadata: {name: florin, labels: {id: florin}}\n---\n"
             + EDGE + "kind: Location\nmetadata: {name: florin, labels: {env: prod}}\n"
             "spec:\n  instanceSelector: {matchLabels: {id: florin}}\n")
PLACEMENT = (EDGE + "kind: EdgePlacement\nmetadata: {name: p}\nspec:\n  locationSelectors: [{matchLabels: {env: prod}}]\n"
             "  downsync: [{apiGroup: '', resources: [configmaps], namespaces: [ns]}]\n")
BASE = {"spaces/imw1/inv.yaml": INVENTORY, "spaces/wds/p.yaml": PLACEMENT,
        "spaces/wds/ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\n---\n"
                              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base, namespace: ns}\n"}
CASE = "spaces/wds/x.yaml"
CRD = ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: crontabs.stable.example.com}\n"
       "spec:\n  group: stable.example.com\n  scope: Namespaced\n  names: {plural: crontabs, kind: CronTab}\n"
       "  versions:\n  - {name: v1, served: true, storage: true}\n  - {name: v1beta1, served: false, storage: false}\n")


def warnings(repo: Path) -> list[str]:
    result = app.compute(app.open_source(repo, app.WORKTREE))
    assert result.errors == [], result.errors
    return [str(p) for p in result.problems if not p.is_error]


def case_warnings(tree: Tree, text: str, **more: str) -> list[str]:
    return [w for w in warnings(tree({**BASE, CASE: "# the case\n" + text, **more})) if w.startswith(CASE)]


def obj(api_version: str, kind: str, rest: str = "", name: str = "o") -> str:
    return f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: {name}, namespace: ns}}\n{rest}"


# --- versions and kinds -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "line", "message"), [
    (obj("apps/v2", "Deployment"), 2, "Deployment apps/v2: Kubernetes serves Deployment as apps/v1"),
    (obj("batch/v1beta1", "CronJob"), 2, "CronJob batch/v1beta1: Kubernetes serves CronJob as batch/v1"),
    (obj("autoscaling/v2beta2", "HorizontalPodAutoscaler"), 2,
     "HorizontalPodAutoscaler autoscaling/v2beta2: Kubernetes serves HorizontalPodAutoscaler as autoscaling/v1 or "
     "autoscaling/v2"),
    (obj("extensions/v1beta1", "Deployment"), 2,
     "Deployment extensions/v1beta1: Kubernetes serves Deployment as apps/v1; as written, no clause can place it"),
    (obj("v1", "Deployment"), 2, "Deployment v1: Kubernetes serves Deployment as apps/v1; as written, no clause"),
    (obj("apps/v1", "CronJob"), 2, "CronJob apps/v1: Kubernetes serves CronJob as batch/v1"),
    (obj("apps/v1", "Deploymnet"), 3, "kind Deploymnet of apiVersion apps/v1 is unknown"),
    (obj("v1", "configmap"), 3, "kind configmap of apiVersion v1 is unknown"),
], ids=["apps-v2", "cronjob-v1beta1", "hpa-v2beta2", "extensions", "core-deployment", "cronjob-in-apps",
        "kind-typo", "kind-lowercase"])
def test_a_kind_or_version_kubernetes_does_not_serve(tree: Tree, text: str, line: int, message: str) -> None:
    found = case_warnings(tree, text)
    assert [w for w in found if message in w] and all(w.startswith(f"{CASE}:{line}: warning: ") for w in found), found


@pytest.mark.parametrize(("kind", "hint"), [("Deploymnet", "Deployment"), ("configmap", "ConfigMap"),
                                            ("Sevrice", "Service"), ("Widget", "")])
def test_an_unknown_kind_names_the_closest_kind_of_its_group(tree: Tree, kind: str, hint: str) -> None:
    version = "apps/v1" if kind == "Deploymnet" else "v1"
    (found,) = case_warnings(tree, obj(version, kind))
    assert found.endswith(f" (did you mean {hint}?)" if hint else "entry to place them"), found


@pytest.mark.parametrize("text", [
    obj("apps/v1", "Deployment", "spec: {}\nstatus: {}\n"), obj("autoscaling/v2", "HorizontalPodAutoscaler"),
    obj("autoscaling/v1", "HorizontalPodAutoscaler"), obj("batch/v1", "CronJob"),
    obj("policy/v1", "PodDisruptionBudget"), obj("networking.k8s.io/v1", "Ingress"),
    obj("rbac.authorization.k8s.io/v1", "Role", "rules: []\n"),
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\n"
    "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\nsubjects: []\n",
    obj("v1", "ServiceAccount", "secrets: []\nimagePullSecrets: []\nautomountServiceAccountToken: false\n"),
    obj("v1", "ConfigMap", "data: {a: '2', b: x}\nbinaryData:\n  c: |\n    aGVsbG8g\n    d29ybGQ=\nimmutable: true\n"),
    obj("v1", "Secret", "type: Opaque\ndata: {a: aGVsbG8=}\nstringData: {b: '12345'}\n"),
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns\n  annotations:\n"
    "    edge.kubestellar.io/expand-parameters: 'false'\n    edge.kubestellar.io/customizer: ''\n"
    "    edge.kubestellar.io/downsync-overwrite: 'false'\ndata: {a: ''}\n",
], ids=["deployment", "hpa-v2", "hpa-v1", "cronjob", "pdb", "ingress", "role", "clusterrolebinding",
        "serviceaccount", "configmap", "secret", "annotations"])
def test_what_kubernetes_serves_and_takes_is_not_warned_about(tree: Tree, text: str) -> None:
    assert case_warnings(tree, text) == []


@pytest.mark.parametrize(("version", "kind", "said"), [
    ("policy/v1beta1", "PodSecurityPolicy", "Kubernetes removed it in 1.25; use Pod Security Admission (the label "
                                            "pod-security.kubernetes.io/enforce on a Namespace)"),
    ("settings.k8s.io/v1alpha1", "PodPreset", "Kubernetes removed it in 1.20"),
    ("resource.k8s.io/v1alpha2", "ResourceClass", "Kubernetes served it only as an alpha API, since removed; use "
                                                  "DeviceClass"),
], ids=["podsecuritypolicy", "podpreset", "resourceclass"])
def test_a_kind_kubernetes_removed_says_so_not_to_add_a_crd(tree: Tree, version: str, kind: str, said: str) -> None:
    """It got the unknown-kind advice, to add its CRD to a space: old YAML (a PodSecurityPolicy
    beside a Deployment) is better told that the kind is gone, and what replaced it."""
    (found,) = case_warnings(tree, obj(version, kind))
    assert found == (f"{CASE}:3: warning: kind {kind} of apiVersion {version}: {said}: no cluster of a current "
                     "release serves it, and no clause can place it"), found
    (crd,) = case_warnings(tree, obj("example.com/v1", kind))  # a kind of that name in another group: a CRD's
    assert "is unknown" in crd and "removed" not in crd


def test_a_kind_kubernetes_serves_under_the_same_name_elsewhere_is_only_unknown(tree: Tree) -> None:
    """policy/v1 Eviction is served, as the body of a Pod's eviction subresource, not as a resource of
    the table (which has lifecycle.k8s.io's): unknown, no claim that it belongs elsewhere."""
    (found,) = case_warnings(tree, obj("policy/v1", "Eviction"))
    assert "kind Eviction of apiVersion policy/v1 is unknown" in found and "serves" not in found
    (found,) = case_warnings(tree, obj("example.com/v1", "Deployment"))  # a CRD's kind, its CRD elsewhere
    assert "kind Deployment of apiVersion example.com/v1 is unknown" in found and "serves" not in found


@pytest.mark.parametrize(("version", "kind", "message"), [
    ("v2", "CronTab", "CronTab stable.example.com/v2: its CustomResourceDefinition serves CronTab as "
                      "stable.example.com/v1"),
    ("v1beta1", "CronTab", "CronTab stable.example.com/v1beta1: its CustomResourceDefinition serves CronTab as "
                           "stable.example.com/v1"),
    ("v1", "Crontab", "(did you mean CronTab?)"),
    ("v1", "CronTab", None),
])
def test_a_custom_resource_at_a_version_its_crd_does_not_serve(tree: Tree, version: str, kind: str,
                                                               message: str | None) -> None:
    found = case_warnings(tree, obj(f"stable.example.com/{version}", kind, "cronSpec: top-level fields are its own\n"),
                          **{"spaces/wds/crd.yaml": CRD})
    if message is None:
        assert found == []
    else:
        line = 3 if "did you mean" in message else 2
        assert len(found) == 1 and found[0].startswith(f"{CASE}:{line}: warning: ") and message in found[0], found



def test_a_crd_s_served_versions_rebuild_no_mailbox(tree: Tree) -> None:
    """They feed one warning: a WEC whose mailbox the CRD's space does not reach keeps its digest."""
    repo = tree({**BASE, "spaces/other/crd.yaml": CRD,
                 "spaces/other/ct.yaml": obj("stable.example.com/v1beta1", "CronTab")})
    before = app.compute(app.open_source(repo, app.WORKTREE))
    (repo / "spaces/other/crd.yaml").write_text(CRD.replace("served: false", "served: true"))
    after = app.compute(app.open_source(repo, app.WORKTREE))
    assert after.digests == before.digests
    assert [str(p) for p in before.problems if "serves CronTab" in str(p)] and \
        not [str(p) for p in after.problems if "serves CronTab" in str(p)]

# --- ConfigMap and Secret values, top-level fields ------------------------------------------------------

@pytest.mark.parametrize(("text", "line", "message"), [
    (obj("v1", "ConfigMap", "data:\n  ok: x\n  port: 8080\n"), 7,
     "ConfigMap o: data.port: the value is a number, but it must be a string (kubectl refuses it): quote it"),
    (obj("v1", "ConfigMap", "data:\n  enabled: yes\n"), 6, "ConfigMap o: data.enabled: the value is a boolean"),
    (obj("v1", "ConfigMap", "data:\n  list: [a]\n"), 6, "ConfigMap o: data.list: the value is a list"),
    (obj("v1", "ConfigMap", "data: [a, b]\n"), 5, "ConfigMap o: data must map keys to strings, not be a list"),
    (obj("v1", "ConfigMap", "binaryData:\n  blob: not base64!\n"), 6, "ConfigMap o: binaryData.blob: the value is not "
                                                                        "base64"),
    (obj("v1", "ConfigMap", "binaryData:\n  blob: 12\n"), 6, "binaryData.blob: the value is a number, but it must be "
                                                             "base64 text"),
], ids=["number", "boolean", "list", "data-list", "binary-not-base64", "binary-number"])
def test_configmap_values_kubectl_refuses(tree: Tree, text: str, line: int, message: str) -> None:
    found = case_warnings(tree, text)
    assert len(found) == 1 and found[0].startswith(f"{CASE}:{line}: warning: ") and message in found[0], found


@pytest.mark.parametrize(("rest", "line", "message"), [
    ("stringData:\n  password: 1234567\n", 6, "Secret o: stringData.password: the value is a number"),
    ("data:\n  token: hunter2-1234567!\n", 6, "Secret o: data.token: the value is not base64"),
    ("data:\n  token: 1234567\n", 6, "Secret o: data.token: the value is a number, but it must be base64 text"),
])
def test_secret_values_kubectl_refuses_are_named_by_key_never_shown(tree: Tree, rest: str, line: int,
                                                                    message: str) -> None:
    (found,) = case_warnings(tree, obj("v1", "Secret", rest))
    assert found.startswith(f"{CASE}:{line}: warning: ") and message in found, found
    assert "1234567" not in found and "hunter2" not in found


@pytest.mark.parametrize(("text", "line", "message"), [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: o}\nnamespace: ns\ndata: {a: b}\n", 5,
     'ConfigMap o: unknown field "namespace" at the top level (did you mean metadata.namespace?)'),
    (obj("apps/v1", "Deployment", "sepc:\n  replicas: 1\n"), 5,
     'Deployment o: unknown field "sepc" at the top level (did you mean spec?)'),
    (obj("v1", "ConfigMap", "labels: {a: b}\n"), 5,
     'ConfigMap o: unknown field "labels" at the top level (did you mean metadata.labels?)'),
    (obj("v1", "Service", "replicas: 2\n"), 5, 'Service o: unknown field "replicas" at the top level; a Service has '
                                               'apiVersion, kind, metadata, spec, status'),
], ids=["namespace", "sepc", "labels", "replicas"])
def test_unknown_top_level_fields_of_built_in_kinds(tree: Tree, text: str, line: int, message: str) -> None:
    found = [w for w in case_warnings(tree, text) if "has no metadata.namespace" not in w]
    assert found == [f"{CASE}:{line}: warning: {message}"]


# --- KubeStellar's annotations ---------------------------------------------------------------------------

def annotated(key: str, value: str) -> str:
    return obj("v1", "ConfigMap", "data: {a: b}\n").replace(
        "metadata: {name: o, namespace: ns}\n", f"metadata:\n  name: o\n  namespace: ns\n  annotations:\n"
                                                f"    other.io/x: y\n    {key}: {value}\n")


@pytest.mark.parametrize(("key", "value", "message"), [
    ("edge.kubestellar.io/expand-parameter", '"true"', "ConfigMap o: annotation edge.kubestellar.io/expand-parameter "
     "is not one KubeStellar defines: it does nothing (did you mean edge.kubestellar.io/expand-parameters?)"),
    ("edge.kubestellar.io/customiser", "c", "(did you mean edge.kubestellar.io/customizer?)"),
    ("edge.kubestellar.io/nonsense", "x", "is not one KubeStellar defines: it does nothing"),
    ("edge.kubestellar.io/expand-parameters", '"True"', 'ConfigMap o: annotation edge.kubestellar.io/expand-parameters: '
     '"True" expands nothing: KubeStellar expands parameters only for exactly "true" (write "true", or "false")'),
    ("edge.kubestellar.io/expand-parameters", '"yes"', '"yes" expands nothing'),
    ("edge.kubestellar.io/expand-parameters", '""', '"" expands nothing'),
])
def test_kubestellar_annotations_it_does_not_define_or_read(tree: Tree, key: str, value: str, message: str) -> None:
    (found,) = case_warnings(tree, annotated(key, value))
    assert found.startswith(f"{CASE}:9: warning: ") and message in found, found


@pytest.mark.parametrize(("value", "expands"), [("true", True), ("True", False), ("yes", False), ("false", False)])
def test_only_exactly_true_expands_as_in_kubestellar(value: str, expands: bool) -> None:
    assert wants_expansion({"edge.kubestellar.io/expand-parameters": value}) is expands


# --- references that lead nowhere ------------------------------------------------------------------------

COLLECTOR = ("apiVersion: control.kubestellar.io/v1alpha1\nkind: StatusCollector\nmetadata: {name: available}\n"
             "spec:\n  combinedFields: [{name: n, type: COUNT}]\n")


@pytest.mark.parametrize(("names", "expected"), [
    ("[available]", []),
    ("\n  - available\n  - availabel\n", ["spaces/wds/p.yaml:9: warning: EdgePlacement p: StatusCollector availabel "
                                          "not found in any space: `ksgitops status` combines nothing for it (did you "
                                          "mean available?)"]),
    ("[nowhere]", ["spaces/wds/p.yaml:7: warning: EdgePlacement p: StatusCollector nowhere not found in any space"]),
])
def test_a_status_collector_no_space_holds(tree: Tree, cli: Any, names: str, expected: list[str]) -> None:
    repo = tree({**BASE, "spaces/wds/p.yaml": PLACEMENT + f"  statusCollectors: {names}",
                 "spaces/other/c.yaml": COLLECTOR})
    for command in ("validate", "diff", "reconcile"):
        result = cli(command, str(repo))
        assert result.code in (0, 1) if command == "diff" else result.code == 0, result
        found = [ln for ln in result.err.splitlines() if "StatusCollector" in ln]
        assert len(found) == len(expected) and all(ln.startswith(e) for ln, e in zip(found, expected)), result.err


@pytest.mark.parametrize(("inventory", "expected"), [
    (INVENTORY, None),
    (INVENTORY + "---\n" + EDGE + "kind: Location\nmetadata: {name: idle}\nspec:\n  instanceSelector:\n"
     "    matchLabels: {id: guilder}\n", "spaces/imw1/inv.yaml:15: warning: Location idle selects no SyncTarget: its "
                                        "spec.instanceSelector matches none of the SyncTargets of space imw1"),
    (INVENTORY + "---\n" + EDGE + "kind: Location\nmetadata: {name: idle}\nspec: {}\n",
     "spaces/imw1/inv.yaml:11: warning: Location idle selects no SyncTarget: it has no spec.instanceSelector"),
], ids=["selects", "selects-none", "no-selector"])
def test_a_location_that_selects_no_sync_target(tree: Tree, inventory: str, expected: str | None) -> None:
    found = [w for w in warnings(tree({**BASE, "spaces/imw1/inv.yaml": inventory})) if "selects no SyncTarget" in w]
    assert found == [] if expected is None else (len(found) == 1 and found[0].startswith(expected)), found


def test_a_location_in_a_space_without_sync_targets(tree: Tree) -> None:
    location = EDGE + "kind: Location\nmetadata: {name: lone}\nspec:\n  instanceSelector: {}\n"
    found = [w for w in warnings(tree({**BASE, "spaces/imw2/loc.yaml": location})) if "imw2" in w]
    assert found == ["spaces/imw2/loc.yaml:1: warning: Location lone selects no SyncTarget: its space imw2 holds none "
                     "(a Location selects the SyncTargets of its own space)"]


# --- exit codes, memos ---------------------------------------------------------------------------------------

def test_warnings_never_fail_validate_unless_strict(tree: Tree, cli: Any) -> None:
    repo = tree({**BASE, CASE: obj("apps/v2", "Deployment")})
    assert cli("validate", str(repo)).code == 0
    assert cli("validate", "--strict", str(repo)).code == 2


def test_a_memoized_warning_takes_the_line_of_the_file_as_it_now_is(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-object memo is keyed by content and document line: a comment moving the `kind:` line
    within the document changes neither, yet the warning follows it; an unchanged file is not read for it."""
    repo = tree({**BASE, CASE: obj("apps/v1", "Deploymnet")})
    cache: dict[Any, Any] = {}

    def shown() -> list[str]:
        return [str(p) for p in reconcile(WorkTreeSnapshot(repo), cache=cache).problems if p.origin.path == CASE]
    assert shown()[0].startswith(f"{CASE}:2: warning: kind Deploymnet")
    monkeypatch.setattr(locate.FieldLines, "_compose", lambda *a: pytest.fail("read again for an unchanged file"))
    assert shown()[0].startswith(f"{CASE}:2: warning: kind Deploymnet")
    monkeypatch.undo()
    (repo / CASE).write_text(obj("apps/v1", "Deploymnet").replace("kind:", "# moved\nkind:"))
    again = shown()
    assert again[0].startswith(f"{CASE}:3: warning: kind Deploymnet")
    assert again == [str(p) for p in reconcile(WorkTreeSnapshot(repo)).problems if p.origin.path == CASE]


def test_a_finding_memoized_by_content_takes_each_file_s_field_line(tree: Tree, monkeypatch: pytest.MonkeyPatch) -> None:
    """Schema findings are memoized by a document's content without its metadata (convert.py), so
    b.yaml's document, below another one, reuses a.yaml's; each warning is at its own file's field
    line, an unchanged run reads no file for it, and a document added above moves it."""
    doc = (EDGE + "kind: EdgePlacement\nmetadata: {name: %s}\nspec:\n  locationSelectors: [{matchLabels: {env: prod}}]\n"
           "  downsync:\n  - {}\n  bogus: 1\n")
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\n---\n"
    repo = tree({**BASE, "spaces/wds/a.yaml": doc % "a", "spaces/wds/b.yaml": cm + doc % "b"})
    cache: dict[Any, Any] = {}
    checked: list[str] = []
    real = convert.schema_findings
    monkeypatch.setattr(convert, "schema_findings", lambda name, body: checked.append(body["metadata"]["name"])
                        or real(name, body))

    def shown() -> list[tuple[str, int, str]]:
        return sorted((p.origin.path[len("spaces/wds/"):], p.origin.line, p.message.split(": ")[1])
                      for p in reconcile(WorkTreeSnapshot(repo), cache=cache).problems
                      if p.origin.path in ("spaces/wds/a.yaml", "spaces/wds/b.yaml") and ": spec." in p.message)
    assert shown() == [("a.yaml", 7, "spec.downsync[0]"), ("a.yaml", 8, "spec.bogus"),
                       ("b.yaml", 11, "spec.downsync[0]"), ("b.yaml", 12, "spec.bogus")]
    assert checked.count("a") == 2 and "b" not in checked  # checked, dropped, checked again: once for both
    monkeypatch.setattr(locate.FieldLines, "_compose", lambda *a: pytest.fail("read again for an unchanged file"))
    assert shown()[3] == ("b.yaml", 12, "spec.bogus")
    monkeypatch.undo()
    (repo / "spaces/wds/b.yaml").write_text("# moved\n" + cm + doc % "b")
    assert shown()[2:] == [("b.yaml", 12, "spec.downsync[0]"), ("b.yaml", 13, "spec.bogus")]


SKIPPED = ("warning: a kustomize Kustomization, not an object: skipped (ksgitops reads every object file of a space "
           "itself and runs no kustomize: its resources, patches and generators are not applied)")


@pytest.mark.parametrize(("name", "text"), [
    ("kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [ns.yaml]\n"),
    ("kustomization.yml", "resources: [ns.yaml]\nnamePrefix: x-\n"),
    ("kustomization.yaml", "kind: Kustomization\nresources: [ns.yaml]\n"),
    ("kustomization.yaml", "kind: Component\n"),
    ("component.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"),
])
def test_a_kustomize_file_in_a_space_is_skipped_with_a_warning(tree: Tree, name: str, text: str) -> None:
    """A Flux or Argo CD habit: the space is not frozen for it, and what it would build is not applied."""
    path = f"spaces/wds/{name}"
    assert [w for w in warnings(tree({**BASE, path: text})) if w.startswith(path)] == [f"{path}:1: {SKIPPED}"]


def test_a_kustomization_file_holding_an_object_is_read_as_one(tree: Tree) -> None:
    repo = tree({**BASE, "spaces/wds/kustomization.yaml": obj("v1", "ConfigMap", name="k")})
    assert not any("kustomize" in w for w in warnings(repo))
