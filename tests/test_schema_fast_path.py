"""Schema checks ask fastjsonschema first whether a document is valid, and only an invalid one goes to
jsonschema for its findings (core/load/schemas.py). That is exact only if fastjsonschema never finds
valid what jsonschema finds invalid: checked here on KubeStellar's own documents and on documents
changed at random anywhere; and the fast answer must hold for valid documents, or it saves nothing."""
from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksgitops.core.load import schemas
from ksgitops.core.load.schemas import SCHEMA_FILES, schema_findings, validator_for
from test_convert_memo import DOCUMENTS, NEEDS_CORPUS

JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**63, max_value=2**63 - 1),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12),
              st.sampled_from(["", "a", "A-b", "x/y", "v1", "edge.kubestellar.io", "abc\n", "-a", "1.5"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["name", "group", "resources", "matchLabels", "op", "path",
                                                             "value", "x", "apiGroup", "namespaces", "Type"]),
                                            inner, max_size=3)),
    max_leaves=8)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _schema(body: dict[str, Any]) -> str:
    return SCHEMA_FILES[(body["apiVersion"], body["kind"])]


@NEEDS_CORPUS
def test_valid_documents_are_answered_fast() -> None:
    valid = [d for d in DOCUMENTS if validator_for(_schema(d)).is_valid(schemas._jsonable(d, [], []))]
    assert len(valid) >= 20
    assert all(schemas._valid(_schema(d), schemas._jsonable(d, [], [])) for d in valid)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), index=st.integers(min_value=0, max_value=len(DOCUMENTS) - 1), value=JSON,
       insert=st.booleans())
def test_the_fast_answer_never_passes_what_jsonschema_finds(data: st.DataObject, index: int, value: Any,
                                                            insert: bool) -> None:
    body = copy.deepcopy(DOCUMENTS[index])
    path = data.draw(st.sampled_from([p for p in _paths(body) if len(p) >= 2 or (p and p[0] != "kind"
                                                                                 and p[0] != "apiVersion")]))
    holder: Any = body
    for part in path[:-1]:
        holder = holder[part]
    if insert and isinstance(holder[path[-1]], dict):
        holder[path[-1]][data.draw(st.sampled_from(["x", "name", "group", "resources", "Type", "op"]))] = value
    else:
        holder[path[-1]] = value
    name = _schema(body)
    instance = schemas._jsonable(body, [], [])
    if schemas._valid(name, instance):
        assert validator_for(name).is_valid(instance), body
        assert schema_findings(name, body) == []


def test_an_invalid_document_gets_jsonschemas_findings() -> None:
    body = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location", "metadata": {"name": "a"},
            "spec": {"resource": {"group": 2**70, "version": "v2alpha1", "resource": "synctargets"},
                     "instanceSelector": {}}}
    assert schemas._valid("location.json", schemas._jsonable(body, [], [])) is False
    found = schema_findings("location.json", body)
    assert {f.path for f in found} == {("spec", "resource", "group")}


def test_every_schema_is_one_file_without_a_ref_beside_other_keywords() -> None:
    """draft-07 ignores a `$ref`'s siblings: after bundling, none may be left, and no reference
    may point outside the file."""
    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                assert set(node) == {"$ref"}, node
                yield node["$ref"]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for item in node:
                yield from refs(item)
    for name in sorted(set(SCHEMA_FILES.values())):
        found = list(refs(schemas._bundled(name)))
        assert found and all(ref.startswith("#/") for ref in found), name
        schemas._fast_validator(name)  # compiles


@NEEDS_CORPUS
def test_the_kinds_of_the_documents_cover_every_schema_that_uses_common_definitions() -> None:
    kinds = {d["kind"] for d in DOCUMENTS}
    assert {"Customizer", "EdgePlacement", "SyncerConfig"} <= kinds, kinds
