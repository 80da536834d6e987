"""Input errors confined to one space (or one SyncTarget), end to end through the command line:
`reconcile` exits 2, prints `file:line: message`, never a traceback, and freezes only that part
(core/place/isolation.py): a space never valid contributes nothing, one that was valid keeps its
last good state byte for byte, and every other space's change is written; every other command
exits 2 and writes nothing. Also: what is no duplicate, a 63-character mailbox name, and `explain`
of a mailbox a frozen workload space keeps whole.

Fatal cases run `reconcile` in a real child process (exit code, stderr, no traceback); the
before/after comparisons run in-process through the `cli` fixture for speed.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bad_input_checks import (CM, CM_REL, EDGE, HTTPD_C, SPECIALD, Files, all_files, assert_clean,
                              assert_contributes_nothing, assert_problem, copy_files, edit, example_files,
                              generated, ks, line_of)
from conftest import EXAMPLE

BILLION_LAUGHS = (
    "# the classic billion laughs, as the second document\n"
    + CM + "metadata: {name: ok, namespace: commonstuff}\n---\n"
    + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
)


FATAL: dict[str, tuple[Files, str, int | None, str]] = {
    # name: (files added to the example, path, line, message regex)
    "malformed-yaml": (
        {"spaces/wmw-c/bad.yaml": "# comment\n" + CM + "metadata:\n  name: x\n  namespace: commonstuff\ndata: [a, b\n"},
        "spaces/wmw-c/bad.yaml", 8, "malformed YAML"),
    "malformed-yaml-mapping": (
        {"spaces/wmw-c/bad.yaml": "a: b\n  c: d: e\n"}, "spaces/wmw-c/bad.yaml", 2, "malformed YAML"),
    "malformed-json": (
        {"spaces/wmw-c/bad.json": '{\n  "apiVersion": "v1",\n  "kind":\n}\n'},
        "spaces/wmw-c/bad.json", 4, "malformed JSON"),
    "alias-bomb": (
        {"spaces/wmw-c/bomb.yaml": BILLION_LAUGHS}, "spaces/wmw-c/bomb.yaml", 6, "alias"),
    "recursive-alias": (
        {"spaces/wmw-c/rec.yaml": "# loop\n" + CM + "metadata: {name: x, namespace: commonstuff}\ndata: &a\n  x: *a\n"},
        "spaces/wmw-c/rec.yaml", 2, "recursive"),
    "recursive-alias-list": (
        {"spaces/wmw-c/rec.yaml": "---\n&a [*a]\n"}, "spaces/wmw-c/rec.yaml", 2, "recursive"),
    "over-10-mib": (
        {"spaces/wmw-c/big.yaml": (CM + "metadata: {name: big, namespace: commonstuff}\ndata:\n  x: '"
                                   + "x" * (10 * 1024 * 1024) + "'\n").encode()},
        "spaces/wmw-c/big.yaml", None, r"10 MiB"),
    "non-utf8": (
        {"spaces/wmw-c/bin.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \xff\xfe\n"},
        "spaces/wmw-c/bin.yaml", 4, "UTF-8"),
    "not-a-mapping-list": (
        {"spaces/wmw-c/list.yaml": CM + "metadata: {name: fine, namespace: commonstuff}\n---\n- a\n- b\n"},
        "spaces/wmw-c/list.yaml", 5, "not a mapping"),
    "not-a-mapping-scalar": (
        {"spaces/wmw-c/scalar.yaml": "# just text\njust a string\n"}, "spaces/wmw-c/scalar.yaml", 2, "not a mapping"),
    "not-a-mapping-json": (
        {"spaces/wmw-c/list.json": "[1, 2]\n"}, "spaces/wmw-c/list.json", 1, "not a mapping"),
    "missing-apiVersion": (
        {"spaces/wmw-c/x.yaml": "# c\nkind: ConfigMap\nmetadata: {name: a, namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 2, "apiVersion"),
    "missing-kind": (
        {"spaces/wmw-c/x.yaml": "# c\n# d\napiVersion: v1\nmetadata: {name: a, namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 3, r"\bkind\b"),
    "missing-name": (
        {"spaces/wmw-c/x.yaml": CM + "metadata: {name: a, namespace: commonstuff}\n---\n"
                                + CM + "metadata: {namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 5, r"metadata\.name"),
    "missing-metadata": (
        {"spaces/wmw-c/x.yaml": CM + "data: {a: b}\n"}, "spaces/wmw-c/x.yaml", 1, r"metadata\.name"),
    "name-dotdot": (
        {"spaces/wmw-c/x.yaml": "\n" + CM + "metadata: {name: ../x, namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 2, r"'\.\./x'.*DNS-1123"),
    "name-slash": (
        {"spaces/wmw-c/x.yaml": CM + "metadata: {name: a/b, namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 1, r"'a/b'.*DNS-1123"),
    "name-uppercase": (
        {"spaces/wmw-c/x.yaml": CM + "metadata: {name: Foo, namespace: commonstuff}\n"},
        "spaces/wmw-c/x.yaml", 1, r"'Foo'.*DNS-1123"),
    "namespace-uppercase": (
        {"spaces/wmw-c/x.yaml": CM + "metadata: {name: foo, namespace: Common}\n"},
        "spaces/wmw-c/x.yaml", 1, r"'Common'.*DNS-1123"),
    "space-name-invalid": (
        {"spaces/Bad_Space/x.yaml": CM + "metadata: {name: foo, namespace: commonstuff}\n"},
        "spaces/Bad_Space", None, r"'Bad_Space'.*DNS-1123"),
    "duplicate-key": (
        {"spaces/wmw-c/dup.yaml": CM + "metadata:\n  name: x\n  namespace: commonstuff\ndata:\n  a: '1'\n  a: '2'\n"},
        "spaces/wmw-c/dup.yaml", 8, r"duplicate key 'a' in a mapping \(first at line 7\)"),
    "label-value-yaml-bool": (
        {"spaces/wmw-c/x.yaml": CM + "metadata:\n  name: x\n  namespace: commonstuff\n  labels:\n    extended: yes\n"},
        "spaces/wmw-c/x.yaml", 7, r'label extended: the unquoted value yes is read as a boolean.*extended: "yes"'),
    "rbac-name-with-slash": (
        {"spaces/wmw-c/r.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: a/b}\n"},
        "spaces/wmw-c/r.yaml", 1, r"ClusterRole name 'a/b' may not contain '/'"),
    "custom-resource-name-dotdot": (
        {"spaces/imw1/st.yaml": EDGE + "kind: SyncTarget\nmetadata: {name: ..}\n"},
        "spaces/imw1/st.yaml", 1, r"SyncTarget name '\.\.' may not be"),
    "api-version-escaping": (
        {"spaces/wmw-c/w.yaml": "apiVersion: ../../x/v1\nkind: Widget\nmetadata: {name: w}\n"},
        "spaces/wmw-c/w.yaml", 1, r"apiVersion '\.\./\.\./x/v1' is not"),
}


def broken_space(path: str) -> str:
    """The space a case breaks (a folder that is no space is its own name)."""
    return path.split("/")[1]


@pytest.mark.parametrize("case", sorted(FATAL))
def test_confined_error_on_fresh_repo_freezes_only_its_space(case: str, tree: Callable[[Files], Path]) -> None:
    """Never valid: the broken space contributes nothing, every other space is written."""
    added, path, line, pattern = FATAL[case]
    repo = tree({**example_files(), **added})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_problem(result.stderr, path, line, pattern)
    assert_clean(result.stderr)
    assert_contributes_nothing(repo, broken_space(path))


@pytest.mark.parametrize("case", sorted(FATAL))
def test_confined_error_after_good_reconcile_freezes_only_its_space(case: str, tree: Callable[[Files], Path],
                                                                    cli) -> None:
    """The broken space's last good state stays byte for byte; another space's change lands."""
    added, path, line, pattern = FATAL[case]
    repo = tree(example_files())
    assert cli("reconcile", str(repo)).code == 0
    before = generated(repo)
    assert before, "the good reconcile wrote mailboxes"
    edit(repo, "spaces/wmw-s/httpd.yaml", "library/httpd:2.4", "library/httpd:2.5")  # wmw-s moves on
    edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")  # frozen when wmw-c breaks
    for rel, content in added.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(content.encode() if isinstance(content, str) else content)
    result = cli("reconcile", str(repo))
    assert result.code == 2, result
    assert_problem(result.err, path, line, pattern)
    assert_clean(result.err)
    after = generated(repo)
    changed = sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
    space = broken_space(path)
    expected = [SPECIALD] + ([f"spaces/{space}/.ksgitops/problems.yaml"] if space != "Bad_Space" else [])
    if space != "wmw-c":  # only wmw-c's change is frozen
        expected += [f for wec in ("florin", "guilder") for f in copy_files(f"imw1-mb-{wec}", CM_REL)]
    assert changed == sorted(expected)
    checked = cli("validate", str(repo))
    assert checked.code == 2, checked
    assert_problem(checked.err, path, line, pattern)


def test_fatal_error_exits_2_for_every_command(tree: Callable[[Files], Path]) -> None:
    added, path, line, pattern = FATAL["name-dotdot"]
    repo = tree({**example_files(), **added})
    before = all_files(repo)
    for args in (("validate", repo), ("render", "florin", repo), ("diff", repo),
                 ("explain", "florin", "ConfigMap/commonstuff/httpd-htdocs", repo)):
        result = ks(*args)
        assert result.returncode == 2, (args, result)
        assert_problem(result.stderr, path, line, pattern)
        assert_clean(result.stderr)
    assert all_files(repo) == before


def test_duplicate_identity_names_both_files(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(),
                 "spaces/wmw-c/zz-dup.yaml": "# again\n\n" + CM + "metadata:\n  name: httpd-htdocs\n  namespace: commonstuff\n"})
    httpd = (repo / "spaces/wmw-c/httpd.yaml").read_text()
    first = line_of(httpd, "apiVersion: v1")
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    found = assert_problem(result.stderr, "spaces/wmw-c/zz-dup.yaml", 3, "ConfigMap commonstuff/httpd-htdocs")
    assert f"spaces/wmw-c/httpd.yaml:{first}" in found
    assert_clean(result.stderr)
    assert_contributes_nothing(repo)


def test_duplicate_identity_in_one_file_names_both_lines(tree: Callable[[Files], Path]) -> None:
    doc = CM + "metadata: {name: twice, namespace: commonstuff}\n"
    repo = tree({**example_files(), "spaces/wmw-c/twice.yaml": doc + "---\n" + doc})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    found = assert_problem(result.stderr, "spaces/wmw-c/twice.yaml", 5, "twice")
    assert "spaces/wmw-c/twice.yaml:1" in found
    assert_contributes_nothing(repo)


def test_same_identity_in_two_spaces_is_not_a_duplicate(tree: Callable[[Files], Path], cli) -> None:
    doc = CM + "metadata: {name: shared, namespace: ns}\n"
    repo = tree({**example_files(), "spaces/wmw-c/s.yaml": doc, "spaces/wmw-s/s.yaml": doc})
    result = cli("validate", str(repo))
    assert result.code == 0, result


def test_mailbox_name_of_exactly_63_characters_is_accepted(tree: Callable[[Files], Path], cli) -> None:
    name = "a" * 55
    repo = tree({**example_files(), "spaces/imw1/long.yaml": EDGE + f"kind: SyncTarget\nmetadata: {{name: {name}}}\n"})
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    mailbox = f"imw1-mb-{name}"
    assert len(mailbox) == 63
    assert (repo / "spaces" / mailbox / "space.yaml").is_file()


def test_no_traceback_without_debug_for_any_fatal_case(tree: Callable[[Files], Path]) -> None:
    """All broken files at once: one line per problem, then one per frozen part, no traceback."""
    files = {**example_files()}
    for added, *_ in FATAL.values():
        for rel, content in added.items():
            if "big" not in rel:
                files.setdefault(rel, content)
    repo = tree(files)
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    lines = result.stderr.splitlines()
    assert lines and all(re.match(r"^(spaces/|ksgitops\.yaml)[^ ]*(:\d+)?: ", ln) for ln in lines), lines
    frozen = [ln for ln in lines if ": frozen: " in ln]
    from ksgitops.names import mailbox_name
    assert frozen == [f"spaces/imw1: frozen: WEC .. (mailbox {mailbox_name('imw1', '..')}) is kept as it stands (its "
                      "SyncTarget has errors)",
                      "spaces/wmw-c: frozen: it contributes nothing until its errors are fixed (no last good state is "
                      "recorded)"], frozen
    assert_contributes_nothing(repo)


def test_explain_of_a_mailbox_a_frozen_workload_space_keeps_whole_says_so(tmp_path: Path) -> None:
    """A workload space with an error and no placement records (as an older ksgitops left it) keeps
    the WEC's mailbox whole: nothing is computed for it, which `explain` looked up (KeyError, exit 4)."""
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    shutil.rmtree(repo / "spaces/wmw-c/.ksgitops/placements", ignore_errors=True)
    (repo / "spaces/wmw-c/broken.yaml").write_text("a: [\n")
    result = ks("explain", "florin", "ConfigMap/commonstuff/httpd-htdocs", repo)
    assert result.returncode == 2, result
    assert "spaces/imw1-mb-florin is kept as it stands" in result.stderr, result.stderr
    assert_clean(result.stderr)
