"""benchmarks/stages.py: every stage it names is still in the code, and its figures add up. No
timing is asserted: only that each stage was timed, inside the run that holds it."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

STAGES = ROOT / "benchmarks" / "stages.py"


def test_every_stage_is_found_and_timed_inside_the_whole_run() -> None:
    done = subprocess.run([sys.executable, str(STAGES), "--wecs", "12", "--objects", "10", "--changes", "3"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("one Location changed, 12 WECs x 10 objects: median of 2 runs")
    figures = {label: float(ms) for ms, label in (line.strip().split(None, 1) for line in lines[1:])}
    assert not [line for line in lines if line.startswith("not found")]
    whole = figures["the whole run"]
    for label in ("reconcile", "load", "where (memoized)", "MailboxBuilder.build", "commit_on_branch"):
        assert 0 < figures[label] <= whole, (label, figures)
    assert figures["load"] + figures["_build"] <= figures["reconcile"]  # stages inside the pipeline
