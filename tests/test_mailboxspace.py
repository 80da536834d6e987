"""A mailbox's space.yaml is read back without a YAML parser only when its bytes are exactly what
reconcile's template makes of some values, and then it is the very document the parser reads."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.load import read
from ksgitops.core.load.convert import read_source
from ksgitops.core.load.mailboxspace import own_space_document, space_yaml
from ksgitops.core.load.parse import ParsedFile
from ksgitops.core.load.snapshot import SourceFile

# names as reconcile writes them, and anything else a string can hold (yaml_str quotes it)
VALUES = st.one_of(st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?", fullmatch=True),
                   st.sampled_from(["yes", "no", "null", "~", "1e3", "0x1", "true", "'", "''", "a'b", '"', "-",
                                    " lead", "trail ", "a: b", "#c", "é", "\t", "line\nbreak", "", "[a]", "{b: c}"]),
                   st.text(max_size=12))


@settings(max_examples=400, deadline=None)
@given(wec=VALUES, uid=VALUES, inventory=VALUES, mailbox=VALUES)
def test_the_template_is_read_back_as_the_parser_reads_it(wec: str, uid: str, inventory: str, mailbox: str) -> None:
    data = space_yaml(wec, uid, inventory, mailbox)
    own = own_space_document(data)
    if own is None:  # a value written double-quoted (not printable, or spaces around it), or one
        # with brackets (which the parser counts even when quoted): parsed
        assert not all(v.isprintable() and v == v.strip() and not set(v) & set("[]{}")
                       for v in (wec, uid, inventory, mailbox))
        return
    parsed = read_source("spaces/m/space.yaml", data)
    assert parsed.problems == ()
    assert own == parsed.docs[0][1]
    assert parsed.docs[0][0] == 1


@pytest.mark.parametrize("edit", [
    lambda d: d.replace(b"Type: managed", b"Type: unmanaged"),
    lambda d: d + b"# a comment\n",
    lambda d: b"---\n" + d,
    lambda d: d.replace(b"name: wec-1\n", b"name: 'wec-1'\n"),  # the same value, written otherwise
    lambda d: d.replace(b"  name: mb-1", b"  name: mb-1 "),
    lambda d: d.replace(b"\n", b"\r\n"),
    lambda d: d.replace(b"spec:\n", b"spec:\n  extra: 1\n"),
    lambda d: d[:-1],
])
def test_anything_else_goes_to_the_parser(edit) -> None:
    data = edit(space_yaml("wec-1", "uid-1", "inventory", "mb-1"))
    assert data != space_yaml("wec-1", "uid-1", "inventory", "mb-1")
    assert own_space_document(data) is None


class _OneFile:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def file(self, path: str) -> SourceFile | None:
        return SourceFile(path, "blob-1", lambda: self.data) if path == "spaces/mb-1/space.yaml" else None


def test_a_mailbox_is_recognised_without_the_parser_and_cached_as_parsed(monkeypatch) -> None:
    data = space_yaml("wec-1", "uid-1", "inventory", "mb-1")
    expected = read.mailbox_space(_OneFile(data), "mb-1")  # parsed (no cache: a cold parse)
    cache: dict = {}
    monkeypatch.setattr(read, "read_by_document", lambda *a, **k: pytest.fail("parsed"))
    fast = read.mailbox_space(_OneFile(data), "mb-1", cache)
    assert fast == expected and fast is not None
    assert cache["blob-1"] == ParsedFile(((1, fast.body),))
    edited = data.replace(b"Type: managed", b"Type: managed  # mine")
    with pytest.raises(pytest.fail.Exception):
        read.mailbox_space(_OneFile(edited), "mb-1", {})


@pytest.mark.parametrize("values", [
    ("wec-1", "[" * 501, "inventory", "mb-1"),  # the parser counts brackets even when quoted
    ("wec-1", "[" * 130, "{" * 130, "[" * 130 + "{" * 130),
    ("w", "u", "inventory", "a" * (10 * 2**20 + 1)),  # larger than the parser takes
])
def test_what_the_parser_refuses_is_left_to_it(values) -> None:
    data = space_yaml(*values)
    assert read_source("spaces/m/space.yaml", data).problems
    assert own_space_document(data) is None


def test_over_a_git_tree_a_mailbox_is_memoized_by_its_folder_s_tree_id(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Unchanged folders cost a lookup and no read; a folder whose tree id moved is read anew;
    every answer is the one a read without the memo gives."""
    import shutil

    from conftest import EXAMPLE, git, git_init
    from ksgitops.io.git.repo import TreeSnapshot, open_repo
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    example_git = git_init(tmp_path / "repo")  # with its mailboxes

    def snapshot() -> TreeSnapshot:
        repo = open_repo(example_git)
        return TreeSnapshot(repo, repo.head.peel().tree)

    def answers(snap: TreeSnapshot, cache: dict) -> tuple[dict, list[str]]:  # type: ignore[type-arg]
        reads: list[str] = []
        plain = snap.file
        snap.file = lambda path: reads.append(path) or plain(path)  # type: ignore[method-assign]
        found = {s: read.mailbox_space(snap, s, cache) for s in snap.list_spaces()}
        return {s: (o.space, o.body, o.origin, o.key) if o is not None else None for s, o in found.items()}, reads

    cache: dict = {}  # type: ignore[type-arg]
    first, reads = answers(snapshot(), cache)
    assert [s for s, o in first.items() if o is not None] == ["imw1-mb-florin", "imw1-mb-guilder"] and reads
    again, reads = answers(snapshot(), cache)
    assert again == first and reads == []
    space_yaml = example_git / "spaces/imw1-mb-florin/space.yaml"
    space_yaml.write_text(space_yaml.read_text().replace("Type: managed", "Type: unmanaged"))
    git(example_git, "commit", "-qam", "florin is a source space now")
    changed, reads = answers(snapshot(), cache)
    assert reads == ["spaces/imw1-mb-florin/space.yaml"]
    assert changed == {**first, "imw1-mb-florin": None} == answers(snapshot(), {})[0]
