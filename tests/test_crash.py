"""Kill tests: a real `python -m ksgitops` subprocess gets SIGKILL at random points (seeded), on a
small fleet whose mailboxes hold reports, upsynced objects and files a person wrote.

After every kill, recovery must leave each generated root wholly old or wholly new (in a checkout:
the branch at the old commit or at one with the new tree, work tree and index following it), lose
no file ksgitops did not generate and leave nothing over; the rerun must equal a clean run byte for
byte. The harness is benchmarks/crash.py, which runs the same trials at fleet size (hundreds of
kills on 1,000 WECs). Bounded to about a dozen seconds per mode on an idle machine.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import benchmark_module

TRIALS, BUDGET = 8, 15.0  # per mode: half killed at a random moment, half while writing


crash = benchmark_module("crash")


@pytest.mark.parametrize("mode", crash.MODES)
def test_kills_lose_nothing_and_reruns_equal_clean_runs(mode: str, tmp_path: Path) -> None:
    tally = crash.run_mode(mode, tmp_path, wecs=8, objects=10, kills=TRIALS, seed=11, budget=BUDGET)
    assert tally.failures == [], "\n".join(tally.failures[:10])
    assert (tally.lost, tally.torn, tally.divergent, tally.leftovers) == (0, 0, 0, 0)
    assert tally.trials >= 4 and tally.kills >= 2 and tally.kills_writing >= 1, f"too few kills to mean anything: {tally}"
