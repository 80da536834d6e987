"""Blast radius = the broken part (core/place/isolation.py), in the work tree and with `--commit`.

Each case (isolation_cases.py) breaks one part after a good reconcile: a WDS file that does not
parse, a schema and a semantic error in a WDS, a SyncTarget, a Location, and RepoConfig (repo-wide:
nothing written). Then: the healthy part moves on, the frozen part stays byte for byte, the run
exits 2 naming the problem, problems.yaml says Frozen, STATUS.md lists it, a commit carries the
Ksgitops-Frozen trailer. Also: a WDS never valid contributes nothing; unfreezing gives what a clean
run gives; frozen output does not depend on file order; older SinglePlacementSlices without
records; WECs that come and go while a WDS is frozen. The `run` and Action modes are in
test_isolation_modes.py."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import git, git_init
from ksgitops.core.load.schemas import validate_document
from ksgitops.io.git.cache import DiskCache
from ksgitops.model import Origin
from isolation_cases import (CASES, HTTPD_C, ISOLATED, MAILBOXES, SPECIALD, ZLOTY, assert_isolated, assert_problem_line,
                             base_repo, break_it, tree_files, worktree_files)


def reconciled_base(tmp_path: Path, cli: Any, name: str = "repo") -> Path:
    repo = base_repo(tmp_path / name)
    assert cli("reconcile", str(repo)).code == 0
    return repo


@pytest.mark.parametrize("name", sorted(CASES))
def test_worktree_mode(name: str, tmp_path: Path, cli: Any) -> None:
    case = CASES[name]
    repo = reconciled_base(tmp_path, cli)
    before = worktree_files(repo)
    break_it(repo, case)
    planned = cli("diff", str(repo), "-o", "json")
    assert planned.code == 2, planned
    if case.trailer:  # the healthy part's changes, and what would be frozen
        plan = json.loads(planned.out)
        assert plan["changed"] and "zloty" in plan["affectedWecs"] and {f["space"] for f in plan["frozen"]} == {case.space}
        assert f"spaces/{case.space}: frozen: " in cli("diff", str(repo)).out
    result = cli("reconcile", str(repo))
    assert result.code == 2, result
    assert_problem_line(result.err, case)
    if not case.trailer:  # repo-wide: nothing written
        assert worktree_files(repo) == before and "frozen" not in result.err
        return
    assert f"frozen: {case.trailer}" in result.out
    assert_isolated(case, before, worktree_files(repo))
    checked = cli("validate", str(repo))
    assert checked.code == 2 and f"reconcile would freeze: {case.trailer}" in checked.out, checked
    status = cli("status", str(repo))
    assert status.code == 2, status
    markdown = (repo / "STATUS.md").read_text()
    assert f"| {case.space} | Frozen |" in markdown and "## Frozen" in markdown
    assert "Nothing is frozen." not in markdown


@pytest.mark.parametrize("name", sorted(CASES))
def test_commit_mode(name: str, tmp_path: Path, cli: Any) -> None:
    case = CASES[name]
    repo = git_init(base_repo(tmp_path / "repo"))
    assert cli("reconcile", "--commit", str(repo)).code == 0
    good = git(repo, "rev-parse", "HEAD")
    before = tree_files(repo)
    break_it(repo, case)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", f"break: {name}")
    broken = git(repo, "rev-parse", "HEAD")
    result = cli("reconcile", "--commit", str(repo))
    assert result.code == 2, result
    assert_problem_line(result.err, case)
    head = git(repo, "rev-parse", "HEAD")
    if not case.trailer:
        assert head == broken and tree_files(repo) == before
        return
    assert head != broken and git(repo, "rev-parse", "HEAD~1") == broken != good
    message = git(repo, "log", "-1", "--format=%B")
    assert f"Ksgitops-Frozen: {case.trailer}\nKsgitops-Source: {broken}" in message
    after = tree_files(repo)
    assert_isolated(case, before, after)
    assert worktree_files(repo) == after, "the checkout follows the commit"
    again = cli("reconcile", "--commit", str(repo))
    assert again.code == 2 and "no commit (unchanged)" in again.out, again  # no commit, still red
    assert f"frozen: {case.trailer}" in again.out and again.err == result.err, "the record answers as the run did"
    assert (repo / ".git/ksgitops-state/reconciled.pickle").is_file()
    clean = set(DiskCache.for_git_dir(Path(git(repo, "rev-parse", "--absolute-git-dir"))).mailboxes)
    mailboxes = {rel.split("/")[1] for rel in after if "-mb-" in rel.split("/")[1]}
    assert clean == mailboxes - kept_mailboxes(case, after), "a mailbox keeping frozen content is never reused"
    assert cli("status", "--commit", str(repo)).code == 2
    assert f"| {case.space} | Frozen |" in git(repo, "show", "HEAD:STATUS.md")


def kept_mailboxes(case: Any, files: dict[str, bytes]) -> set[str]:
    """The mailboxes that hold something the case keeps frozen."""
    return {rel.split("/")[1] for rel in files if case.kept(rel) and "-mb-" in rel.split("/")[1]}


def test_a_space_both_inventory_and_wds_gets_both_treatments(tmp_path: Path, cli: Any) -> None:
    repo = base_repo(tmp_path / "repo")
    (repo / "spaces/imw2/zloty.yaml").rename(repo / "spaces/wmw-s/zloty.yaml")
    shutil.rmtree(repo / "spaces/imw2")
    assert cli("reconcile", str(repo)).code == 0
    before = worktree_files(repo)
    break_it(repo, CASES["wds-unparseable"])
    (repo / "spaces/wmw-c/broken.yaml").rename(repo / "spaces/wmw-s/broken.yaml")
    result = cli("reconcile", str(repo))
    assert result.code == 2 and "frozen: space wmw-s, wec wmw-s/zloty" in result.out, result
    after = worktree_files(repo)
    kept = [rel for rel in before if rel.startswith("spaces/wmw-s-mb-zloty/") or "specialstuff" in rel]
    assert kept and {rel: after.get(rel) for rel in kept} == {rel: before[rel] for rel in kept}
    assert b"THE common" in after["spaces/imw1-mb-florin/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"]


def test_a_wds_never_valid_contributes_nothing_until_it_is(tmp_path: Path, cli: Any) -> None:
    repo = base_repo(tmp_path / "repo")
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2 and "spaces/wmw-c: frozen: it contributes nothing until its errors are fixed" in result.err
    files = worktree_files(repo)
    assert not [rel for rel in files if "commonstuff" in rel]
    assert f"spaces/imw2-mb-zloty/objects/{SPECIALD}.yaml" in files
    assert not (repo / "spaces/wmw-c/.ksgitops/placements").exists()
    (repo / "spaces/wmw-c/broken.yaml").unlink()
    assert cli("reconcile", str(repo)).code == 0
    clean = reconciled_base(tmp_path, cli, "clean")
    assert worktree_files(repo) == worktree_files(clean)


@pytest.mark.parametrize("name", ISOLATED)
def test_unfreezing_gives_what_a_clean_run_gives(name: str, tmp_path: Path, cli: Any) -> None:
    case = CASES[name]
    repo = reconciled_base(tmp_path, cli)
    break_it(repo, case)
    assert cli("reconcile", str(repo)).code == 2
    for rel, old, new in case.edits:  # mend the breakage; the two source changes stay
        (repo / rel).write_text((repo / rel).read_text().replace(new, old, 1))
    for rel in case.added:
        (repo / rel).unlink()
    assert cli("reconcile", str(repo)).code == 0
    clean = base_repo(tmp_path / "clean")
    break_it(clean, CASES["repoconfig"])  # the same two source changes (and a RepoConfig, removed next)
    (clean / "ksgitops.yaml").unlink()
    assert cli("reconcile", str(clean)).code == 0
    assert worktree_files(repo) == worktree_files(clean)


def test_frozen_output_does_not_depend_on_file_order(tmp_path: Path, cli: Any) -> None:
    """The same sources laid out otherwise (documents reversed, files renamed) and records whose
    lines are in another order freeze to the same bytes."""
    one = reconciled_base(tmp_path, cli, "one")
    two = base_repo(tmp_path / "two")
    docs = (two / HTTPD_C).read_text().split("\n---\n")
    (two / HTTPD_C).unlink()
    (two / "spaces/wmw-c/z-all.yaml").write_text("\n---\n".join(reversed(docs)) + "\n")
    (two / "spaces/wmw-c/edge-placement-c.yaml").rename(two / "spaces/wmw-c/a-placement.yaml")
    assert cli("reconcile", str(two)).code == 0
    record = two / "spaces/wmw-c/.ksgitops/placements/edge-placement-c.yaml"
    lines = record.read_text().splitlines(keepends=True)
    objects = [i for i, line in enumerate(lines) if line.startswith("- {path:")]
    assert len(objects) == 2
    lines[objects[0]], lines[objects[1]] = lines[objects[1]], lines[objects[0]]
    record.write_text("".join(lines))
    for repo in (one, two):
        (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
        (repo / "spaces/imw2/zloty.yaml").write_text(ZLOTY.replace("loc-name: zloty", "loc-name: zl"))
        assert cli("reconcile", str(repo)).code == 2
    differs = {rel for rel in set(worktree_files(one)) | set(worktree_files(two))
               if worktree_files(one).get(rel) != worktree_files(two).get(rel)}
    assert differs == {"spaces/wmw-c/.ksgitops/placements/edge-placement-c.yaml"}  # the edited record itself


def test_slices_without_records_keep_their_mailboxes_whole(tmp_path: Path, cli: Any) -> None:
    """An older ksgitops wrote SinglePlacementSlices but no records: every mailbox they reach is kept
    as it stands, and the message says why; a mailbox they do not reach moves on."""
    repo = reconciled_base(tmp_path, cli)
    shutil.rmtree(repo / "spaces/wmw-c/.ksgitops/placements")
    sps = repo / "spaces/wmw-c/.ksgitops/singleplacementslices/edge-placement-c.yaml"
    doc = yaml.safe_load(sps.read_text())
    doc["destinations"] = [d for d in doc["destinations"] if d["syncTargetName"] != "zloty"]
    sps.write_text(yaml.safe_dump(doc))
    before = worktree_files(repo)
    break_it(repo, CASES["wds-unparseable"])
    result = cli("reconcile", str(repo))
    assert result.code == 2
    assert "spaces/wmw-c: frozen: 2 mailboxes its SinglePlacementSlices reach are kept whole: it has no " \
           "placement records" in result.err
    after = worktree_files(repo)
    for mailbox in MAILBOXES[:2]:
        assert {k: v for k, v in after.items() if f"/{mailbox}/" in f"/{k}"} == \
               {k: v for k, v in before.items() if f"/{mailbox}/" in f"/{k}"}
    zloty = f"spaces/imw2-mb-zloty/objects/{SPECIALD}.yaml"
    assert b"httpd:2.5" in after[zloty] and not [k for k in after if "zloty" in k and "commonstuff" in k]


def test_wecs_that_come_and_go_while_a_wds_is_frozen(tmp_path: Path, cli: Any) -> None:
    """A new WEC gets nothing from a frozen WDS; a WEC that went away loses its mailbox."""
    repo = reconciled_base(tmp_path, cli)
    break_it(repo, CASES["wds-unparseable"])
    (repo / "spaces/imw2/zloty.yaml").write_text(ZLOTY.replace("zloty", "euro"))
    assert cli("reconcile", str(repo)).code == 2
    assert not (repo / "spaces/imw2-mb-zloty").exists()
    euro = {rel for rel in worktree_files(repo) if rel.startswith("spaces/imw2-mb-euro/objects/")}
    assert euro and not [rel for rel in euro if "commonstuff" in rel]  # wmw-s's objects only
    assert "specialstuff" in "".join(euro)


def test_a_frozen_wec_keeps_its_mailbox_when_its_synctarget_does_not_parse(tmp_path: Path, cli: Any) -> None:
    """An unreadable inventory file: every WEC of the space is frozen, found by its mailbox's
    inventory-space annotation, and its mailbox is kept, never removed."""
    repo = reconciled_base(tmp_path, cli)
    before = worktree_files(repo)
    (repo / "spaces/imw1/florin.yaml").write_text("kind: [unclosed\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2 and "frozen: wec imw1/florin, wec imw1/guilder" in result.out, result
    assert result.out.startswith("3 WECs (2 frozen), "), result.out  # guilder's file still reads
    after = worktree_files(repo)
    for mailbox in MAILBOXES[:2]:
        assert {k: v for k, v in after.items() if k.startswith(f"spaces/{mailbox}/")} == \
               {k: v for k, v in before.items() if k.startswith(f"spaces/{mailbox}/")}
    problems = yaml.safe_load(after["spaces/imw1/.ksgitops/problems.yaml"])
    assert problems["state"] == "Frozen" and problems["frozen"]["wecs"] == ["florin", "guilder"]
    assert problems["frozen"]["wecCount"] == 2


def test_a_frozen_wds_keeps_its_status_files_and_status_counts_its_objects(tmp_path: Path, cli: Any) -> None:
    repo = reconciled_base(tmp_path, cli)
    assert cli("status", str(repo)).code == 0
    status = {p: p.read_bytes() for p in (repo / "spaces/wmw-c/.ksgitops/status").rglob("*.yaml")}
    assert status
    break_it(repo, CASES["wds-unparseable"])
    assert cli("reconcile", str(repo)).code == 2
    result = cli("status", str(repo), "-o", "json")
    assert result.code == 2
    assert {p: p.read_bytes() for p in (repo / "spaces/wmw-c/.ksgitops/status").rglob("*.yaml")} == status
    facts = yaml.safe_load(result.out)
    assert facts["spaces"]["wmw-c"]["state"] == "Frozen"
    assert [(f["what"], f["space"]) for f in facts["frozen"]] == [("space", "wmw-c")]
    markdown = (repo / "STATUS.md").read_text()
    assert "| wmw-c/edge-placement-c (frozen) | 3 | 2 |" in markdown


def test_records_and_frozen_problems_files_follow_their_schemas(tmp_path: Path, cli: Any) -> None:
    repo = reconciled_base(tmp_path, cli)
    records = sorted((repo / "spaces").glob("*/.ksgitops/placements/*.yaml"))
    assert [p.name for p in records] == ["edge-placement-c.yaml", "edge-placement-s.yaml"]
    break_it(repo, CASES["location"])
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    assert cli("reconcile", str(repo)).code == 2
    schemas = {"PlacementRecord": "placementrecord.json", "SpaceProblems": "problems.json"}
    for path in [*records, *(repo / "spaces").glob("*/.ksgitops/problems.yaml")]:
        doc = yaml.safe_load(path.read_text())
        assert validate_document(schemas[doc["kind"]], doc, Origin(str(path)), doc["kind"]) == [], path
    frozen = {p.parent.parent.name: yaml.safe_load(p.read_text()).get("frozen")
              for p in (repo / "spaces").glob("*/.ksgitops/problems.yaml")}
    assert frozen["imw1"]["wecs"] == ["florin", "guilder"] and frozen["wmw-c"]["placements"] == ["edge-placement-c"]


def test_a_healthy_wds_placing_what_a_frozen_one_placed_keeps_the_previous_copy(tmp_path: Path, cli: Any) -> None:
    """Two WDSes placing one object on a WEC is an error for that pair, also when one of them is
    frozen: the mailbox keeps what it holds, and the problem names the frozen space."""
    repo = reconciled_base(tmp_path, cli)
    rel = "spaces/imw1-mb-guilder/objects/core/configmaps/commonstuff/httpd-htdocs.yaml"
    before = (repo / rel).read_bytes()
    (repo / "spaces/wmw-s/dup.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                                 "metadata: {name: httpd-htdocs, namespace: commonstuff}\n"
                                                 "data: {index.html: from wmw-s}\n")
    placement = repo / "spaces/wmw-s/edge-placement-s.yaml"
    placement.write_text(placement.read_text().replace("namespaces: [specialstuff]\n    objectNames: [\"*\"]",
                                                       "namespaces: [specialstuff, commonstuff]\n    objectNames: [\"*\"]"))
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    result = cli("reconcile", str(repo))
    assert result.code == 2
    [line] = [ln for ln in result.err.splitlines() if "two workload description spaces" in ln]
    assert line.startswith("spaces/wmw-s/dup.yaml:1: ConfigMap commonstuff/httpd-htdocs: placed by two workload "
                           "description spaces: spaces/wmw-s/dup.yaml:1 and the frozen space wmw-c; keeping the "
                           "previous copy [2 WECs: guilder, zloty]"), line
    assert (repo / rel).read_bytes() == before


def test_a_mailbox_folder_that_reads_as_a_source_space_is_left_and_named(example_git: Path, cli) -> None:
    """A WEC's mailbox whose files were all hand-edited out of shape (its space.yaml no longer a
    mailbox's) reads as a source space with errors. `reconcile --commit` then generated both the
    mailbox's root and that space's `.ksgitops/` roots inside it, and the tree writer failed with
    an internal error (AttributeError). The folder is left as it is, with its problems beside it,
    and the error says why the mailbox is not written."""
    assert cli("reconcile", str(example_git), "--commit").code == 0
    folder = example_git / "spaces/imw1-mb-florin"
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    for path in files:
        path.write_text(path.read_text().upper())
    git(example_git, "commit", "-qam", "every file of a mailbox upper-cased")
    before = {p: p.read_bytes() for p in files}
    found = cli("reconcile", str(example_git), "--commit")
    assert "internal error" not in found.err, found.err
    assert "spaces/imw1-mb-florin: the folder named as WEC florin's mailbox is not a mailbox" in found.err, found.err
    assert {p: p.read_bytes() for p in files} == before
    assert (folder / ".ksgitops" / "problems.yaml").is_file()
    subprocess.run(["git", "-C", str(example_git), "fsck", "--no-dangling"], check=True, capture_output=True)
