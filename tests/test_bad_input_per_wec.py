"""Errors for one object on one WEC (docs/REFERENCE.md, "Errors for one object on one WEC"), end
to end through the command line: `validate` exits 2; `reconcile`/`render` print the error, exit 0,
write everything else and keep that mailbox's previous copy of the object (none if it never had
one). A problem line names its WECs by SyncTarget name. A Customizer replacement path that does
not parse is no such error: it fails for every object and WEC alike and freezes its space.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from bad_input_checks import (CM, CM_REL, HTTPD_C, assert_clean, assert_problem, copy_files, edit,
                              generated, ks, line_of)

RS_REL = "apps/replicasets/commonstuff/commond"
DEPLOY_REL = "apps/deployments/specialstuff/speciald"
MAILBOXES = ("imw1-mb-florin", "imw1-mb-guilder")


def break_after_good_reconcile(repo: Path, cli, breakage: Callable[[Path], None], kept_rel: str,
                               kept_in: tuple[str, ...], other_rel: str, problem: tuple[str, str, str]) -> None:
    """Reconcile the good repo, break one object and change another, and check the rules of
    docs/REFERENCE.md, "Errors for one object on one WEC".

    problem: (file, a text on the line the problem names: the failing object's first, or that of
    the field it is about, message regex).
    """
    assert cli("reconcile", str(repo)).code == 0
    gen0 = generated(repo)
    for mailbox in kept_in:
        assert copy_files(mailbox, kept_rel)[0] in gen0
    breakage(repo)
    path, needle, pattern = problem
    line = _doc_line(repo, path, needle)

    checked = cli("validate", str(repo))
    assert checked.code == 2, checked
    for mailbox in kept_in:
        assert_problem(checked.err, path, line, rf"(?:{pattern}).*{on_wec(mailbox, len(kept_in))}")

    result = ks("reconcile", repo)
    assert result.returncode == 0, result
    assert_clean(result.stderr)
    for mailbox in kept_in:
        assert_problem(result.stderr, path, line, rf"(?:{pattern}).*{on_wec(mailbox, len(kept_in))}")
    gen1 = generated(repo)
    for mailbox in kept_in:  # the previous copy and its patch are kept, byte for byte
        for rel in copy_files(mailbox, kept_rel):
            assert gen1.get(rel) == gen0.get(rel), rel
        assert f"objects/{kept_rel}.yaml" in gen1[f"spaces/{mailbox}/kustomization.yaml"].decode()
    changed = [rel for rel in gen1 if gen0.get(rel) != gen1[rel] and f"/objects/{other_rel}.yaml" in rel]
    assert changed, "the other object's update was written"

    for mailbox in kept_in:
        rendered = ks("render", mailbox, repo, "-o", "json")
        assert rendered.returncode == 0, rendered
        assert_clean(rendered.stderr)
        assert_problem(rendered.stderr, path, line, pattern)
        names = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in json.loads(rendered.stdout)["items"]}
        kind, ns, name = _identity_of(kept_rel)
        assert (kind, ns, name) in names


def on_wec(mailbox: str, count: int) -> str:
    """How a problem line names its WECs, by SyncTarget name: one, or all of them on one line
    (`[2 WECs: a, b]`)."""
    wec = mailbox.partition("-mb-")[2]
    return rf"\[WEC {wec}\]" if count == 1 else rf"\[{count} WECs: [^]]*\b{wec}\b"


def _identity_of(rel: str) -> tuple[str, str, str]:
    _, resource, ns, name = rel.split("/")
    kind = {"configmaps": "ConfigMap", "replicasets": "ReplicaSet", "deployments": "Deployment"}[resource]
    return kind, ("" if ns == "_cluster" else ns), name


def _doc_line(repo: Path, rel: str, needle: str) -> int:
    return line_of((repo / rel).read_text(), needle)


def test_missing_parameter_keeps_previous_copy(example: Path, cli) -> None:
    def breakage(repo: Path) -> None:
        edit(repo, HTTPD_C, "Running in %(loc-name).", "Running in %(nope).")
        edit(repo, HTTPD_C, "replicas: 1", "replicas: 3")  # commond, same mailboxes, must update
    break_after_good_reconcile(example, cli, breakage, CM_REL, MAILBOXES, RS_REL, (HTTPD_C, "index.html: |", "'nope'"))
    rendered = cli("render", "florin", str(example))
    assert "Running in florin." in rendered.out  # the kept copy, customized as before


def test_unknown_customizer_keeps_previous_copy(example: Path, cli) -> None:
    def breakage(repo: Path) -> None:
        edit(repo, HTTPD_C, "customizer: example-customizer", "customizer: nope")
        edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")
    break_after_good_reconcile(example, cli, breakage, RS_REL, MAILBOXES, CM_REL,
                               (HTTPD_C, "customizer: nope", "unknown Customizer commonstuff/nope"))


@pytest.mark.parametrize("field, was, broken, message", [
    ("path", '"$.spec.template.spec.containers.0.env.0.value"', '"$.spec.template.spec[nothere"', r"invalid path .*nothere"),
    ("value", "'\"env is %(env)\"'", "'env is prod'", r"not valid JSON"),
])
def test_an_unusable_replacement_keeps_the_objects_using_it_not_its_space(example: Path, cli, field: str, was: str,
                                                                          broken: str, message: str) -> None:
    """A replacement whose path or value does not parse: KubeStellar's CRD takes any string and
    its customizer skips that replacement and ships the rest, so the Customizer gets one located
    warning and each (object, WEC) using it is an error that keeps the previous copy; the rest of
    its space flows (test_mailbox.py: one that selects nothing is only a warning)."""
    def breakage(repo: Path) -> None:
        edit(repo, HTTPD_C, f"{field}: {was}", f"{field}: {broken}")
        edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")  # no Customizer: flows
    break_after_good_reconcile(example, cli, breakage, RS_REL, MAILBOXES, CM_REL,
                               (HTTPD_C, "apiVersion: apps/v1", rf"example-customizer: replacements\[0\].*{message}"))
    line = _doc_line(example, HTTPD_C, broken)
    found = ks("validate", example)
    warned = assert_problem(found.stderr, HTTPD_C, line, rf"warning: Customizer example-customizer: "
                                                         rf"replacements\[0\]\.{field}[: ].*{message}")
    assert not re.search(r"\[(WEC |\d+ WECs)", warned) and found.stderr.count(f"replacements[0].{field}") == 1  # once, not per (object, WEC)


@pytest.mark.parametrize("op, phrase", [
    ("{op: remove, path: /spec/nothere}", "remove"),
    ("{op: test, path: /spec/replicas, value: 7}", "test"),
    ("{op: replace, path: /spec/template/spec/containers/9/image, value: x}", "replace"),
])
def test_failing_json_patch_op_keeps_previous_copy(op: str, phrase: str, example: Path, cli) -> None:
    def breakage(repo: Path) -> None:
        edit(repo, HTTPD_C, "  value: '\"env is %(env)\"'\n", f"  value: '\"env is %(env)\"'\njsonPatch:\n- {op}\n")
        edit(repo, HTTPD_C, "image: library/httpd:2.4", "image: library/httpd:2.5")  # commond's base
        edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")
    break_after_good_reconcile(example, cli, breakage, RS_REL, MAILBOXES, CM_REL,
                               (HTTPD_C, "apiVersion: apps/v1", rf"jsonPatch\[0\] \({phrase} "))


DUP_CM = CM + "metadata:\n  name: httpd-htdocs\n  namespace: commonstuff\ndata:\n  index.html: from wmw-s\n"
WIDEN_S = ('namespaces: [specialstuff]\n    objectNames: ["*"]', 'namespaces: [specialstuff, commonstuff]\n    objectNames: ["*"]')


def test_two_wds_placing_one_identity_keeps_previous_copy(example: Path, cli) -> None:
    """guilder gets httpd-htdocs from wmw-c and (now) wmw-s: conflict there; florin only from wmw-c."""
    def breakage(repo: Path) -> None:
        (repo / "spaces/wmw-s/dup.yaml").write_text(DUP_CM)
        edit(repo, "spaces/wmw-s/edge-placement-s.yaml", *WIDEN_S)
        edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")
        edit(repo, "spaces/wmw-s/httpd.yaml", "library/httpd:2.4", "library/httpd:2.5")
    break_after_good_reconcile(example, cli, breakage, CM_REL, ("imw1-mb-guilder",), DEPLOY_REL,
                               (HTTPD_C, "apiVersion: v1", "two workload description spaces"))
    cm_line = _doc_line(example, HTTPD_C, "apiVersion: v1")
    result = ks("reconcile", example)
    line = next(ln for ln in result.stderr.splitlines() if "two workload description spaces" in ln)
    assert f"{HTTPD_C}:{cm_line}" in line and "spaces/wmw-s/dup.yaml:1" in line  # both sources named
    assert "[WEC florin]" not in result.stderr and "[WEC guilder]" in result.stderr
    florin = (example / f"spaces/imw1-mb-florin/objects/{CM_REL}.yaml").read_text()
    assert "This is THE common web site." in florin  # no conflict there: updated
    guilder = (example / f"spaces/imw1-mb-guilder/objects/{CM_REL}.yaml").read_text()
    assert "This is a common web site." in guilder and "from wmw-s" not in guilder


def test_conflict_with_nothing_else_changed_leaves_mailbox_untouched(example: Path, cli) -> None:
    assert cli("reconcile", str(example)).code == 0
    gen0 = generated(example)
    (example / "spaces/wmw-s/dup.yaml").write_text(DUP_CM)
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", *WIDEN_S)
    result = cli("reconcile", str(example))
    assert result.code == 0 and "two workload description spaces" in result.err, result
    gen1 = generated(example)
    changed = sorted(rel for rel in set(gen0) | set(gen1) if gen0.get(rel) != gen1.get(rel))
    assert [rel for rel in changed if "/.ksgitops/" not in rel] == []


def test_error_without_previous_copy_leaves_object_out(example: Path, cli) -> None:
    edit(example, HTTPD_C, "Running in %(loc-name).", "Running in %(nope).")
    line = _doc_line(example, HTTPD_C, "index.html: |")  # the field that does not expand
    result = ks("reconcile", example)
    assert result.returncode == 0, result
    assert_clean(result.stderr)
    assert_problem(result.stderr, HTTPD_C, line, "'nope'")
    for mailbox in MAILBOXES:
        obj, patch = copy_files(mailbox, CM_REL)
        assert not (example / obj).exists() and not (example / patch).exists()
        kustomization = (example / f"spaces/{mailbox}/kustomization.yaml").read_text()
        assert CM_REL not in kustomization
        assert (example / copy_files(mailbox, RS_REL)[0]).is_file()  # everything else is written
        rendered = cli("render", mailbox, str(example), "-o", "json")
        assert rendered.code == 0, rendered
        assert "httpd-htdocs" not in [o["metadata"]["name"] for o in json.loads(rendered.out)["items"]
                                      if o["metadata"].get("namespace") == "commonstuff"]
    assert (example / "spaces/imw1-mb-guilder/objects/core/configmaps/specialstuff/httpd-htdocs.yaml").is_file()


def test_error_on_one_wec_only(example: Path, cli) -> None:
    """%(extended) is a label of guilder's Location only: florin fails, guilder is customized."""
    edit(example, HTTPD_C, "Running in %(loc-name).", "Running in %(loc-name) %(extended).")
    result = cli("reconcile", str(example))
    assert result.code == 0, result
    assert "[WEC florin]" in result.err and "[WEC guilder]" not in result.err and "-mb-" not in result.err
    assert not (example / copy_files("imw1-mb-florin", CM_REL)[0]).exists()
    rendered = cli("render", "guilder", str(example))
    assert "Running in guilder si." in rendered.out
