"""Upsync: what the SyncerConfig's `spec.upsync` sets select on a WEC, read back as files for the
mailbox's `upsynced/` folder (KubeStellar's UpsyncSet semantics)."""
from __future__ import annotations

from typing import Any

from ...core.serialize import dump_yaml, load_yaml
from ...core.tree import FileTree, put
from ...io.kube import ApiFailure
from ...names import rel_path
from .desired import SERVER_METADATA


def upsync_tree(cluster: Any, syncerconfig: bytes | None) -> tuple[FileTree, list[str]]:
    """The objects the SyncerConfig's `spec.upsync` sets select on the WEC, as
    `upsynced/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml`, without server-set
    metadata (a Secret also without its data)."""
    tree: FileTree = {}
    errors: list[str] = []
    if not syncerconfig:
        return tree, errors
    try:
        config = load_yaml(syncerconfig) or {}
        sets = (config.get("spec") or {}).get("upsync") or []
    except Exception:  # noqa: BLE001 - a broken SyncerConfig is reported, not fatal
        return tree, ["syncerconfig.yaml: unreadable, nothing upsynced"]
    served = _Served(cluster)
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
            for version, res, scope in served.collections(group, resources, namespaces):
                for item in cluster.list_objects(version, res.name, scope, quiet=res.kind == "Secret"):
                    md = item.get("metadata") or {}
                    name, ns = str(md.get("name", "")), str(md.get("namespace", "") or "")
                    if "*" in names or name in names:
                        put(tree, f"{rel_path(group, res.name, ns if res.namespaced else '', name)}.yaml",
                            dump_yaml(_upsynced(item, version, res.kind)))
        except ApiFailure as e:
            errors.append(f"upsync {group or 'core'} {','.join(resources)}: {e}")
    return tree, errors


class _Served:
    """What the WEC serves, discovered once per API group."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.discovered: dict[str, tuple[str, dict[str, Any]] | None] = {}

    def collections(self, group: str, resources: list[str], namespaces: list[str]) -> list[tuple[str, Any, str]]:
        """(version, resource, namespace or "") of every collection an UpsyncSet selects."""
        if group not in self.discovered:
            version = self.cluster.preferred_version(group)
            served = self.cluster.api_resources(version) if version else None
            self.discovered[group] = (version, served) if version and served is not None else None
        found = self.discovered[group]
        if found is None:
            return []
        version, served = found
        chosen = served.values() if "*" in resources else [served[r] for r in resources if r in served]
        out = []
        for res in sorted(chosen, key=lambda r: r.name):
            if res.namespaced and not namespaces:
                continue
            scopes = [""] if not res.namespaced or "*" in namespaces else sorted(set(namespaces))
            out += [(version, res, scope) for scope in scopes]
        return out


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
