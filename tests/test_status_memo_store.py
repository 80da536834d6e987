"""The status memo kept on disk (io/status_sources.py): one store entry per mailbox and per object,
rewritten only for what changed and read only for what changed; a monitor's copy taken only when no
run saved one since. A memo another version pickled, an entry lost or damaged, a WDS frozen then
mended: each costs only time, every output byte equals a run without memo.
"""
from __future__ import annotations

import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
from status_reports import COMMOND, FLORIN, GUILDER, outputs, rs_report
from status_reports import result  # noqa: F401 - the fixture


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


def _status(repo: Path) -> subprocess.CompletedProcess[str]:
    """`status` in a process of its own, and its memo written: the program leaves that to a
    child once it has answered, which this test's reads and deletions must wait for."""
    from conftest import run_cli_subprocess
    from ksgitops.io.fs.afterwards import settled
    done = run_cli_subprocess("status", str(repo))
    settled(repo / ".git" / "ksgitops-state")
    return done


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

    example_git = _with_reports(tmp_path)
    memo = example_git / ".git/ksgitops-state/status-worktree.sqlite"
    assert _status(example_git).returncode in (0, 2)
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
    assert _status(example_git).returncode in (0, 2)
    with_memo = {p: p.read_bytes() for p in example_git.rglob("*") if p.is_file() and ".git/" not in str(p)}
    memo.unlink()
    assert _status(example_git).returncode in (0, 2)
    without = {p: p.read_bytes() for p in example_git.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert with_memo == without and fresh.keys() == without.keys()
