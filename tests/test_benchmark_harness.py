"""The benchmark harness (benchmarks/run.py and its modules) measures what it says and catches a
ksgitops that does not do its job. No timing is asserted: only that figures exist and checks hold."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import filesystem  # noqa: E402
import measure  # noqa: E402
import plot  # noqa: E402
import scenarios  # noqa: E402
import table  # noqa: E402

RUN = ROOT / "benchmarks" / "run.py"
KSGITOPS = f"{sys.executable} -m ksgitops"
KUBECTL = shutil.which("kubectl")


def harness(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(RUN), "--workdir", str(tmp_path), "--json", str(out), *args],
                          capture_output=True, text=True, timeout=900)
    return done, json.loads(out.read_text()) if out.exists() else {}


def test_every_row_runs_and_every_check_holds(tmp_path: Path) -> None:
    rows = "bare,status,foldin,worktree,checkout" + (",kustomize" if KUBECTL else "")
    done, figures = harness(tmp_path, "--sizes", "3x12", "--fleet", "independent", "--rows", rows,
                            "--kustomize-sample", "2", "--ksgitops", KSGITOPS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [res] = figures["results"]
    expected = [key for key, _ in table.ROWS if KUBECTL or not key.startswith("kustomize.")]
    assert sorted(res["steps"]) == sorted(expected)
    for key, step in res["steps"].items():
        assert step["ok"] and step["seconds"] > 0, (key, step)
        assert key == "kustomize.all" or step["max_rss"] > 0, (key, step)
    checks = "\n".join(res["checks"])
    for needed in ("after full: bare, checkout, worktree hold the same tree", "after location: bare, checkout, worktree",
                   "worktree: noop: no file written", "worktree: location_diff: no file written",
                   "repair_edit: spaces/sites-mb-", "repair_delete: spaces/sites-mb-",
                   "git_checkout: the fresh work tree equals the reconciled commit",
                   "worktree: monitor_noop: no file written", "worktree: monitor_location_diff: no file written",
                   "monitor_repair_edit: spaces/sites-mb-", "worktree: monitor_location: the work tree changed",
                   "worktree: monitor: the monitored runs left what unmonitored ones would"):
        assert needed in checks, needed
    assert not res["problems"]
    assert sorted(os.listdir(tmp_path)) == ["figures.json"]  # the temporary repos are gone
    assert "### Every row" in done.stdout and "one Location label changed in the work tree" in done.stdout
    assert plot.series(figures["results"])["worktree.noop"] == [(3, res["steps"]["worktree.noop"]["seconds"])]


def test_folders_go_when_the_run_ends_not_between_figures(tmp_path: Path) -> None:
    """A removed fleet slows the next one's file creation (filesystem.py): removal waits."""
    folder = tmp_path / "mode"
    folder.mkdir()
    (folder / "file").write_text("x")
    filesystem.discard(folder)
    assert (folder / "file").exists()
    filesystem.remove_discarded()
    assert not folder.exists()


def test_the_file_system_probe_creates_what_it_says(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", filesystem.PROBE, str(tmp_path / "probe")], check=True, timeout=300)
    made = [name for _, _, names in os.walk(tmp_path / "probe") for name in names]
    assert len(made) == filesystem.PROBE_FILES
    assert (tmp_path / "probe/d0/f0.yaml").stat().st_size == 600


def test_a_ksgitops_that_does_nothing_fails_the_checks(tmp_path: Path) -> None:
    done, figures = harness(tmp_path, "--sizes", "2x6", "--rows", "bare,worktree", "--ksgitops", "true")
    assert done.returncode == 1
    problems = "\n".join(figures["results"][0]["problems"])
    assert "bare: full: no new commit, expected the opposite" in problems
    assert "worktree: full: 0 mailboxes for 2 WECs" in problems


def test_a_no_op_that_rewrites_files_is_caught(tmp_path: Path) -> None:
    """A wrapper that runs ksgitops, then rewrites one generated file with the same bytes."""
    wrapper = tmp_path / "rewrites"
    wrapper.write_text(f"#!/bin/sh\n{KSGITOPS} \"$@\" || exit $?\n"
                       "for f in \"$2\"/spaces/*-mb-*/kustomization.yaml; do cp \"$f\" \"$f.tmp\" && mv \"$f.tmp\" \"$f\"; break; done\n")
    wrapper.chmod(0o755)
    done, figures = harness(tmp_path, "--sizes", "2x6", "--rows", "worktree", "--ksgitops", str(wrapper))
    assert done.returncode == 1
    problems = "\n".join(figures["results"][0]["problems"])
    assert "worktree: noop: 1 files written, e.g. ['spaces/inventory-mb-wec-0001/kustomization.yaml']" in problems
    assert figures["results"][0]["steps"]["worktree.noop"]["ok"] is False


def test_stamps_see_a_rewrite_with_the_same_bytes_an_addition_and_a_removal(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_text("x")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "index").write_text("ignored")
    before = measure.stamps(tmp_path)
    assert list(before) == [os.path.join("a", "f")]
    assert measure.stamp_changes(tmp_path, before) == []
    (tmp_path / "a" / "g").write_text("x")
    os.replace(tmp_path / "a" / "g", tmp_path / "a" / "f")
    (tmp_path / "a" / "new").write_text("y")
    assert measure.stamp_changes(tmp_path, before) == [os.path.join("a", "f"), os.path.join("a", "new")]
    os.unlink(tmp_path / "a" / "f")
    assert measure.stamp_changes(tmp_path, before) == [os.path.join("a", "f"), os.path.join("a", "new")]


def test_compare_trees_flags_a_difference() -> None:
    res = scenarios.SizeResult("project", 1, 1, trees={"bare": {"full": "a" * 40, "location": "b" * 40},
                                                       "worktree": {"full": "a" * 40, "location": "c" * 40}})
    scenarios.compare_trees(res)
    assert res.checks == [f"after full: bare, worktree hold the same tree, byte for byte ({'a' * 12})"]
    assert res.problems == [f"after location: the modes' results differ: bare {'b' * 12}, worktree {'c' * 12}"]


def test_targets_judge_time_memory_and_the_kustomize_ratio() -> None:
    step = scenarios.Step(seconds=0.4, max_rss=200 * measure.MiB, ok=True)
    assert table.Target(seconds=0.5, rss=300 * measure.MiB).judge(step, None) is True
    assert table.Target(seconds=0.3).judge(step, None) is False
    assert table.Target(rss=100 * measure.MiB).judge(step, None) is False
    assert table.Target(kustomize_ratio=50).judge(step, 49.0) is False
    assert table.Target(kustomize_ratio=50).judge(step, 51.0) is True
    assert table.Target(kustomize_ratio=50).judge(step, None) is None  # kustomize did not run
    assert table.Target(seconds=1).judge(scenarios.Step(seconds=0.1, ok=False), None) is False


def test_timed_reports_the_childs_own_peak_memory(tmp_path: Path) -> None:
    ballast = bytearray(300 * measure.MiB)  # the harness's memory must not count in the child's peak
    ballast[::4096] = b"\x01" * len(ballast[::4096])
    run = measure.timed([sys.executable, "-c", "pass"], cwd=tmp_path, env=dict(os.environ), log_dir=tmp_path,
                        label="floor", timeout=60)
    del ballast
    assert run.ok and 0 < run.max_rss < 150 * measure.MiB


def test_timed_kills_on_timeout_and_reports_exit_codes(tmp_path: Path) -> None:
    started = time.perf_counter()
    run = measure.timed(["sleep", "30"], cwd=tmp_path, env=dict(os.environ), log_dir=tmp_path, label="slow",
                        timeout=0.5)
    assert run.timed_out and not run.ok and time.perf_counter() - started < 20
    run = measure.timed(["sh", "-c", "echo oops >&2; exit 3"], cwd=tmp_path, env=dict(os.environ), log_dir=tmp_path,
                        label="fails", timeout=60)
    assert run.exit_code == 3 and "oops" in run.tail()
    run = measure.timed(["/nonexistent/command"], cwd=tmp_path, env=dict(os.environ), log_dir=tmp_path,
                        label="missing", timeout=60)
    assert run.exit_code == 127 and "cannot run" in run.tail()


def test_rows_and_fleets_are_checked(tmp_path: Path) -> None:
    for bad in (["--rows", "bare,nope"], ["--fleet", "other"], ["--sizes", "12"]):
        done = subprocess.run([sys.executable, str(RUN), *bad], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "error" in done.stderr, bad


def test_large_runs_ten_thousand_wecs_with_its_own_rows() -> None:
    import run
    args = run.arguments(["--large"])
    assert run.sizes_of(args) == [(10000, 200)] and args.rows is None
    assert run.LARGE_ROWS == ("bare", "worktree", "kustomize", "floor")
    assert run.arguments(["--large", "--rows", "all"]).rows == list(run.ALL_ROWS)
    assert run.sizes_of(run.arguments(["--sizes", "100x200,300x200"])) == [(100, 200), (300, 200)]
    assert run.sizes_of(run.arguments([])) == [(1000, 200)]
    # the 10,000-WEC memory targets cover bare and work tree, full and no-op
    large = table.TARGETS[(10000, 200)]
    assert all(large[key].rss == 4 * measure.GiB for key in ("bare.full", "bare.noop", "worktree.full", "worktree.noop"))


def test_rows_at_a_target_size_show_yardsticks_and_verdicts() -> None:
    step = scenarios.Step
    res = scenarios.SizeResult("independent", 1000, 200, counts={"mailboxes": 1000, "kustomize_sampled": 20}, steps={
        "worktree.full": step(4.0, 150 * measure.MiB, True), "worktree.noop": step(0.2, 70 * measure.MiB, True),
        "kustomize.one": step(0.08, 50 * measure.MiB, True), "kustomize.all": step(80.0, None, True),
        "checkout.full": step(8.0, 200 * measure.MiB, True), "checkout.git_checkout": step(4.0, 30 * measure.MiB, True)})
    rows = {row[1].split(";")[0]: row for row in table.rows_for(res)}
    full = rows["work-tree `reconcile`, full (no mailboxes yet)"]
    assert full[4] == "50.0 kustomize builds; kustomize of every overlay ÷ this: 20.0×"
    assert full[5:] == ["≥ 50× faster than kustomize", "**missed** (20.0×)"]
    assert rows["work-tree `reconcile`, nothing changed (no file written)"][5:] == ["≤ 0.3 s", "**met**"]
    checkout = rows["`reconcile --commit` in a checkout, full (checkout written)"]
    assert checkout[4].endswith("2.0× `git checkout`") and checkout[6] == "**missed** (10.0×)"  # ≥ 20× kustomize
    assert table.targets_missed([res])
    res.steps["worktree.full"].seconds, res.steps["checkout.full"].seconds = 1.0, 2.0
    assert not table.targets_missed([res])


def test_a_version_managers_shim_on_path_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shims, bin_dir = tmp_path / "shims", tmp_path / "bin"
    shims.mkdir()
    bin_dir.mkdir()
    shim, script = shims / "ksgitops", bin_dir / "ksgitops"
    shim.write_text('#!/usr/bin/env bash\nexec pyenv exec ksgitops "$@"\n')
    script.write_text(f"#!{sys.executable}\nfrom ksgitops.cli.entry import main\nmain()\n")
    for path in (shim, script):
        path.chmod(0o755)
    monkeypatch.setattr(measure.sysconfig, "get_path", lambda name: str(tmp_path / "none"))
    monkeypatch.setenv("PATH", os.pathsep.join([str(shims), str(bin_dir)]))
    assert measure.console_script() == str(script)
    assert measure.python_of([str(script)]) == sys.executable
    monkeypatch.setenv("PATH", str(shims))
    assert measure.console_script() is None  # then the harness runs `python -m ksgitops` from the checkout
    monkeypatch.setattr(measure.sysconfig, "get_path", lambda name: str(bin_dir))
    assert measure.console_script() == str(script)  # beside the interpreter comes first


@pytest.mark.parametrize("launcher", ["direct", "env", "pip-sh"])
def test_the_python_of_a_console_script(tmp_path: Path, launcher: str, monkeypatch: pytest.MonkeyPatch) -> None:
    python = Path(sys.executable)
    monkeypatch.setenv("PATH", os.pathsep.join([str(python.parent), os.environ.get("PATH", "")]))
    first = {"direct": f"#!{python}\n", "env": f"#!/usr/bin/env {python.name}\n",
             "pip-sh": f'#!/bin/sh\n{measure.PIP_SH_LAUNCHER}"{python}" "$0" "$@"\n'}[launcher]
    script = tmp_path / "ksgitops"
    script.write_text(first + "import sys\n")
    script.chmod(0o755)
    assert Path(measure.python_of([str(script)])).resolve() == python.resolve()
