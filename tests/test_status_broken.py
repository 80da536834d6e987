"""STATUS.md's broken list takes the first rows of the merged per-mailbox lists: the same rows,
in the same order, as the smallest of all of them (ties included)."""
from __future__ import annotations

import heapq
import random

from ksgitops.core.status.markdown import Broken, MailboxSummary, _broken_section


def test_the_broken_section_is_the_smallest_rows_in_order() -> None:
    rng = random.Random(9)
    for _ in range(300):
        limit = rng.randrange(0, 12)
        summaries = {}
        for m in range(rng.randrange(1, 8)):
            rows = sorted(Broken(-rng.randrange(3), rng.choice("ab"), rng.choice("xyz"), f"w{rng.randrange(3)}",
                                 f"mb{m}", "obj", "Degraded", rng.choice(["", "m"])) for _ in range(rng.randrange(0, 15)))
            summary = MailboxSummary(f"mb{m}", f"w{m}", None)
            summary.broken, summary.broken_count = rows[:limit], len(rows)
            summaries[f"mb{m}"] = summary
        lines = _broken_section(summaries, limit)
        expected = heapq.nsmallest(limit, [b for s in summaries.values() for b in s.broken])
        shown = [line for line in lines if line.startswith("| ") and not line.startswith("| Object")]
        assert len(shown) == len(expected)
        for line, b in zip(shown, expected):
            assert f"{b.wds}: {b.text}" in line and b.wec in line
