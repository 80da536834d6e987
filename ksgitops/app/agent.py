"""The WEC-side use cases: `collect` (pull reported state from reachable WECs into the work tree)
and `sync` (the agent beside one WEC: apply its mailbox, prune, report, upsync, push to its ref).

Like app/usecases.py, this module composes the edges (io/kube.py, io/git/reportref.py, io/fs/tree.py) with pure
pieces; the CLI maps the outcomes to output and exit codes. Both commands write reported state
the same way (`report_tree`): `reported/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml`
holding `{object: {apiVersion, kind, namespace, name, generation}, status, reportedAt}`
(docs/REFERENCE.md, "Reported state") — the object's `status` only: a Secret's data never reaches a
report, a log or an error.

`reportedAt` is the collection time (UTC, seconds), but a report whose object identity,
generation and status are unchanged keeps its previous bytes, so repeated collections of a steady
fleet change nothing in git.
"""
from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from enum import Enum
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import orjson

from ..names import rel_path
from ..core.readout.render import render_mailbox
from ..model import is_secret
from ..core.status.reported import dump_report, read_document
from ..core.serialize import dump_yaml, load_yaml
from ..core.status.syncreport import (SYNC_FILE, Drift, ObjectId, SyncError, SyncReport, applied_report, changed_fields, dump_sync_report, failed_report, mailbox_revision, parse_sync_report, steady_objects)
from ..core.tree import FileTree, put, walk
from ..model import KsgitopsError
from ..names import dns1123_label_error
from .shutdown import Shutdown

FIELD_MANAGER = "ksgitops"
CONTEXT_ANNOTATION = "ksgitops.kubestellar.io/kubeconfig-context"
CREATE_ONLY_ANNOTATION = "edge.kubestellar.io/downsync-overwrite"
PROJECTED_SELECTOR = "edge.kubestellar.io/projected=yes"
INVENTORY_NAMESPACE = "kube-system"
INVENTORY_PREFIX = "ksgitops-inventory-"
INVENTORY_KEY = "objects.json"
PROTECTED_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
NAMESPACES = "core/namespaces/"
CRDS = "apiextensions.k8s.io/customresourcedefinitions/"
LIST_THRESHOLD = 3  # objects of one collection read with one LIST (labelled ones) instead of GETs
SERVER_METADATA = ("uid", "resourceVersion", "managedFields", "generation", "creationTimestamp", "selfLink",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------
# What a mailbox sends, and reading it back from a WEC


@dataclass(frozen=True)
class Desired:
    """One rendered object of a mailbox, with the REST coordinates its mailbox path gives."""

    rel: str  # <group|core>/<resource>/<namespace|_cluster>/<name>
    body: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def resource(self) -> str:
        return self.rel.split("/")[1]

    @property
    def namespace(self) -> str:
        ns = self.rel.split("/")[2]
        return "" if ns == "_cluster" else ns

    @property
    def name(self) -> str:
        """The object's name (the path's last part is only its file name: see names.file_stem)."""
        name = (self.body.get("metadata") or {}).get("name")
        return name if isinstance(name, str) and name else self.rel.split("/", 3)[3]

    @property
    def stored_name(self) -> str:
        """The name, for an inventory entry, when the path's file name does not spell it."""
        return "" if self.rel.split("/", 3)[3] == self.name else self.name

    @property
    def secret(self) -> bool:
        return is_secret(self.body)

    @property
    def create_only(self) -> bool:
        annotations = (self.body.get("metadata") or {}).get("annotations") or {}
        return str(annotations.get(CREATE_ONLY_ANNOTATION, "")).lower() == "false"

    @property
    def phase(self) -> int:
        """Apply order: Namespaces, then CRDs, then everything else."""
        return 0 if self.rel.startswith(NAMESPACES) else 1 if self.rel.startswith(CRDS) else 2

    @property
    def identity(self) -> ObjectId:
        return ObjectId(self.api_version, self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        return str(self.identity)


def desired_objects(files: FileTree) -> list[Desired]:
    return [Desired(rel, body) for rel, body in render_mailbox(files) if len(rel.split("/")) == 4]


def read_live(cluster: Any, objects: Iterable[Desired]) -> tuple[dict[str, dict[str, Any] | None], dict[str, str]]:
    """The live copy of each object (None: absent), and a one-line error per object that could not
    be read. A collection holding several of them is read with one LIST of the projected objects;
    the ones it misses are read one by one. Raises kube.Unreachable."""
    from ..io.kube import ApiFailure
    live: dict[str, dict[str, Any] | None] = {}
    errors: dict[str, str] = {}
    groups: dict[tuple[str, str, str], list[Desired]] = {}
    for d in objects:
        groups.setdefault((d.api_version, d.resource, d.namespace), []).append(d)
    for (api_version, resource, namespace), members in groups.items():
        found: dict[str, dict[str, Any]] = {}
        if len(members) >= LIST_THRESHOLD:
            quiet = any(d.secret for d in members)
            try:
                listed = cluster.list_objects(api_version, resource, namespace, PROJECTED_SELECTOR, quiet=quiet)
                found = {str((o.get("metadata") or {}).get("name")): o for o in listed
                         if (o.get("metadata") or {}).get("namespace", "") in ("", namespace) or not namespace}
            except ApiFailure:
                found = {}  # fall back to one GET each
        for d in members:
            if d.name in found:
                live[d.rel] = found[d.name]
                continue
            try:
                live[d.rel] = cluster.get(api_version, resource, namespace, d.name, quiet=d.secret)
            except ApiFailure as e:
                errors[d.rel] = f"{d}: {e}"
    return live, errors


# ---------------------------------------------------------------------------------------------
# Reports (shared by collect and sync)


def report_document(d: Desired, live: dict[str, Any]) -> dict[str, Any]:
    """A reported-state document (docs/REFERENCE.md, "Reported state"): the identity sent, the
    generation the WEC gave it, its status (never data)."""
    identity: dict[str, Any] = {"apiVersion": d.api_version, "kind": d.kind, "name": d.name}
    if d.namespace:
        identity["namespace"] = d.namespace
    generation = (live.get("metadata") or {}).get("generation")
    if isinstance(generation, int) and not isinstance(generation, bool):
        identity["generation"] = generation
    doc: dict[str, Any] = {"object": identity}
    status = live.get("status")
    if isinstance(status, dict) and status and not d.secret:
        doc["status"] = status
    return doc


def report_tree(objects: Iterable[Desired], live: dict[str, dict[str, Any] | None], previous: FileTree | None,
                now: str, keep: Iterable[str] = ()) -> FileTree:
    """The whole `reported/` folder: one file per object present on the WEC; an absent object gets
    none, a report for an object no longer sent disappears. A report whose identity and status are
    unchanged keeps its previous bytes (and reportedAt); `keep` lists objects that could not be read:
    their previous report stays as it was."""
    previous = previous or {}
    kept = set(keep)
    tree: FileTree = {}
    sync = previous.get(SYNC_FILE)
    if isinstance(sync, bytes):  # the agent's sync report: only `sync` writes it
        tree[SYNC_FILE] = sync
    for d in objects:
        name = f"{d.rel}.yaml"
        old = _file(previous, name)
        if d.rel in kept:
            if old is not None:
                put(tree, name, old)
            continue
        body = live.get(d.rel)
        if body is None:
            continue
        doc = report_document(d, body)
        if old is not None and _same_report(old, doc):
            put(tree, name, old)
        else:
            put(tree, name, dump_report({**doc, "reportedAt": now}))
    return tree


def _file(tree: FileTree, path: str) -> bytes | None:
    node: Any = tree
    for part in path.split("/"):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node if isinstance(node, bytes) else None


def _same_report(data: bytes, doc: dict[str, Any]) -> bool:
    old = read_document(data)  # an unreadable old report is simply replaced
    if old is None:
        return False
    return bool(old.get("reportedAt")) and old.get("object") == doc["object"] and \
        (old.get("status") or None) == (doc.get("status") or None)


def count_files(tree: FileTree | None) -> int:
    """Object reports (or upsynced objects) in a folder; the sync report is not one."""
    return sum(1 for path, v in walk(tree or {}) if isinstance(v, bytes) and path != SYNC_FILE)


# ---------------------------------------------------------------------------------------------
# collect


@dataclass
class CollectOutcome:
    collected: list[str] = field(default_factory=list)  # WEC names read completely
    unreachable: dict[str, str] = field(default_factory=dict)  # WEC -> reason
    skipped: dict[str, str] = field(default_factory=dict)  # WEC -> why (no context, no mailbox folder)
    changed: list[str] = field(default_factory=list)  # mailboxes whose reported/ was rewritten
    reports: int = 0
    problems: list[str] = field(default_factory=list)  # per-object read failures, one line each

    @property
    def exit_code(self) -> int:
        return 3 if self.unreachable or self.problems else 0


@dataclass
class _Target:
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
    from . import usecases as app
    from ..io import kube
    from ..io.fs.worktree import write_generated
    src = app.open_source(Path(path), app.WORKTREE)
    result = app.placements_only(src)  # the WECs; their mailboxes are read as they are
    try:
        contexts, _current = kube.kubeconfig_contexts(kubeconfig)
    except kube.KubeError as e:
        raise KsgitopsError(str(e), exit_code=3) from None
    names = app.wec_display_names(result)
    outcome = CollectOutcome()
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
            outcome.problems.append(f"{name}: spaces/{mailbox}: cannot render the mailbox ({type(e).__name__})")
            continue
        previous = files.get("reported")
        targets.append(_Target(name, mailbox, context, objects, previous if isinstance(previous, dict) else None))
    stamp = now or utc_now()
    root = Path(path)
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
                target = futures[future]
                try:
                    live, errors = future.result()
                except kube.KubeError as e:
                    outcome.unreachable[target.name] = str(e)
                    continue
                tree = report_tree(target.objects, live, target.previous, stamp, errors)
                outcome.problems.extend(f"{target.name}: {line}" for line in sorted(errors.values()))
                outcome.collected.append(target.name)
                outcome.reports += count_files(tree)
                if tree != (target.previous or {}):
                    reports[f"spaces/{target.mailbox}/reported"] = tree or None
                    outcome.changed.append(target.mailbox)
        for future in pending:
            outcome.unreachable[futures[future].name] = f"timed out after {timeout:g}s"
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    write_generated(root, reports)  # one crash-safe transaction for every changed reported/
    outcome.collected.sort()
    outcome.changed.sort()
    return outcome


# ---------------------------------------------------------------------------------------------
# sync: apply, prune, inventory


@dataclass
class Entry:
    """An object the agent applied: identity (the mailbox rel is the key), uid, field shape."""

    api_version: str
    kind: str
    uid: str = ""
    shape: str = ""  # digest of the field paths last applied (no values)
    created: bool = False  # the agent created it (it was absent)
    name: str = ""  # the object's name ("" in inventories written before names could differ from rels)

    def as_json(self) -> dict[str, Any]:
        found = {"apiVersion": self.api_version, "kind": self.kind, "uid": self.uid, "shape": self.shape,
                 "created": self.created}
        return {**found, "name": self.name} if self.name else found

    def object_name(self, rel: str) -> str:
        return self.name or rel.split("/", 3)[3]


Inventory = dict[str, Entry]


def inventory_name(mailbox: str) -> str:
    return f"{INVENTORY_PREFIX}{mailbox}"


def load_inventory(cluster: Any, namespace: str, mailbox: str) -> tuple[Inventory, bool]:
    found = cluster.get("v1", "configmaps", namespace, inventory_name(mailbox))
    if found is None:
        return {}, False
    try:
        raw = orjson.loads(((found.get("data") or {}).get(INVENTORY_KEY)) or "{}")
        return {rel: Entry(str(e["apiVersion"]), str(e["kind"]), str(e.get("uid", "")), str(e.get("shape", "")),
                           bool(e.get("created", False)), str(e.get("name", "")))
                for rel, e in raw.items() if len(str(rel).split("/")) == 4}, True
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError) as e:
        raise InventoryError(f"inventory {namespace}/{inventory_name(mailbox)} is unreadable ({type(e).__name__}); "
                             "nothing is pruned until it is fixed or deleted") from None


class InventoryError(Exception):
    pass


def save_inventory(cluster: Any, namespace: str, mailbox: str, inventory: Inventory) -> None:
    text = orjson.dumps({rel: inventory[rel].as_json() for rel in sorted(inventory)},
                        option=orjson.OPT_SORT_KEYS).decode()
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": inventory_name(mailbox), "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "ksgitops",
                                    "ksgitops.kubestellar.io/mailbox": mailbox}},
            "data": {INVENTORY_KEY: text}}
    from ..io.kube import ApiFailure
    try:
        cluster.apply("v1", "configmaps", namespace, inventory_name(mailbox), body, FIELD_MANAGER)
    except ApiFailure as e:
        if e.status != 404 or cluster.get("v1", "namespaces", "", namespace) is not None:
            raise
        cluster.create("v1", "namespaces", "", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": namespace}}, FIELD_MANAGER)
        cluster.apply("v1", "configmaps", namespace, inventory_name(mailbox), body, FIELD_MANAGER)


def shape(body: dict[str, Any]) -> str:
    """A digest of the field paths of an object (never its values): when the paths the agent sends
    change, an apply is needed even if the live object holds every value sent (SSA removes fields
    the manager stopped sending)."""
    paths: list[str] = []

    def visit(node: Any, prefix: str) -> None:
        if isinstance(node, dict) and node:
            for key in node:
                visit(node[key], f"{prefix}/{key}")
        elif isinstance(node, list) and node:
            for i, item in enumerate(node):
                visit(item, f"{prefix}/{i}")
        else:
            paths.append(prefix)
    visit(body, "")
    return hashlib.sha256("\n".join(sorted(paths)).encode()).hexdigest()[:16]


def contains(live: Any, want: Any) -> bool:
    """True when `live` already holds every value of `want` (maps: a subset; lists: same length,
    element by element). A false "no" only costs a no-op apply."""
    if isinstance(want, dict):
        if not isinstance(live, dict):
            return False
        for key, value in want.items():
            if key not in live:
                if value is None or value == {} or value == []:
                    continue
                return False
            if not contains(live[key], value):
                return False
        return True
    if isinstance(want, list):
        return isinstance(live, list) and len(live) == len(want) and all(map(contains, live, want))
    if isinstance(want, bool) or isinstance(live, bool):
        return want is live
    return bool(live == want)


def _as_live(d: Desired) -> dict[str, Any]:
    """What the API server would show for the sent body (Secret stringData is stored as data)."""
    body = d.body
    if d.secret and isinstance(body.get("stringData"), dict):
        import base64
        body = dict(body)
        data = dict(body.get("data") or {})
        for key, value in body.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        body["data"] = data
    return body


def _uid(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


def _managed_by_us(obj: dict[str, Any]) -> bool:
    return any(isinstance(e, dict) and e.get("manager") == FIELD_MANAGER
               for e in (obj.get("metadata") or {}).get("managedFields") or [])


@dataclass
class ApplyOutcome:
    applied: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    unchanged: int = 0
    kept: list[str] = field(default_factory=list)  # create-only objects that exist: never touched
    pruned: list[str] = field(default_factory=list)
    live: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    unread: set[str] = field(default_factory=set)  # objects whose state is unknown (errors)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # decisions worth a line (e.g. a namespace kept)
    failures: list[SyncError] = field(default_factory=list)  # the errors again, per object (sync report)
    drift: dict[str, tuple[ObjectId, str, tuple[str, ...]]] = field(default_factory=dict)  # rel -> what changed

    def fail(self, rel: str, identity: ObjectId, message: str, line: str = "") -> None:
        """One object's error: a line for the log (`line`, else `<object>: <message>`), and an entry."""
        self.errors.append(line or f"{identity}: {message}")
        self.failures.append(SyncError(rel, message, identity))


class Act(Enum):
    """What the agent does with one object of the mailbox."""

    APPLY = "apply"  # server-side apply, forced: the live object lacks what is sent, or was changed
    CREATE = "create"  # create-only and absent: created, never touched again
    KEEP = "keep"  # create-only and present: left as it is
    UNCHANGED = "unchanged"  # holds every field sent, sent as last applied: nothing to write
    UNREADABLE = "unreadable"  # its live state could not be read: reported, not written


@dataclass(frozen=True, slots=True)
class Step:
    desired: Desired
    action: Act
    reason: str


def plan_phase(batch: Iterable[Desired], live: Mapping[str, dict[str, Any] | None], errors: Mapping[str, str],
               inventory: Inventory) -> list[Step]:
    """Decide, from plain data, what one phase of apply does with each object: pure (no cluster),
    so that what the agent would do can be read before it does it."""
    steps = []
    for d in batch:
        current, entry = live.get(d.rel), inventory.get(d.rel)
        if d.rel in errors:
            steps.append(Step(d, Act.UNREADABLE, errors[d.rel].removeprefix(f"{d}: ")))
        elif d.create_only:
            steps.append(Step(d, Act.CREATE, "create-only, absent") if current is None
                         else Step(d, Act.KEEP, "create-only, present"))
        elif current is None:
            steps.append(Step(d, Act.APPLY, "absent"))
        elif entry is not None and entry.shape == shape(d.body) and entry.uid == _uid(current) and \
                contains(current, _as_live(d)):
            steps.append(Step(d, Act.UNCHANGED, "holds every field sent, as last applied"))
        else:
            steps.append(Step(d, Act.APPLY, "differs from what is sent" if entry is not None and
                              entry.uid == _uid(current) else "not applied by the agent yet"))
    return steps


def apply_mailbox(cluster: Any, mailbox: str, objects: list[Desired], inventory_namespace: str = INVENTORY_NAMESPACE,
                  crd_timeout: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                  steady: set[str] | frozenset[str] = frozenset()) -> ApplyOutcome:
    """Bring the WEC to the mailbox: Namespaces, then CRDs (until discovery serves them), then the
    rest, with server-side apply (field manager `ksgitops`, forced) — skipped when the live object
    already holds every field sent and the set of fields sent is the one last applied; create-only
    objects are created when absent and never touched otherwise. Then prune what the agent applied
    earlier and the mailbox no longer holds. Raises kube.Unreachable and InventoryError.

    Drift: for the `steady` objects (sent as the agent last applied them) that the agent applied
    before, an apply that changes the live object means someone changed it on the WEC. As Flux
    compares a server-side apply dry run with the live object, the apply's result is compared with
    the object read just before (server-maintained fields aside): the fields that differ are the
    drift, and the apply has already corrected them. A deleted object is drift too (recreated)."""
    from ..io.kube import ApiFailure
    out = ApplyOutcome()
    inventory, _exists = load_inventory(cluster, inventory_namespace, mailbox)
    stored = dict(inventory)
    watched = {rel for rel in steady if rel in inventory}  # applied by the agent before, sent unchanged
    wanted = {d.rel for d in objects}
    for phase in (0, 1, 2):
        batch = sorted((d for d in objects if d.phase == phase), key=lambda d: d.rel)
        if not batch:
            continue
        live, errors = read_live(cluster, batch)
        steps = plan_phase(batch, live, errors, inventory)
        for step in steps:
            if step.action is Act.UNREADABLE:
                out.fail(step.desired.rel, step.desired.identity, step.reason)
                out.unread.add(step.desired.rel)
        plan = [(step.desired, step.action) for step in steps if step.action is not Act.UNREADABLE]
        fresh = {d.rel for d, action in plan if action in (Act.APPLY, Act.CREATE) and d.rel not in inventory}
        if fresh:  # record intent first: a crash after a write never leaves an object nobody prunes
            for d, _action in plan:
                if d.rel in fresh:
                    inventory[d.rel] = Entry(d.api_version, d.kind, name=d.stored_name)
            save_inventory(cluster, inventory_namespace, mailbox, inventory)
            stored = dict(inventory)
        crds = []
        for d, action in plan:
            current, entry = live.get(d.rel), inventory.get(d.rel)
            out.live[d.rel] = current
            try:
                if action is Act.UNCHANGED:
                    out.unchanged += 1
                elif action is Act.KEEP:
                    out.kept.append(str(d))
                    if not (entry is not None and entry.created and entry.uid and entry.uid == _uid(current)):
                        inventory.pop(d.rel, None)  # not created by the agent: never pruned
                elif action is Act.CREATE:
                    made = cluster.create(d.api_version, d.resource, d.namespace, d.body, FIELD_MANAGER, quiet=d.secret)
                    if made is None:  # someone else created it meanwhile
                        out.kept.append(str(d))
                        out.live[d.rel] = cluster.get(d.api_version, d.resource, d.namespace, d.name, quiet=d.secret)
                        inventory.pop(d.rel, None)
                    else:
                        out.created.append(str(d))
                        out.live[d.rel] = made
                        inventory[d.rel] = Entry(d.api_version, d.kind, _uid(made), shape(d.body), True, d.stored_name)
                else:
                    result = cluster.apply(d.api_version, d.resource, d.namespace, d.name, d.body, FIELD_MANAGER,
                                           force=True, quiet=d.secret)
                    out.applied.append(str(d))
                    out.live[d.rel] = result
                    if d.rel in watched:
                        _note_drift(out, d, current, result)
                    created = current is None or (entry is not None and entry.created and entry.uid == _uid(current))
                    inventory[d.rel] = Entry(d.api_version, d.kind, _uid(result), shape(d.body), created, d.stored_name)
                    if d.phase == 1:
                        crds.append(d)
            except ApiFailure as e:
                out.fail(d.rel, d.identity, str(e))
                out.unread.add(d.rel)
                if d.rel in fresh:
                    inventory.pop(d.rel, None)  # nothing was written: nothing to prune later
        for crd in crds:
            problem = _wait_for_crd(cluster, crd.body, crd_timeout, sleep)
            if problem:
                out.fail(crd.rel, crd.identity, problem)
    _prune(cluster, inventory, wanted, out)
    if inventory != stored:
        save_inventory(cluster, inventory_namespace, mailbox, inventory)
    return out


def _note_drift(out: ApplyOutcome, d: Desired, before: dict[str, Any] | None, after: dict[str, Any]) -> None:
    """Record what the apply of a steady object changed on the WEC (field paths, never values)."""
    if before is None:
        out.drift[d.rel] = (d.identity, "Deleted", ())
        return
    fields = changed_fields(before, after)
    if fields:
        out.drift[d.rel] = (d.identity, "Modified", tuple(fields))


def _wait_for_crd(cluster: Any, crd: dict[str, Any], timeout: float, sleep: Callable[[float], None]) -> str:
    spec = crd.get("spec") or {}
    group = str(spec.get("group") or "")
    plural = str((spec.get("names") or {}).get("plural") or "")
    versions = [str(v.get("name")) for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served", True)]
    if not group or not plural or not versions:
        return ""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        missing = [v for v in versions if plural not in (cluster.api_resources(f"{group}/{v}") or {})]
        if not missing:
            return ""
        if time.monotonic() >= deadline:
            return f"not served by the API server after {timeout:g}s ({', '.join(missing)})"
        sleep(delay)
        delay = min(delay * 2, 1.0)


def _prune(cluster: Any, inventory: Inventory, wanted: set[str], out: ApplyOutcome) -> None:
    """Delete what the agent applied and the mailbox no longer holds: ordinary objects first, then
    CRDs, then Namespaces. An object is deleted only while it is still the one the agent applied
    (same uid, or managed by `ksgitops` when the uid was never recorded); Namespaces and CRDs, whose
    deletion cascades, only when the agent created them, and never the system namespaces."""
    from ..io.kube import ApiFailure
    gone = sorted((rel for rel in inventory if rel not in wanted),
                  key=lambda rel: (-(0 if rel.startswith(NAMESPACES) else 1 if rel.startswith(CRDS) else 2), rel))
    for rel in gone:
        entry = inventory[rel]
        group, resource, ns, _ = rel.split("/", 3)
        name = entry.object_name(rel)
        namespace = "" if ns == "_cluster" else ns
        label = f"{entry.kind} {namespace + '/' if namespace else ''}{name}"
        cascading = rel.startswith(NAMESPACES) or rel.startswith(CRDS)
        try:
            current = cluster.get(entry.api_version, resource, namespace, name, quiet=True)
            if current is None:
                del inventory[rel]
                continue
            ours = _uid(current) == entry.uid if entry.uid else _managed_by_us(current)
            if not ours or (cascading and not entry.created) or \
                    (rel.startswith(NAMESPACES) and name in PROTECTED_NAMESPACES):
                del inventory[rel]  # not ours (any more): left alone, forgotten
                continue
            if cascading:
                foreign = _foreign_content(cluster, rel, current, inventory)
                if foreign:
                    out.notes.append(f"{label} left in place: it holds {foreign} the agent did not apply")
                    del inventory[rel]
                    continue
            if cluster.delete(entry.api_version, resource, namespace, name, _uid(current)):
                out.pruned.append(label)
            del inventory[rel]
        except ApiFailure as e:
            # kept in the inventory: retried next cycle
            out.fail(rel, ObjectId(entry.api_version, entry.kind, namespace, name), f"prune: {e}", f"prune {label}: {e}")


# Objects every namespace gets from the cluster itself, and kinds that are only records: they never
# make a Namespace "hold something the agent did not apply".
_AUTOMATIC = {("configmaps", "kube-root-ca.crt"), ("serviceaccounts", "default")}
_RECORDS = frozenset({"events", "endpoints", "endpointslices", "leases"})


def _foreign_content(cluster: Any, rel: str, current: dict[str, Any], inventory: Inventory) -> str:
    """Deleting a Namespace deletes everything in it, deleting a CRD every custom resource of it:
    what do they hold that the agent did not apply? "" when nothing (objects owned by other objects,
    e.g. a ReplicaSet's Pods, and the cluster's own per-namespace objects do not count)."""
    ours = {(r.split("/")[1], r.split("/")[2], e.object_name(r)) for r, e in inventory.items()}
    found: list[str] = []

    def scan(api_version: str, resource: str, namespace: str) -> None:
        for item in cluster.list_objects(api_version, resource, namespace, quiet=True):
            md = item.get("metadata") or {}
            name, ns = str(md.get("name", "")), str(md.get("namespace", "") or "")
            if (resource, ns or "_cluster", name) in ours or md.get("ownerReferences") or (resource, name) in _AUTOMATIC:
                continue
            if resource == "secrets" and str(item.get("type", "")) == "kubernetes.io/service-account-token":
                continue
            found.append(f"{resource}/{name}")

    if rel.startswith(NAMESPACES):
        namespace = rel.split("/", 3)[3]
        for group_version in cluster.group_versions():
            for res in (cluster.api_resources(group_version) or {}).values():
                if res.namespaced and "list" in res.verbs and "delete" in res.verbs and res.name not in _RECORDS:
                    scan(group_version, res.name, namespace)
    else:
        spec = current.get("spec") or {}
        group, plural = str(spec.get("group", "")), str((spec.get("names") or {}).get("plural", ""))
        versions = [str(v.get("name")) for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("served", True)]
        if group and plural and versions:
            scan(f"{group}/{versions[0]}", plural, "")
    if not found:
        return ""
    return f"{len(found)} object{'s' if len(found) > 1 else ''} ({', '.join(sorted(found)[:3])}{', ...' if len(found) > 3 else ''})"


# ---------------------------------------------------------------------------------------------
# sync: upsync


def upsync_tree(cluster: Any, syncerconfig: bytes | None) -> tuple[FileTree, list[str]]:
    """The objects the SyncerConfig's `spec.upsync` sets select on the WEC, as
    `upsynced/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml`, without server-set
    metadata (a Secret also without its data)."""
    from ..io.kube import ApiFailure
    tree: FileTree = {}
    errors: list[str] = []
    if not syncerconfig:
        return tree, errors
    try:
        config = load_yaml(syncerconfig) or {}
        sets = (config.get("spec") or {}).get("upsync") or []
    except Exception:  # noqa: BLE001 - a broken SyncerConfig is reported, not fatal
        return tree, ["syncerconfig.yaml: unreadable, nothing upsynced"]
    discovered: dict[str, tuple[str, dict[str, Any]] | None] = {}
    for rule in sets:
        if not isinstance(rule, dict):
            continue
        group = str(rule.get("apiGroup") or "")
        resources = [str(r) for r in rule.get("resources") or []]
        namespaces = [str(n) for n in rule.get("namespaces") or []]
        names = [str(n) for n in rule.get("names") or []]
        if not resources or not names:
            continue  # an empty list matches nothing (KubeStellar's UpsyncSet)
        try:
            if group not in discovered:
                version = cluster.preferred_version(group)
                served = cluster.api_resources(version) if version else None
                discovered[group] = (version, served) if version and served is not None else None
            found = discovered[group]
            if found is None:
                continue
            version, served = found
            chosen = served.values() if "*" in resources else [served[r] for r in resources if r in served]
            for res in sorted(chosen, key=lambda r: r.name):
                if res.namespaced and not namespaces:
                    continue
                scopes = [""] if not res.namespaced or "*" in namespaces else sorted(set(namespaces))
                for scope in scopes:
                    for item in cluster.list_objects(version, res.name, scope, quiet=res.kind == "Secret"):
                        md = item.get("metadata") or {}
                        name, ns = str(md.get("name", "")), str(md.get("namespace", "") or "")
                        if "*" not in names and name not in names:
                            continue
                        put(tree, f"{rel_path(group, res.name, ns if res.namespaced else '', name)}.yaml",
                            dump_yaml(_upsynced(item, version, res.kind)))
        except ApiFailure as e:
            errors.append(f"upsync {group or 'core'} {','.join(resources)}: {e}")
    return tree, errors


def _upsynced(item: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    body = dict(item)
    body["apiVersion"], body["kind"] = api_version, kind
    md = dict(body.get("metadata") or {})
    for key in SERVER_METADATA:
        md.pop(key, None)
    body["metadata"] = md
    if kind == "Secret" and api_version == "v1":
        body.pop("data", None)
        body.pop("stringData", None)
    return body


# ---------------------------------------------------------------------------------------------
# sync: the agent


@dataclass
class SyncOptions:
    mailbox: str
    repo: str = "."
    branch: str = "main"
    kubeconfig: str | None = None
    context: str | None = None
    cache_dir: Path | None = None
    inventory_namespace: str = INVENTORY_NAMESPACE
    timeout: float = 30.0  # per Kubernetes request
    crd_timeout: float = 60.0


@dataclass
class CycleOutcome:
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
                         f"kept {len(a.kept)}, pruned {len(a.pruned)}{drifted}; {self.reports} reports, "
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
    import pygit2
    from ..core.load.repoconfig import DEFAULT_AUTHOR_EMAIL, DEFAULT_AUTHOR_NAME
    return pygit2.Signature(DEFAULT_AUTHOR_NAME, DEFAULT_AUTHOR_EMAIL)


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
        from ..io.git.reportref import MailboxRepo, default_cache_dir
        check_mailbox_name(options.mailbox)
        self.options = options
        self.git = MailboxRepo(options.repo, options.branch, options.mailbox, options.cache_dir or default_cache_dir())

    def cycle(self, now: str | None = None, guard: Shutdown | None = None) -> CycleOutcome:
        from ..io import kube
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
            message = f"cannot render the mailbox ({type(e).__name__}): nothing applied"
            out.errors.append(f"spaces/{o.mailbox}: {message}")
            return self._failed(out, head, previous, failed_report(last, o.mailbox, message, stamp), guard)
        old = self.git.files_at(last.commit) if last is not None and last.commit and last.revision != revision else None
        steady = steady_objects(last, revision, old, files, [d.rel for d in objects])
        guard.checkpoint()
        try:
            with kube.Cluster(o.kubeconfig, o.context, o.timeout) as cluster:
                cluster.probe()
                applied = out.applied = apply_mailbox(cluster, o.mailbox, objects, o.inventory_namespace, o.crd_timeout,
                                                      steady=steady)
                out.errors.extend(applied.errors)
                out.notes.extend(applied.notes)
                upsynced, problems = upsync_tree(cluster, files.get("syncerconfig.yaml")  # type: ignore[arg-type]
                                                 if isinstance(files.get("syncerconfig.yaml"), bytes) else None)
                out.errors.extend(problems)
        except (kube.KubeError, InventoryError) as e:
            message = f"unreachable: {e}" if isinstance(e, kube.Unreachable) else str(e)
            out.errors.append(f"{o.mailbox}: {message}")
            return self._failed(out, head, previous, failed_report(last, o.mailbox, message, stamp), guard)
        reported = report_tree(objects, applied.live, previous, stamp, applied.unread)
        out.reports, out.upsynced = count_files(reported), count_files(upsynced)
        drifted = [Drift(rel, identity, change, fields, stamp) for rel, (identity, change, fields) in applied.drift.items()]
        sync = applied_report(last, o.mailbox, revision, str(head.id), stamp, applied.failures, drifted,
                              {d.rel for d in objects})
        reported[SYNC_FILE] = dump_sync_report(sync)
        guard.checkpoint()
        out.commit = self.git.commit(head, reported, upsynced, _author()).commit
        self._push(out, guard)
        return out

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
