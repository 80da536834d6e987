"""What a mailbox sends (`Desired`, in apply order), reading it back from a WEC, and the report
documents both collect and sync write."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

from msgspec import Struct

from ...core.readout.render import render_mailbox
from ...model import is_secret
from ...core.status.reported import dump_report, read_document
from ...core.status.syncreport import SYNC_FILE, ObjectId
from ...core.tree import FileTree, put, walk
from ...io.kube import ApiFailure

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


class Desired(Struct, frozen=True):
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
