"""Stage 6: emit. MailboxPlans and placements -> the generated file trees (docs/REFERENCE.md,
"Mailboxes").

kustomization.yaml and space.yaml are rendered from templates (names are DNS-1123, values are
single-quoted so `yes`, `1e3` or `true` stay strings): one template per mailbox is far cheaper
than a YAML dump. Trees that WECs have in common are built once and shared.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..place.base import Base
from ..load.mailboxspace import space_yaml as mailbox_space_yaml
from .mailbox import Entry, MailboxPlan, upsync_sets
from ..serialize import canonical_json, dump_yaml, yaml_str
from ..tree import KEEP, OTHERS, FileTree, put
from ..place.where import EDGE_API, Destination, Wec

def space_yaml(wec: Wec) -> bytes:
    return mailbox_space_yaml(wec.name, wec.uid, wec.space, wec.mailbox)


_REGEX_SPECIAL = frozenset("\\.+*?()|[]{}^$")


def _escape(name: str) -> str:
    """kustomize reads target name/namespace as anchored (Go) regular expressions: escape what
    Go's regexp.QuoteMeta escapes (a path-segment name such as an RBAC name may hold any of it)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in name)


def _target(base: Base) -> str:
    ref = base.ref
    group, _, version = base.api_version.rpartition("/")
    lines = ["  target:"]
    if group:
        lines.append(f"    group: {yaml_str(group)}")
    lines += [f"    version: {yaml_str(version)}", f"    kind: {yaml_str(ref.kind)}"]
    if ref.namespace:
        lines.append(f"    namespace: {yaml_str(_escape(ref.namespace))}")
    lines.append(f"    name: {yaml_str(_escape(ref.name))}")
    return "\n".join(lines)


def kustomization_yaml(entries: Iterable[Entry]) -> bytes:
    entries = list(entries)
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization"]
    lines.append("resources:" if entries else "resources: []")
    lines += [f"- objects/{e.rel}.yaml" for e in entries]
    patched = [e for e in entries if e.patch is not None]
    if patched:
        lines.append("patches:")
        for e in patched:
            lines.append(f"- path: patches/{e.rel}.json")
            lines.append(_target(e.base))
    return ("\n".join(lines) + "\n").encode()


def syncer_config(plan: MailboxPlan) -> dict[str, Any]:
    """SyncerConfig `the-one`, filled as KubeStellar v0.14.2's placement translator does."""
    namespaced: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    cluster: dict[tuple[str, str, str], list[str]] = {}
    for entry in plan.entries.values():
        base = entry.base
        key = (base.ref.group, base.resource, base.api_version.rpartition("/")[2])
        if base.namespaced:
            namespaced.setdefault(key, {}).setdefault(base.ref.namespace, []).append(base.ref.name)
        else:
            cluster.setdefault(key, []).append(base.ref.name)
    return {
        "apiVersion": EDGE_API,
        "kind": "SyncerConfig",
        "metadata": {"name": "the-one"},
        "spec": {
            "namespaceScope": {},
            "namespacedObjects": [
                {"apiVersion": v, "group": g, "resource": r,
                 "objectsByNamespace": [{"namespace": ns, "names": sorted(names)}
                                        for ns, names in sorted(by_ns.items())]}
                for (g, r, v), by_ns in sorted(namespaced.items())],
            "clusterScope": [{"apiVersion": v, "group": g, "resource": r, "objects": sorted(names)}
                             for (g, r, v), names in sorted(cluster.items())],
            "upsync": upsync_sets((*plan.placements, *plan.frozen)),
        },
    }


class Emitter:
    """Turns MailboxPlans into mailbox trees, sharing what WECs have in common."""

    def __init__(self) -> None:
        self._objects: dict[Any, FileTree] = {}
        self._texts: dict[Any, bytes] = {}

    def mailbox(self, plan: MailboxPlan) -> FileTree:
        entries = plan.entries
        tree: FileTree = {
            "space.yaml": space_yaml(plan.wec),
            "syncerconfig.yaml": self._syncer(plan),
            "kustomization.yaml": self._kustomization(plan),
            "objects": self._objects_tree(plan),
            "reported": KEEP,
            "upsynced": KEEP,
            OTHERS: KEEP,  # reconcile owns the names in this tree (patches too); anything else is kept
        }
        patches: FileTree = {}
        for entry in entries.values():
            if entry.patch is not None:
                put(patches, f"{entry.rel}.json", entry.patch)
        tree["patches"] = patches  # named even when empty: an old patches/ is reconcile's to remove
        return tree

    def _objects_tree(self, plan: MailboxPlan) -> FileTree:
        key = ("group", plan.group) if not plan.altered else None
        if key is not None and key in self._objects:
            return self._objects[key]
        tree: FileTree = {}
        for entry in plan.entries.values():
            put(tree, f"{entry.rel}.yaml", entry.data)
        if key is not None:
            self._objects[key] = tree
        return tree

    def _kustomization(self, plan: MailboxPlan) -> bytes:
        key = ("k", tuple((rel, e.patch is not None) for rel, e in plan.entries.items()))
        if key not in self._texts:
            self._texts[key] = kustomization_yaml(plan.entries.values())
        return self._texts[key]

    def _syncer(self, plan: MailboxPlan) -> bytes:
        key = ("s", plan.group, tuple((rel, e.base.api_version) for rel, e in plan.entries.items())
               if plan.altered else None)
        if key not in self._texts:
            self._texts[key] = dump_yaml(syncer_config(plan))
        return self._texts[key]


def sps_yaml(name: str, dests: Iterable[Destination]) -> bytes:
    """A SinglePlacementSlice (top-level destinations, as KubeStellar has it), from a template:
    an SPS lists every WEC a placement reaches, too long to dump through the YAML representer."""
    lines = [f"apiVersion: {EDGE_API}"]
    dests = list(dests)
    lines.append("destinations:" if dests else "destinations: []")
    for d in dests:
        lines += [f"- cluster: {yaml_str(d.cluster)}", f"  locationName: {yaml_str(d.location_name)}",
                  f"  syncTargetName: {yaml_str(d.sync_target_name)}",
                  f"  syncTargetUID: {yaml_str(d.sync_target_uid)}"]
    lines += ["kind: SinglePlacementSlice", "metadata:", f"  name: {yaml_str(name)}"]
    return ("\n".join(lines) + "\n").encode()


__all__ = ["Emitter", "space_yaml", "kustomization_yaml", "syncer_config", "sps_yaml", "canonical_json"]
