"""The vocabulary of a health verdict (`Health`, `Verdict`, `worst`) and how a report is read
defensively: a malformed value never raises, it reads as absent. health.py has the rules."""
from __future__ import annotations

import re
from collections.abc import Mapping
from enum import Enum
from typing import Any

from msgspec import Struct

MESSAGE_LIMIT = 200
_REASON_LIMIT = 128
_REASON = re.compile(r"[A-Za-z][A-Za-z0-9_,:]*\Z")  # the shape of metav1.Condition.reason


class Health(str, Enum):
    """Health of one object on one WEC. Members are declared best to worst; `<` follows that order.

    Healthy < Unknown < Progressing < Missing < Degraded, because:
    - Degraded is a failure the WEC itself confirmed: it needs someone, so it sorts first.
    - Missing means no evidence at all (WEC unreachable, its sync agent down, or not reported yet);
      it usually hits every object of a WEC, and is more actionable than a rollout in flight.
    - Progressing is a rollout or reconciliation under way: time-sensitive, normally transient.
    - Unknown is "reported, but nothing to judge by" (e.g. a custom resource with no status). It is
      often permanent and benign, so it must not mask a Progressing WEC in a worst-of summary.
    - Healthy: nothing to report.
    Comparing with anything but a Health raises TypeError (the str values would compare
    alphabetically otherwise); equality with the plain string value still holds.
    """

    HEALTHY = "Healthy"
    UNKNOWN = "Unknown"
    PROGRESSING = "Progressing"
    MISSING = "Missing"
    DEGRADED = "Degraded"

    @property
    def rank(self) -> int:
        """0 for Healthy up to 4 for Degraded: higher is worse."""
        return _RANK[self]

    def _other_rank(self, other: object) -> int:
        if not isinstance(other, Health):
            raise TypeError(f"cannot order Health against {type(other).__name__}")
        return other.rank

    def __lt__(self, other: object) -> bool:
        return self.rank < self._other_rank(other)

    def __le__(self, other: object) -> bool:
        return self.rank <= self._other_rank(other)

    def __gt__(self, other: object) -> bool:
        return self.rank > self._other_rank(other)

    def __ge__(self, other: object) -> bool:
        return self.rank >= self._other_rank(other)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


_RANK = {health: rank for rank, health in enumerate(Health)}


def rank_of(health: str) -> int:
    """`Health(health).rank` without building the member (a str Enum hashes as its value)."""
    return _RANK[health]  # type: ignore[index]


def worst(*healths: Health | str) -> Health:
    """The worst of `healths` (Degraded > Missing > Progressing > Unknown > Healthy).

    Plain string values ("Degraded") are accepted; anything else raises ValueError. With no
    arguments: Healthy (nothing is wrong with nothing; it is the identity of worst-of).
    """
    return max((Health(h) for h in healths), default=Health.HEALTHY)


class Verdict(Struct, frozen=True):
    """The health of one object on one WEC, and why, in one line."""

    health: Health
    message: str

    def __str__(self) -> str:
        return f"{self.health.value}: {self.message}" if self.message else self.health.value


HEALTHY, UNKNOWN, PROGRESSING, MISSING, DEGRADED = (
    Health.HEALTHY, Health.UNKNOWN, Health.PROGRESSING, Health.MISSING, Health.DEGRADED)

# --- reading a report defensively: malformed values never raise, they read as absent ----------


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def as_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def count_of(mapping: Mapping[str, Any], key: str) -> int:
    """A status count; Kubernetes omits zeros, so absent (or malformed) reads as 0."""
    return as_int(mapping.get(key)) or 0


def replicas_of(spec: Mapping[str, Any]) -> int:
    """spec.replicas as sent, defaulting to 1 as the API server does."""
    value = as_int(spec.get("replicas"))
    return 1 if value is None else value


def text_of(value: Any) -> str:
    """A message made safe to show: one line, at most MESSAGE_LIMIT characters."""
    if not isinstance(value, str):
        return ""
    line = " ".join(value.split())
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 1] + "…"


def reason_of(value: Any) -> str:
    """A Kubernetes reason (CamelCase identifier), or "" for anything else."""
    if isinstance(value, str) and len(value) <= _REASON_LIMIT and _REASON.match(value):
        return value
    return ""


def why(head: str, source: Mapping[str, Any]) -> str:
    """`head (Reason): message` from a condition or a pod status, leaving out what is absent."""
    reason, message = reason_of(source.get("reason")), text_of(source.get("message"))
    return head + (f" ({reason})" if reason else "") + (f": {message}" if message else "")


def conditions_of(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """type -> condition; the first of a repeated type wins; malformed entries are skipped."""
    found: dict[str, Mapping[str, Any]] = {}
    conditions = status.get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, dict) and isinstance(cond.get("type"), str):
            found.setdefault(cond["type"], cond)
    return found


def is_condition(cond: Mapping[str, Any] | None, value: str) -> bool:
    return cond is not None and cond.get("status") == value


def phase_verdict(status: Mapping[str, Any], table: Mapping[str, Verdict]) -> Verdict:
    """The verdict `table` gives the reported phase; phases it does not name are not echoed."""
    phase = status.get("phase")
    if phase is None:
        return Verdict(UNKNOWN, "no phase reported")
    found = table.get(phase) if isinstance(phase, str) else None
    return found or Verdict(UNKNOWN, "unrecognised phase")


def stale_verdict(status: Mapping[str, Any], generation: int | None, required: bool) -> Verdict | None:
    """Progressing when the status describes an older generation than the one expected."""
    if generation is None:
        return None
    observed = as_int(status.get("observedGeneration"))
    if observed is None:
        return Verdict(PROGRESSING, f"generation {generation} not yet observed") if required else None
    if observed < generation:
        return Verdict(PROGRESSING,
                       f"generation {generation} not yet observed (observedGeneration {observed})")
    return None
