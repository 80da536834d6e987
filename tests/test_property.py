"""Properties of reconcile over random small repos (hypothesis).

A strategy builds a random repo *model*: 1-2 inventory spaces with 0-6 SyncTarget/Location pairs
carrying random labels from a small vocabulary, 1-2 WDS spaces with Namespaces, ConfigMaps,
Deployments and Secrets (random labels, some `%(key)` references under the expand annotation, some
naming Customizers, existing or not), Customizers with replacements and jsonPatch ops, and 0-3
EdgePlacements with random selectors and clauses; sometimes garbage files too. The model is then
written out in a file layout (which file each document goes to, document order, .yaml/.yml/.json).

Properties:
- reconcile never crashes: exit code 0 or 2, never a traceback or an internal error; exit 2 writes
  nothing; `validate` exits 2 exactly when reconcile reported errors;
- reconcile is idempotent: a second run leaves every file byte-identical;
- the output does not depend on file layout, document order or line numbers;
- `render <WEC>` is the mailbox's base copies with its patches applied (checked here with an
  independent reading of kustomization.yaml, and with `kubectl kustomize` for a few examples).

Hostile values (big integers, NaN, deep nesting, alias bombs) appear among the garbage files;
explicit-key nesting and deep JSON have their own tests in test_bad_input_hostile.py."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_cli_subprocess
from hypothesis import given, settings
from hypothesis import strategies as st
from model_repos import (all_files, apply_mailbox, assert_no_crash, error_lines, generated, keyed, layout_plain,
                         layout_shuffled, mailboxes, problem_keys, without_sources, write)
from repo_strategy import CUSTOMIZER, EDGE, EXPAND, SETTINGS, garbage_file, repo_model


# --- the properties --------------------------------------------------------------------------


@settings(max_examples=40, **SETTINGS)
@given(model=repo_model(), garbage=st.lists(garbage_file, min_size=1, max_size=2),
       with_garbage=st.integers(0, 3))
def test_reconcile_never_crashes_and_is_idempotent(model, garbage, with_garbage, cli) -> None:
    files = layout_plain(model)
    if with_garbage == 0:  # a quarter of the examples carry garbage files
        files |= {f"spaces/{space}/{name}": data for space, name, data in garbage}
    with tempfile.TemporaryDirectory() as tmp:
        repo = write(Path(tmp) / "repo", files)
        first = cli("reconcile", str(repo))
        assert_no_crash(first.code, first.err)
        checked = cli("validate", str(repo))
        assert_no_crash(checked.code, checked.err)
        if first.code == 2:  # errors of a space: it is frozen (never valid here: it contributes nothing)
            assert checked.code == 2
        else:
            assert checked.code == (2 if error_lines(first.err) else 0), (first.err, checked.err)
        gen1, files1 = generated(repo), all_files(repo)
        second = cli("reconcile", str(repo))
        assert second.code == first.code, second
        assert all_files(repo) == files1, "a second reconcile changes nothing"
        assert generated(repo) == gen1
        assert error_lines(second.err) == error_lines(first.err)
        diff = cli("diff", str(repo))
        assert diff.code == first.code, diff


@settings(max_examples=30, **SETTINGS)
@given(model=repo_model(), rnd=st.randoms(use_true_random=False))
def test_output_does_not_depend_on_file_or_document_order(model, rnd, cli) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain = write(Path(tmp) / "plain", layout_plain(model))
        shuffled = write(Path(tmp) / "shuffled", layout_shuffled(model, rnd))
        a, b = cli("reconcile", str(plain)), cli("reconcile", str(shuffled))
        assert_no_crash(a.code, a.err)
        assert a.code == b.code, (a, b)
        assert generated(plain) == generated(shuffled)
        if a.code == 0:  # the same (object, WEC) problems, wherever they were found
            assert problem_keys(a.err) == problem_keys(b.err)


@settings(max_examples=30, **SETTINGS)
@given(model=repo_model())
def test_render_is_the_mailbox_with_its_patches_applied(model, cli) -> None:
    """render == base copies + patches, read independently; explain never crashes either."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = write(Path(tmp) / "repo", layout_plain(model))
        result = cli("reconcile", str(repo))
        assert_no_crash(result.code, result.err)
        if result.code != 0:
            return
        for mailbox in mailboxes(repo):
            rendered = cli("render", mailbox, str(repo), "-o", "json")
            assert rendered.code == 0, rendered
            objects = json.loads(rendered.out)["items"]
            assert len(keyed(objects)) == len(objects), "render lists each object once"
            assert keyed(objects) == apply_mailbox(repo / "spaces" / mailbox)
            explained = cli("explain", mailbox, str(repo), "-o", "json")
            assert explained.code == 0, explained
            assert json.loads(explained.out)["mailbox"] == mailbox
            for query in ("ConfigMap/ns1/o1", "Deployment.apps/ns2/o.3", "ClusterRole.rbac.authorization.k8s.io/o1"):
                one = cli("explain", mailbox, query, str(repo), "-o", "json")
                assert_no_crash(one.code, one.err)


def _kubectl() -> str | None:
    return shutil.which("kubectl")


@pytest.mark.skipif(_kubectl() is None, reason="kubectl is not on PATH")
@settings(max_examples=6, **SETTINGS)
@given(model=repo_model())
def test_child_process_and_kubectl_kustomize_agree_with_render(model, cli) -> None:
    """A real `python -m ksgitops reconcile` (no traceback on stderr), then `kubectl kustomize`."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = write(Path(tmp) / "repo", layout_plain(model))
        result = run_cli_subprocess("reconcile", str(repo))
        assert_no_crash(result.returncode, result.stderr)
        if result.returncode != 0:
            return
        for mailbox in mailboxes(repo)[:3]:
            rendered = cli("render", mailbox, str(repo), "-o", "json")
            assert rendered.code == 0, rendered
            built = subprocess.run([_kubectl(), "kustomize", str(repo / "spaces" / mailbox)],
                                   check=False, capture_output=True, text=True, timeout=60)
            assert built.returncode == 0, built.stderr
            assert keyed([d for d in yaml.safe_load_all(built.stdout) if d]) == keyed(json.loads(rendered.out)["items"])


# a few fixed examples, so the properties above always see the interesting cases

EXAMPLE_MODEL = {
    "inv1": [
        {"apiVersion": EDGE, "kind": "SyncTarget", "metadata": {"name": "c0", "labels": {"id": "c0", "env": "a"}}},
        {"apiVersion": EDGE, "kind": "Location", "metadata": {"name": "c0", "labels": {"env": "a", "zone": "b"},
                                                               "annotations": {"region": "north"}},
         "spec": {"instanceSelector": {"matchLabels": {"id": "c0"}}}},
        {"apiVersion": EDGE, "kind": "SyncTarget", "metadata": {"name": "c1", "labels": {"id": "c1"}}},
        {"apiVersion": EDGE, "kind": "Location", "metadata": {"name": "c1", "labels": {"env": "b"}},
         "spec": {"instanceSelector": {"matchLabels": {"id": "c1"}}}},
    ],
    "wds1": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", "labels": {"tier": "a"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o1", "namespace": "ns1",
                                                               "annotations": {EXPAND: "true"}},
         "data": {"k": "in %(zone) at %(region), 100%% sure"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "o2", "namespace": "ns1",
                                                                     "annotations": {CUSTOMIZER: "cz1"}},
         "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": "img:1"}]}}}},
        {"apiVersion": EDGE, "kind": "Customizer",
         "metadata": {"name": "cz1", "namespace": "ns1", "annotations": {EXPAND: "true"}},
         "replacements": [{"path": "$.spec.template.spec.containers.0.image", "value": '"img:%(env)"'}],
         "jsonPatch": [{"op": "add", "path": "/metadata/labels/env", "value": "%(env)"}]},
        {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "p0"},
         "spec": {"locationSelectors": [{}], "downsync": [{"namespaces": ["ns1"]}]}},
    ],
}


def test_fixed_example_exercises_patches_errors_and_kustomize(cli) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo = write(Path(tmp) / "repo", layout_plain(EXAMPLE_MODEL))
        result = run_cli_subprocess("reconcile", str(repo))
        assert result.returncode == 0, result
        assert "Traceback" not in result.stderr
        # c1's Location has no zone label and no region annotation: o1 fails there only
        assert "[WEC c1]" in result.stderr and "[WEC c0]" not in result.stderr
        c0 = keyed(json.loads(cli("render", "c0", str(repo), "-o", "json").out)["items"])
        assert c0[("v1", "ConfigMap", "ns1", "o1")]["data"]["k"] == "in b at north, 100% sure"
        deploy = c0[("apps/v1", "Deployment", "ns1", "o2")]
        assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "img:a"
        assert deploy["metadata"]["labels"]["env"] == "a"
        assert (repo / "spaces/inv1-mb-c0/patches/apps/deployments/ns1/o2.json").is_file()
        for mailbox in mailboxes(repo):
            assert keyed(json.loads(cli("render", mailbox, str(repo), "-o", "json").out)["items"]) == apply_mailbox(
                repo / "spaces" / mailbox)
        if _kubectl():
            built = subprocess.run([_kubectl(), "kustomize", str(repo / "spaces/inv1-mb-c0")],
                                   check=False, capture_output=True, text=True, timeout=60)
            assert built.returncode == 0, built.stderr
            assert keyed([d for d in yaml.safe_load_all(built.stdout) if d]) == c0
        shuffled = write(Path(tmp) / "shuffled", layout_shuffled(EXAMPLE_MODEL, random.Random(7)))
        assert cli("reconcile", str(shuffled)).code == 0
        assert generated(shuffled) == generated(repo)


def test_diff_after_reconcile_is_empty_when_a_wec_receives_nothing(cli) -> None:
    model = {"inv1": EXAMPLE_MODEL["inv1"] + [
        {"apiVersion": EDGE, "kind": "SyncTarget", "metadata": {"name": "lonely", "labels": {"id": "lonely"}}}],
        "wds1": EXAMPLE_MODEL["wds1"]}
    with tempfile.TemporaryDirectory() as tmp:
        repo = write(Path(tmp) / "repo", layout_plain(model))
        assert cli("reconcile", str(repo)).code == 0
        assert (repo / "spaces/inv1-mb-lonely/kustomization.yaml").is_file()
        diff = cli("diff", str(repo), "-o", "json")
        assert json.loads(diff.out)["changed"] is False, diff
        assert diff.code == 0, diff


def test_missing_parameter_message_does_not_depend_on_key_order(cli) -> None:
    def model(data: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
        return {"inv1": EXAMPLE_MODEL["inv1"], "wds1": [
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "o1", "namespace": "ns1", "annotations": {EXPAND: "true"}}, "data": data},
            {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": "p0"},
             "spec": {"locationSelectors": [{}], "downsync": [{}]}}]}
    with tempfile.TemporaryDirectory() as tmp:
        one = write(Path(tmp) / "one", layout_plain(model({"a": "%(tier)", "b": "%(missing)"})))
        two = write(Path(tmp) / "two", layout_plain(model({"b": "%(missing)", "a": "%(tier)"})))
        a, b = cli("reconcile", str(one)), cli("reconcile", str(two))
        assert a.code == b.code == 0
        assert "[2 WECs: c0, c1]" in a.err  # one line for the same problem on both WECs
        assert without_sources(a.err) == without_sources(b.err)
