"""A CombinedStatus's lists of apply errors and drift (combined._sync_facts) are in WEC-name order
and cut at the limit, whichever rows say something."""
from __future__ import annotations

import random
from typing import Any


def test_sync_facts_list_apply_errors_and_drift_by_wec_name() -> None:
    """Only rows with an apply error or a drift are sorted: they come in WEC-name order (a
    mailbox's name orders otherwise), ties in the rows' order, each list cut at the limit."""
    from types import SimpleNamespace

    from ksgitops.core.status.combined import _sync_facts
    from ksgitops.core.status.rows import Row
    from ksgitops.core.status.syncreport import Drift
    rng = random.Random(9)
    names = {f"mb-{i:02d}": rng.choice(["zeta", "alpha", "mid", "beta"]) + f"-{rng.randrange(5)}" for i in range(40)}
    rows = []
    for mb in sorted(names):
        error = rng.choice(["", "", "apply failed"])
        drift = Drift("modified", ("spec",), f"2026-01-01T00:00:{rng.randrange(60):02d}Z") if rng.random() < 0.4 else None
        rows.append((mb, Row("w", "Healthy", "", None, None, ("p",), False, "d", "", "k", error, drift)))
    status: dict[str, Any] = {}
    _sync_facts(status, SimpleNamespace(problems=[]), rows, names, 5)
    in_order = sorted(rows, key=lambda r: names[r[0]])
    errors = [mb for mb, r in in_order if r.apply_error]
    drifted = [mb for mb, r in in_order if r.drift is not None]
    assert status["problemCount"] == len(errors) and [p["mailbox"] for p in status["problems"]] == errors[:5]
    assert status["driftedCount"] == len(drifted) and [d["mailbox"] for d in status["drifted"]] == drifted[:5]
    assert [d["wec"] for d in status["drifted"]] == [names[mb] for mb in drifted[:5]]
