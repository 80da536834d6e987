"""Applying a mailbox to a WEC: `plan_phase` decides (pure: typed steps with reasons), then
`apply_mailbox` acts, phase by phase (Namespaces, CRDs, the rest), prunes what the mailbox
no longer holds, and notes drift."""
from __future__ import annotations

import time
from enum import Enum
from typing import Any, Callable, Iterable, Mapping

from msgspec import Struct, field

from ...core.status.syncreport import ObjectId, SyncError, changed_fields
from ...io.kube import ApiFailure
from ...model import counted
from .desired import CRDS, Desired, FIELD_MANAGER, INVENTORY_NAMESPACE, NAMESPACES, PROTECTED_NAMESPACES, read_live
from .inventory import Entry, Inventory, as_live, contains, load_inventory, managed_by_us, save_inventory, shape, uid

class ApplyOutcome(Struct):
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


class Step(Struct, frozen=True):
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
        elif entry is not None and entry.shape == shape(d.body) and entry.uid == uid(current) and \
                contains(current, as_live(d)):
            steps.append(Step(d, Act.UNCHANGED, "holds every field sent, as last applied"))
        else:
            steps.append(Step(d, Act.APPLY, "differs from what is sent" if entry is not None and
                              entry.uid == uid(current) else "not applied by the agent yet"))
    return steps


class MailboxPlan(Struct):
    """What a sync would do on a WEC, read without writing: one step per object, phase by phase,
    and the inventory entries no longer in the mailbox (pruned if still the agent's)."""

    steps: list[Step] = field(default_factory=list)
    prune: list[str] = field(default_factory=list)  # "Kind namespace/name"

    def lines(self) -> list[str]:
        out = [f"{s.action.value:<10} {s.desired}  ({s.reason})" for s in self.steps]
        return out + [f"{'prune':<10} {label}  (no longer in the mailbox; deleted if still the agent's)"
                      for label in self.prune]


def plan_mailbox(cluster: Any, mailbox: str, objects: list[Desired],
                 inventory_namespace: str = INVENTORY_NAMESPACE) -> MailboxPlan:
    """The plan of `apply_mailbox`, from live reads only (a dry run). An object in a Namespace the
    plan would create reads as absent, as it is."""
    inventory, _exists = load_inventory(cluster, inventory_namespace, mailbox)
    out = MailboxPlan()
    for phase in (0, 1, 2):
        batch = sorted((d for d in objects if d.phase == phase), key=lambda d: d.rel)
        if batch:
            live, errors = read_live(cluster, batch)
            out.steps.extend(plan_phase(batch, live, errors, inventory))
    wanted = {d.rel for d in objects}
    for rel in sorted(rel for rel in inventory if rel not in wanted):
        entry = inventory[rel]
        namespace = rel.split("/")[2]
        where = "" if namespace == "_cluster" else namespace + "/"
        out.prune.append(f"{entry.kind} {where}{entry.object_name(rel)}")
    return out


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
    run = _Executor(cluster, mailbox, inventory_namespace, steady)
    for phase in (0, 1, 2):
        batch = sorted((d for d in objects if d.phase == phase), key=lambda d: d.rel)
        if batch:
            for crd in run.phase(batch):
                problem = _wait_for_crd(cluster, crd.body, crd_timeout, sleep)
                if problem:
                    run.out.fail(crd.rel, crd.identity, problem)
    _prune(cluster, run.inventory, {d.rel for d in objects}, run.out)
    run.save_if_changed()
    return run.out


class _Executor:
    """Acts on one mailbox's plan, phase by phase, keeping the inventory (what the agent applied)
    in step: intent recorded before a first write, entries after each write."""

    def __init__(self, cluster: Any, mailbox: str, inventory_namespace: str, steady: set[str] | frozenset[str]) -> None:
        self.cluster, self.mailbox, self.namespace = cluster, mailbox, inventory_namespace
        self.out = ApplyOutcome()
        self.inventory, _exists = load_inventory(cluster, inventory_namespace, mailbox)
        self.stored = dict(self.inventory)
        self.watched = {rel for rel in steady if rel in self.inventory}  # applied before, sent unchanged

    def phase(self, batch: list[Desired]) -> list[Desired]:
        """Plan and act on one phase; returns the CRDs applied (to wait for)."""
        live, errors = read_live(self.cluster, batch)
        steps = plan_phase(batch, live, errors, self.inventory)
        for step in steps:
            if step.action is Act.UNREADABLE:
                self.out.fail(step.desired.rel, step.desired.identity, step.reason)
                self.out.unread.add(step.desired.rel)
        plan: list[tuple[Desired, Act]] = [(step.desired, step.action) for step in steps
                                           if step.action is not Act.UNREADABLE]
        fresh = self._record_intent(plan)
        crds = []
        for d, action in plan:
            self.out.live[d.rel] = live.get(d.rel)
            try:
                if self._act(d, action, live.get(d.rel)) and d.phase == 1:
                    crds.append(d)
            except ApiFailure as e:
                self.out.fail(d.rel, d.identity, str(e))
                self.out.unread.add(d.rel)
                if d.rel in fresh:
                    self.inventory.pop(d.rel, None)  # nothing was written: nothing to prune later
        return crds

    def _record_intent(self, plan: list[tuple[Desired, Act]]) -> set[str]:
        """Objects about to be written for the first time go into the inventory before the write:
        a crash after a write never leaves an object nobody prunes."""
        fresh = {d.rel for d, action in plan if action in (Act.APPLY, Act.CREATE) and d.rel not in self.inventory}
        if fresh:
            for d, _action in plan:
                if d.rel in fresh:
                    self.inventory[d.rel] = Entry(d.api_version, d.kind, name=d.stored_name)
            self.save_if_changed()
        return fresh

    def _act(self, d: Desired, action: Act, current: dict[str, Any] | None) -> bool:
        """One step; True when the object was applied."""
        entry = self.inventory.get(d.rel)
        if action is Act.UNCHANGED:
            self.out.unchanged += 1
        elif action is Act.KEEP:
            self.out.kept.append(str(d))
            if not (entry is not None and entry.created and entry.uid and entry.uid == uid(current)):
                self.inventory.pop(d.rel, None)  # not created by the agent: never pruned
        elif action is Act.CREATE:
            self._create(d)
        else:
            self._apply(d, current, entry)
            return True
        return False

    def _create(self, d: Desired) -> None:
        made = self.cluster.create(d.api_version, d.resource, d.namespace, d.body, FIELD_MANAGER, quiet=d.secret)
        if made is None:  # someone else created it meanwhile
            self.out.kept.append(str(d))
            self.out.live[d.rel] = self.cluster.get(d.api_version, d.resource, d.namespace, d.name, quiet=d.secret)
            self.inventory.pop(d.rel, None)
        else:
            self.out.created.append(str(d))
            self.out.live[d.rel] = made
            self.inventory[d.rel] = Entry(d.api_version, d.kind, uid(made), shape(d.body), True, d.stored_name)

    def _apply(self, d: Desired, current: dict[str, Any] | None, entry: Entry | None) -> None:
        result = self.cluster.apply(d.api_version, d.resource, d.namespace, d.name, d.body, FIELD_MANAGER,
                                    force=True, quiet=d.secret)
        self.out.applied.append(str(d))
        self.out.live[d.rel] = result
        if d.rel in self.watched:
            _note_drift(self.out, d, current, result)
        created = current is None or (entry is not None and entry.created and entry.uid == uid(current))
        self.inventory[d.rel] = Entry(d.api_version, d.kind, uid(result), shape(d.body), created, d.stored_name)

    def save_if_changed(self) -> None:
        if self.inventory != self.stored:
            save_inventory(self.cluster, self.namespace, self.mailbox, self.inventory)
            self.stored = dict(self.inventory)


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
            ours = uid(current) == entry.uid if entry.uid else managed_by_us(current)
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
            if cluster.delete(entry.api_version, resource, namespace, name, uid(current)):
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
    return f"{counted(len(found), 'object')} ({', '.join(sorted(found)[:3])}{', ...' if len(found) > 3 else ''})"
