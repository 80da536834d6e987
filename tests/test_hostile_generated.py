"""Generated files that no longer read: a merge left its conflict markers in them, a hand edit made
them invalid YAML, binary bytes, a list where a mapping is written, an alias bomb, or nothing at all.

They are reconcile's own output (as Argo CD and Flux own theirs): `reconcile` writes them anew,
`diff` shows them as a difference (exit 1), and a command that must read one to answer (`render`
of a mailbox kept as it stands) says where and what is wrong (`path:line:`, exit 2). `status`
judges the object sent through a broken file Unknown on that WEC, with a located warning, and
summarizes the rest of the fleet. No traceback, and never a Secret's data in what is printed.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest
import yaml

from conftest import EXAMPLE, git, git_init, run_cli_subprocess, work_tree_files
from ksgitops.core.emit.readback import Unreadable, patched, read_object, read_patch
from ksgitops.core.status.rows import UNREADABLE

SECRET_VALUE = "hunter2-'q'-{[s3cr3t"
MB = "spaces/imw1-mb-guilder"
FILES = {  # what may break: a base copy (of a Secret too), a patch the status rules read, the SyncerConfig
    "base": f"{MB}/objects/apps/replicasets/commonstuff/commond.yaml",
    "secret": f"{MB}/objects/core/secrets/specialstuff/topsecret.yaml",
    "patch": f"{MB}/patches/apps/replicasets/commonstuff/commond.json",
    "syncerconfig": f"{MB}/syncerconfig.yaml",
}
MORE_FILES = {  # also written anew by reconcile
    "kustomization": f"{MB}/kustomization.yaml",
    "record": "spaces/wmw-s/.ksgitops/placements/edge-placement-s.yaml",
}


BILLION_LAUGHS = ("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))).encode()


def _conflict(data: bytes) -> bytes:
    return b"<<<<<<< HEAD\n" + data + b"=======\n" + data.replace(b"commond", b"theirs") + b">>>>>>> theirs\n"


BREAKS: dict[str, Callable[[bytes], bytes]] = {
    "merge-conflict": _conflict,
    "invalid-yaml": lambda data: data + b"broken: a: b\n",
    "binary": lambda data: b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + data,
    "list": lambda data: b"- " + data.replace(b"\n", b" ") + b"\n- b\n",
    "empty": lambda data: b"",
    "alias-bomb": lambda data: BILLION_LAUGHS,
    "deep-nesting": lambda data: b"[" * 100_000 + b"]" * 100_000,  # libyaml's composer recursed past its stack
}
LINE = {"merge-conflict": 1, "binary": 1, "list": 1, "empty": 1, "alias-bomb": 1,
        "deep-nesting": 1}  # invalid-yaml: after the rest


@pytest.fixture(scope="module")
def reconciled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with a Secret placed on guilder, reconciled and summarized once."""
    repo = tmp_path_factory.mktemp("template") / "repo"
    shutil.copytree(EXAMPLE, repo)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "topsecret", "namespace": "specialstuff"},
              "stringData": {"password": SECRET_VALUE}}
    (repo / "spaces/wmw-s/secret.yaml").write_text(yaml.safe_dump(secret))
    placement = repo / "spaces/wmw-s/edge-placement-s.yaml"
    placement.write_text(placement.read_text().replace("resources: [configmaps]", "resources: [configmaps, secrets]"))
    for command in ("reconcile", "status"):
        assert ks(command, repo).returncode == 0
    assert SECRET_VALUE.encode() in (repo / FILES["secret"]).read_bytes()
    return repo


def ks(*args: object) -> subprocess.CompletedProcess[str]:
    return run_cli_subprocess(*(str(a) for a in args))


def broken(reconciled: Path, tmp_path: Path, rel: str, how: str, source_error: str = "") -> tuple[Path, bytes]:
    """A copy of the reconciled repo with `rel` broken `how`; returns it and the file's good bytes.
    `source_error`: also break a source, so that the file's mailbox is kept as it stands."""
    repo = tmp_path / "repo"
    shutil.copytree(reconciled, repo)
    good = (repo / rel).read_bytes()
    (repo / rel).write_bytes(BREAKS[how](good))
    if source_error == "synctarget":  # an error of guilder's SyncTarget: its mailbox is frozen
        target = repo / "spaces/imw1/guilder.yaml"
        target.write_text(target.read_text().replace("extended: si", "extended: yes", 1))
    return repo, good


def line_of_break(how: str, good: bytes) -> int:
    return LINE.get(how, good.count(b"\n") + 1)


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    printed = result.stdout + result.stderr
    assert "Traceback" not in printed and "internal error" not in printed, printed
    assert SECRET_VALUE not in printed and "hunter2" not in printed, printed


@pytest.mark.parametrize("how", BREAKS)
@pytest.mark.parametrize("kind", [*FILES, *MORE_FILES])
def test_reconcile_writes_a_broken_generated_file_anew(reconciled: Path, tmp_path: Path, kind: str, how: str) -> None:
    rel = {**FILES, **MORE_FILES}[kind]
    repo, good = broken(reconciled, tmp_path, rel, how)
    result = ks("reconcile", repo)
    assert result.returncode == 0, result
    assert_clean(result)
    assert (repo / rel).read_bytes() == good
    assert work_tree_files(repo) == work_tree_files(reconciled)


@pytest.mark.parametrize("how", BREAKS)
@pytest.mark.parametrize("kind", FILES)
def test_diff_shows_a_broken_generated_file_as_a_difference(reconciled: Path, tmp_path: Path, kind: str,
                                                            how: str) -> None:
    rel = FILES[kind]
    repo, good = broken(reconciled, tmp_path, rel, how)
    result = ks("diff", repo)
    assert result.returncode == 1, result
    assert_clean(result)
    where = f"{rel}:{line_of_break(how, good)}: "
    assert f"-unreadable: '{where}" in result.stdout, result.stdout
    shown = rel.replace("/patches/", "/objects/").replace(".json", ".yaml")  # a patch shows as its object
    assert f"+++ b/{shown}" in result.stdout and "1 WEC affected" in result.stdout
    if kind == "secret":
        assert "password: <redacted> (new value)" in result.stdout


@pytest.mark.parametrize("how", BREAKS)
def test_diff_against_a_commit_holding_a_broken_file(reconciled: Path, tmp_path: Path, how: str) -> None:
    repo, _ = broken(reconciled, tmp_path, FILES["secret"], how)
    git_init(repo)
    result = ks("diff", "--against", "HEAD", repo)
    assert result.returncode == 1, result
    assert_clean(result)
    assert f"-unreadable: '{FILES['secret']}:" in result.stdout


@pytest.mark.parametrize("how", BREAKS)
@pytest.mark.parametrize("kind", ["base", "secret", "patch"])
def test_render_of_a_kept_mailbox_locates_the_broken_file(reconciled: Path, tmp_path: Path, kind: str,
                                                          how: str) -> None:
    rel = FILES[kind]
    repo, good = broken(reconciled, tmp_path, rel, how, source_error="synctarget")
    result = ks("render", "guilder", repo)
    assert result.returncode == 2, result
    assert_clean(result)
    assert f"\n{rel}:{line_of_break(how, good)}: " in f"\n{result.stderr}", result.stderr
    assert "`ksgitops reconcile` writes it anew" in result.stderr
    assert (repo / rel).read_bytes() == BREAKS[how](good), "render writes nothing"
    florin = ks("render", "florin", repo)  # another kept mailbox renders as it stands
    assert florin.returncode == 2 and "kind: ReplicaSet" in florin.stdout and rel not in florin.stderr


def test_render_and_explain_of_a_reconciled_mailbox_never_read_it(reconciled: Path, tmp_path: Path) -> None:
    repo, _ = broken(reconciled, tmp_path, FILES["secret"], "merge-conflict")
    for args in (["render", "guilder"], ["explain", "guilder"], ["explain", "guilder", "Secret/specialstuff/topsecret"],
                 ["validate"]):
        result = ks(*args, repo)
        assert result.returncode == 0, (args, result)
        assert "Traceback" not in result.stderr and not result.stderr.strip(), result.stderr
        assert (SECRET_VALUE in result.stdout) == (args[0] == "render")  # what the WEC receives, from the sources


@pytest.mark.parametrize("how", BREAKS)
@pytest.mark.parametrize("kind", ["base", "secret", "patch"])
def test_status_judges_an_object_sent_through_a_broken_file_unknown(reconciled: Path, tmp_path: Path, kind: str,
                                                                     how: str) -> None:
    rel = FILES[kind]
    repo, good = broken(reconciled, tmp_path, rel, how)
    result = ks("status", repo)
    assert result.returncode == 0, result
    assert_clean(result)
    assert f"\n{rel}:{line_of_break(how, good)}: warning: " in f"\n{result.stderr}", result.stderr
    markdown = (repo / "STATUS.md").read_text()
    assert f"| guilder | Unknown | {UNREADABLE} |" in markdown
    assert "| florin | Unknown" not in markdown, "the other WECs are judged as before"
    for path, data in work_tree_files(repo).items():
        if path == "STATUS.md" or "/.ksgitops/status/" in path:
            assert b"hunter2" not in data, path
    again = ks("status", repo)  # from the memo: the same warning
    assert again.returncode == 0 and again.stderr == result.stderr


@pytest.mark.parametrize("how", BREAKS)
def test_status_of_a_commit_holding_a_broken_file(reconciled: Path, tmp_path: Path, how: str) -> None:
    repo, good = broken(reconciled, tmp_path, FILES["patch"], how)
    git_init(repo)
    result = ks("status", "--commit", repo)
    assert result.returncode == 0, result
    assert_clean(result)
    assert f"\n{FILES['patch']}:{line_of_break(how, good)}: warning: " in f"\n{result.stderr}"
    assert UNREADABLE in git(repo, "show", "HEAD:STATUS.md")


def test_status_of_a_customized_secret_reported_by_its_one_wec(reconciled: Path, tmp_path: Path) -> None:
    """A per-WEC patch of a Secret's data, on the one WEC a singleton placement reaches: status
    applies it to the Secret as sent (it once applied it to the Secret without its data)."""
    repo = tmp_path / "repo"
    shutil.copytree(reconciled, repo)
    source = repo / "spaces/wmw-s/secret.yaml"
    doc = yaml.safe_load(source.read_text())
    doc["metadata"]["annotations"] = {"edge.kubestellar.io/expand-parameters": "true"}
    doc["stringData"]["password"] = f"{SECRET_VALUE}-%(loc-name)"
    source.write_text(yaml.safe_dump(doc))
    report = repo / MB / "reported/core/secrets/specialstuff/topsecret.yaml"
    report.parent.mkdir(parents=True)
    report.write_text('{"object": {"apiVersion": "v1", "kind": "Secret", "namespace": "specialstuff", '
                      '"name": "topsecret"}, "status": {}, "reportedAt": "2026-11-22T03:00:05Z"}\n')
    assert ks("reconcile", repo).returncode == 0
    assert (repo / MB / "patches/core/secrets/specialstuff/topsecret.json").exists()
    result = ks("status", repo)
    assert result.returncode == 0, result
    assert_clean(result)
    status = (repo / "spaces/wmw-s/.ksgitops/status/core/secrets/specialstuff/topsecret.yaml").read_text()
    assert "hunter2" not in status and "singletonStatus: {}" in status


# --- reading back, in process ------------------------------------------------------------------

@pytest.mark.parametrize("how", BREAKS)
def test_a_broken_secret_is_located_never_quoted(how: str) -> None:
    good = yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                           "stringData": {"password": SECRET_VALUE, "tab": "a\tb"}}).encode()
    with pytest.raises(Unreadable) as caught:
        read_object("objects/core/secrets/ns/s.yaml", BREAKS[how](good))
    assert caught.value.line == line_of_break(how, good)
    assert "hunter2" not in str(caught.value) and "s3cr3t" not in str(caught.value)
    assert str(caught.value).startswith(f"objects/core/secrets/ns/s.yaml:{caught.value.line}: ")


@pytest.mark.parametrize("data, found", [
    (b"", "the file is empty"),
    (b'<<<<<<< HEAD\n[]\n=======\n[{"op": "remove"}]\n>>>>>>> theirs\n', "conflict markers"),
    (b'{"op": "remove", "path": "/a"}', "not a JSON patch"),
    (b'[1, 2]', "not a JSON patch"),
    (b'[{"op": "remove", "path": "/a"', "malformed JSON"),
    (b"\xff[]", "not valid UTF-8"),
])
def test_a_broken_patch_is_located(data: bytes, found: str) -> None:
    with pytest.raises(Unreadable, match=found):
        read_patch("patches/x.json", data)


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/data/nothere"}],
    [{"op": "replace", "path": "/data/password/0", "value": "x"}],
    [{"op": "test", "path": "/data/password", "value": "guess"}],
    [{"op": "replace", "path": "", "value": [SECRET_VALUE]}],
    [{"op": "nonsense", "path": "/data"}],
])
def test_a_patch_that_does_not_apply_never_quotes_the_object(ops: list) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": SECRET_VALUE}}
    with pytest.raises(Unreadable) as caught:
        patched("patches/core/secrets/ns/s.json", body, ops, json.dumps(ops).encode())
    assert "hunter2" not in str(caught.value) and caught.value.line == 1
