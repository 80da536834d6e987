"""Reading files as kubectl reads them (core/parse.py): duplicate keys, List documents, and label or
annotation values YAML reads as something other than a string.

- sigs.k8s.io/yaml (which kubectl uses) refuses a mapping that gives a key twice ("key already set
  in map"); a YAML merge key (`<<`) may still be overridden.
- kubectl's resource builder flattens a `kind: List` (and `v1` `...List`) document into its items.
- ObjectMeta labels and annotations are map[string]string: `extended: yes` (a YAML 1.1 boolean in
  KubeStellar's example1 docs, v0.8 to v0.14) is refused by the API server, so it stays an error,
  said once, at the value's line, with the quoted form.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.core.convert import read_source
from ksgitops.core.parse import parse_file

CM = "apiVersion: v1\nkind: ConfigMap\n"


def test_a_key_given_twice_is_an_error_at_its_second_line() -> None:
    parsed = parse_file("x.yaml", (CM + "metadata:\n  name: a\n  name: b\n").encode())
    assert parsed.docs == ()
    assert [str(p) for p in parsed.problems] == [
        "x.yaml:5: malformed YAML: duplicate key 'name' in a mapping (first at line 4)"]


def test_duplicate_keys_are_found_at_any_depth_and_in_flow_style() -> None:
    parsed = parse_file("x.yaml", (CM + "metadata: {name: a}\ndata: {k: '1', j: '2', k: '3'}\n").encode())
    assert [str(p) for p in parsed.problems] == [
        "x.yaml:4: malformed YAML: duplicate key 'k' in a mapping (first at line 4)"]


def test_a_merge_key_may_be_overridden() -> None:
    parsed = parse_file("x.yaml", b"base: &b {a: '1', b: '2'}\nm:\n  <<: *b\n  a: '3'\n")
    assert parsed.problems == () and parsed.docs[0][1]["m"] == {"a": "3", "b": "2"}


def test_a_list_stands_for_its_items_each_at_its_line() -> None:
    text = ("apiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: n}\n"
            "- apiVersion: v1\n  kind: List\n  items:\n  - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: n}}\n")
    parsed = parse_file("x.yaml", text.encode())
    assert [(line, doc["kind"], doc["metadata"]["name"]) for line, doc in parsed.docs] == [
        (4, "ConfigMap", "a"), (10, "Secret", "s")]


def test_a_v1_typed_list_expands_and_other_lists_do_not() -> None:
    typed = parse_file("x.yaml", b"apiVersion: v1\nkind: ConfigMapList\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n")
    assert [doc["kind"] for _, doc in typed.docs] == ["ConfigMap"]
    custom = parse_file("x.yaml", b"apiVersion: example.com/v1\nkind: WidgetList\nitems: [1]\n")
    assert [doc["kind"] for _, doc in custom.docs] == ["WidgetList"]


def test_a_json_list_expands_too() -> None:
    data = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]}).encode()
    assert [doc["metadata"]["name"] for _, doc in parse_file("x.json", data).docs] == ["a"]


def test_a_list_item_that_is_no_mapping_is_an_error_at_its_line() -> None:
    parsed = parse_file("x.yaml", b"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap}\n- 3\n")
    assert [str(p) for p in parsed.problems] == ["x.yaml:5: a List item is not a mapping (found int)"]


@pytest.mark.parametrize(("value", "said"), [
    ("yes", 'the unquoted value yes is read as a boolean, but a label value must be a string; quote it: extended: "yes"'),
    ("on", 'the unquoted value on is read as a boolean, but a label value must be a string; quote it: extended: "on"'),
    ("1.10", 'the unquoted value 1.10 is read as a number, but a label value must be a string; quote it: extended: "1.10"'),
    ("", 'an empty value is read as null, but a label value must be a string; quote it: extended: ""'),
])
def test_a_label_value_that_is_no_string_is_one_error_at_its_line(value: str, said: str) -> None:
    text = CM + f"metadata:\n  name: a\n  labels:\n    app: x\n    extended: {value}\n"
    parsed = read_source("spaces/s/x.yaml", text.encode())
    assert [str(p) for p in parsed.problems] == [f"spaces/s/x.yaml:7: label extended: {said}"]
    assert len(parsed.docs) == 1  # still read: later checks do not report it again


def test_an_annotation_value_that_is_no_string_is_an_error_too() -> None:
    text = CM + "metadata:\n  name: a\n  annotations:\n    edge.kubestellar.io/expand-parameters: true\n"
    (problem,) = parse_file("x.yaml", text.encode()).problems
    assert str(problem) == ('x.yaml:6: annotation edge.kubestellar.io/expand-parameters: the unquoted value true is '
                            'read as a boolean, but an annotation value must be a string; quote it: '
                            'edge.kubestellar.io/expand-parameters: "true"')


def test_the_bool_label_of_kubestellars_example_is_reported_once_by_validate(tree: Callable[[dict[str, str]], Path],
                                                                               cli: Callable[..., Any]) -> None:
    st = ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncTarget\nmetadata:\n  name: guilder\n  labels:\n"
          "    id: guilder\n    extended: yes\n")
    repo = tree({"spaces/imw1/inventory.yaml": st})
    result = cli("validate", str(repo))
    assert result.code == 2
    assert result.err == ('spaces/imw1/inventory.yaml:7: label extended: the unquoted value yes is read as a boolean, '
                          'but a label value must be a string; quote it: extended: "yes"\n')
