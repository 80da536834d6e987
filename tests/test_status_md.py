"""STATUS.md and the `status` command: the placement, WEC and broken-object tables, output that
is deterministic whatever the order of reports, the bundled example's status up to date; malformed
reports are warnings with `file:line`, skipped (a WEC whose report does not read is Unknown, not
"not reported"); the command's text and exit codes.
"""
from __future__ import annotations

import json
from pathlib import Path

from conftest import EXAMPLE
from ksgitops.app import usecases as app
from ksgitops.core.serialize import dump_yaml, load_yaml
from ksgitops.core.status.reported import parse_report
from ksgitops.core.status.summary import STATUS_MD
from status_summaries import (COMMON_CM, COMMOND, FLORIN, GUILDER, RS_FAILED, SPECIAL_CM, SPECIALD, as_reports, cm,
                              compute, deploy, rs, summarize, write_reports)


def test_status_md_tables(example: Path) -> None:
    reports = as_reports({
        FLORIN: {COMMOND: rs(1, at="2026-01-01T00:00:03Z"), COMMON_CM: cm(at="2026-01-01T00:00:02Z")},
        GUILDER: {COMMOND: rs(1, at="2026-01-01T01:00:00+02:00", **RS_FAILED), SPECIALD: deploy(0)},
    })
    text = summarize(compute(example), reports, 20).markdown.decode()
    lines = text.splitlines()
    assert "| Placement | WECs | Objects | Healthy |" in lines
    assert "| wmw-c/edge-placement-c | 2 | 2 | 2/4 |" in lines
    assert "| wmw-s/edge-placement-s | 1 | 2 | 0/2 |" in lines
    assert "| WEC | Mailbox | Sync | Applied | Latest | Drifted | Last report | Healthy |" in lines
    wecs = {line.split(" | ")[0][2:]: line.split(" | ")[5:] for line in lines if line.startswith(("| florin", "| guilder"))}
    assert wecs["florin"] == ["0", "2026-01-01T00:00:03Z", "2/2 |"]
    # 01:00+02:00 is 23:00Z the day before: the Deployment's 00:00:09Z is later
    assert wecs["guilder"] == ["0", "2026-01-01T00:00:09Z", "0/4 |"]
    broken = lines[lines.index("| Object | WEC | Health | Message |") + 2:]
    assert [row.split(" | ")[2] for row in broken if row.startswith("|")] == [
        "Degraded", "Missing", "Missing", "Progressing"]
    assert broken[0].startswith("| wmw-c: ReplicaSet.apps commonstuff/commond | guilder | Degraded | ")
    assert "quota \\| exceeded" in broken[0]  # `|` escaped in cells
    assert all(line.count(" | ") == 3 for line in broken if line.startswith("|"))


def test_status_md_without_reports_says_never_and_with_all_healthy_nothing_broken(example: Path) -> None:
    result = compute(example)
    text = summarize(result, {}, 20).markdown.decode()
    assert any(line.startswith("| florin | imw1-mb-florin | Unknown | never | ") and line.endswith(" | 0 | never | 0/2 |")
               for line in text.splitlines())
    reports = as_reports({FLORIN: {COMMOND: rs(1), COMMON_CM: cm()},
                          GUILDER: {COMMOND: rs(1), COMMON_CM: cm(), SPECIALD: deploy(1),
                                    SPECIAL_CM: cm("specialstuff")}})
    assert "Nothing is broken." in summarize(result, reports, 20).markdown.decode()


def test_output_is_deterministic_and_independent_of_report_order(example: Path) -> None:
    docs = {FLORIN: {COMMOND: rs(1), COMMON_CM: cm()}, GUILDER: {COMMOND: rs(0), SPECIALD: deploy(0)}}
    result = compute(example)
    first = summarize(result, as_reports(docs), 20)
    backwards = {mb: dict(reversed(list(rels.items()))) for mb, rels in reversed(list(docs.items()))}
    second = summarize(compute(example), as_reports(backwards), 20)
    assert first.markdown == second.markdown
    assert first.generated == second.generated
    # end to end: two runs, identical bytes, and the second changes nothing
    write_reports(example, docs)
    app.status_worktree(example)
    before = {p: p.read_bytes() for p in sorted(example.rglob("*")) if p.is_file()}
    assert app.status_worktree(example).changed == []
    assert {p: p.read_bytes() for p in sorted(example.rglob("*")) if p.is_file()} == before


def test_the_bundled_example_status_is_up_to_date(tmp_path: Path) -> None:
    import shutil
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    outcome = app.status_worktree(repo)
    assert outcome.changed == [], "run `ksgitops status examples/repo`"
    text = (repo / STATUS_MD).read_text()
    assert "Progressing" in text and "speciald" in text


def test_malformed_reports_are_warnings_with_file_line_and_skipped() -> None:
    good = dump_yaml(rs(1))
    files = {
        f"{COMMOND}.yaml": (f"spaces/{FLORIN}/reported/{COMMOND}.yaml", good),
        f"{COMMON_CM}.yaml": (f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml", b"object: {kind: [\n"),
        f"{SPECIALD}.yaml": (f"spaces/{FLORIN}/reported/{SPECIALD}.yaml",
                             b"# comment\nobject: {kind: Deployment}\nstatus: 3\nreportedAt: yesterday\n"),
        "apps/replicasets/commonstuff/other.yaml": ("spaces/x/reported/apps/replicasets/commonstuff/other.yaml", good),
        "notes.txt": ("spaces/x/reported/notes.txt", b"hello"),
    }
    results = {name: parse_report(name, path, data) for name, (path, data) in files.items()}
    reports = {r[0]: (r[1], r[2]) for r in results.values() if isinstance(r, tuple)}
    problems = [p for r in results.values() if isinstance(r, list) for p in r]
    assert list(reports) == [COMMOND]
    assert reports[COMMOND][1] == rs(1)
    assert all(p.severity == "warning" for p in problems)
    where = {str(p.origin) for p in problems}
    assert f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml:2" in where or f"spaces/{FLORIN}/reported/{COMMON_CM}.yaml:1" in where
    assert any(s.startswith(f"spaces/{FLORIN}/reported/{SPECIALD}.yaml:2") for s in where)
    messages = " ".join(p.message for p in problems)
    assert "reportedAt" in messages and "does not match" in messages and "not a .yaml" in messages


def test_malformed_report_through_the_command(example: Path, cli) -> None:
    write_reports(example, {FLORIN: {COMMOND: rs(1)}})
    bad = example / "spaces" / GUILDER / "reported" / f"{COMMOND}.yaml"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_bytes(b"object:\n  kind: ReplicaSet\n  name: [unclosed\n")
    res = cli("status", str(example))
    assert res.code == 0, res
    assert f"spaces/{GUILDER}/reported/{COMMOND}.yaml:" in res.err and "warning" in res.err
    # the WEC did report: the row says its report does not read, and where (not "not reported")
    commond = load_yaml((example / "spaces/wmw-c/.ksgitops/status" / f"{COMMOND}.yaml").read_bytes())
    assert commond["health"] == {"Healthy": 1, "Unknown": 1} and commond["reportedCount"] == 2
    message = f"the WEC's report does not read: reported/{COMMOND}.yaml:4: malformed YAML: "
    guilder = next(w for w in commond["wecs"] if w["name"] == "guilder")
    assert guilder["health"] == "Unknown" and guilder["message"].startswith(message), guilder
    assert "reportedAt" not in guilder
    status_md = (example / STATUS_MD).read_text()
    assert f"| guilder | Unknown | {message}" in status_md
    res = cli("status", str(example), "-o", "json")
    data = json.loads(res.out)
    assert data["changed"] == [] and data["health"]["Missing"] == 4 and data["health"]["Unknown"] == 1
    assert any(p["file"] == f"spaces/{GUILDER}/reported/{COMMOND}.yaml" for p in data["problems"]), data["problems"]


def test_status_command_text_and_exit_codes(example: Path, cli) -> None:
    write_reports(example, {FLORIN: {COMMOND: rs(1)}})
    res = cli("status", str(example))
    assert res.code == 0, res
    assert res.out.strip().splitlines()[-1].startswith("4 objects on 2 WECs: 1/6 healthy, 5 Missing;")
    (example / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [x]}\n")
    assert cli("status", str(example)).code == 2
