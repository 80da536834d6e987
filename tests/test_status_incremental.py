"""The status step is incremental (a memo of rows, summaries and CombinedStatus files), here in
memory. The invariant: with a memo carried from run to run, every output byte equals a run without
one, through random report changes and changes of placements and inventory; a run after one
changed report recomputes one CombinedStatus, and an unchanged sync report is not read again.

The memo kept on disk: tests/test_status_memo_store.py; `status --commit`: tests/test_status_commit.py.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from ksgitops.app import usecases as app
from ksgitops.core.serialize import load_yaml
from ksgitops.core.status.reported import dump_report
from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
from status_reports import COMMON_CM, COMMOND, FLORIN, GUILDER, SPECIALD, cm_report, outputs, rs_report
from status_reports import result  # noqa: F401 - the fixture


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


def test_two_files_reporting_one_object_keep_the_first_and_warn(result: Any) -> None:
    """name.json and name.yaml for one object: the first by name counts, the other is a warning."""
    reports = {FLORIN: {f"{COMMOND}.json": dump_report(load_yaml(rs_report(0, "2026-01-01T00:00:00Z"))),
                        f"{COMMOND}.yaml": rs_report(1, "2026-01-02T00:00:00Z")}}
    out = summarize(result, MemorySource(with_reports(result.generated, reports)), StatusMemo())
    florin = [w for w in out.status("wmw-c", COMMOND)["wecs"] if w["mailbox"] == FLORIN][0]
    assert florin["reportedAt"] == "2026-01-01T00:00:00Z"
    assert [str(p) for p in out.problems if "second report" in p.message] == \
        [f"spaces/{FLORIN}/reported/{COMMOND}.yaml: warning: reported state: a second report for {COMMOND}, skipped"]


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
