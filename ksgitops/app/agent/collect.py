"""`ksgitops collect`: pull reported state from every WEC reachable through a kubeconfig into
the mailboxes of the work tree."""
from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from ...core.emit.readback import failure_text
from ...core.tree import FileTree
from ...io import kube
from ...io.fs.worktree import write_generated
from ...model import KsgitopsError
from .. import usecases as app

from .desired import CONTEXT_ANNOTATION, Desired, count_files, desired_objects, read_live, report_tree, utc_now

# ---------------------------------------------------------------------------------------------
# collect


class CollectOutcome(Struct):
    collected: list[str] = field(default_factory=list)  # WEC names read completely
    unreachable: dict[str, str] = field(default_factory=dict)  # WEC -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # WEC -> why (no context, no mailbox folder)
    changed: list[str] = field(default_factory=list)  # mailboxes whose reported/ was rewritten
    reports: int = 0
    problems: list[str] = field(default_factory=list)  # per-object read failures, one line each

    @property
    def exit_code(self) -> int:
        return 3 if self.unreachable or self.problems else 0


class _Target(Struct):
    name: str  # display name of the WEC
    mailbox: str
    context: str
    objects: list[Desired]
    previous: FileTree | None


def wec_context(sync_target_annotations: dict[str, Any], name: str) -> str:
    """The kubeconfig context of a WEC: the SyncTarget's annotation, else its name."""
    value = sync_target_annotations.get(CONTEXT_ANNOTATION)
    return str(value) if isinstance(value, str) and value else name


def collect(path: Path, kubeconfig: str | None = None, timeout: float = 10.0, workers: int = 8,
            now: str | None = None) -> CollectOutcome:
    """Read the live state of every mailbox's objects from the WECs reachable through `kubeconfig`
    and rewrite each changed `spaces/<mailbox>/reported/` folder (one crash-safe transaction)."""
    src = app.open_source(Path(path), app.WORKTREE)
    result = app.placements_only(src)  # the WECs; their mailboxes are read as they are
    try:
        contexts, _current = kube.kubeconfig_contexts(kubeconfig)
    except kube.KubeError as e:
        raise KsgitopsError(str(e), exit_code=3) from None
    outcome = CollectOutcome()
    targets = _targets(src, result, set(contexts), outcome)
    reports = _read_all(targets, kubeconfig, timeout, workers, now or utc_now(), outcome)
    write_generated(Path(path), reports)  # one crash-safe transaction for every changed reported/
    outcome.collected.sort()
    outcome.changed.sort()
    return outcome


def _targets(src: Any, result: Any, contexts: set[str], outcome: CollectOutcome) -> list[_Target]:
    """The WECs to read: a context in the kubeconfig and a mailbox that renders (others are skipped)."""
    names = app.wec_display_names(result)
    targets = []
    for mailbox, wec in sorted(result.wecs.items()):
        name = names.get(mailbox, mailbox)
        context = wec_context(wec.sync_target.annotations, wec.name)
        if context not in contexts:
            outcome.skipped[name] = f"no kubeconfig context {context!r}"
            continue
        files = src.snapshot.read_tree(f"spaces/{mailbox}")
        if files is None:
            outcome.skipped[name] = f"no mailbox folder spaces/{mailbox} (run reconcile)"
            continue
        try:
            objects = desired_objects(files)
        except Exception as e:  # noqa: BLE001 - a broken patch in the work tree: that WEC only
            outcome.problems.append(f"{name}: spaces/{mailbox}: cannot render the mailbox ({failure_text(e)})")
            continue
        previous = files.get("reported")
        targets.append(_Target(name, mailbox, context, objects, previous if isinstance(previous, dict) else None))
    return targets


def _read_all(targets: list[_Target], kubeconfig: str | None, timeout: float, workers: int, stamp: str,
              outcome: CollectOutcome) -> dict[str, Any]:
    """Read the WECs in parallel, each within `timeout`; the changed `reported/` folders."""
    reports: dict[str, Any] = {}

    def read(target: _Target) -> tuple[dict[str, dict[str, Any] | None], dict[str, str]]:
        deadline = time.monotonic() + timeout
        with kube.Cluster(kubeconfig, target.context, timeout, deadline) as cluster:
            cluster.probe()
            return read_live(cluster, target.objects)

    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="ksgitops-collect")
    futures: dict[Future[Any], _Target] = {pool.submit(read, t): t for t in targets}
    rounds = -(-len(targets) // max(1, workers)) if targets else 0
    give_up = time.monotonic() + timeout * rounds + 30
    pending = set(futures)
    try:
        while pending:
            done, pending = wait(pending, timeout=max(0.0, give_up - time.monotonic()), return_when=FIRST_COMPLETED)
            if not done:
                break
            for future in done:
                _take(futures[future], future, stamp, outcome, reports)
        for future in pending:
            outcome.unreachable[futures[future].name] = f"timed out after {timeout:g}s"
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return reports


def _take(target: _Target, future: Future[Any], stamp: str, outcome: CollectOutcome, reports: dict[str, Any]) -> None:
    try:
        live, errors = future.result()
    except kube.KubeError as e:
        outcome.unreachable[target.name] = str(e)
        return
    tree = report_tree(target.objects, live, target.previous, stamp, errors)
    outcome.problems.extend(f"{target.name}: {line}" for line in sorted(errors.values()))
    outcome.collected.append(target.name)
    outcome.reports += count_files(tree)
    if tree != (target.previous or {}):
        reports[f"spaces/{target.mailbox}/reported"] = tree or None
        outcome.changed.append(target.mailbox)
