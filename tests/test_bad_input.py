"""Bad input, end to end through the command line.

Three families:
- input errors confined to one space (or one SyncTarget): `reconcile` exits 2, prints
  `file:line: message`, never a traceback, and freezes only that part (core/place/isolation.py): a space
  never valid contributes nothing, one that was valid keeps its last good state byte for byte,
  and every other space's change is written (the repo-wide ones, RepoConfig, still write nothing);
- per-(object, WEC) errors: `validate` exits 2; `reconcile`/`render` print the error, exit 0, write
  everything else and keep that mailbox's previous copy of the object (none if it never had one);
- warnings: exit 0, `warning:` on stderr.
Plus: Secret values never leak into diff output or error messages.

Fatal cases run `reconcile` in a real child process (exit code, stderr, no traceback); the
before/after comparisons run in-process through the `cli` fixture for speed.
"""
from __future__ import annotations

import base64
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import EXAMPLE, GENERATED_MARKERS, run_cli_subprocess

Files = dict[str, "str | bytes"]

# --- helpers --------------------------------------------------------------------------------


def example_files() -> dict[str, bytes]:
    """The bundled example's source files as {relative path: bytes} (generated output left out)."""
    out = {}
    for path in sorted(EXAMPLE.rglob("*")):
        rel = path.relative_to(EXAMPLE).as_posix()
        if path.is_file() and not any(m in f"/{rel}" for m in GENERATED_MARKERS):
            out[rel] = path.read_bytes()
    return out


def all_files(repo: Path) -> dict[str, bytes]:
    """Every file and folder below repo ({path: bytes}; folders map to b"<dir>")."""
    return {p.relative_to(repo).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(repo.rglob("*"))}


def generated(repo: Path) -> dict[str, bytes]:
    """Every generated file: below a mailbox folder or a WDS's .ksgitops/."""
    return {rel: data for rel, data in all_files(repo).items()
            if data != b"<dir>" and "/" in rel and ("-mb-" in rel.split("/")[1] or "/.ksgitops/" in rel)}


def has_generated_folders(repo: Path) -> bool:
    spaces = repo / "spaces"
    return any("-mb-" in p.name or p.name == ".ksgitops" or "ksgitops-new" in p.name
               for p in spaces.rglob("*") if p.is_dir())


SPECIALD = "spaces/imw1-mb-guilder/objects/apps/deployments/specialstuff/speciald.yaml"


def assert_contributes_nothing(repo: Path, space: str = "wmw-c") -> None:
    """A space broken since the start (never valid) placed nothing; every other space was written."""
    gen = generated(repo)
    assert SPECIALD in gen and "spaces/imw1-mb-florin/space.yaml" in gen, "the healthy part was written"
    if space == "wmw-c":
        assert not [rel for rel in gen if "-mb-" in rel and "commonstuff" in rel], sorted(gen)
    assert not [rel for rel in gen if rel.startswith(f"spaces/{space}/.ksgitops/") and not rel.endswith("problems.yaml")]
    if space != "Bad_Space":
        assert b"state: Frozen" in gen[f"spaces/{space}/.ksgitops/problems.yaml"]


def ks(*args: object) -> subprocess.CompletedProcess[str]:
    return run_cli_subprocess(*(str(a) for a in args))


def assert_problem(stderr: str, path: str, line: int | None, pattern: str) -> str:
    """stderr has a `path:line: message` line whose message matches the regex `pattern`.

    line None: a file- or folder-level problem, printed as `path: message` or `path:N: message`.
    """
    where = re.escape(path) + (rf":{line}" if line is not None else r"(:\d+)?")
    rx = re.compile(rf"^{where}: .*(?:{pattern})")
    found = [ln for ln in stderr.splitlines() if rx.search(ln)]
    assert found, f"no line {path}:{line}: ~{pattern!r} in stderr:\n{stderr}"
    return found[0]


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stderr, stderr


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text()
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1))


def line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing needle."""
    for i, ln in enumerate(text.splitlines(), 1):
        if needle in ln:
            return i
    raise AssertionError(f"{needle!r} not found")


PLACEMENT = "apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\n"
EDGE = "apiVersion: edge.kubestellar.io/v2alpha1\n"
CM = "apiVersion: v1\nkind: ConfigMap\n"

# --- errors confined to a space: exit 2, file:line, that space frozen, the rest written -------------

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


# --- unknown kinds become known through a CRD or RepoConfig -----------------------------------

WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: commonstuff}\nspec: {size: 3}\n"
WIDGET_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"""
REPO_CONFIG = """apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
spec:
  kinds:
  - {group: example.com, kind: Widget, resource: widgets, namespaced: true}
"""
WIDGET_CLAUSE = "  - apiGroup: example.com\n    resources: [widgets]\n    namespaces: [commonstuff]\n"


@pytest.mark.parametrize("how", ["crd-in-same-space", "crd-in-other-space", "repoconfig"])
def test_unknown_kind_accepted_once_declared(how: str, tree: Callable[[Files], Path], cli) -> None:
    files = {**example_files(), "spaces/wmw-c/widget.yaml": WIDGET}
    repo = tree(files)
    unknown = cli("reconcile", str(repo))  # loaded, warned about once, placed nowhere
    assert unknown.code == 0 and unknown.err.count("kind Widget of apiVersion example.com/v1 is unknown") == 1, unknown
    assert not list(repo.glob("spaces/*/objects/example.com"))
    if how == "crd-in-same-space":
        (repo / "spaces/wmw-c/crd.yaml").write_text(WIDGET_CRD)
    elif how == "crd-in-other-space":
        (repo / "spaces/wmw-s/crd.yaml").write_text(WIDGET_CRD)
    else:
        (repo / "ksgitops.yaml").write_text(REPO_CONFIG)
    edit(repo, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState", WIDGET_CLAUSE + "  wantSingletonReportedState")
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    assert "is unknown" not in result.err
    for wec in ("florin", "guilder"):
        placed = repo / f"spaces/imw1-mb-{wec}/objects/example.com/widgets/commonstuff/w.yaml"
        assert placed.is_file(), sorted(generated(repo))
        assert "objects/example.com/widgets/commonstuff/w.yaml" in (placed.parents[4] / "kustomization.yaml").read_text()


def test_repoconfig_with_unknown_field_is_fatal(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "ksgitops.yaml": REPO_CONFIG + "  colour: blue\n"})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "ksgitops.yaml", 1, "colour")
    assert_clean(result.stderr)
    assert not has_generated_folders(repo)


# --- per-(object, WEC) errors: keep the previous copy, write everything else --------------------

HTTPD_C = "spaces/wmw-c/httpd.yaml"
CM_REL = "core/configmaps/commonstuff/httpd-htdocs"
RS_REL = "apps/replicasets/commonstuff/commond"
DEPLOY_REL = "apps/deployments/specialstuff/speciald"
MAILBOXES = ("imw1-mb-florin", "imw1-mb-guilder")


def copy_files(mailbox: str, rel: str) -> tuple[str, str]:
    return f"spaces/{mailbox}/objects/{rel}.yaml", f"spaces/{mailbox}/patches/{rel}.json"


def break_after_good_reconcile(repo: Path, cli, breakage: Callable[[Path], None], kept_rel: str,
                               kept_in: tuple[str, ...], other_rel: str, problem: tuple[str, str, str]) -> None:
    """Reconcile the good repo, break one object and change another, and check the rules of
    docs/REFERENCE.md, "Errors for one object on one WEC".

    problem: (file, a text on the first line of the failing object's document, message regex).
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
    break_after_good_reconcile(example, cli, breakage, CM_REL, MAILBOXES, RS_REL, (HTTPD_C, "apiVersion: v1", "'nope'"))
    rendered = cli("render", "florin", str(example))
    assert "Running in florin." in rendered.out  # the kept copy, customized as before


def test_unknown_customizer_keeps_previous_copy(example: Path, cli) -> None:
    def breakage(repo: Path) -> None:
        edit(repo, HTTPD_C, "customizer: example-customizer", "customizer: nope")
        edit(repo, HTTPD_C, "This is a common web site.", "This is THE common web site.")
    break_after_good_reconcile(example, cli, breakage, RS_REL, MAILBOXES, CM_REL,
                               (HTTPD_C, "apiVersion: apps/v1", "unknown Customizer commonstuff/nope"))


def test_unparsable_replacement_path_freezes_the_space(example: Path, cli) -> None:
    """A path that does not parse fails for every object and WEC alike: an error of the Customizer's
    space, found once (validate), which freezes the space; one that selects nothing is only a
    warning (test_mailbox.py), as KubeStellar's jsonpath.Apply changes nothing there."""
    assert cli("reconcile", str(example)).code == 0
    before = generated(example)
    edit(example, HTTPD_C, "$.spec.template.spec.containers.0.env.0.value", "$.spec.template.spec[nothere")
    edit(example, HTTPD_C, "replicas: 1", "replicas: 3")  # would change commond's base copy
    edit(example, "spaces/wmw-s/httpd.yaml", "library/httpd:2.4", "library/httpd:2.5")
    line = _doc_line(example, HTTPD_C, "[nothere")  # the replacement's path, not its document
    result = ks("reconcile", example)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    found = assert_problem(result.stderr, HTTPD_C, line, r"Customizer example-customizer: replacements\[0\]\.path: "
                                                         r"invalid path .*nothere")
    assert "WEC" not in found  # one line, not one per (object, WEC)
    after = generated(example)
    assert sorted(rel for rel in after if before.get(rel) != after[rel]) == [
        SPECIALD, "spaces/wmw-c/.ksgitops/problems.yaml"]


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
    line = _doc_line(example, HTTPD_C, "apiVersion: v1")
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


# --- warnings --------------------------------------------------------------------------------

# What KubeStellar's CRDs accept is never fatal (these were fatal before): exit 0, `file:line: warning:`.
# KubeStellar v0.14.2 pkg/placement/what-resolver.go labelsMatchAny: a selector that does not convert
# matches nothing; unknown kinds: loaded, one warning per kind.
WARNED: dict[str, tuple[Files, str, int | None, str]] = {
    "placement-bad-operator": (
        {"spaces/wmw-c/p2.yaml": "# p2\n" + PLACEMENT + "metadata: {name: p2}\nspec:\n  locationSelectors:\n"
                                 "  - matchExpressions:\n    - {key: env, operator: Near, values: [x]}\n"},
        "spaces/wmw-c/p2.yaml", 7, r"locationSelectors\[0\].*Near.*matches nothing"),  # the selector's line
    "placement-in-without-values": (
        {"spaces/wmw-c/p2.yaml": PLACEMENT + "metadata: {name: p2}\nspec:\n  locationSelectors: [{}]\n  downsync:\n"
                                 "  - labelSelectors:\n    - matchExpressions:\n      - {key: app, operator: In}\n"},
        "spaces/wmw-c/p2.yaml", 8, r"downsync\[0\]\.labelSelectors\[0\].*values?.*matches nothing"),
    "placement-namespace-selector-bad": (
        {"spaces/wmw-c/p2.yaml": PLACEMENT + "metadata: {name: p2}\nspec:\n  downsync:\n"
                                 "  - namespaceSelectors:\n    - matchExpressions:\n      - {key: app, operator: Exists, values: [a]}\n"},
        "spaces/wmw-c/p2.yaml", 7, r"namespaceSelectors\[0\].*matches nothing"),
    "location-selector-bad-operator": (
        {"spaces/imw1/loc.yaml": EDGE + "kind: Location\nmetadata: {name: loc2}\nspec:\n  instanceSelector:\n"
                                 "    matchExpressions:\n    - {key: env, operator: Like, values: [x]}\n"},
        "spaces/imw1/loc.yaml", 5, r"instanceSelector.*Like.*matches nothing"),
    "location-selector-in-without-values": (
        {"spaces/imw1/loc.yaml": EDGE + "kind: Location\nmetadata: {name: loc2}\nspec:\n  instanceSelector:\n"
                                 "    matchExpressions:\n    - {key: env, operator: In, values: []}\n"},
        "spaces/imw1/loc.yaml", 5, r"instanceSelector.*values?.*matches nothing"),
    "unknown-kind": (
        {"spaces/wmw-c/w.yaml": "\n\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: commonstuff}\n"},
        "spaces/wmw-c/w.yaml", 4, r"kind Widget of apiVersion example.com/v1 is unknown"),  # the kind: line
}


@pytest.mark.parametrize("case", sorted(WARNED))
def test_what_the_crds_accept_is_a_warning(case: str, tree: Callable[[Files], Path]) -> None:
    added, path, line, pattern = WARNED[case]
    repo = tree({**example_files(), **added})
    for command in ("reconcile", "validate"):
        result = ks(command, repo)
        assert result.returncode == 0, result
        assert_clean(result.stderr)
        assert "warning:" in assert_problem(result.stderr, path, line, pattern)
    strict = ks("validate", "--strict", repo)
    assert strict.returncode == 2 and "--strict: warnings are errors" in strict.stdout, strict


@pytest.mark.parametrize("name", ["edge.one", "a" * 56, "Edge:One"])
def test_sync_target_names_that_are_no_dns_label_get_a_derived_mailbox(name: str, tree: Callable[[Files], Path],
                                                                       cli) -> None:
    """SyncTarget is a custom resource: its name is a path segment (apiextensions-apiserver), so dots,
    capitals and ':' are valid; the mailbox name is derived (core/place/where.py mailbox_name)."""
    from ksgitops.names import mailbox_name
    repo = tree({**example_files(), "spaces/imw1/odd.yaml": EDGE + f"kind: SyncTarget\nmetadata: {{name: '{name}'}}\n"})
    result = cli("reconcile", str(repo))
    assert result.code == 0, result
    mailbox = mailbox_name("imw1", name)
    assert mailbox != f"imw1-mb-{name}" and len(mailbox) <= 63
    space = yaml.safe_load((repo / "spaces" / mailbox / "space.yaml").read_text())
    assert space["metadata"]["annotations"]["edge.kubestellar.io/sync-target-name"] == name
    assert cli("render", name, str(repo)).code == 0

@pytest.mark.parametrize("spec, phrase", [
    ("  locationSelectors:\n  - matchLabels: {env: nowhere}\n  downsync:\n  - resources: [configmaps]\n", "selects no WEC"),
    ("  locationSelectors:\n  - matchLabels: {env: prod}\n  downsync:\n  - resources: [secrets]\n", "selects no object"),
    ("  locationSelectors: []\n  downsync: []\n", "selects no WEC"),
])
def test_placement_selecting_nothing_is_a_warning(spec: str, phrase: str, example: Path) -> None:
    (example / "spaces/wmw-c/p2.yaml").write_text("# extra\n" + PLACEMENT + "metadata: {name: p2}\nspec:\n" + spec)
    for command in ("reconcile", "validate"):
        result = ks(command, example)
        assert result.returncode == 0, result
        assert_clean(result.stderr)
        found = assert_problem(result.stderr, "spaces/wmw-c/p2.yaml", 2, phrase)
        assert "warning:" in found
    assert (example / "spaces/wmw-c/.ksgitops/singleplacementslices/p2.yaml").is_file()


# --- Secret values never leak ----------------------------------------------------------------

OLD_SECRET, NEW_SECRET = "old-secret-value-1234", "new-secret-value-5678"


def secret_doc(value: str) -> str:
    encoded = base64.b64encode(value.encode()).decode()
    return (f"apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: specialstuff}}\ntype: Opaque\n"
            f"data:\n  password: {encoded}\n")


def _secret_repo(example: Path) -> Path:
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "resources: [configmaps]", "resources: [configmaps, secrets]")
    (example / "spaces/wmw-s/secret.yaml").write_text(secret_doc(OLD_SECRET))
    return example


def _secrets() -> list[str]:
    return [s for v in (OLD_SECRET, NEW_SECRET) for s in (v, base64.b64encode(v.encode()).decode())]


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_diff_never_shows_secret_values(output: str, example: Path, cli) -> None:
    repo = _secret_repo(example)
    assert cli("reconcile", str(repo)).code == 0
    assert (repo / "spaces/imw1-mb-guilder/objects/core/secrets/specialstuff/creds.yaml").is_file()
    (repo / "spaces/wmw-s/secret.yaml").write_text(secret_doc(NEW_SECRET))
    result = ks("diff", repo, "-o", output)
    assert result.returncode == 1, result  # 1: changes
    assert_clean(result.stderr)
    for value in _secrets():
        assert value not in result.stdout and value not in result.stderr
    assert "creds" in result.stdout and "password" in result.stdout
    if output == "json":
        data = json.loads(result.stdout)
        assert data["changed"] is True and data["affectedWecs"] == ["guilder"]
        assert "password" in data["wecs"]["guilder"]["diff"]
    else:
        assert "guilder" in result.stdout


def test_diff_of_a_new_secret_hides_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    result = ks("diff", repo)
    assert result.returncode == 1, result
    assert "creds" in result.stdout
    for value in _secrets():
        assert value not in result.stdout + result.stderr


def test_parameter_error_in_secret_does_not_print_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    (repo / "spaces/wmw-s/secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: specialstuff\n  annotations:\n"
        "    edge.kubestellar.io/expand-parameters: 'true'\ntype: Opaque\n"
        f"stringData:\n  password: '{OLD_SECRET}%(oops'\n")
    for command in ("reconcile", "validate"):
        result = ks(command, repo)
        assert "spaces/wmw-s/secret.yaml:1:" in result.stderr, result
        assert OLD_SECRET not in result.stdout + result.stderr


def test_failing_test_op_on_secret_does_not_print_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    (repo / "spaces/wmw-s/secret.yaml").write_text(
        secret_doc(OLD_SECRET).replace("metadata: {name: creds, namespace: specialstuff}",
                                       "metadata:\n  name: creds\n  namespace: specialstuff\n  annotations:\n"
                                       "    edge.kubestellar.io/customizer: sc")
        + "---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: Customizer\nmetadata: {name: sc, namespace: specialstuff}\n"
          "jsonPatch:\n- {op: test, path: /data/password, value: x}\n")
    result = ks("reconcile", repo)
    assert result.returncode == 0 and "jsonPatch[0]" in result.stderr, result
    for value in _secrets():
        assert value not in result.stdout + result.stderr


# --- hostile values that must be input errors, never crashes ---------------------------------

def _json_nested(depth: int) -> str:
    return ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep", "namespace": "commonstuff"}, '
            '"extra": ' + '{"a": ' * depth + '"x"' + "}" * depth + "}\n")


NESTING: list[tuple[str, str]] = [  # (file name, content)
    ("flow-50000.yaml", "a: " + "[" * 50_000 + "]" * 50_000 + "\n"),
    ("flow-5000.yaml", "a: " + "[" * 5_000 + "]" * 5_000 + "\n"),
    ("flow-150.yaml", "a: " + "{b: " * 150 + "c" + "}" * 150 + "\n"),
    ("block-150.yaml", "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 150)) + " " * 150 + "c\n"),
    ("dashes-30000.yaml", "a:\n" + "- " * 30_000 + "x\n"),
    ("keys-40000.yaml", "? " * 40_000 + "a\n"),
    ("dash-keys-20000.yaml", "- ? " * 20_000 + "a\n"),
    ("json-150.json", _json_nested(150)),
    ("json-300.json", _json_nested(300)),
]


@pytest.mark.parametrize("name, content", [pytest.param(name, content, id=name) for name, content in NESTING])
def test_deep_nesting_is_an_input_error_not_a_crash(name: str, content: str, tree: Callable[[Files], Path]) -> None:
    """Hostile nesting: exit 2 with `file:line: ...nesting...`, never a crash (SIGSEGV) or internal error."""
    rel = f"spaces/wmw-c/{name}"
    repo = tree({**example_files(), rel: content})
    result = ks("reconcile", repo)
    assert result.returncode == 2, (result.returncode, result.stderr[-300:])
    assert_clean(result.stderr)
    assert_problem(result.stderr, rel, None, "nest|deep")
    assert_contributes_nothing(repo)


@pytest.mark.parametrize("number", ["123456789012345678901234567890", str(2**63 - 1), str(2**53 + 1)])
def test_integer_that_kustomize_would_round_is_an_input_error(number: str, tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/big.yaml":
                 CM + f"metadata: {{name: bigint, namespace: commonstuff}}\nspec: {{n: {number}}}\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/big.yaml", 4, "spec.n: integer|2\\^53")


def test_integer_at_the_exact_limit_is_accepted(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/big.yaml":
                 CM + f"metadata: {{name: bigint, namespace: commonstuff}}\nspec: {{n: {2**53}}}\n"})
    assert ks("reconcile", repo).returncode == 0


def test_annotations_that_are_not_a_map_are_an_input_error(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/ann.yaml":
                 CM + "metadata:\n  name: ann\n  namespace: commonstuff\n  annotations: [a, b]\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/ann.yaml", 6, r"metadata\.annotations")  # the field's line


def test_labels_that_are_not_a_map_are_an_input_error(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/lab.yaml":
                 CM + "metadata:\n  name: lab\n  namespace: commonstuff\n  labels: [a, b]\n"})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    assert_problem(result.stderr, "spaces/wmw-c/lab.yaml", 6, r"metadata\.labels")


def test_nan_and_infinity_are_input_errors(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/nan.yaml":
                 CM + "metadata: {name: nan, namespace: commonstuff}\nspec: {n: .nan, m: .inf}\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/nan.yaml", 4, "spec.n: NaN")  # the field, at its line


@pytest.mark.parametrize("content, line, pattern", [
    (CM + "metadata: {name: b, namespace: commonstuff}\ndata:\n  a: !!binary aGVsbG8=\n", 5, "data.a: .*not JSON"),
    ("a: !!python/object/apply:os.system ['true']\n", 1, "malformed YAML"),
    ("? [a]\n: b\n", 1, "malformed YAML"),
    (CM + "metadata: {name: k, namespace: commonstuff}\ndata:\n  1: one\n", 5, "data: map key 1 is not a string"),
    (CM + "metadata: {name: 7, namespace: commonstuff}\n", 1, r"metadata\.name"),
])
def test_non_json_yaml_values_are_input_errors(content: str, line: int, pattern: str,
                                               tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/odd.yaml": content})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    assert_problem(result.stderr, "spaces/wmw-c/odd.yaml", line, pattern)
    assert_contributes_nothing(repo)


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


def test_a_number_of_thousands_of_digits_is_no_status_number() -> None:
    """int() refuses more than 4,300 digits: a StatusCollector subject (or a report) that long gave exit 4."""
    from ksgitops.core.status.celvalues import as_number
    assert as_number("9" * 5000) == (None, "is a string of more than 400 characters, not a number")
    assert as_number(" 12 ") == (12, "")
