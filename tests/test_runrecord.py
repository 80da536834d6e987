"""The run record is sound: a commit it proves reconciled is one a fresh reconcile (no cache, no
record) would not change and would report the same problems for; anything else is computed, and
commits exactly the tree a fresh run commits."""
from __future__ import annotations

import pickle
from pathlib import Path
from typing import Callable

import msgspec
import pytest

from conftest import git
from ksgitops.app import usecases as app
from test_incremental import add_placement, break_customizer, edit, edit_workload, relabel_florin, remove_guilder

CACHE_DIR = Path(".git/ksgitops-state")
RECORD = CACHE_DIR / "reconciled.pickle"


def reconcile(repo: Path) -> app.ReconcileOutcome | app.ProvenOutcome:
    return app.reconcile_commit(repo, "HEAD")


def fresh(repo: Path, source: str) -> tuple[app.ReconcileOutcome | app.ProvenOutcome, str]:
    """Reconcile commit `source` with no cache and no record; the outcome and the tree committed."""
    for name in ("cache.pickle", "reconciled.pickle"):
        (repo / CACHE_DIR / name).unlink(missing_ok=True)
    git(repo, "reset", "-q", "--hard", source)
    outcome = reconcile(repo)
    assert isinstance(outcome, app.ReconcileOutcome)
    return outcome, git(repo, "rev-parse", "HEAD^{tree}")


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD")


def test_a_second_run_is_answered_by_the_record(example_git: Path) -> None:
    first = reconcile(example_git)
    assert isinstance(first, app.ReconcileOutcome) and first.commit
    assert (example_git / RECORD).is_file()
    head = git(example_git, "rev-parse", "HEAD")
    second = reconcile(example_git)
    assert isinstance(second, app.ProvenOutcome)
    assert second.commit is None and second.changed_roots == []
    assert git(example_git, "rev-parse", "HEAD") == head
    cold, _ = fresh(example_git, head)
    assert cold.commit is None  # the proof holds: a fresh run commits nothing either
    assert second.problems == cold.problems and second.wec_count == cold.wec_count == 2
    assert second.config == cold.config


def test_recorded_problems_are_the_fresh_ones(example_git: Path) -> None:
    """A run with a per-(object, WEC) error keeps the previous copy; the record reports it again."""
    reconcile(example_git)
    break_customizer(example_git)
    commit_all(example_git, "break")
    broken = reconcile(example_git)
    assert isinstance(broken, app.ReconcileOutcome) and any(p.is_error for p in broken.problems)
    head = git(example_git, "rev-parse", "HEAD")
    proven = reconcile(example_git)
    assert isinstance(proven, app.ProvenOutcome)
    cold, _ = fresh(example_git, head)
    assert cold.commit is None
    assert proven.problems == cold.problems == broken.problems


def add_report(repo: Path) -> None:
    (repo / "spaces/imw1-mb-florin/reported/core/configmaps/x").mkdir(parents=True)
    (repo / "spaces/imw1-mb-florin/reported/core/configmaps/x/y.yaml").write_text("{}\n")


def add_status_file(repo: Path) -> None:
    (repo / "spaces/wmw-c/.ksgitops/status").mkdir(parents=True, exist_ok=True)
    (repo / "spaces/wmw-c/.ksgitops/status/any.yaml").write_text("kind: CombinedStatus\n")


def add_person_file(repo: Path) -> None:
    (repo / "spaces/imw1-mb-guilder/NOTES.md").write_text("kept, not reconcile's\n")


IGNORED = [add_report, add_status_file, add_person_file]


def edit_generated_object(repo: Path) -> None:
    path = next((repo / "spaces/imw1-mb-florin/objects").rglob("*.yaml"))
    path.write_text(path.read_text() + "# edited by hand\n")


def remove_generated_patches(repo: Path) -> None:
    git(repo, "rm", "-rq", "spaces/imw1-mb-guilder/patches")


def edit_space_yaml(repo: Path) -> None:
    path = repo / "spaces/imw1-mb-florin/space.yaml"
    path.write_text(path.read_text() + "# a comment\n")


def link_space_yaml(repo: Path) -> None:
    """space.yaml becomes a link whose target is its old text: the same blob id, another mode."""
    path = repo / "spaces/imw1-mb-florin/space.yaml"
    text = path.read_text()
    path.unlink()
    path.symlink_to(text)


def mark_managed(repo: Path) -> None:
    (repo / "spaces/wmw-c/.ksgitops").mkdir(exist_ok=True)
    (repo / "spaces/wmw-c/.ksgitops/managed-space.yaml").write_text("kind: Space\n")


def edit_problems_file(repo: Path) -> None:
    (repo / "spaces/wmw-s/.ksgitops").mkdir(exist_ok=True)
    (repo / "spaces/wmw-s/.ksgitops/problems.yaml").write_text("kind: SpaceProblems\n")


def add_space(repo: Path) -> None:
    (repo / "spaces/extra").mkdir()
    (repo / "spaces/extra/cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\n")


def add_repo_config(repo: Path) -> None:
    (repo / "ksgitops.yaml").write_text("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
                                        "metadata: {name: config}\nspec: {status: {limit: 5}}\n")


def add_non_source_file(repo: Path) -> None:
    (repo / "spaces/wmw-c/README.md").write_text("not a source, still an input for the record\n")


COMPUTED = [relabel_florin, edit_workload, remove_guilder, break_customizer, add_placement, edit_generated_object,
            remove_generated_patches, edit_space_yaml, link_space_yaml, mark_managed, edit_problems_file, add_space, add_repo_config,
            add_non_source_file]


@pytest.mark.parametrize("change", IGNORED + COMPUTED, ids=lambda f: f.__name__)
def test_proven_exactly_when_nothing_reconcile_reads_or_writes_moved(example_git: Path,
                                                                     change: Callable[[Path], None]) -> None:
    reconcile(example_git)
    change(example_git)
    source = commit_all(example_git, change.__name__)
    warm = reconcile(example_git)
    warm_tree = git(example_git, "rev-parse", "HEAD^{tree}")
    assert isinstance(warm, app.ProvenOutcome) == (change in IGNORED)
    cold, cold_tree = fresh(example_git, source)
    assert warm_tree == cold_tree
    assert warm.problems == cold.problems and warm.wec_count == cold.wec_count
    if isinstance(warm, app.ProvenOutcome):
        assert cold.commit is None


def test_after_a_computed_run_the_next_is_proven_again(example_git: Path) -> None:
    reconcile(example_git)
    relabel_florin(example_git)
    commit_all(example_git, "relabel")
    assert isinstance(reconcile(example_git), app.ReconcileOutcome)
    assert isinstance(reconcile(example_git), app.ProvenOutcome)


@pytest.mark.parametrize("damage", ["corrupt", "foreign", "other-code", "missing"])
def test_an_unusable_record_means_computing(example_git: Path, damage: str) -> None:
    reconcile(example_git)
    head = git(example_git, "rev-parse", "HEAD")
    path = example_git / RECORD
    if damage == "corrupt":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "foreign":
        path.write_bytes(pickle.dumps({"format": "something else", "record": None}))
    elif damage == "other-code":
        data = pickle.loads(path.read_bytes())
        data["format"] += "-older"
        path.write_bytes(pickle.dumps(data))
    else:
        path.unlink()
    outcome = reconcile(example_git)
    assert isinstance(outcome, app.ReconcileOutcome) and outcome.commit is None
    assert git(example_git, "rev-parse", "HEAD") == head
    assert isinstance(reconcile(example_git), app.ProvenOutcome)  # the record was written again


def test_the_cli_prints_the_recorded_problems(example_git: Path, cli) -> None:
    break_customizer(example_git)
    commit_all(example_git, "break")
    first = cli("reconcile", str(example_git), "--commit")
    second = cli("reconcile", str(example_git), "--commit")
    assert "not defined" in first.err and first.err == second.err
    assert second.out.strip() == "2 WECs, 0 generated folders changed, no commit (unchanged)"


def test_a_proven_run_in_a_checkout_reads_no_mailbox(example_git: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check for uncommitted sources skips the mailboxes the recorded run wrote (reading them
    made a no-op in a checkout of 1,000 WECs cost as much as a full checkout)."""
    from ksgitops.io.fs import tree as fs
    assert isinstance(reconcile(example_git), app.ReconcileOutcome)  # its commit holds the mailboxes now
    read: list[str] = []
    original = fs.WorkTreeSnapshot.space_files

    def listing(self: fs.WorkTreeSnapshot, space: str):  # type: ignore[no-untyped-def]
        read.append(space)
        return original(self, space)

    monkeypatch.setattr(fs.WorkTreeSnapshot, "space_files", listing)
    assert isinstance(reconcile(example_git), app.ProvenOutcome)
    assert read and not [space for space in read if "-mb-" in space], read


def test_affected_in_a_commit_message_counts_the_wecs_whose_mailbox_changed(example_git: Path) -> None:
    (example_git / "ksgitops.yaml").write_text(
        "apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n"
        "spec:\n  commit:\n    messageTemplate: 'reconcile: {affected} affected'\n")
    commit_all(example_git, "config")
    assert isinstance(reconcile(example_git), app.ReconcileOutcome)
    assert git(example_git, "log", "-1", "--format=%s") == "reconcile: 2 affected"  # both mailboxes are new
    edit(example_git / "spaces/wmw-s/httpd.yaml", "image: library/httpd:2.4", "image: library/httpd:2.5")
    commit_all(example_git, "only the special WEC's workload")
    assert isinstance(reconcile(example_git), app.ReconcileOutcome)
    assert git(example_git, "log", "-1", "--format=%s") == "reconcile: 1 affected"


@pytest.mark.parametrize("alter", ["none", "drop", "extra", "change-mailbox", "change-config"])
def test_the_proof_compares_part_by_part_as_the_whole_fingerprint(example_git: Path, alter: str) -> None:
    import pygit2
    from ksgitops.io.git import runrecord
    from ksgitops.io.git.cache import DiskCache
    from ksgitops.io.git.repo import TreeIndex
    reconcile(example_git)
    record = DiskCache.for_git_dir(str(example_git / ".git")).record
    repo = pygit2.Repository(str(example_git))
    index = TreeIndex(repo, repo.head.peel(pygit2.Commit).tree)
    printed = dict(record.fingerprint)
    mailbox_part = next(p for p in printed if p.endswith("/kustomization.yaml"))
    if alter == "drop":
        printed.pop(mailbox_part)
    elif alter == "extra":
        printed["spaces/gone/space.yaml"] = ""
    elif alter == "change-mailbox":
        printed[mailbox_part] = "100644:" + "0" * 40
    elif alter == "change-config":
        printed["ksgitops.yaml"] = "100644:" + "0" * 40
    altered = msgspec.structs.replace(record, fingerprint=printed, mailboxes=dict.fromkeys(record.mailboxes, "?"))  # looked up
    whole = runrecord.fingerprint(index, record.mailboxes) == printed
    assert runrecord.proves_unchanged(altered, index) == whole == (alter == "none")
