"""What a customization makes of an object's labels and annotations is checked as the source was.

ObjectMeta's labels and annotations are map[string]string (k8s.io/apimachinery pkg/apis/meta/v1):
the API server refuses a number, a list, a map or null where a string belongs (kubectl's and
kustomize's readers too). A Customizer's replacement value is any JSON, and so is a jsonPatch
value: a customization that puts such a value there is an error for that (object, WEC), reported
as the others are, and the WEC keeps its previous copy of the object (none when it never had one).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.core.pipeline import Result, reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot
from minimal_fleet import configmaps_placement, one_wec_inventory

Tree = Callable[[dict[str, str]], Path]
MAILBOX = "inv-mb-one"
REL = "core/configmaps/ns/a"
INVENTORY = one_wec_inventory('env: prod, n: "7"')
PLACEMENT = configmaps_placement()
OBJECT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: ns
  labels: {app: web}
  annotations: {edge.kubestellar.io/customizer: custom, note: plain}
data: {zone: none}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: custom
  namespace: ns
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
"""


def run(tree: Tree, customization: str) -> tuple[Path, Result]:
    repo = tree({"spaces/inv/inv.yaml": INVENTORY, "spaces/wds/p.yaml": PLACEMENT,
                 "spaces/wds/cm.yaml": OBJECT + customization})
    return repo, reconcile(WorkTreeSnapshot(repo))


def replacement(path: str, value: str) -> str:
    return f"replacements: [{{path: '{path}', value: '{value}'}}]\n"


def patch(op: str, path: str, value: str) -> str:
    return f"jsonPatch: [{{op: {op}, path: '{path}', value: {value}}}]\n"


REFUSED: dict[str, tuple[str, str]] = {  # customization, what the error says
    "annotation-number": (replacement("$.metadata.annotations.note", "3"),
                          "customized metadata.annotations.note: the value is a number, not a string"),
    "annotation-expanded-number": (replacement("$.metadata.annotations.note", "%(n)"),
                                   "customized metadata.annotations.note: the value is a number, not a string"),
    "annotation-list": (replacement("$.metadata.annotations.note", '["a"]'),
                        "customized metadata.annotations.note: the value is a list, not a string"),
    "annotation-map": (patch("add", "/metadata/annotations/extra", "{a: b}"),
                       "customized metadata.annotations.extra: the value is a map, not a string"),
    "annotation-null": (patch("replace", "/metadata/annotations/note", "null"),
                        "customized metadata.annotations.note: the value is null, not a string"),
    "annotation-boolean": (patch("add", "/metadata/annotations/flag", "true"),
                           "customized metadata.annotations.flag: the value is a boolean, not a string"),
    # before: what kustomize drops went whatever its value, so these were delivered without a word
    "local-config-boolean": (patch("add", "/metadata/annotations/config.kubernetes.io~1local-config", "false"),
                             "customized metadata.annotations.config.kubernetes.io/local-config: the value is a "
                             "boolean, not a string"),
    "kustomize-index-number": (replacement("$.metadata.annotations", '{"config.kubernetes.io/index": 3}'),
                               "customized metadata.annotations.config.kubernetes.io/index: the value is a number, "
                               "not a string"),
    "annotation-key": (patch("add", "/metadata/annotations/bad key", '"x"'),
                       "customized metadata.annotations: label key 'bad key'"),
    "label-number": (replacement("$.metadata.labels.app", "%(n)"),
                     "customized metadata.labels.app: the value is a number, not a string"),
    "label-null": (patch("add", "/metadata/labels/app", "null"),
                   "customized metadata.labels.app: the value is null, not a string"),
    "labels-list": (replacement("$.metadata.labels", "[1]"),
                    "customized metadata.labels is a list, not a map of strings"),
    "labels-string": (replacement("$.metadata.labels", '"app=web"'),
                      "customized metadata.labels is a string, not a map of strings"),
    "annotations-number": (patch("replace", "/metadata/annotations", "7"),
                           "customized metadata.annotations is a number, not a map of strings"),
    "name-number": (replacement("$.metadata.name", "7"),
                    "customization must not change apiVersion, kind, metadata.name or metadata.namespace"),
}


def error_of(result: Result) -> str:
    [problem] = [p for p in result.problems if p.is_error]
    assert (problem.wec, problem.obj, str(problem.origin)) == (MAILBOX, "ConfigMap ns/a", "spaces/wds/cm.yaml:1")
    return problem.message


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_customization_that_makes_metadata_the_api_server_refuses_is_an_error_for_the_wec(
        case: str, tree: Tree) -> None:
    customization, said = REFUSED[case]
    _, result = run(tree, customization)
    assert error_of(result).startswith(f"ConfigMap ns/a: {said}"), error_of(result)
    assert error_of(result).endswith("; not placed (no previous copy)")
    assert REL not in result.mailboxes[MAILBOX].entries
    assert not result.confined_errors  # nothing frozen: one (object, WEC) pair


@pytest.mark.parametrize("customization", [
    replacement("$.metadata.annotations.note", '"%(n)"'),
    replacement("$.metadata.labels.app", '"%(env)"'),
    patch("replace", "/metadata/labels", "null"),
    patch("add", "/metadata/annotations/example.com~1zone", '"%(env)"'),
], ids=["annotation-string", "label-string", "labels-null", "annotation-prefixed-key"])
def test_strings_where_strings_belong_are_delivered(customization: str, tree: Tree) -> None:
    _, result = run(tree, customization)
    assert not [p for p in result.problems if p.is_error]
    assert result.mailboxes[MAILBOX].entries[REL].patch is not None


def test_the_previous_copy_is_kept_and_validate_exits_2(tree: Tree, cli: Any) -> None:
    repo, _ = run(tree, replacement("$.metadata.annotations.note", '"%(n)"'))
    assert cli("reconcile", str(repo)).code == 0
    patch_file = repo / f"spaces/{MAILBOX}/patches/{REL}.json"
    before = patch_file.read_bytes()
    cm = repo / "spaces/wds/cm.yaml"
    cm.write_text(cm.read_text().replace("value: '\"%(n)\"'", "value: '%(n)'"))
    checked = cli("validate", str(repo))
    assert checked.code == 2 and "spaces/wds/cm.yaml:1: ConfigMap ns/a: customized metadata.annotations.note: the " \
                                  "value is a number, not a string; keeping the previous copy [WEC one]" \
                                  in checked.err, checked
    result = cli("reconcile", str(repo))
    assert result.code == 0 and "keeping the previous copy" in result.err, result
    assert patch_file.read_bytes() == before and b'"7"' in before


def test_of_two_wrongs_the_first_by_key_is_said_whatever_their_order() -> None:
    """The message must not depend on the order the keys came in (a file's key order is no input)."""
    from ksgitops.core.emit.customized import metadata_error as _metadata_error
    one = {"metadata": {"labels": {"tier": 7, "app": "100%"}}}
    other = {"metadata": {"labels": {"app": "100%", "tier": 7}}}
    assert _metadata_error(one) == _metadata_error(other)
    assert "label value '100%' is invalid" in (_metadata_error(one) or "")
