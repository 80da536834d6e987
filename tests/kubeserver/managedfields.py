"""Field paths and managedFields: which manager owns which fields of an object, as updates and
server-side apply record it."""
from __future__ import annotations

from typing import Any

from .resources import ResourceType, now

MISSING = object()

Path_ = tuple[str, ...]
UNTRACKED_META = {"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                  "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "generateName", "selfLink"}


def leaf_paths(obj: Any, prefix: Path_ = ()) -> set[Path_]:
    """Paths to non-map values and empty maps; lists count as single (atomic) values."""
    if not isinstance(obj, dict) or not obj:
        return {prefix} if prefix else set()
    return {p for k, v in obj.items() for p in leaf_paths(v, prefix + (k,))}


def tracked_paths(obj: dict, status: bool | None) -> set[Path_]:
    """Field paths that managedFields tracks: status only (True), all but status (False) or all (None)."""
    paths = {p for p in leaf_paths(obj) if p[0] not in ("apiVersion", "kind")
             and not (p[0] == "metadata" and (len(p) == 1 or p[1] in UNTRACKED_META))}
    return paths if status is None else {p for p in paths if (p[0] == "status") == status}


def get_path(obj: Any, path: Path_) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


def del_path(obj: dict, path: Path_) -> None:
    """Remove a field and the maps it leaves empty (never metadata itself)."""
    parents = [obj]
    for key in path[:-1]:
        parents.append(parents[-1].get(key) if isinstance(parents[-1], dict) else None)
    if not isinstance(parents[-1], dict):
        return
    parents[-1].pop(path[-1], None)
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth] == {} and path[:depth] != ("metadata",):
            parents[depth - 1].pop(path[depth - 1], None)


def fields_v1(paths: set[Path_]) -> dict:
    tree: dict = {}
    for path in paths:
        node = tree
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return tree


def from_fields_v1(tree: dict, prefix: Path_ = ()) -> set[Path_]:
    children = {k: v for k, v in tree.items() if k.startswith("f:")}
    if not children:
        return {prefix} if prefix else set()
    return {p for k, v in children.items() for p in from_fields_v1(v, prefix + (k[2:],))}


Owner = tuple[str, str, str]     # (manager, operation, subresource)


def owners_of(obj: dict) -> dict[Owner, set[Path_]]:
    return {(e.get("manager", ""), e.get("operation", "Update"), e.get("subresource", "")):
            from_fields_v1(e.get("fieldsV1") or {}) for e in obj["metadata"].get("managedFields") or []}


def update_owners(old: dict, new: dict, manager: str, has_status: bool, sub: str) -> dict:
    """An update takes the fields it changed from their owners; removed fields are owned by nobody."""
    owners = owners_of(old)
    scope = (sub == "status") if has_status else None
    changed = {p for p in tracked_paths(new, scope) if get_path(old, p) != get_path(new, p)}
    for paths in owners.values():
        paths -= changed
    me = (manager, "Update", sub if sub == "status" else "")
    owners[me] = owners.get(me, set()) | changed
    return owners


def set_owners(rt: ResourceType, obj: dict, owners: dict, before: dict, old: dict | None = None) -> None:
    previous = {(e["manager"], e["operation"], e.get("subresource", "")): e
                for e in (old or {}).get("metadata", {}).get("managedFields") or []}
    entries = []
    for who, paths in sorted(owners.items()):
        paths = {p for p in paths if get_path(obj, p) is not MISSING}
        if not paths:
            continue
        entry = {"manager": who[0], "operation": who[1], "apiVersion": rt.api_version, "time": now(),
                 "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}
        if who[2]:
            entry["subresource"] = who[2]
        if who in previous and before.get(who) == paths:
            entry["time"] = previous[who]["time"]
        entries.append(entry)
    obj["metadata"]["managedFields"] = entries
    if not entries:
        del obj["metadata"]["managedFields"]
