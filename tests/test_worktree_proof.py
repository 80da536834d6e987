"""A work tree the record proves as the last reconcile left it (io/fs/proof.py) is answered from the
record: nothing parsed, built or compared, the same report and exit code; and every change a
person or a tool can make to what reconcile looks at, or to what it wrote, ends the proof."""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import work_tree_files
from ksgitops.app import runtimes, usecases as app
from ksgitops.io.fs import proof, statcache
from ksgitops.io.serve import Observer
from test_worktree_fastpath import FLORIN_FILE, SOURCE, _CoarseOs

RECORD_DIR = Path(".git/ksgitops-state")


def until_proven(repo: Path) -> app.ProvenOutcome:
    """Reconcile until the record proves the work tree (a path seen in the clock tick the run
    recorded in is racy: the next run computes and records again)."""
    for _ in range(100):
        outcome = app.reconcile_worktree(repo)
        if isinstance(outcome, app.ProvenOutcome):
            return outcome
        time.sleep(0.01)
    raise AssertionError("the record never proved the work tree")


class Pipeline:
    """Counts the pipeline's runs behind the use cases."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs = 0
        original = app.pipeline.reconcile

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.runs += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(app.pipeline, "reconcile", counted)


def test_a_proven_work_tree_is_not_computed_and_reports_the_same(example_git: Path, cli,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (example_git / "spaces/wmw-s/broken.yaml").write_text("kind: ConfigMap\nmetadata: [\n")  # wmw-s frozen
    until_proven(example_git)
    before = work_tree_files(example_git)
    pipeline = Pipeline(monkeypatch)
    proven_runs = [cli("reconcile", str(example_git)), cli("reconcile", str(example_git), "-o", "json"),
                   cli("diff", str(example_git))]
    assert pipeline.runs == 0
    monkeypatch.setattr(proof, "proven", lambda record: None)
    computed_runs = [cli("reconcile", str(example_git)), cli("reconcile", str(example_git), "-o", "json"),
                     cli("diff", str(example_git))]
    assert pipeline.runs == 3
    assert [(r.code, r.out, r.err) for r in proven_runs] == [(r.code, r.out, r.err) for r in computed_runs]
    assert proven_runs[0].code == 2 and "broken.yaml:3: malformed YAML" in proven_runs[0].err
    assert json.loads(proven_runs[1].out)["frozen"] and proven_runs[2].code == 2
    assert work_tree_files(example_git) == before


def _append_to_source(repo: Path) -> None:
    with open(repo / SOURCE, "a") as f:
        f.write("# a comment\n")


def _source_added(repo: Path) -> None:
    (repo / "spaces/wmw-c/extra.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: commonstuff\ndata:\n  a: b\n")


def _space_added(repo: Path) -> None:
    shutil.copytree(repo / "spaces/wmw-s", repo / "spaces/wmw-t")


def _config_made(repo: Path) -> None:
    (repo / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                        "spec:\n  skipSpaces: [wmw-s]\n")


def _generated_edited(repo: Path) -> None:
    with open(repo / FLORIN_FILE, "a") as f:
        f.write("# hand edit\n")


def _generated_deleted(repo: Path) -> None:
    (repo / FLORIN_FILE).unlink()


def _stray_in_mailbox(repo: Path) -> None:
    (repo / FLORIN_FILE).with_name("stray.yaml").write_text("stray: true\n")


def _mailbox_dropped(repo: Path) -> None:
    shutil.rmtree(repo / "spaces/imw1-mb-guilder")


def _placement_folder_gone(repo: Path) -> None:
    shutil.rmtree(repo / "spaces/wmw-c/.ksgitops/singleplacementslices")


CHANGES = [_append_to_source, _source_added, _space_added, _config_made, _generated_edited, _generated_deleted,
           _stray_in_mailbox, _mailbox_dropped, _placement_folder_gone]


@pytest.mark.parametrize("change", CHANGES, ids=lambda f: f.__name__.strip("_"))
def test_every_change_ends_the_proof_and_the_run_equals_a_clean_one(example_git: Path, tmp_path: Path,
                                                                    change: Callable[[Path], None],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    until_proven(example_git)
    change(example_git)
    clean = tmp_path / "clean"
    shutil.copytree(example_git, clean, symlinks=True)
    shutil.rmtree(clean / RECORD_DIR)
    pipeline = Pipeline(monkeypatch)
    outcome = app.reconcile_worktree(example_git)
    assert not isinstance(outcome, app.ProvenOutcome) and pipeline.runs == 1
    app.reconcile_worktree(clean)
    assert work_tree_files(example_git) == work_tree_files(clean)


def test_diff_shows_what_a_change_does_after_a_proven_run(example_git: Path, cli) -> None:
    until_proven(example_git)
    assert cli("diff", str(example_git)).code == 0
    _append_to_source(example_git)
    _generated_deleted(example_git)
    found = cli("diff", str(example_git))
    assert found.code == 1 and "httpd-htdocs" in found.out


def test_racy_stamps_never_prove(example_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With hour-long timestamps everything reconcile sees is in the clock's tick: no run leaves
    a proof, and an edit keeping size and stamp is still found."""
    monkeypatch.setattr(statcache, "os", _CoarseOs())
    for _ in range(3):
        assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    source = example_git / SOURCE
    source.write_text(source.read_text().replace("common web site", "single web site"))
    app.reconcile_worktree(example_git)
    assert b"single web site" in (example_git / FLORIN_FILE).read_bytes()


def test_a_reconcile_from_a_ref_leaves_no_proof(example_git: Path) -> None:
    until_proven(example_git)
    app.reconcile_worktree(example_git, source="HEAD")
    assert statcache.WorkTreeRecord.load(example_git, str(example_git / ".git")).run is None
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)


def test_a_folder_read_whole_is_part_of_the_proof(example_git: Path) -> None:
    """A frozen space's placements come from its folders as they stand: a file added to one, even
    to a folder that held none, ends the proof."""
    (example_git / "spaces/wmw-s/broken.yaml").write_text("kind: ConfigMap\nmetadata: [\n")
    empty = example_git / "spaces/wmw-s/.ksgitops/singleplacementslices/empty"
    empty.mkdir(parents=True)
    until_proven(example_git)
    (empty / "new.yaml").write_text("a: b\n")
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)


def test_the_local_runtime_keeps_the_generated_roots_of_a_proven_cycle(example_git: Path) -> None:
    until_proven(example_git)
    local = runtimes.LocalRuntime(example_git, Observer(), status=False)
    local.cycle()
    assert local.generated and all(local.is_generated(str(example_git / root)) for root in local.generated)
    assert local.generated == set(app.reconcile_worktree(example_git, source="HEAD").result.generated)


def test_a_corrupt_record_proves_nothing(example_git: Path) -> None:
    until_proven(example_git)
    path = example_git / RECORD_DIR / "worktree.pickle"
    os.utime(path)  # the record itself moving changes nothing
    assert isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    path.write_bytes(b"not a record")
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)


# --- found by a red-team pass -----------------------------------------------------------------------

def test_a_link_put_directly_in_a_mailbox_is_refused(example_git: Path, cli) -> None:
    until_proven(example_git)
    (example_git / "spaces/imw1-mb-florin/evil").symlink_to("/etc")
    found = cli("reconcile", str(example_git))
    assert found.code == 2 and "spaces/imw1-mb-florin/evil: is a symbolic link" in found.err


def test_a_placements_folder_restored_after_a_frozen_run_ends_the_proof(example_git: Path, tmp_path: Path) -> None:
    """A frozen space reads its placements as they stand: their absence is part of the proof."""
    slices = example_git / "spaces/wmw-c/.ksgitops/singleplacementslices"
    saved = tmp_path / "saved"
    app.reconcile_worktree(example_git)
    shutil.move(slices, saved)
    (example_git / "spaces/wmw-c/bad.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n  namespace: commonstuff\n")
    until_proven(example_git)
    shutil.move(saved, slices)
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)


def _added_with_the_folder_mtime_put_back(folder: Path, name: str, text: str) -> None:
    before = os.stat(folder)
    (folder / name).write_text(text)
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(folder).st_mtime_ns == before.st_mtime_ns


def test_a_folder_whose_mtime_was_put_back_is_still_seen(example_git: Path, tmp_path: Path) -> None:
    """What `cp -a`, `rsync -a` or `touch -r` do to a folder: its mtime can be set back, its
    ctime cannot, and the stamps of source folders and of folders inside a root hold it."""
    until_proven(example_git)
    _added_with_the_folder_mtime_put_back(example_git / "spaces/wmw-c", "extra.yaml",
                                          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                          "  namespace: commonstuff\ndata:\n  a: b\n")
    _added_with_the_folder_mtime_put_back((example_git / FLORIN_FILE).parent, "stray.yaml", "stray: true\n")
    clean = tmp_path / "clean"
    shutil.copytree(example_git, clean, symlinks=True)
    shutil.rmtree(clean / RECORD_DIR)
    assert not isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    app.reconcile_worktree(clean)
    assert work_tree_files(example_git) == work_tree_files(clean)
    assert not (example_git / FLORIN_FILE).with_name("stray.yaml").exists()


def test_a_stray_file_in_a_reused_mailbox_whose_folder_mtime_was_put_back_is_removed(example_git: Path) -> None:
    until_proven(example_git)
    _added_with_the_folder_mtime_put_back((example_git / FLORIN_FILE).parent, "stray.yaml", "stray: true\n")
    outcome = app.reconcile_worktree(example_git)
    assert not isinstance(outcome, app.ProvenOutcome) and outcome.changed_roots == ["spaces/imw1-mb-florin"]
    assert not (example_git / FLORIN_FILE).with_name("stray.yaml").exists()


def test_the_first_no_op_after_a_write_is_proven(example_git: Path) -> None:
    """The roots a run wrote in the clock tick it recorded in are read back once the clock has
    moved on, and what it read inside them is left to their stamps: no computing run between."""
    source = example_git / SOURCE
    if source.stat().st_mtime_ns % 10**9 == 0:
        pytest.skip("a file system with whole-second timestamps")
    assert not (example_git / "spaces/wmw-c/.ksgitops").exists()
    time.sleep(0.05)
    app.reconcile_worktree(example_git)  # makes each space's .ksgitops/: their folders' stamps move
    assert isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome)
    for old, new in (("common web site", "shared web site"), ("shared", "single"), ("single", "common")):
        text = source.read_text()
        assert old in text
        source.write_text(text.replace(old, new))
        time.sleep(0.05)  # the edit is older than the run's clock: the run can vouch for it
        outcome = app.reconcile_worktree(example_git)
        assert not isinstance(outcome, app.ProvenOutcome) and outcome.changed_roots
        assert isinstance(app.reconcile_worktree(example_git), app.ProvenOutcome), new
