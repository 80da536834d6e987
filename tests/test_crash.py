"""Kill tests: a real `python -m ksgitops` subprocess gets SIGKILL at random points (seeded), on a
small fleet whose mailboxes hold reports, upsynced objects and files a person wrote.

After every kill, recovery must leave each generated root wholly old or wholly new (in a checkout:
the branch at the old commit or at one with the new tree, work tree and index following it), lose
no file ksgitops did not generate and leave nothing over; the rerun must equal a clean run byte for
byte. The harness is benchmarks/crash.py, which runs the same trials at fleet size (hundreds of
kills on 1,000 WECs). Bounded to about a dozen seconds per mode on an idle machine.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRIALS, BUDGET = 8, 15.0  # per mode: half killed at a random moment, half while writing


def _harness():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("ksgitops_bench_crash", ROOT / "benchmarks" / "crash.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


crash = _harness()


@pytest.mark.parametrize("mode", crash.MODES)
def test_kills_lose_nothing_and_reruns_equal_clean_runs(mode: str, tmp_path: Path) -> None:
    tally = crash.run_mode(mode, tmp_path, wecs=8, objects=10, kills=TRIALS, seed=11, budget=BUDGET)
    assert tally.failures == [], "\n".join(tally.failures[:10])
    assert (tally.lost, tally.torn, tally.divergent, tally.leftovers) == (0, 0, 0, 0)
    assert tally.trials >= 4 and tally.kills >= 2 and tally.kills_writing >= 1, f"too few kills to mean anything: {tally}"
