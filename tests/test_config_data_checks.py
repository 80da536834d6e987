"""What the API server refuses in a ConfigMap's or a Secret's keys, and in a Secret of a built-in
type: warnings at the line of the key (or of `type:`), naming the key, never a Secret's value
(core/load/configdata.py).

Sources: Kubernetes pkg/apis/core/validation ValidateConfigMap (every key of `data` and
`binaryData` IsConfigMapKey; "duplicate of key present in data") and ValidateSecret (every key of
`data`, `stringData` merged into it first, IsConfigMapKey; per type: service-account-token the
annotation kubernetes.io/service-account.name, dockercfg `.dockercfg` and dockerconfigjson
`.dockerconfigjson` holding a JSON object, basic-auth `username` or `password`, ssh-auth a
non-empty `ssh-privatekey`, tls `tls.crt` and `tls.key`; Opaque, bootstrap tokens and any other
type: nothing); apimachinery IsConfigMapKey: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.`,
not `..` and not starting with `..`.
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Callable

import pytest

from test_workload_checks import CASE, case_warnings, obj

Tree = Callable[[dict[str, str]], Path]
VALUE = "c2VjcmV0LXZhbHVl"  # base64 of a value no warning may show
TEXT = "hunter2-plain"


def secret(rest: str, annotations: str = "") -> str:
    text = obj("v1", "Secret", rest)
    if annotations:
        text = text.replace("metadata: {name: o, namespace: ns}\n",
                            f"metadata:\n  name: o\n  namespace: ns\n  annotations: {{{annotations}}}\n")
    return text


# --- keys -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "shown", "why"), [
    ("'my key'", "'my key'", "may hold only letters, digits, '-', '_' and '.'"),
    ("a/b", "'a/b'", "may hold only letters, digits, '-', '_' and '.'"),
    ("'.'", "'.'", "must not be '.'"),
    ("'..'", "'..'", "must not be '..'"),
    ("..data", "'..data'", "must not start with '..'"),
    ("k" * 254, "'" + "k" * 60 + "...'", "is longer than 253 characters"),
], ids=["space", "slash", "dot", "dotdot", "dotdot-prefix", "too-long"])
def test_a_configmap_key_the_api_server_refuses(tree: Tree, key: str, shown: str, why: str) -> None:
    found = case_warnings(tree, obj("v1", "ConfigMap", f"data:\n  fine: x\n  {key}: x\n"))
    assert found == [f"{CASE}:7: warning: ConfigMap o: data.{shown}: the key {why} (the API server refuses it): "
                     "rename it"], found


def test_valid_config_keys_are_not_warned_about(tree: Tree) -> None:
    keys = ["a", ".hidden", "a.b-c_D9", "k" * 253, "-", "_.", "index.html", "tls.crt"]
    rest = "data:\n" + "".join(f"  {k}: x\n" for k in keys) + "binaryData:\n  bin: aGk=\n"
    assert case_warnings(tree, obj("v1", "ConfigMap", rest)) == []


def test_a_binary_data_key_also_in_data(tree: Tree) -> None:
    found = case_warnings(tree, obj("v1", "ConfigMap", "data:\n  a: x\n  b: y\nbinaryData:\n  c: aGk=\n  b: aGk=\n"))
    assert found == [f"{CASE}:10: warning: ConfigMap o: binaryData.b: the key is in data too (the API server refuses "
                     "a key in both): keep one"]


@pytest.mark.parametrize(("rest", "line", "field"), [
    (f"data:\n  ok: {VALUE}\n  'bad key': {VALUE}\n", 7, "data"),
    (f"stringData:\n  '..x': {TEXT}\n", 6, "stringData"),
], ids=["data", "stringdata"])
def test_a_secret_key_the_api_server_refuses_is_named_its_value_never_shown(tree: Tree, rest: str, line: int,
                                                                            field: str) -> None:
    (found,) = case_warnings(tree, secret(rest))
    assert found.startswith(f"{CASE}:{line}: warning: Secret o: {field}.") and "(the API server refuses it)" in found
    assert VALUE not in found and TEXT not in found


# --- Secret types -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("rest", "annotations", "message"), [
    (f"type: kubernetes.io/tls\ndata:\n  tls.crt: {VALUE}\n", "",
     "type kubernetes.io/tls requires data key tls.key (the API server refuses the Secret without it): add it to "
     "data or stringData"),
    ("type: kubernetes.io/tls\n", "", "requires data key tls.crt"),
    (f"type: kubernetes.io/dockerconfigjson\ndata:\n  .dockercfg: {VALUE}\n", "",
     "type kubernetes.io/dockerconfigjson requires data key .dockerconfigjson"),
    (f"type: kubernetes.io/dockercfg\nstringData:\n  config: {TEXT}\n", "",
     "type kubernetes.io/dockercfg requires data key .dockercfg"),
    (f"type: kubernetes.io/ssh-auth\ndata:\n  ssh-publickey: {VALUE}\n", "",
     "type kubernetes.io/ssh-auth requires a non-empty data key ssh-privatekey"),
    ("type: kubernetes.io/ssh-auth\ndata:\n  ssh-privatekey: ''\n", "",
     "type kubernetes.io/ssh-auth requires a non-empty data key ssh-privatekey"),
    (f"type: kubernetes.io/basic-auth\nstringData:\n  user: {TEXT}\n", "",
     "type kubernetes.io/basic-auth requires data key username or password"),
    ("type: kubernetes.io/service-account-token\n", "",
     "type kubernetes.io/service-account-token requires the annotation kubernetes.io/service-account.name (the API "
     "server refuses the Secret without it): name the ServiceAccount"),
    ("type: kubernetes.io/service-account-token\n", "kubernetes.io/service-account.name: ''",
     "requires the annotation kubernetes.io/service-account.name"),
], ids=["tls-key", "tls-both", "dockerconfigjson", "dockercfg", "ssh-missing", "ssh-empty", "basic-auth",
        "sa-token", "sa-token-empty"])
def test_a_secret_without_a_key_its_type_requires(tree: Tree, rest: str, annotations: str, message: str) -> None:
    found = case_warnings(tree, secret(rest, annotations))
    line = 5 if not annotations else 8  # the `type:` line
    assert found and all(w.startswith(f"{CASE}:{line}: warning: Secret o: ") for w in found), found
    assert any(message in w for w in found), found
    assert not any(VALUE in w or TEXT in w for w in found)


@pytest.mark.parametrize(("rest", "annotations"), [
    (f"type: kubernetes.io/tls\ndata:\n  tls.crt: {VALUE}\nstringData:\n  tls.key: {TEXT}\n", ""),
    ("type: kubernetes.io/tls\ndata:\n  tls.crt: ''\n  tls.key:\n", ""),  # present, if empty, is enough
    ("type: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{\"auths\": {}}'\n", ""),
    ("type: kubernetes.io/dockercfg\ndata:\n  .dockercfg: e30=\n", ""),
    (f"type: kubernetes.io/ssh-auth\nstringData:\n  ssh-privatekey: {TEXT}\n", ""),
    (f"type: kubernetes.io/basic-auth\ndata:\n  password: {VALUE}\n", ""),
    ("type: kubernetes.io/basic-auth\nstringData:\n  username: ''\n", ""),
    ("type: kubernetes.io/service-account-token\n", "kubernetes.io/service-account.name: builder"),
    ("type: bootstrap.kubernetes.io/token\n", ""),
    ("type: Opaque\n", ""),
    ("type: example.com/widget-credentials\n", ""),
    ("type: mytype\n", ""),
    ("type: kubernetes.io/not-a-built-in-one\n", ""),
    ("stringData: {a: b}\n", ""),
], ids=["tls-split", "tls-empty", "dockerconfigjson", "dockercfg", "ssh", "basic-password", "basic-username",
        "sa-token", "bootstrap", "opaque", "custom", "plain-word", "custom-kubernetes-io", "no-type"])
def test_a_secret_its_type_takes(tree: Tree, rest: str, annotations: str) -> None:
    assert case_warnings(tree, secret(rest, annotations)) == []


@pytest.mark.parametrize(("rest", "line", "field"), [
    ("type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: aHVudGVyMg==\n", 7, "data"),
    ("type: kubernetes.io/dockercfg\nstringData:\n  .dockercfg: '[hunter2]'\n", 7, "stringData"),
], ids=["data-not-json", "stringdata-a-list"])
def test_a_docker_config_that_is_no_json_object(tree: Tree, rest: str, line: int, field: str) -> None:
    (found,) = case_warnings(tree, secret(rest))
    key = rest.split(":\n  ")[1].split(":")[0]
    assert found == (f"{CASE}:{line}: warning: Secret o: {field}.{key}: type {rest.split()[1]} requires a JSON object "
                     "here (the API server refuses the Secret otherwise)")


# --- size (ValidateConfigMap and ValidateSecret: the values together at most 1 MiB) -------------------

MIB = 1024 * 1024


@pytest.mark.parametrize(("rest", "total", "field"), [
    (f"data:\n  a: {'x' * (MIB // 2)}\n  b: {'y' * (MIB // 2 + 1)}\n", MIB + 1, "data"),
    (f"binaryData:\n  a: {base64.b64encode(b'z' * (MIB - 10)).decode()}\ndata:\n  b: {'x' * 11}\n", MIB + 1, "data"),
    (f"binaryData:\n  a: {base64.b64encode(b'z' * (MIB + 3)).decode()}\n", MIB + 3, "binaryData"),
], ids=["text", "text-and-binary", "binary"])
def test_a_configmap_over_the_size_the_api_server_accepts(tree: Tree, rest: str, total: int, field: str) -> None:
    (found,) = case_warnings(tree, obj("v1", "ConfigMap", rest))
    line = 5 + rest.split("\n").index(f"{field}:")
    assert found == (f"{CASE}:{line}: warning: ConfigMap o: {field}: the values total {total:,} bytes, more than the "
                     f"{MIB:,} the API server accepts in a ConfigMap: split it"), found


def test_a_configmap_of_exactly_the_size_is_accepted(tree: Tree) -> None:
    rest = f"data:\n  a: {'x' * (MIB - 4)}\nbinaryData:\n  b: {base64.b64encode(b'1234').decode()}\n"
    assert case_warnings(tree, obj("v1", "ConfigMap", rest)) == []


def test_a_secret_over_the_size_shows_its_size_never_a_value(tree: Tree) -> None:
    secret_value = "s3cr3t" * (MIB // 11)
    rest = f"data:\n  a: {base64.b64encode(secret_value.encode()).decode()}\nstringData:\n  b: {secret_value}\n"
    (found,) = case_warnings(tree, secret(rest))
    total = 2 * len(secret_value)
    assert found == (f"{CASE}:5: warning: Secret o: data: the values total {total:,} bytes, more than the {MIB:,} "
                     "the API server accepts in a Secret: split it"), found
    assert "s3cr3t" not in found


def test_a_secret_key_in_data_and_string_data_counts_once(tree: Tree) -> None:
    value = "v" * (MIB // 2 + 100)
    rest = f"data:\n  a: {base64.b64encode(value.encode()).decode()}\nstringData:\n  a: {value}\n"
    assert case_warnings(tree, secret(rest)) == []  # stringData replaces data's value: half a MiB in all


@pytest.mark.parametrize("kind", ["ConfigMap", "Secret"])
def test_each_base64_value_is_decoded_once(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked as base64, sized, and (a Secret's) read for its type's keys: one decoding serves all."""
    from ksgitops.core.load import configdata
    from ksgitops.model import Obj, Origin
    decoded: list[str] = []
    real = configdata._decoded

    def counting(value: str) -> bytes | None:
        decoded.append(value)
        return real(value)

    monkeypatch.setattr(configdata, "_decoded", counting)
    values = {"a": "aGk=", "b": "not base64", "c": base64.b64encode(b"z" * 10).decode()}
    field = "binaryData" if kind == "ConfigMap" else "data"
    body = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "o", "namespace": "ns"}, field: values,
            **({"type": "kubernetes.io/dockercfg"} if kind == "Secret" else {})}
    found = list(configdata.data_findings(Obj("wds", body, Origin("x.yaml", 1))))
    assert [at for _, at in found] == [(field, "b")] + ([("type",)] if kind == "Secret" else []), found
    assert sorted(decoded) == sorted(values.values()), decoded
