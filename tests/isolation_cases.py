"""The isolation cases (core/place/isolation.py), shared by test_isolation.py and test_isolation_modes.py.

The base is the bundled example plus a second inventory space, imw2, whose WEC zloty every
placement reaches: whatever one case freezes, some WEC still shows that the healthy part moved on.
Each case breaks one part after a good reconcile, and every case makes the same two source
changes: wmw-s's Deployment gets a new image (the healthy change, which must land wherever its
WEC is not frozen) and wmw-c's web page a new text (which must not land where wmw-c is frozen).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from conftest import copy_example_sources

ZLOTY = """apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: zloty
  labels: {id: zloty, loc-name: zloty, env: prod, extended: si}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: zloty
  labels: {loc-name: zloty, env: prod, extended: si}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector:
    matchLabels: {id: zloty}
"""
MAILBOXES = ("imw1-mb-florin", "imw1-mb-guilder", "imw2-mb-zloty")
SPECIALD = "apps/deployments/specialstuff/speciald"
HTTPD_C = "spaces/wmw-c/httpd.yaml"
HEALTHY_CHANGE = ("spaces/wmw-s/httpd.yaml", "image: library/httpd:2.4", "image: library/httpd:2.5")
WMW_C_CHANGE = (HTTPD_C, "This is a common web site.", "This is THE common web site.")


def base_repo(dest: Path) -> Path:
    """The example's sources and imw2/zloty (not reconciled yet)."""
    copy_example_sources(dest)
    (dest / "spaces" / "imw2").mkdir()
    (dest / "spaces" / "imw2" / "zloty.yaml").write_text(ZLOTY)
    return dest


def in_wmw_c(rel: str) -> bool:
    """A generated mailbox file that is wmw-c's (its objects are in namespace commonstuff), and all of
    florin's mailbox, which only wmw-c reaches (its SyncerConfig keeps wmw-c's upsync sets)."""
    return "-mb-" in rel.split("/")[1] and ("commonstuff" in rel or rel.startswith("spaces/imw1-mb-florin/"))


def in_mailboxes(*mailboxes: str) -> Callable[[str], bool]:
    return lambda rel: rel.split("/")[1] in mailboxes


@dataclass(frozen=True)
class Case:
    edits: tuple[tuple[str, str, str], ...]  # (file, old, new)
    added: dict[str, str] = field(default_factory=dict)
    trailer: str = ""  # the Ksgitops-Frozen value ("" : a repo-wide error, nothing written)
    problem: tuple[str, str] = ("", "")  # (file, a text of the message)
    space: str = ""  # the space whose problems file says Frozen
    kept: Callable[[str], bool] = in_wmw_c  # generated files that stay byte for byte
    moved: tuple[str, ...] = MAILBOXES[1:]  # mailboxes where the healthy change lands


CASES: dict[str, Case] = {
    "wds-unparseable": Case((), {"spaces/wmw-c/broken.yaml": "# broken\nkind: [unclosed\n"}, "space wmw-c",
                            ("spaces/wmw-c/broken.yaml:3", "malformed YAML"), "wmw-c"),
    "wds-schema": Case((("spaces/wmw-c/edge-placement-c.yaml", "wantSingletonReportedState: true",
                         "wantSingletonReportedState: 'yes'"),), {}, "space wmw-c",
                       ("spaces/wmw-c/edge-placement-c.yaml:17", "wantSingletonReportedState"), "wmw-c"),
    "wds-semantic": Case((), {"spaces/wmw-c/bad-name.yaml": "apiVersion: v1\nkind: ConfigMap\n"
                                                              "metadata: {name: Not_A_Name, namespace: commonstuff}\n"},
                         "space wmw-c", ("spaces/wmw-c/bad-name.yaml:1", "DNS-1123"), "wmw-c"),
    "synctarget": Case((("spaces/imw1/florin.yaml", "    env: prod\n---", "    env: 'prod!'\n---"),), {},
                       "wec imw1/florin", ("spaces/imw1/florin.yaml:9", "metadata.labels"), "imw1",
                       in_mailboxes("imw1-mb-florin")),
    "location": Case((("spaces/imw1/florin.yaml", "    env: prod\nspec:", "    env: 'prod!'\nspec:"),), {},
                     "wec imw1/florin, wec imw1/guilder", ("spaces/imw1/florin.yaml:17", "metadata.labels"), "imw1",
                     in_mailboxes("imw1-mb-florin", "imw1-mb-guilder"), MAILBOXES[2:]),
    "repoconfig": Case((), {"ksgitops.yaml": "apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                             "spec: {colour: blue}\n"}, problem=("ksgitops.yaml:1", "colour"),
                       kept=lambda rel: True, moved=()),
}
ISOLATED = sorted(name for name in CASES if name != "repoconfig")


def break_it(repo: Path, case: Case) -> None:
    """The case's breakage and the two source changes every case makes."""
    for rel, old, new in (*case.edits, HEALTHY_CHANGE, WMW_C_CHANGE):
        path = repo / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new, 1))
    for rel, content in case.added.items():
        (repo / rel).write_text(content)


def generated_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The generated files among {repo path: bytes} (mailboxes, .ksgitops/), reports left out."""
    return {rel: data for rel, data in files.items() if rel.startswith("spaces/") and rel.count("/") >= 2
            and ("-mb-" in rel.split("/")[1] or "/.ksgitops/" in rel) and "/reported/" not in rel}


def worktree_files(repo: Path) -> dict[str, bytes]:
    return generated_files({p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*")
                            if p.is_file() and ".git" not in p.relative_to(repo).parts})


def assert_isolated(case: Case, before: dict[str, bytes], after: dict[str, bytes]) -> None:
    """The frozen part is byte for byte as before; the healthy change landed where it may."""
    kept = sorted(rel for rel in before if case.kept(rel))
    assert kept, "the case keeps something"
    assert {rel: after.get(rel) for rel in kept} == {rel: before[rel] for rel in kept}
    assert not [rel for rel in after if case.kept(rel) and rel not in before], "nothing added to the frozen part"
    for mailbox in MAILBOXES:
        data = after.get(f"spaces/{mailbox}/objects/{SPECIALD}.yaml")
        if mailbox in case.moved:
            assert data is not None and b"httpd:2.5" in data, mailbox
        elif data is not None:
            assert b"httpd:2.4" in data, mailbox
    problems = after[f"spaces/{case.space}/.ksgitops/problems.yaml"]
    assert b"state: Frozen" in problems and case.problem[1].encode() in problems


def tree_files(repo_path: Path, rev: str = "HEAD") -> dict[str, bytes]:
    """The generated files of a commit's tree (a bare clone or a checkout)."""
    import pygit2
    repo = pygit2.Repository(str(repo_path))
    found: dict[str, bytes] = {}

    def walk(tree: "pygit2.Tree", prefix: str) -> None:
        for entry in tree:
            if entry.type == pygit2.GIT_OBJECT_TREE:
                walk(repo[entry.id], f"{prefix}{entry.name}/")
            else:
                found[f"{prefix}{entry.name}"] = repo[entry.id].data
    walk(repo.revparse_single(rev).peel(pygit2.Commit).tree, "")
    return generated_files(found)


def assert_problem_line(stderr: str, case: Case) -> None:
    where, text = case.problem
    assert [ln for ln in stderr.splitlines() if ln.startswith(f"{where}: ") and text in ln], stderr
