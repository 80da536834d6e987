"""The agent's inventory on the WEC (what it applied: identity, uid, field shape), and the
comparisons that tell whether an object still holds what was sent."""
from __future__ import annotations

import base64
import hashlib
from typing import Any

from msgspec import Struct
import orjson

from .desired import Desired, FIELD_MANAGER, INVENTORY_KEY, INVENTORY_PREFIX
from ...io.kube import ApiFailure

# ---------------------------------------------------------------------------------------------
# sync: apply, prune, inventory


class Entry(Struct):
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


def as_live(d: Desired) -> dict[str, Any]:
    """What the API server would show for the sent body (Secret stringData is stored as data)."""
    body = d.body
    if d.secret and isinstance(body.get("stringData"), dict):
        body = dict(body)
        data = dict(body.get("data") or {})
        for key, value in body.pop("stringData").items():
            data[key] = base64.b64encode(str(value).encode()).decode()
        body["data"] = data
    return body


def uid(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("uid") or "")


def managed_by_us(obj: dict[str, Any]) -> bool:
    return any(isinstance(e, dict) and e.get("manager") == FIELD_MANAGER
               for e in (obj.get("metadata") or {}).get("managedFields") or [])
