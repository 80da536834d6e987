"""A multi-document file read document by document (core/load/documents.py): the reading equals
the whole file's, whatever was read before, and an edit parses only the documents it touched."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksgitops.core.load import documents, parse
from ksgitops.core.load.convert import FindingsMemo, read_source
from ksgitops.core.load.documents import read_by_document
from ksgitops.io.git.cache import DiskCache

PATH = "spaces/inventory/wecs.yaml"


def _location(n: int, label: str = "gold") -> str:
    return (f"apiVersion: edge.kubestellar.io/v2alpha1\nkind: Location\nmetadata:\n  name: wec-{n}\n"
            f"  labels:\n    tier: {label}\nspec:\n  resource: {{group: edge.kubestellar.io, version: v2alpha1, "
            f"resource: synctargets}}\n  instanceSelector:\n    matchLabels: {{id: wec-{n}}}\n")


# Documents that give the reading something to say: warnings of conversion (v0.6's group, a field
# the CRD does not know, a status the API server ignores), a label YAML reads as a boolean, a List,
# anchors, a comment-only piece, an empty document, a document ended by `...`.
TEMPLATES = [
    _location,
    lambda n: _location(n).replace("edge.kubestellar.io/v2alpha1", "edge.kcp.io/v2alpha1"),
    lambda n: _location(n) + "  surprise: 1\nstatus:\n  x: 1\n",
    lambda n: f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{n}\n  labels:\n    extended: yes\n",
    lambda n: (f"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: a-{n}}}\n"
               f"- apiVersion: v1\n  kind: Secret\n  metadata: {{name: b-{n}}}\n"),
    lambda n: f"apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: anchored-{n}\ndata:\n  copy: *m\n",
    lambda n: f"# only a comment {n}\n",
    lambda n: "",
    lambda n: f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ended-{n}\n...\n",
    lambda n: f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: block-{n}\ndata:\n  text: |\n    line one\n\n    line {n}\n",
]
BROKEN = ["apiVersion: v1\nkind: ConfigMap\nmetadata: {name: open\n", "- a list\n", "a: 1\na: 2\n",
          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata: {x: \"unterminated\n"]

documents_st = st.lists(st.tuples(st.integers(0, len(TEMPLATES) - 1), st.integers(0, 30)), min_size=1, max_size=12)


def _text(docs: list[tuple[int, int]], lead: bool, crlf: bool, broken: int | None = None) -> bytes:
    parts = [TEMPLATES[t](n) for t, n in docs]
    if broken is not None:
        parts[len(parts) // 2] = BROKEN[broken]
    text = ("---\n" if lead else "") + "---\n".join(parts)
    return (text.replace("\n", "\r\n") if crlf else text).encode()


def _same(got: parse.ParsedFile, want: parse.ParsedFile) -> None:
    assert got.docs == want.docs
    assert [str(p) for p in got.problems] == [str(p) for p in want.problems]
    assert got.problems == want.problems


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=documents_st, new=documents_st, lead=st.booleans(), crlf=st.booleans(),
       broken=st.one_of(st.none(), st.integers(0, len(BROKEN) - 1)))
def test_a_file_read_by_document_reads_as_the_whole_file_whatever_came_before(old, new, lead, crlf, broken) -> None:
    before = read_by_document(PATH, _text(old, lead, crlf), FindingsMemo({}))
    data = _text(old[:3] + new, not lead, crlf, broken)  # the old file's first documents, then others
    want = read_source(PATH, data, FindingsMemo({}))
    _same(read_by_document(PATH, data, FindingsMemo({}), before), want)
    _same(read_by_document(PATH, data, FindingsMemo({})), want)


def test_an_edit_parses_only_the_documents_it_touched(monkeypatch) -> None:
    old = "---\n".join(_location(n) for n in range(100)).encode()
    before = read_by_document(PATH, old)
    assert len(before.pieces) == 100
    parsed: list[str] = []
    original = documents.parse_yaml_documents
    monkeypatch.setattr(documents, "parse_yaml_documents", lambda path, text, alias: parsed.append(text) or
                        original(path, text, alias))
    edited = old.replace(b"name: wec-40\n  labels:\n    tier: gold", b"name: wec-40\n  labels:\n    tier: silver")
    edited = edited.replace(_location(7).encode() + b"---\n", b"")  # and one Location removed above it
    got = read_by_document(PATH, edited, None, before)
    assert len(parsed) == 1 and "wec-40" in parsed[0] and len(got.pieces) == 99
    _same(got, read_source(PATH, edited))
    assert [line for line, _ in got.docs][39] == 1 + 39 * _location(0).count("\n") + 39  # lines moved up


@pytest.mark.parametrize("text", [
    "%YAML 1.1\n---\na: 1\n---\nb: 2\n",  # a directive: documents are not read on their own
    "a: 1\r---\rb: 2\r",  # libyaml's line breaks that are not \n
    "a: 1\n---\nb: 2\u2028c: 3\n",
    "a: 1\n---\n\ufeffb: 2\n",
    "a: 1\n---\nb: 2\x85c: 3\n",
    "a: 1\n---\n%TAG ! tag:example.com,2000:\n---\nb: 2\n",  # a directive further down
    "a: 1\r\n---\r\nb: 2\rc: 3\r\n",  # one lone \r among \r\n
    "a: 1\n",  # one document: nothing to cut
])
def test_what_could_read_differently_in_pieces_is_read_whole(text: str) -> None:
    data = text.encode()
    got = read_by_document("x.yaml", data)
    assert got.pieces == ()
    _same(got, read_source("x.yaml", data))


def test_a_piece_that_does_not_parse_sends_the_whole_file_to_say_where() -> None:
    data = (_location(1) + "---\n" + BROKEN[0] + "---\n" + _location(2)).encode()
    got = read_by_document(PATH, data, None, read_by_document(PATH, (_location(1) + "---\n" + _location(2)).encode()))
    assert got.docs == () and got.pieces == ()
    assert [str(p) for p in got.problems] == [str(p) for p in read_source(PATH, data).problems]
    assert str(got.problems[0]) == f"{PATH}:15: malformed YAML: did not find expected ',' or '}}'"  # at the next ---


def test_problems_taken_from_a_reading_at_another_path_are_anchored_here() -> None:
    data = "---\n".join([TEMPLATES[3](1), _location(2)]).encode()
    elsewhere = read_by_document("spaces/a/x.yaml", data)
    got = read_by_document(PATH, data + b"---\n" + _location(3).encode(), None, elsewhere)
    assert {p.origin.path for p in got.problems} == {PATH}


def test_a_cache_entry_given_another_value_is_saved(tmp_path: Path) -> None:
    """The reading's pointer to a path's last blob is the cache's one entry set again."""
    path = tmp_path / "state" / "cache.pickle"
    path.parent.mkdir()
    disk = DiskCache(path)
    disk.content[("last-read-of", PATH)] = "blob-1"
    disk.content["blob-1"] = 1
    disk.save({})
    again = DiskCache(path)
    assert again.content[("last-read-of", PATH)] == "blob-1"
    again.content[("last-read-of", PATH)] = "blob-2"
    again.content["blob-1"]  # noqa: B018 - used
    again.save({})
    assert DiskCache(path).content[("last-read-of", PATH)] == "blob-2"
