"""A ConfigMap or Secret as customized for a WEC is checked as its source is (core/emit/customdata.py):
a Customizer or an expanded parameter that puts on a WEC what the WEC's API server refuses (a
Secret value that is no base64, a key its type requires removed, values past 1 MiB) is a warning
at the source object's line, naming the customization and the WECs, never a value; the copy is
delivered. Only customizations that change the data are checked, once per customization.
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.pipeline import Result, reconcile
from ksgitops.io.fs.tree import WorkTreeSnapshot

Tree = Callable[[dict[str, str]], Path]
SECRET_VALUE = "hunter2"
ENCODED = base64.b64encode(SECRET_VALUE.encode()).decode()
CASE = "spaces/wds/o.yaml"
REL = "core/secrets/ns/o"
MIB = 1024 * 1024
PLACEMENT = ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: p}\nspec:\n"
             "  locationSelectors: [{matchLabels: {env: prod}}]\n"
             "  downsync: [{apiGroup: \"\", resources: [configmaps, secrets]}]\n")


def inventory(labels: list[str]) -> str:
    """One WEC per entry, `w0`, `w1`, …, its Location labelled env=prod and the entry's labels."""
    return "".join(
        f"---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncTarget\n"
        f"metadata: {{name: w{i}, labels: {{id: w{i}}}}}\n"
        f"---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: Location\nmetadata: {{name: w{i}, labels: {{env: prod"
        f"{', ' + extra if extra else ''}}}}}\nspec: {{instanceSelector: {{matchLabels: {{id: w{i}}}}}}}\n"
        for i, extra in enumerate(labels))


def secret(data: str, annotations: str = "edge.kubestellar.io/customizer: custom", kind: str = "Secret",
           rest: str = "") -> str:
    return (f"apiVersion: v1\nkind: {kind}\nmetadata:\n  name: o\n  namespace: ns\n  annotations: {{{annotations}}}\n"
            f"{rest}data:\n{data}")


def customizer(body: str, expand: bool = False) -> str:
    annotations = '{edge.kubestellar.io/expand-parameters: "true"}' if expand else "{}"
    return ("---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: Customizer\nmetadata:\n  name: custom\n"
            f"  namespace: ns\n  annotations: {annotations}\n{body}")


def replacing(path: str, value: str, expand: bool = False) -> str:
    """A Customizer with one replacement: `value` is the JSON text."""
    return customizer(f"replacements: [{{path: '{path}', value: '{value}'}}]\n", expand)


def by(text: str) -> str:
    """How a warning names the Customizer of `text`, at its line."""
    line = text.split("\n").index("kind: Customizer")
    return f"customized for the WEC by Customizer ns/custom ({CASE}:{line})"


def run(tree: Tree, text: str, labels: list[str] | None = None) -> Result:
    repo = tree({"spaces/inv/inv.yaml": inventory(labels or [""]), "spaces/wds/p.yaml": PLACEMENT, CASE: text})
    result = reconcile(WorkTreeSnapshot(repo))
    assert not [p for p in result.problems if p.is_error], result.problems
    return result


def warnings_of(result: Result) -> list[str]:
    return [str(p) for p in result.problems if p.origin.path == CASE]


@pytest.mark.parametrize(("text", "said"), [
    (secret(f"  password: {ENCODED}\n") + replacing("$.data.password", f'"{SECRET_VALUE}"'),
     "data.password: the value is not base64 (kubectl refuses it)"),
    (secret(f"  password: {ENCODED}\n") + replacing("$.data.password", "7"),
     "data.password: the value is a number, but it must be base64 text (kubectl refuses it)"),
    (secret(f"  tls.crt: {ENCODED}\n  tls.key: {ENCODED}\n", rest="type: kubernetes.io/tls\n")
     + customizer("jsonPatch: [{op: remove, path: /data/tls.key}]\n"),
     "type kubernetes.io/tls requires data key tls.key (the API server refuses the Secret without it)"),
    (secret(f"  a: {ENCODED}\n") + customizer("jsonPatch: [{op: add, path: /data/my key, value: \"aGk=\"}]\n"),
     "data.'my key': the key may hold only letters, digits"),
    (secret("  .dockerconfigjson: e30=\n", rest="type: kubernetes.io/dockerconfigjson\n")
     + customizer(f"jsonPatch: [{{op: replace, path: /data/.dockerconfigjson, value: \"{ENCODED}\"}}]\n"),
     "data..dockerconfigjson: type kubernetes.io/dockerconfigjson requires a JSON object here"),
], ids=["not-base64", "a-number", "type-key-removed", "key-refused", "not-json"])
def test_a_customizer_that_breaks_a_secret_is_a_warning_naming_it_and_the_wec(tree: Tree, text: str,
                                                                              said: str) -> None:
    result = run(tree, text)
    (found,) = warnings_of(result)
    assert found.startswith(f"{CASE}:1: warning: Secret ns/o: {by(text)}: {said}"), found
    assert found.endswith(" [WEC w0]"), found
    assert SECRET_VALUE not in found and ENCODED not in found
    assert result.mailboxes["inv-mb-w0"].entries[REL].patch is not None  # delivered, as KubeStellar would


def test_an_expanded_parameter_that_is_no_base64_warns_on_the_wecs_it_reaches_only(tree: Tree) -> None:
    text = secret("  password: '%(pw)'\n", "edge.kubestellar.io/expand-parameters: \"true\"")
    result = run(tree, text, ["pw: aGVsbG8h", "pw: not_base64", "pw: also_not", "pw: YWJj"])
    (found,) = warnings_of(result)
    assert found == (f"{CASE}:1: warning: Secret ns/o: customized for the WEC by its parameters "
                     "(edge.kubestellar.io/expand-parameters): data.password: the value is not base64 (kubectl "
                     "refuses it): encode it, or use a field that takes text [2 WECs: w1, w2]"), found
    assert "not_base64" not in found


def test_values_past_one_mib_on_many_wecs_are_one_warning(tree: Tree) -> None:
    """Sizes differ per WEC; the message does not show them, so it stays one."""
    half = "x" * (MIB // 2)
    text = (secret(f"  a: {half}\n  b: {half[:-100]}\n  c: '%(pad)'\n", "edge.kubestellar.io/customizer: custom",
                   kind="ConfigMap")
            + replacing("$.data.c", '"%(pad)%(pad)"', expand=True))
    result = run(tree, text, [f"pad: {'p' * n}" for n in (10, 51, 52, 60, 61, 62, 63)])
    (found,) = warnings_of(result)
    assert found == (f"{CASE}:1: warning: ConfigMap ns/o: {by(text)}: data: the values total more than the 1,048,576 "
                     "bytes the API server accepts in a ConfigMap: split it [6 WECs: w1, w2, w3, w4, w5, …]"), found


def test_what_the_source_has_already_is_said_once_at_the_source(tree: Tree) -> None:
    text = secret("  password: not_base64\n  b: aGk=\n") + replacing("$.data.b", '"aGVsbG8="')
    found = warnings_of(run(tree, text, ["", ""]))
    assert found == [f"{CASE}:8: warning: Secret o: data.password: the value is not base64 (kubectl refuses it): "
                     "encode it, or use a field that takes text"], found


def test_a_customization_that_fixes_the_source_is_not_warned_about(tree: Tree) -> None:
    text = secret("  password: not_base64\n") + replacing("$.data.password", '"aGk="')
    found = warnings_of(run(tree, text))
    assert len(found) == 1 and found[0].startswith(f"{CASE}:8: warning: Secret o: data.password:"), found


def test_only_customizations_that_change_the_data_are_checked_once_each(tree: Tree, monkeypatch: Any) -> None:
    from ksgitops.core.emit import customdata
    checked: list[str] = []
    real = customdata.customized_findings

    def counting(kind: str, body: dict[str, Any], source: frozenset[str], *touched: Any) -> list[tuple[str, Any]]:
        checked.append(kind)
        return real(kind, body, source, *touched)

    monkeypatch.setattr(customdata, "customized_findings", counting)
    sources: list[str] = []
    real_names = customdata.finding_names
    monkeypatch.setattr(customdata, "finding_names", lambda kind, body, expands: (
        sources.append(body["metadata"]["name"]), real_names(kind, body, expands))[1])
    plain = secret("  a: aGk=\n", "note: plain").replace("name: o", "name: plain")
    labels = secret("  a: aGk=\n").replace("name: o", "name: labelled") + replacing(
        "$.metadata.annotations.note", '"%(zone)"', expand=True)
    data = secret("  a: '%(zone)'\n", "edge.kubestellar.io/expand-parameters: \"true\"").replace("name: o", "name: d")
    zones = [f"zone: {'YWJj' if i % 2 else 'ZGVm'}" for i in range(40)]  # 40 WECs, two values
    result = run(tree, "\n---\n".join([plain, labels, data]), zones)
    assert len(result.mailboxes) == 40 and not warnings_of(result)
    assert checked == ["Secret", "Secret"]  # the expanded data, once per value; not the plain or labelled ones
    assert sources == ["d"]  # the source is read again only for a copy that is checked


def test_validate_says_it_and_exits_0(tree: Tree, cli: Any) -> None:
    text = secret(f"  password: {ENCODED}\n") + replacing("$.data.password", f'"{SECRET_VALUE}"')
    repo = tree({"spaces/inv/inv.yaml": inventory([""]), "spaces/wds/p.yaml": PLACEMENT, CASE: text})
    checked = cli("validate", str(repo))
    assert checked.code == 0, checked
    assert f"{CASE}:1: warning: Secret ns/o: {by(text)}: data.password: the value is not base64" in checked.err, checked
    assert SECRET_VALUE not in checked.err + checked.out and ENCODED not in checked.err + checked.out
    assert cli("validate", "--strict", str(repo)).code != 0


def test_copies_whose_data_changes_alike_are_checked_once(tree: Tree, monkeypatch: Any) -> None:
    """40 WECs, each its own region label and one of two zones: 40 customizations, but the data
    checked changes only with the zone, so two checks."""
    from ksgitops.core.emit import customdata
    checked: list[str] = []
    real = customdata.customized_findings
    monkeypatch.setattr(customdata, "customized_findings", lambda kind, body, source, *touched: (
        checked.append(body["data"]["a"]), real(kind, body, source, *touched))[1])
    text = secret("  a: aGk=\n") + customizer(
        "replacements:\n- {path: '$.metadata.labels.region', value: '\"%(region)\"'}\n"
        "- {path: '$.data.a', value: '\"%(zone)\"'}\n", expand=True)
    labels = [f"region: r{i}, zone: {'YWJj' if i % 2 else 'ZGVm'}" for i in range(40)]
    result = run(tree, text, labels)
    assert len(result.mailboxes) == 40 and not warnings_of(result)
    assert sorted(checked) == ["YWJj", "ZGVm"]


@pytest.mark.parametrize("kind, base, ops", [
    ("ConfigMap", {"data": {"a": "x", "b": "y"}}, [{"op": "replace", "path": "/data/a", "value": "z" * (MIB + 1)}]),
    ("ConfigMap", {"data": {"a": "x"}, "binaryData": {"c": "aGk="}}, [{"op": "add", "path": "/data/c", "value": "t"}]),
    ("ConfigMap", {"data": {"a": "x"}}, [{"op": "add", "path": "/data/bad key", "value": "t"}]),
    ("Secret", {"type": "kubernetes.io/tls", "data": {"tls.crt": "aGk=", "tls.key": "aGk="}},
     [{"op": "remove", "path": "/data/tls.key"}]),
    ("Secret", {"data": {"p": "aGk=", "q": "not base64!"}}, [{"op": "replace", "path": "/data/p", "value": "%%%"}]),
    ("Secret", {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}},
     [{"op": "replace", "path": "/data/.dockerconfigjson", "value": "bm90IGpzb24="}]),
])
def test_checking_only_the_keys_ops_change_finds_what_checking_every_key_finds(kind: str, base: dict[str, Any],
                                                                               ops: list[dict[str, Any]]) -> None:
    """customdata passes configdata the keys a copy's ops change: the other keys' findings are the
    source's, so the findings are those of a check of every key."""
    import jsonpatch
    from ksgitops.core.emit.customdata import _touched
    from ksgitops.core.load.configdata import customized_findings, finding_names
    source = finding_names(kind, base, False)
    body = jsonpatch.apply_patch(base, ops)
    touched = _touched(ops)
    assert touched is not None
    every = customized_findings(kind, body, source)
    assert every and customized_findings(kind, body, source, touched) == every


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=4), new=st.lists(st.integers(0, 3), min_size=1, max_size=4),
       binary=st.booleans(), big_source=st.booleans())
def test_a_configmap_whose_ops_replace_text_is_checked_as_a_whole_copy_would_be(
        sizes: list[int], new: list[int], binary: bool, big_source: bool) -> None:
    """replaced_text_findings (a copy's size from the base's and the ops) says what checking the
    whole copy says; sizes in quarters of a MiB, around the API server's limit."""
    import jsonpatch
    from ksgitops.core.load.configdata import (config_map_total, customized_findings, finding_names,
                                               replaced_text_findings)
    quarter = MIB // 4
    base: dict[str, Any] = {"data": {f"k{i}": "x" * (n * quarter) for i, n in enumerate(sizes)}}
    if binary:
        base["binaryData"] = {"b": base64.b64encode(b"y" * quarter).decode()}
    if big_source:
        base["data"]["big"] = "z" * (MIB + 1)
    ops = [{"op": "replace", "path": f"/data/k{i}", "value": "é" * (n * quarter // 2)}
           for i, n in enumerate(new) if i < len(sizes)]
    source = finding_names("ConfigMap", base, False)
    fast = replaced_text_findings(base, ops, source, config_map_total(base))
    assert fast is not None
    assert fast == customized_findings("ConfigMap", jsonpatch.apply_patch(base, ops), source)
