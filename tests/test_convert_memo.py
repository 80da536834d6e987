"""Schema findings are memoized by a document's content without its `metadata`
(core/load/convert.py), so that documents differing only in names and labels share one entry.
That is sound only while nothing the schemas find outside `metadata` depends on what is in it:
the first test pins the schemas' shape that guarantees it, the others check it on KubeStellar's
own documents and on documents whose metadata is odd in every way the memo's key leaves out."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksgitops.core.load import convert
from ksgitops.core.load.schemas import SCHEMA_FILES, load_schema, schema_findings

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "kubestellar-yaml"
NEEDS_CORPUS = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no KubeStellar corpus at {CORPUS}")
# keywords at a schema's top level that cannot see into one property's value from outside it
LOCAL_KEYWORDS = {"$schema", "$id", "title", "description", "type", "required", "properties",
                  "additionalProperties", "$defs"}


def _documents() -> list[dict[str, Any]]:
    """KubeStellar's own documents of the kinds ksgitops checks (the corpus when present), and a
    few of each kind with errors outside metadata."""
    found = []
    for path in sorted(CORPUS.rglob("*.yaml")) if CORPUS.is_dir() else []:
        if "-mb-" in str(path) or "/.ksgitops/" in str(path):
            continue
        try:
            docs = list(yaml.safe_load_all(path.read_bytes()))
        except yaml.YAMLError:
            continue
        found += [d for d in docs if isinstance(d, dict)
                  and (str(d.get("apiVersion")), str(d.get("kind"))) in SCHEMA_FILES]
    found += [
        {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Space", "metadata": {"name": "a"},
         "spec": {"Type": "odd", "extra": 1}},
        {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location", "metadata": {"name": "l"},
         "spec": {"resource": {"group": "edge.kubestellar.io"}, "instanceSelector": {"matchLabels": {"a": 1}}}},
        {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement",
         "spec": {"downsync": [{"apiGroup": 3}], "wantSingletonReportedState": "no"}},
        {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget", "metadata": "not a mapping"},
    ]
    return found


DOCUMENTS = _documents()
METADATA = st.one_of(
    st.none(), st.text(max_size=5), st.integers(), st.lists(st.text(max_size=3), max_size=2),
    st.fixed_dictionaries({}, optional={
        "name": st.one_of(st.text(max_size=70), st.integers(), st.none()),
        "namespace": st.one_of(st.text(max_size=8), st.booleans()),
        "labels": st.dictionaries(st.text(max_size=8), st.one_of(st.text(max_size=8), st.booleans(), st.none()),
                                  max_size=3),
        "annotations": st.one_of(st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=2),
                                 st.text(max_size=3)),
        "uid": st.integers(), "odd": st.recursive(st.text(max_size=3), lambda inner: st.lists(inner, max_size=2)),
    }))


def test_no_schema_looks_into_metadata_from_outside() -> None:
    """A top-level keyword such as if/then, allOf or dependentSchemas could make a finding outside
    `metadata` depend on its content; the memo's key would then be wrong. Add one only with a key
    that keeps the metadata."""
    for name in sorted(set(SCHEMA_FILES.values())):
        schema = load_schema(name)
        assert set(schema) <= LOCAL_KEYWORDS, (name, sorted(set(schema) - LOCAL_KEYWORDS))
        assert "metadata" in schema.get("properties", {}), name


def test_the_corpus_has_documents_of_every_kind_checked() -> None:
    kinds = {d["kind"] for d in DOCUMENTS}
    assert {"Space", "Location", "SyncTarget", "EdgePlacement"} <= kinds


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(min_value=0, max_value=len(DOCUMENTS) - 1), metadata=METADATA,
       drop=st.booleans())
def test_memoized_findings_are_the_findings_of_the_document(index: int, metadata: Any, drop: bool) -> None:
    """Whatever the metadata (absent, another type, names and labels of any kind), the memoized
    findings equal the findings of that very document, with one memo shared by every example."""
    body = copy.deepcopy(DOCUMENTS[index])
    if drop:
        body.pop("metadata", None)
    else:
        body["metadata"] = metadata
    schema = SCHEMA_FILES[(body["apiVersion"], body["kind"])]
    expected = tuple(f for f in schema_findings(schema, body) if f.path[:1] != ("metadata",))
    memo = convert.FindingsMemo(SHARED_MEMO)
    assert convert._findings(schema, body, memo) == expected


SHARED_MEMO: dict[Any, Any] = {}


@pytest.mark.parametrize("key", [True, 1, None])
def test_a_non_string_key_in_metadata_is_reported_and_not_memoized(key: Any) -> None:
    """YAML 1.1 reads `yes:` as a boolean key: reported at the top of the document (not under
    metadata), so such a document is checked every time rather than sharing an entry."""
    plain = {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Space", "metadata": {"name": "a"}}
    odd = {**plain, "metadata": {"name": "a", "labels": {key: "x"}}}
    memo = convert.FindingsMemo({})
    assert convert._findings("space.json", plain, memo) == ()
    found = convert._findings("space.json", odd, memo)
    assert found and all("is not a string" in f.message for f in found)
    assert len(memo.used) == 1  # the plain document only


def test_caches_made_with_other_schemas_are_not_used(tmp_path, monkeypatch) -> None:
    """Memoized findings depend on the schema files: caches carry their digest with the code's."""
    import shutil

    from ksgitops.core.load import schemas
    from ksgitops.io.git import cache
    monkeypatch.setattr(cache, "_FINGERPRINT", None)
    before = cache.code_fingerprint()
    copied = tmp_path / "schema"
    shutil.copytree(schemas.schema_dir(), copied)
    location = copied / "location.json"
    location.write_text(location.read_text().replace("\"additionalProperties\": false", "\"additionalProperties\": true", 1))
    assert location.read_bytes() != schemas.schema_dir().joinpath("location.json").read_bytes()
    monkeypatch.setattr(cache, "schema_dir", lambda: copied)
    monkeypatch.setattr(cache, "_FINGERPRINT", None)
    assert cache.code_fingerprint() != before
    monkeypatch.setattr(cache, "schema_dir", schemas.schema_dir)
    monkeypatch.setattr(cache, "_FINGERPRINT", None)
    assert cache.code_fingerprint() == before


def test_a_schema_edited_in_place_keeps_no_cache_even_with_its_size_and_mtime(tmp_path, monkeypatch) -> None:
    """The code fingerprint counts each file by its stat: an edit that keeps the size, its mtime
    set back as `cp -p`, tar or a Nix store leave it, still changes it (the inode's change time)."""
    import os
    import shutil

    from ksgitops.core.load import schemas
    from ksgitops.io.git import cache
    copied = tmp_path / "schema"
    shutil.copytree(schemas.schema_dir(), copied)  # sizes and mtimes kept
    monkeypatch.setattr(cache, "schema_dir", lambda: copied)
    monkeypatch.setattr(cache, "_FINGERPRINT", None)
    before = cache.code_fingerprint()
    location = copied / "location.json"
    st, text = location.stat(), location.read_text()
    changed = text.replace("\"additionalProperties\": false", "\"additionalProperties\": fals3", 1)
    assert changed != text and len(changed) == len(text)
    location.write_text(changed)
    os.utime(location, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (location.stat().st_size, location.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    monkeypatch.setattr(cache, "_FINGERPRINT", None)
    assert cache.code_fingerprint() != before
