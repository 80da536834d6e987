"""The status step is incremental (a memo of rows, summaries and CombinedStatus files) and commits.

The invariant: with a memo carried from run to run, every output byte equals a run without one;
and a run after one changed report recomputes one CombinedStatus.
"""
from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pygit2
import pytest

from conftest import EXAMPLE, git, git_init
from ksgitops.app import usecases as app
from ksgitops.core.serialize import dump_yaml, load_yaml
from ksgitops.core.status.summary import STATUS_MD, MemorySource, StatusMemo, summarize, with_reports
from ksgitops.core.load.repoconfig import SOURCE_TRAILER
from ksgitops.core.status.reported import dump_report

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"
COMMOND = "apps/replicasets/commonstuff/commond"
COMMON_CM = "core/configmaps/commonstuff/httpd-htdocs"
SPECIALD = "apps/deployments/specialstuff/speciald"


def rs_report(available: int, at: str) -> bytes:
    return dump_yaml({"object": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "namespace": "commonstuff",
                                 "name": "commond", "generation": 1},
                      "status": {"observedGeneration": 1, "replicas": 1, "availableReplicas": available},
                      "reportedAt": at})


def cm_report(at: str) -> bytes:
    return dump_yaml({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff",
                                 "name": "httpd-htdocs"}, "reportedAt": at})


def outputs(out: Any) -> tuple[Any, bytes, list[Any]]:
    return out.generated, out.markdown, out.problems


@pytest.fixture
def result(example: Path) -> Any:
    return app.compute(app.open_source(example, app.WORKTREE))


def test_memo_gives_the_same_bytes_as_a_fresh_run_through_random_report_changes(result: Any) -> None:
    rng = random.Random(7)
    reports: dict[str, dict[str, bytes]] = {FLORIN: {}, GUILDER: {}}
    memo = StatusMemo()
    choices = [(f"{COMMOND}.yaml", lambda i: rs_report(rng.choice([0, 1]), f"2026-01-01T00:00:{i:02d}Z")),
               (f"{COMMON_CM}.yaml", lambda i: cm_report(f"2026-01-01T00:01:{i:02d}Z")),
               (f"{SPECIALD}.yaml", lambda i: b"not: [valid"),
               ("core/configmaps/commonstuff/stale.yaml", lambda i: cm_report("2026-01-01T00:00:00Z"))]
    for step in range(30):
        mb = rng.choice([FLORIN, GUILDER])
        name, make = rng.choice(choices)
        if name in reports[mb] and rng.random() < 0.3:
            del reports[mb][name]
        else:
            reports[mb][name] = make(step)
        incremental = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        fresh = summarize(result, MemorySource(with_reports(result.generated, reports)), None)
        assert outputs(incremental) == outputs(fresh), f"step {step}"


def test_one_changed_report_recomputes_one_object(result: Any) -> None:
    memo = StatusMemo()
    reports = {FLORIN: {f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:00Z")}}
    first = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
    assert first.recomputed == len(first.combined) == 4
    same = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
    assert same.recomputed == 0
    reports[FLORIN][f"{COMMOND}.yaml"] = rs_report(0, "2026-01-01T00:00:05Z")
    after = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
    assert after.recomputed == 1
    assert after.status("wmw-c", COMMOND)["health"] != first.status("wmw-c", COMMOND)["health"]
    assert b"2026-01-01T00:00:05Z" in after.markdown


def test_a_report_time_change_alone_changes_status_md_but_not_health(result: Any) -> None:
    memo = StatusMemo()
    a = summarize(result, MemorySource(with_reports(result.generated, {FLORIN: {f"{COMMON_CM}.yaml":
                                                                             cm_report("2026-01-01T00:00:00Z")}})), memo)
    b = summarize(result, MemorySource(with_reports(result.generated, {FLORIN: {f"{COMMON_CM}.yaml":
                                                                             cm_report("2026-01-02T00:00:00Z")}})), memo)
    assert a.counts == b.counts
    assert a.markdown != b.markdown  # "Last report" moved
    florin = [w for w in b.status("wmw-c", COMMON_CM)["wecs"] if w["mailbox"] == FLORIN]
    assert florin[0]["reportedAt"] == "2026-01-02T00:00:00Z"


# --- `ksgitops status --commit` ---------------------------------------------------------------------

@pytest.fixture
def reconciled(tmp_path: Path) -> Path:
    """The bundled example with its generated files and sample reports, committed."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    return git_init(repo)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_status_commit_only_when_a_summary_changed(reconciled: Path, cli) -> None:
    before = head(reconciled)
    first = cli("status", str(reconciled), "--commit")
    assert first.code == 0, first.err
    assert head(reconciled) == before and "no commit (unchanged)" in first.out  # the example is up to date
    report = reconciled / "spaces" / FLORIN / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-02-02T00:00:00Z"))
    git(reconciled, "commit", "-qam", "florin reports commond unavailable")
    source = head(reconciled)
    second = cli("status", str(reconciled), "--commit")
    assert second.code == 0, second.err
    assert head(reconciled) != source
    changed = git(reconciled, "diff", "--name-only", "HEAD~1", "HEAD").splitlines()
    assert STATUS_MD in changed and f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml" in changed
    assert all(p == STATUS_MD or p.startswith("spaces/wmw-") for p in changed)
    message = git(reconciled, "log", "-1", "--format=%B")
    assert f"{SOURCE_TRAILER}: {source}" in message and "[skip ci]" in message
    assert git(reconciled, "status", "--porcelain") == ""  # work tree and index follow
    assert "2027-02-02T00:00:00Z" in (reconciled / STATUS_MD).read_text()
    third = cli("status", str(reconciled), "--commit")
    assert third.code == 0 and "no commit" in third.out


def test_a_submodule_entry_among_the_reports_is_no_report(reconciled: Path, cli) -> None:
    """A gitlink (a commit, mode 160000) where a report file would be: a checkout holds a folder
    there, or nothing; status reads it as no report, as it reads the work tree."""
    cli("status", str(reconciled), "--commit")
    before = (reconciled / STATUS_MD).read_bytes()
    where = f"spaces/{FLORIN}/reported/core/configmaps/commonstuff/submodule.yaml"
    git(reconciled, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},{where}")
    git(reconciled, "commit", "-qm", "a gitlink among the reports")
    done = cli("status", str(reconciled), "--commit")
    assert done.code == 0 and "internal error" not in done.err, done.err
    assert (reconciled / STATUS_MD).read_bytes() == before


def test_status_commit_on_a_bare_clone_with_a_lost_memo(reconciled: Path, tmp_path: Path) -> None:
    report = reconciled / "spaces" / GUILDER / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-03-03T00:00:00Z"))
    git(reconciled, "commit", "-qam", "guilder reports")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(reconciled), str(bare))
    outcome = app.status_commit(bare, "main")
    assert outcome.commit is not None
    repo = pygit2.Repository(str(bare))
    text = repo[repo.revparse_single("main").tree[STATUS_MD].id].data.decode()
    assert "2027-03-03T00:00:00Z" in text
    memo = bare / "ksgitops-state" / "status-git.sqlite"
    assert memo.is_file()
    memo.write_bytes(b"garbage")  # a broken memo costs time, never correctness
    assert app.status_commit(bare, "main").commit is None


def test_status_commit_needs_a_branch(reconciled: Path, cli) -> None:
    sha = head(reconciled)
    found = cli("status", str(reconciled), "--commit", "--source", sha)
    assert found.code == 2 and "--commit needs" in found.err


def test_worktree_status_memo_follows_edits(reconciled: Path) -> None:
    first = app.status_worktree(reconciled)
    assert first.changed == []
    report = reconciled / "spaces" / FLORIN / "reported" / f"{COMMOND}.yaml"
    report.write_bytes(rs_report(0, "2027-04-04T00:00:00Z"))
    second = app.status_worktree(reconciled)
    assert sorted(second.changed) == [STATUS_MD, "spaces/wmw-c/.ksgitops/status"]
    status = load_yaml((reconciled / f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml").read_bytes())
    assert any(w["reportedAt"] == "2027-04-04T00:00:00Z" for w in status["wecs"])
    report.unlink()
    third = app.status_worktree(reconciled)
    status = load_yaml((reconciled / f"spaces/wmw-c/.ksgitops/status/{COMMOND}.yaml").read_bytes())
    assert STATUS_MD in third.changed and status["reportedCount"] == 1


def test_memo_stays_exact_when_placements_and_inventory_change(example: Path) -> None:
    """Sources change between runs (a WEC leaves a placement, the singleton wish flips, an object
    goes): the memo's rows and objects follow, byte for byte as a fresh run."""
    reports = {FLORIN: {f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:00Z"),
                        f"{COMMON_CM}.yaml": cm_report("2026-01-01T00:00:01Z")},
               GUILDER: {f"{COMMOND}.yaml": rs_report(0, "2026-01-01T00:00:02Z")}}
    memo = StatusMemo()
    edits = [
        ("spaces/imw1/florin.yaml", "env: prod", "env: dev"),  # florin leaves both placements
        ("spaces/wmw-c/edge-placement-c.yaml", "wantSingletonReportedState: true",
         "wantSingletonReportedState: false"),
        ("spaces/imw1/florin.yaml", "env: dev", "env: prod"),  # and comes back
        ("spaces/wmw-c/edge-placement-c.yaml", "wantSingletonReportedState: false",
         "wantSingletonReportedState: true"),
    ]
    seen = set()
    for step in range(len(edits) + 1):
        result = app.compute(app.open_source(example, app.WORKTREE))
        incremental = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        fresh = summarize(result, MemorySource(with_reports(result.generated, reports)), None)
        assert outputs(incremental) == outputs(fresh), f"after edit {step}"
        seen.add(incremental.status("wmw-c", COMMOND)["executingCount"])
        if step < len(edits):
            path, old, new = edits[step]
            file = example / path
            file.write_text(file.read_text().replace(old, new))
    assert seen == {1, 2}  # the edits did change what is summarized


def test_a_memo_pickled_by_other_code_is_never_used(tmp_path: Path, result: Any) -> None:
    """A memo from another version of ksgitops (its classes may have other fields) is dropped."""
    import pickle
    import sqlite3

    from ksgitops.io import status_sources as ss
    memo = StatusMemo()
    summarize(result, MemorySource(with_reports(result.generated, {})), memo)
    path = tmp_path / "status-git.sqlite"
    memo.changed = True
    ss.save_memo(path, memo)
    loaded = ss.load_memo(path)
    assert loaded.mailboxes.keys() == memo.mailboxes.keys() != set()
    ss.save_memo(path, loaded)  # unchanged: closes its read transaction, writes nothing
    with sqlite3.connect(path) as db:
        (index,) = db.execute("SELECT value FROM memo WHERE name = 'index'").fetchone()
        data = pickle.loads(index)
        data["format"] = "0.0.1-somebody-else"
        db.execute("UPDATE memo SET value = ? WHERE name = 'index'", (pickle.dumps(data),))
    assert ss.load_memo(path).mailboxes == {}


def test_two_files_reporting_one_object_keep_the_first_and_warn(result: Any) -> None:
    """name.json and name.yaml for one object: the first by name counts, the other is a warning."""
    reports = {FLORIN: {f"{COMMOND}.json": dump_report(load_yaml(rs_report(0, "2026-01-01T00:00:00Z"))),
                        f"{COMMOND}.yaml": rs_report(1, "2026-01-02T00:00:00Z")}}
    out = summarize(result, MemorySource(with_reports(result.generated, reports)), StatusMemo())
    florin = [w for w in out.status("wmw-c", COMMOND)["wecs"] if w["mailbox"] == FLORIN][0]
    assert florin["reportedAt"] == "2026-01-01T00:00:00Z"
    assert [str(p) for p in out.problems if "second report" in p.message] == \
        [f"spaces/{FLORIN}/reported/{COMMOND}.yaml: warning: reported state: a second report for {COMMOND}, skipped"]


@pytest.mark.parametrize("warmed", [False, True], ids=["read", "warmed"])
def test_a_memo_kept_on_disk_gives_the_same_bytes_and_reads_only_what_changed(
        result: Any, tmp_path: Path, warmed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Saved and loaded between runs (its rows in a store, fetched when their mailbox or object
    changed), through random report changes, and with parts of the store lost; `warmed`: a
    monitor reads the small part now and then, and a run takes it from memory when it can."""
    import sqlite3

    from ksgitops.io import status_sources as ss
    monkeypatch.setattr(ss, "_warm", {})
    rng = random.Random(11)
    path = tmp_path / "status-git.sqlite"
    reports: dict[str, dict[str, bytes]] = {FLORIN: {}, GUILDER: {}}
    for step in range(16):
        mb = rng.choice([FLORIN, GUILDER])
        reports[mb][f"{COMMOND}.yaml"] = rs_report(rng.choice([0, 1]), f"2026-01-01T00:00:{step:02d}Z")
        if step % 5 == 4:
            with sqlite3.connect(path) as db:  # a lost part: the run starts over, same bytes
                db.execute("DELETE FROM memo WHERE name LIKE ?", (rng.choice(["d:%", "r:%"]),))
        if warmed and rng.random() < 0.6:
            ss.warm_memos(str(tmp_path))
        memo = ss.load_memo(path)
        fetched: list[str] = []
        store = memo.fetch

        def counting(name: str, store: Any = store) -> bytes | None:
            fetched.append(name)
            return store(name) if store is not None else None

        memo.fetch = counting
        incremental = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        ss.save_memo(path, memo)
        fresh = summarize(result, MemorySource(with_reports(result.generated, reports)), None)
        assert outputs(incremental) == outputs(fresh), f"step {step}"
        if step and step % 5 != 4:
            assert set(fetched) <= {f"d:{mb}", f"r:wmw-c:{COMMOND}"}, fetched


def test_a_worker_takes_the_memo_from_the_monitor_only_when_no_run_saved_one_since(
        result: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The monitor holds the small part it read; a run takes it when the index it reads is the one
    the monitor read. Every save writes a new generation, even with the same summaries, so a memo
    saved after the monitor read (by a run the monitor did not see end) is read from disk."""
    from ksgitops.io import status_sources as ss
    monkeypatch.setattr(ss, "_warm", {})
    path = tmp_path / "status-git.sqlite"
    assert not ss.warm_memos(str(tmp_path))  # no memo yet: nothing held, nothing made
    assert not path.exists()

    def run(reports: dict[str, dict[str, bytes]]) -> Any:
        memo = ss.load_memo(path)
        out = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        memo.changed = True
        ss.save_memo(path, memo)
        return memo, out

    first = {FLORIN: {f"{COMMOND}.yaml": rs_report(0, "2026-01-01T00:00:00Z")}}
    run(first)
    assert ss.warm_memos(str(tmp_path)) and not ss.warm_memos(str(tmp_path))
    held = ss._warm[str(path)]
    taken = ss.load_memo(path)
    assert taken.mailboxes[FLORIN] is held.mailboxes[FLORIN] and taken.mailboxes is not held.mailboxes
    ss.save_memo(path, taken)  # nothing changed: nothing written
    second = {FLORIN: {f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:09Z")}}
    saved, _ = run(second)
    read = ss.load_memo(path)
    assert read.mailboxes[FLORIN] is not held.mailboxes[FLORIN]
    assert read.mailboxes[FLORIN].key == saved.mailboxes[FLORIN].key != held.mailboxes[FLORIN].key
    again = summarize(result, MemorySource(with_reports(result.generated, second)), read)
    ss.save_memo(path, read)
    fresh = summarize(result, MemorySource(with_reports(result.generated, second)), None)
    assert outputs(again) == outputs(fresh)
    assert ss.warm_memos(str(tmp_path))
    run(second)  # the same summaries saved again: a new generation all the same
    assert ss.load_memo(path).mailboxes[FLORIN] is not ss._warm[str(path)].mailboxes[FLORIN]
    path.unlink()
    assert not ss.warm_memos(str(tmp_path)) and ss._warm == {}


def test_an_unchanged_sync_report_is_not_read_again(result: Any, monkeypatch) -> None:
    """A mailbox whose object report changed keeps what its unchanged sync report said (valid or
    not); a changed sync report is read again. Every output equals a fresh run's."""
    from ksgitops.core.status import rows as status_rows
    from ksgitops.core.status.syncreport import SYNC_FILE, SyncError, SyncReport, dump_sync_report
    calls: list[str] = []
    original = status_rows.parse_sync_report

    def counting(path: str, data: bytes):  # type: ignore[no-untyped-def]
        calls.append(path)
        return original(path, data)

    monkeypatch.setattr(status_rows, "parse_sync_report", counting)
    memo = StatusMemo()
    failing = dump_sync_report(SyncReport(FLORIN, "0" * 40, errors=(SyncError("", "unreachable"),)))
    reports = {FLORIN: {SYNC_FILE: failing, f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:00Z")},
               GUILDER: {SYNC_FILE: b"not: [valid"}}
    for step, (mb, name, data, reads) in enumerate([
            (FLORIN, f"{COMMOND}.yaml", rs_report(0, "2026-01-01T00:00:01Z"), 0),
            (GUILDER, f"{COMMOND}.yaml", rs_report(1, "2026-01-01T00:00:02Z"), 0),
            (FLORIN, SYNC_FILE, dump_sync_report(SyncReport(FLORIN, "1" * 40)), 1)]):
        summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        calls.clear()
        reports[mb][name] = data
        incremental = summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        assert len(calls) == reads, (step, calls)
        fresh = summarize(result, MemorySource(with_reports(result.generated, reports)), None)
        assert outputs(incremental) == outputs(fresh) and incremental.facts() == fresh.facts(), step


def test_one_changed_report_rewrites_its_mailbox_and_object_entries_only(result: Any, tmp_path: Path) -> None:
    """The memo on disk holds one entry per mailbox and per object: a run where one report changed
    changes that mailbox's and that object's entries, nothing else."""
    import sqlite3

    from ksgitops.io import status_sources as ss
    path = tmp_path / "status-git.sqlite"

    def run(reports: dict[str, dict[str, bytes]]) -> dict[str, bytes]:
        memo = ss.load_memo(path)
        summarize(result, MemorySource(with_reports(result.generated, reports)), memo)
        ss.save_memo(path, memo)
        with sqlite3.connect(path) as db:
            return dict(db.execute("SELECT name, value FROM memo").fetchall())

    first = run({FLORIN: {f"{COMMOND}.yaml": rs_report(0, "2026-01-01T00:00:00Z")},
                 GUILDER: {f"{COMMOND}.yaml": rs_report(0, "2026-01-01T00:00:00Z")}})
    second = run({FLORIN: {f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:09Z")},
                  GUILDER: {f"{COMMOND}.yaml": rs_report(0, "2026-01-01T00:00:00Z")}})
    assert first.keys() == second.keys() and {f"s:{GUILDER}", f"o:wmw-c:{COMMOND}"} <= first.keys()
    assert len([n for n in first if n.startswith("o:")]) > 1
    assert {n for n in first if first[n] != second[n]} == \
        {"index", f"s:{FLORIN}", f"d:{FLORIN}", f"o:wmw-c:{COMMOND}", f"r:wmw-c:{COMMOND}"}  # index: a new generation


def _with_reports(tmp_path: Path) -> Path:
    """The example as shipped (mailboxes with reports), committed."""
    import shutil

    from conftest import EXAMPLE, git_init
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    return git_init(tmp_path / "repo")


def test_a_wds_frozen_then_mended_gets_the_combined_status_a_run_without_memo_gives(tmp_path: Path) -> None:
    """Its objects leave the memo while the WDS is frozen; mended, the mailboxes' keys are as
    before (frozen placements keep their digest), so their rows come from the kept details."""
    from conftest import run_cli_subprocess
    example_git = _with_reports(tmp_path)
    status = example_git / "spaces/wmw-c/.ksgitops/status/apps/replicasets/commonstuff/commond.yaml"
    source = example_git / "spaces/wmw-c/httpd.yaml"
    good = source.read_text()
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    fresh = status.read_bytes()
    assert b"wecs: []" not in fresh
    source.write_text(good.replace("kind: ReplicaSet\n", "kind: ReplicaSet\n  bad: [\n", 1))
    run_cli_subprocess("status", str(example_git))
    source.write_text(good)
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    assert status.read_bytes() == fresh


@pytest.mark.parametrize("damage", ["deleted", "garbage", "shape"])
@pytest.mark.parametrize("lost", ["s:", "o:", "d:", "r:"])
def test_a_memo_missing_an_entry_gives_what_a_run_without_memo_gives(tmp_path: Path, lost: str, damage: str) -> None:
    """An entry deleted from the store, or one that no longer unpickles or holds something else,
    costs only time."""
    import pickle
    import sqlite3

    from conftest import run_cli_subprocess
    example_git = _with_reports(tmp_path)
    memo = example_git / ".git/ksgitops-state/status-worktree.sqlite"
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    fresh = {p: p.read_bytes() for p in example_git.rglob("*") if p.is_file() and ".git/" not in str(p)}
    with sqlite3.connect(memo) as db:
        (name,) = db.execute("SELECT name FROM memo WHERE name LIKE ? ORDER BY name LIMIT 1", (f"{lost}%",)).fetchone()
        if damage == "deleted":
            db.execute("DELETE FROM memo WHERE name = ?", (name,))
        elif damage == "garbage":
            db.execute("UPDATE memo SET value = ? WHERE name = ?", (b"\x80\x05garbage", name))
        else:  # a pickle, but not of what the entry holds
            db.execute("UPDATE memo SET value = ? WHERE name = ?", (pickle.dumps({"x": (1,)}), name))
    report = next((example_git / "spaces").glob("*-mb-*/reported/**/*.yaml"))
    report.write_text(report.read_text().replace("reportedAt:", "reportedAt: \"2030-01-01T00:00:00Z\"\nold:", 1))
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    with_memo = {p: p.read_bytes() for p in example_git.rglob("*") if p.is_file() and ".git/" not in str(p)}
    memo.unlink()
    assert run_cli_subprocess("status", str(example_git)).returncode in (0, 2)
    without = {p: p.read_bytes() for p in example_git.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert with_memo == without and fresh.keys() == without.keys()


def test_a_run_without_memo_decodes_no_mailbox_detail(result: Any, monkeypatch) -> None:
    """Every mailbox is recomputed, so every object's rows come from this run's changes: reading
    the details back (what an object the memo holds no rows for otherwise needs) would hold the
    whole fleet's rows in memory at once."""
    from ksgitops.core.status import memo as status_memo
    decoded: list[str] = []
    real = status_memo.StatusMemo.detail

    def counting(self, mailbox, kept):  # type: ignore[no-untyped-def]
        decoded.append(mailbox)
        return real(self, mailbox, kept)
    monkeypatch.setattr(status_memo.StatusMemo, "detail", counting)
    reports = {FLORIN: {f"{COMMOND}.yaml": rs_report(1, "2026-01-01T00:00:00Z")}}
    out = summarize(result, MemorySource(with_reports(result.generated, reports)), StatusMemo())
    assert decoded == [] and out.combined
