"""The sync facts status shows per WEC (STATUS.md, `-o json`) and per object (CombinedStatus).

From a mailbox's sync report (syncreport.py, written by `ksgitops sync`) and its latest revision:
the state (Synced / OutOfSync / Unknown / Failed), the revision applied and when, the apply errors
and the drifted objects. Kept small (the worst `limit` of each list, the rest counted) because a
summary per mailbox lives in the status memo.
"""
from __future__ import annotations

from typing import Any

from msgspec import Struct, field

from .syncreport import Drift, SyncReport, SyncState, sync_state

SHORT = 12  # revision characters shown in STATUS.md


class SyncSummary(Struct):
    state: str
    latest: str
    applied: str = ""
    applied_at: str = ""
    commit: str = ""
    errors: list[tuple[str, str]] = field(default_factory=list)  # (object text, message)
    error_count: int = 0
    drifted: list[tuple[str, str, tuple[str, ...], str]] = field(default_factory=list)  # text, change, fields, at
    drift_count: int = 0

    @classmethod
    def of(cls, report: SyncReport | None, latest: str, limit: int) -> "SyncSummary":
        summary = cls(sync_state(report, latest).value, latest)
        if report is None:
            return summary
        summary.applied, summary.applied_at, summary.commit = report.revision, report.applied_at, report.commit
        errors = sorted((str(e.obj) if e.obj is not None else "", e.message) for e in report.errors)
        drifted = sorted((str(d.obj), d.change, d.fields, d.detected_at) for d in report.drifted)
        summary.error_count, summary.drift_count = len(errors), len(drifted)
        summary.errors, summary.drifted = errors[:max(limit, 0)], drifted[:max(limit, 0)]
        return summary

    @property
    def is_synced(self) -> bool:
        return self.state == SyncState.SYNCED.value

    def applied_text(self) -> str:
        if not self.applied:
            return "never"
        return f"{self.applied[:SHORT]} ({self.applied_at})" if self.applied_at else self.applied[:SHORT]

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"state": self.state, "latestRevision": self.latest}
        if self.applied:
            doc["appliedRevision"] = self.applied
        if self.applied_at:
            doc["appliedAt"] = self.applied_at
        if self.commit:
            doc["commit"] = self.commit
        doc["errorCount"], doc["driftedCount"] = self.error_count, self.drift_count
        doc["errors"] = [{"object": o, "message": m} if o else {"message": m} for o, m in self.errors]
        doc["drifted"] = [{"object": o, "change": c, "fields": list(f), "detectedAt": at}
                          for o, c, f, at in self.drifted]
        return doc


def object_facts(report: SyncReport | None) -> tuple[dict[str, str], dict[str, Drift]]:
    """Per mailbox rel: the apply error, and the drift, that the report names."""
    if report is None:
        return {}, {}
    errors: dict[str, str] = {}
    for error in report.errors:
        if error.path:
            errors.setdefault(error.path, error.message)
    return errors, {d.path: d for d in report.drifted}


def state_counts(summaries: Any) -> dict[str, int]:
    """{state: number of WECs}, in a fixed order, zero counts left out."""
    found = {s.value: 0 for s in (SyncState.SYNCED, SyncState.OUT_OF_SYNC, SyncState.FAILED, SyncState.UNKNOWN)}
    for summary in summaries:
        found[summary.sync.state] += 1
    return {k: v for k, v in found.items() if v}


__all__ = ["SyncSummary", "object_facts", "state_counts", "SHORT"]
