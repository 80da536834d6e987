"""`ksgitops sync`: the agent beside a WEC, one cycle at a time: fetch the mailbox, apply it,
write and push the reports (and the SyncReport)."""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from msgspec import Struct, field

from ...core.load.repoconfig import DEFAULT_AUTHOR_EMAIL, DEFAULT_AUTHOR_NAME
from ...core.status.syncreport import (SYNC_FILE, Drift, SyncReport, applied_report, dump_sync_report, failed_report,
                                       mailbox_revision, parse_sync_report, steady_objects)
from ...core.emit.readback import failure_text
from ...core.tree import FileTree
from ...io import kube
from ...io.git.branch import signature
from ...io.git.reportref import MailboxRepo, default_cache_dir
from ...model import KsgitopsError, counted
from ...names import dns1123_label_error
from ..shutdown import Shutdown
from .apply import ApplyOutcome, MailboxPlan, apply_mailbox, plan_mailbox
from .upsync import upsync_tree
from .desired import INVENTORY_NAMESPACE, count_files, desired_objects, report_tree, utc_now
from .inventory import InventoryError

# ---------------------------------------------------------------------------------------------
# sync: the agent


class SyncOptions(Struct):
    mailbox: str
    repo: str = "."
    branch: str = "main"
    kubeconfig: str | None = None
    context: str | None = None
    cache_dir: Path | None = None
    inventory_namespace: str = INVENTORY_NAMESPACE
    timeout: float = 30.0  # per Kubernetes request
    crd_timeout: float = 60.0


class CycleOutcome(Struct):
    mailbox: str
    source: str | None = None  # the branch head applied
    applied: ApplyOutcome | None = None
    reports: int = 0
    upsynced: int = 0
    commit: str | None = None  # a new report commit
    pushed: str | None = None  # the commit now on the remote's report ref
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 3 if self.errors else 0

    def summary(self) -> str:
        head = self.source[:12] if self.source else "no source"
        a = self.applied
        parts = [f"{self.mailbox} @ {head}"]
        if a is not None:
            drifted = f", drift corrected {len(a.drift)}" if a.drift else ""
            parts.append(f"applied {len(a.applied)}, created {len(a.created)}, unchanged {a.unchanged}, "
                         f"kept {len(a.kept)}, pruned {len(a.pruned)}{drifted}; {counted(self.reports, 'report')}, "
                         f"{self.upsynced} upsynced")
        if self.commit:
            parts.append(f"committed {self.commit[:12]}")
        if self.pushed:
            parts.append(f"pushed {self.pushed[:12]}")
        if a is not None and not self.commit and not self.pushed:
            parts.append("reports unchanged")
        return "; ".join(parts)


def _sync_report_in(reported: FileTree | None) -> SyncReport | None:
    """The agent's own last sync report (None: none yet, or unreadable: start afresh)."""
    data = (reported or {}).get(SYNC_FILE)
    found = parse_sync_report(SYNC_FILE, data) if isinstance(data, bytes) else None
    return found if isinstance(found, SyncReport) else None


def _author() -> Any:
    return signature(DEFAULT_AUTHOR_NAME, DEFAULT_AUTHOR_EMAIL)


def _sync_file(applied: ApplyOutcome, last: SyncReport | None, mailbox: str, revision: str, source: str, stamp: str,
               objects: list[Any]) -> bytes:
    """reported/sync.yaml after an apply: the revision applied, its failures and the drift found."""
    drifted = [Drift(rel, identity, change, fields, stamp) for rel, (identity, change, fields) in applied.drift.items()]
    return dump_sync_report(applied_report(last, mailbox, revision, source, stamp, applied.failures, drifted,
                                           {d.rel for d in objects}))


def check_mailbox_name(name: str) -> None:
    error = dns1123_label_error(name)
    if error:
        raise KsgitopsError(f"--mailbox: {error}", exit_code=2)


class Agent:
    """`ksgitops sync`: one cycle = fetch, render, apply + prune, report + upsync, commit, push.

    Fetch, apply (with its prune and inventory), the report commit and the push are its write
    steps: a cycle given a `Shutdown` checks it before each (app/shutdown.py), so a second signal stops
    the agent between two of them, never inside one."""

    def __init__(self, options: SyncOptions) -> None:
        check_mailbox_name(options.mailbox)
        self.options = options
        self.git = MailboxRepo(options.repo, options.branch, options.mailbox, options.cache_dir or default_cache_dir())

    def plan(self) -> tuple[MailboxPlan | None, list[str]]:
        """What the next cycle would do on the WEC (`sync --dry-run`): the branch fetched (the only
        write, into the agent's own clone), the mailbox read, live objects read; nothing applied,
        reported or pushed. Returns the plan (None when there is nothing to plan) and the errors."""
        o = self.options
        errors = [e for e in [self.git.fetch()] if e]
        head = self.git.head()
        files = self.git.mailbox_files(head) if head is not None else None
        if files is None:
            return None, errors + [f"no mailbox spaces/{o.mailbox} on {o.branch}: nothing to plan"]
        try:
            objects = desired_objects(files)
        except Exception as e:  # noqa: BLE001 - as in a cycle: the whole mailbox waits
            return None, errors + [f"spaces/{o.mailbox}: cannot render the mailbox ({failure_text(e)})"]
        try:
            with kube.Cluster(o.kubeconfig, o.context, o.timeout) as cluster:
                cluster.probe()
                return plan_mailbox(cluster, o.mailbox, objects, o.inventory_namespace), errors
        except (kube.KubeError, InventoryError) as e:
            message = f"unreachable: {e}" if isinstance(e, kube.Unreachable) else str(e)
            return None, errors + [f"{o.mailbox}: {message}"]

    def cycle(self, now: str | None = None, guard: Shutdown | None = None) -> CycleOutcome:
        # Read whole: fetch, render, apply, report, commit, push in the order a signal may stop
        # them (each guard.checkpoint() is a place to stop); the steps themselves are elsewhere.
        o = self.options
        guard = guard or Shutdown()
        out = CycleOutcome(o.mailbox)
        guard.checkpoint()
        fetch_error = self.git.fetch()
        if fetch_error:
            out.errors.append(fetch_error)
        head = self.git.head()
        if head is None:
            return out
        out.source = str(head.id)
        files = self.git.mailbox_files(head)
        if files is None:
            out.errors.append(f"no mailbox spaces/{o.mailbox} on {o.branch} at {str(head.id)[:12]}: nothing applied")
            self._push(out, guard)
            return out
        stamp = now or utc_now()
        previous = self.git.previous(head, "reported")
        last = _sync_report_in(previous)
        revision = mailbox_revision(files)
        try:
            objects = desired_objects(files)
        except Exception as e:  # noqa: BLE001 - a patch that does not apply: the whole mailbox waits
            message = f"cannot render the mailbox ({failure_text(e)}): nothing applied"
            out.errors.append(f"spaces/{o.mailbox}: {message}")
            return self._failed(out, head, previous, failed_report(last, o.mailbox, message, stamp), guard)
        old = self.git.files_at(last.commit) if last is not None and last.commit and last.revision != revision else None
        steady = steady_objects(last, revision, old, files, [d.rel for d in objects])
        guard.checkpoint()
        try:
            applied, upsynced = self._apply(objects, files, steady, out)
        except (kube.KubeError, InventoryError) as e:
            message = f"unreachable: {e}" if isinstance(e, kube.Unreachable) else str(e)
            out.errors.append(f"{o.mailbox}: {message}")
            return self._failed(out, head, previous, failed_report(last, o.mailbox, message, stamp), guard)
        reported = report_tree(objects, applied.live, previous, stamp, applied.unread)
        out.reports, out.upsynced = count_files(reported), count_files(upsynced)
        reported[SYNC_FILE] = _sync_file(applied, last, o.mailbox, revision, str(head.id), stamp, objects)
        guard.checkpoint()
        out.commit = self.git.commit(head, reported, upsynced, _author()).commit
        self._push(out, guard)
        return out

    def _apply(self, objects: list[Any], files: FileTree, steady: set[str],
               out: CycleOutcome) -> tuple[ApplyOutcome, FileTree]:
        """Apply the mailbox and read back what the WEC upsyncs, over one connection; raises
        kube.KubeError and InventoryError when the WEC cannot be used."""
        o = self.options
        config = files.get("syncerconfig.yaml")
        with kube.Cluster(o.kubeconfig, o.context, o.timeout) as cluster:
            cluster.probe()
            applied = out.applied = apply_mailbox(cluster, o.mailbox, objects, o.inventory_namespace, o.crd_timeout,
                                                  steady=steady)
            out.errors.extend(applied.errors)
            out.notes.extend(applied.notes)
            upsynced, problems = upsync_tree(cluster, config if isinstance(config, bytes) else None)
            out.errors.extend(problems)
        return applied, upsynced

    def _failed(self, out: CycleOutcome, head: Any, previous: FileTree | None, sync: SyncReport,
                guard: Shutdown) -> CycleOutcome:
        """Nothing could be applied: the reports stay, the sync report says why."""
        reported = dict(previous or {})
        reported[SYNC_FILE] = dump_sync_report(sync)
        guard.checkpoint()
        out.commit = self.git.commit(head, reported, self.git.previous(head, "upsynced"), _author()).commit
        self._push(out, guard)
        return out

    def _push(self, out: CycleOutcome, guard: Shutdown) -> None:
        if not self.git.pending():
            return
        guard.checkpoint()
        error = self.git.push()
        if error:
            out.errors.append(f"{error} (kept locally, retried next cycle)")
        else:
            out.pushed = self.git.local_commit()

    def run(self, interval: float, stop: Shutdown | threading.Event, report: Callable[[CycleOutcome], None]) -> None:
        """Cycle every `interval` seconds until `stop` is requested (the first SIGTERM: the cycle
        under way finishes first). A second signal raises Abandoned between two write steps."""
        guard = stop if isinstance(stop, Shutdown) else Shutdown(stop)
        while not guard.requested.is_set():
            try:
                outcome = self.cycle(guard=guard)
            except Exception as e:  # noqa: BLE001 - a long-running agent reports and tries again
                outcome = CycleOutcome(self.options.mailbox, errors=[f"{self.options.mailbox}: internal error "
                                                                     f"({type(e).__name__}); retried next cycle"])
            report(outcome)
            guard.requested.wait(interval)
