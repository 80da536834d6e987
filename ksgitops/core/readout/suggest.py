""""Did you mean …?": the closest known names to a mistyped one (difflib's ratio, like click's)."""
from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(word: str, known: Iterable[str], n: int = 3) -> str:
    """` (did you mean a, b?)` for the closest of `known`, or "" when none is close."""
    close = difflib.get_close_matches(word, sorted(set(known)), n=n, cutoff=0.6)
    if not close:
        lowered = word.lower()
        close = sorted(k for k in set(known) if k.lower() == lowered)[:n]
    return f" (did you mean {' or '.join(close)}?)" if close else ""
