"""The JSON Schemas in schema/ and ksgitops.core.load.schemas (validation messages, lookup, caching):
the schema files themselves, valid objects passing, the lookup of a kind's schema, and the
messages' hygiene. Invalid objects: tests/test_schemas_invalid.py."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from ksgitops.core.load import schemas
from ksgitops.core.load.schemas import (GENERATED_SCHEMAS, SCHEMA_FILES, format_path, load_schema, schema_for,
                                        schema_names, validate_reported, validate_schema, validator_for)
from ksgitops.core.load.offedge import kind_off_edge
from ksgitops.model import Origin
from schema_examples import (EXAMPLES, KIND_SCHEMAS, ORIGIN, REPORTED_EXAMPLES, base, example_bodies, messages, obj,
                             schema_name)


# --- the schema files themselves --------------------------------------------------------------

@pytest.mark.parametrize("name", schema_names())
def test_every_schema_file_is_a_valid_draft_2020_12_schema(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_schema_folder_holds_exactly_the_expected_files() -> None:
    expected = set(SCHEMA_FILES.values()) | {"common.json", "reported.json"} | set(GENERATED_SCHEMAS.values())
    assert set(schema_names()) == expected
    assert len(expected) == 17


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


@pytest.mark.parametrize("name", schema_names())
def test_refs_are_relative_to_sibling_files_and_resolve(name: str) -> None:
    """Editors resolve `common.json#...` next to the file, so only those two ref forms are used."""
    resolver = validator_for(name)._resolver
    for ref in _refs(load_schema(name)):
        assert re.match(r"^(common\.json)?#/\$defs/[A-Za-z0-9]+$", ref), ref
        resolver.lookup(ref)  # raises when it does not resolve


@pytest.mark.parametrize(("key", "name"), sorted(SCHEMA_FILES.items()))
def test_kind_schemas_pin_api_version_and_kind(key: tuple[str, str], name: str) -> None:
    """One file per kind; KubeStellar's v1alpha1 and v2alpha1 share it where their CRDs agree."""
    api_version, kind = key
    props = load_schema(name)["properties"]
    assert props["apiVersion"] == {"const": api_version} or api_version in props["apiVersion"]["enum"]
    assert props["kind"] == {"const": kind}


def test_validators_are_cached() -> None:
    assert validator_for("location.json") is validator_for("location.json")
    assert validator_for("location.json") is not validator_for("synctarget.json")


def test_unknown_schema_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        load_schema("nope.json")


def test_every_kind_schema_has_examples() -> None:
    assert sorted(EXAMPLES) == KIND_SCHEMAS


# --- valid objects pass -----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "index"), [(n, i) for n in sorted(EXAMPLES) for i in range(len(EXAMPLES[n]))])
def test_valid_examples_pass(name: str, index: int) -> None:
    body = example_bodies(name)[index]
    assert schema_name(body) == name
    assert messages(body) == []


@pytest.mark.parametrize("data", REPORTED_EXAMPLES)
def test_valid_reported_state_passes(data: dict[str, Any]) -> None:
    assert validate_reported(data, Origin("spaces/inventory-mb-florin/reported/x.yaml")) == []


def test_yaml_timestamps_are_accepted_as_strings() -> None:
    data = yaml.safe_load("object: {apiVersion: v1, kind: ConfigMap, namespace: a, name: b}\n"
                          "reportedAt: 2024-05-01T12:00:00Z\n")
    assert not isinstance(data["reportedAt"], str)  # PyYAML made it a datetime
    assert validate_reported(data, ORIGIN) == []


# --- lookup ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": 3},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": 1}},
    {"apiVersion": "example.com/v1", "kind": "EdgePlacement", "metadata": {"name": "look-alike"}},
])
def test_workload_kinds_have_no_schema_and_no_problems(body: dict[str, Any]) -> None:
    assert schema_for(obj(body)) is None
    assert validate_schema(obj(body)) == []


@pytest.mark.parametrize(("api_version", "kind", "hint"), [
    ("edge.kubestellar.io/v2alpha1", "EdgePlacment", " (did you mean EdgePlacement?)"),
    ("edge.kubestellar.io/v2alpha1", "EdgeSyncConfig", ""),
    ("control.kubestellar.io/v1alpha1", "BindingPolicy", ""),
])
def test_unknown_kinds_in_our_groups_are_warnings(api_version: str, kind: str, hint: str) -> None:
    """No schema, so no schema problem; validation warns once per unknown kind, never fatally (a
    KubeStellar release has kinds ksgitops does not read, e.g. EdgeSyncConfig, BindingPolicy)."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    assert validate_schema(obj(body)) == []
    problems = validate({"wds": [obj(body)]}, KindTable())
    assert len(problems) == 1 and problems[0].severity == "warning" and problems[0].origin == ORIGIN
    assert problems[0].message.startswith(f"kind {kind} of apiVersion {api_version} is unknown")
    # a CRD would not place it either: no object of these groups is ever delivered
    assert "add its CRD" not in problems[0].message
    group = api_version.split("/")[0]
    never = kind_off_edge(group, kind, None)
    assert never is not None and problems[0].message.endswith(f"never placed, whatever declares the kind: {never}{hint}")


def test_an_unknown_kind_of_a_group_that_a_crd_can_make_placeable_says_how() -> None:
    """space.kubestellar.io is ours too, but a CRD in the repo makes its kinds placeable."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Widget", "metadata": {"name": "x"}}
    [problem] = validate({"wds": [obj(body)]}, KindTable())
    assert problem.severity == "warning" and problem.message.endswith("kinds entry to place them")
    assert kind_off_edge("space.kubestellar.io", "Widget", None) is None


def test_an_unknown_kcp_kind_that_never_reaches_a_wec_says_so_rather_than_how_to_place_it() -> None:
    """kcp's APIBindings, in KubeStellar's example1 (v0.8 to v0.14), stay in the mailbox workspace:
    adding a CRD would not deliver them, so the warning does not advise it."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "bind-kube"}}
    [problem] = validate({"wds": [obj(body)]}, KindTable())
    assert problem.severity == "warning" and "add its CRD" not in problem.message
    assert problem.message.endswith("never sends it on to the WEC; KubeStellar's what-resolver ignores the resource)")


def test_a_version_of_a_control_kind_nobody_defines_is_an_error() -> None:
    """The API server refuses it (no CRD serves that version), and read as a control object it
    would be misread."""
    from ksgitops.core.load.validate import validate
    from ksgitops.kinds import KindTable
    body = {"apiVersion": "edge.kubestellar.io/v1beta1", "kind": "EdgePlacement", "metadata": {"name": "x"}}
    (problem,) = validate({"wds": [obj(body)]}, KindTable())
    assert problem.is_error and problem.message == (
        "EdgePlacement x: apiVersion edge.kubestellar.io/v1beta1 is not a version of EdgePlacement (KubeStellar and "
        "ksgitops define edge.kubestellar.io/v1alpha1, edge.kubestellar.io/v2alpha1)")


# --- message hygiene ---------------------------------------------------------------------------

def test_problems_carry_the_object_origin_and_are_sorted_and_deterministic() -> None:
    body = base("edgeplacement-v2alpha1.json")
    body["spec"]["downsync"][1]["resources"] = "x"
    body["spec"]["upsync"][0]["resources"] = 3
    body["spec"]["zzz"] = 1
    body["aaa"] = 1
    problems = validate_schema(obj(body))
    assert len(problems) == 4
    assert all(p.origin == ORIGIN for p in problems)
    assert sum(p.is_error for p in problems) == 2  # the two unknown fields are warnings (dropped)
    assert [p.message for p in problems] == sorted(p.message for p in problems)
    shuffled = dict(reversed(list(body.items())))
    shuffled["spec"] = dict(reversed(list(body["spec"].items())))
    assert validate_schema(obj(shuffled)) == problems


def test_each_unknown_and_each_missing_field_is_its_own_problem() -> None:
    body = base("customizer.json")
    body["replacements"][0] = {"pth": "$.x", "vale": "1"}
    msgs = messages(body)
    for field in ("path", "value"):
        assert f"Customizer example-customizer: replacements[0].{field}: required field is missing" in msgs
    for typo, field in (("pth", "path"), ("vale", "value")):
        assert any(m.startswith(f"Customizer example-customizer: replacements[0].{typo}: unknown field (did you mean "
                                f"'{field}'?); dropped") for m in msgs), msgs


def test_messages_never_echo_mappings_or_lists() -> None:
    body = base("spaceproviderdesc.json")
    body["spec"]["Config"] = {"users": [{"user": {"token": "s3cr3t-t0ken"}}]}
    msgs = messages(body)
    assert msgs == ["SpaceProviderDesc clusters: spec.Config: must be of type string (got object)"]
    body["spec"]["Config"] = ["s3cr3t-t0ken"]
    assert "s3cr3t" not in " ".join(messages(body))


def test_long_messages_are_shortened() -> None:
    body = base("edgeplacement-v2alpha1.json")
    body["spec"]["wantSingletonReportedState"] = "N" * 5000  # long value: quoted in part
    body["metadata"]["labels"] = {"Bad key " * 500: "v"}  # long rule text + long value: cut at 200
    msgs = messages(body)
    assert len(msgs) == 2
    details = [m.split(": ", 2)[2] for m in msgs]
    assert all(len(d) <= 200 for d in details)
    assert details[0].endswith("...")  # metadata.labels sorts first
    assert details[1].endswith("NNN'...)")


def test_non_string_yaml_keys_are_reported() -> None:
    body = yaml.safe_load("""
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {name: florin, labels: {on: "x"}}
spec: {instanceSelector: {matchLabels: {id: florin}}}
""")
    assert True in body["metadata"]["labels"]  # YAML 1.1 made `on` a boolean
    msgs = messages(body)
    assert "Location florin: metadata.labels: key true is not a string (quote it in YAML)" in msgs


@pytest.mark.parametrize(("parts", "text"), [
    ([], ""),
    (["spec", "downsync", 0, "resources"], "spec.downsync[0].resources"),
    (["metadata", "annotations", "edge.kubestellar.io/customizer"],
     "metadata.annotations['edge.kubestellar.io/customizer']"),
    ([0, "a"], "[0].a"),
])
def test_format_path(parts: list[Any], text: str) -> None:
    assert format_path(parts) == text


def test_schema_dir_falls_back_to_the_source_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(_: str) -> Any:
        raise ModuleNotFoundError("ksgitops.schema")
    monkeypatch.setattr(schemas.importlib.resources, "files", missing)
    folder = schemas.schema_dir()
    assert json.loads(folder.joinpath("common.json").read_text())["$defs"]["LabelSelector"]


def test_long_keys_are_shortened_in_paths() -> None:
    body = base("location.json")
    body["spec"]["x" * 1000] = 1
    (msg,) = messages(body)
    assert msg.startswith(f"Location florin: spec['{'x' * 60}...']: unknown field (allowed: availableSelectorLabels, "
                          "description, instanceSelector, resource); dropped")


def test_compile_all_makes_every_validator_once() -> None:
    from ksgitops.core.load import schemas
    schemas._fast_validator.cache_clear()
    schemas.compile_all()
    names = [n for n in schemas.schema_names() if n != "common.json"]
    assert names and schemas._fast_validator.cache_info().currsize == len(names)
    schemas.compile_all()
    assert schemas._fast_validator.cache_info().misses == len(names)  # the second call compiles nothing
