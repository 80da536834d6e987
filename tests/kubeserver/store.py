"""Storage and semantics: objects, resourceVersions, generation, managedFields, finalizers and the
event log that watches read; one lock guards everything."""
from __future__ import annotations

import bisect
import copy
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import ApiError, bad_request, details, name_of, not_found
from .managedfields import (UNTRACKED_META, Owner, Path_, del_path, get_path, owners_of, set_owners, tracked_paths,
                            update_owners)
from .patches import merge_patch
from .resources import CRD_PLURAL, Registry, ResourceType, now
from .selection import field_selector, label_selector
from .validation import check_crd, check_replica_counts, check_type


@dataclass
class Event:
    rv: int
    type: str
    gr: tuple[str, str]
    obj: dict


class Store:
    """Objects keyed by (group, plural, namespace, name), a global resourceVersion, an event log."""

    def __init__(self, terminate_namespaces: bool = False) -> None:
        self.terminate_namespaces = terminate_namespaces  # DELETE marks a Namespace; a controller removes it
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.registry = Registry()
        self.objects: dict[tuple[str, str, str, str], dict] = {}
        self.events: list[Event] = []
        self.rv = 0
        self.closed = False
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(self.registry.find("", "v1", "namespaces"), None, {"metadata": {"name": ns}}, "kubeserver")

    # ----- reading

    @staticmethod
    def key(rt: ResourceType, ns: str | None, name: str) -> tuple[str, str, str, str]:
        return (rt.group, rt.plural, ns or "", name)

    @staticmethod
    def out(rt: ResourceType, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = rt.api_version
        return obj

    def current(self, rt: ResourceType, ns: str | None, name: str) -> dict:
        obj = self.objects.get(self.key(rt, ns, name))
        if obj is None:
            raise not_found(rt, name)
        return obj

    def read(self, rt: ResourceType, ns: str | None, name: str) -> dict:
        with self.lock:
            return self.out(rt, self.current(rt, ns, name))

    def select(self, rt: ResourceType, ns: str | None, labels: str = "", fields: str = "") -> list[dict]:
        by_labels, by_fields = label_selector(labels), field_selector(fields)
        with self.lock:
            return [self.out(rt, obj) for (g, p, o_ns, _), obj in sorted(self.objects.items())
                    if (g, p) == rt.gr and (ns is None or o_ns == ns)
                    and by_labels(obj["metadata"].get("labels") or {}) and by_fields(obj["metadata"])]

    # ----- writing

    def create(self, rt: ResourceType, ns: str | None, body: dict, manager: str | None,
               dry: bool = False, owners: dict[Owner, set[Path_]] | None = None, raw: bool = False) -> dict:
        with self.lock:
            obj = copy.deepcopy(body)
            meta = obj.setdefault("metadata", {})
            check_type(rt, obj)
            if not meta.get("name"):
                if not meta.get("generateName"):
                    raise ApiError(422, "Invalid", f"{rt.kind} is invalid: metadata.name: Required value: "
                                                   "name or generateName is required")
                meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
            name = meta["name"]
            if "/" in name or name in (".", ".."):
                raise ApiError(422, "Invalid", f'{rt.kind} "{name}" is invalid: metadata.name: Invalid value')
            ns = self._check_namespace(rt, ns, obj)
            if self.key(rt, ns, name) in self.objects:
                resource = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
                raise ApiError(409, "AlreadyExists", f'{resource} "{name}" already exists', details(rt, name))
            for key in ("resourceVersion", "managedFields", "deletionTimestamp"):
                meta.pop(key, None)
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now(), generation=1)
            if rt.status and not raw:
                obj.pop("status", None)
            if rt.gr == ("", "namespaces"):
                obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
                obj.setdefault("status", {"phase": "Active"})
            if rt.gr == ("", "pods") and not raw:
                obj["status"] = {"phase": "Pending"}  # as the pod registry's PrepareForCreate sets it
            if rt.gr == CRD_PLURAL:
                check_crd(obj)
            if owners is None:
                owners = {(manager, "Update", ""): tracked_paths(obj, None)} if manager else {}
            set_owners(rt, obj, owners, {})
            return self._commit(rt, None, obj, dry)

    def update(self, rt: ResourceType, ns: str | None, name: str, body: dict, sub: str, manager: str | None,
               dry: bool = False, owners: dict[Owner, set[Path_]] | None = None) -> dict:
        """Replace `name` with body. sub: "" (main resource), "status", or "raw" (test handle: keep all)."""
        with self.lock:
            old = self.current(rt, ns, name)
            new = copy.deepcopy(body)
            meta = new.setdefault("metadata", {})
            check_type(rt, new)
            if meta.get("name", name) != name or (rt.namespaced and meta.get("namespace", ns) != ns):
                raise bad_request(f"the name of the object ({meta.get('name')}) does not match the name "
                                  f"on the URL ({name})")
            if meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {rt.plural} "{name}": the '
                               "object has been modified; please apply your changes to the latest version "
                               "and try again", details(rt, name))
            if sub == "status":
                new = {**copy.deepcopy(old), "status": new.get("status")}
                check_replica_counts(rt, name, new.get("status") or {})
            elif rt.status and sub != "raw":
                new["status"] = copy.deepcopy(old.get("status"))
            if new.get("status") is None:
                new.pop("status", None)
            for key in UNTRACKED_META - {"name", "namespace", "generateName", "resourceVersion"}:
                if key in old["metadata"]:
                    new["metadata"][key] = old["metadata"][key]
                else:
                    new["metadata"].pop(key, None)
            new["metadata"].update(name=name, resourceVersion=old["metadata"]["resourceVersion"])
            if ns:
                new["metadata"]["namespace"] = ns
            spec = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status", "apiVersion")}
            if spec(new) != spec(old):
                new["metadata"]["generation"] = old["metadata"].get("generation", 0) + 1
            if rt.gr == CRD_PLURAL:
                check_crd(new)
            if owners is None:
                owners = update_owners(old, new, manager, rt.status and sub != "raw", sub) \
                    if manager else owners_of(old)
            set_owners(rt, new, owners, owners_of(old), old)
            if old["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers") and \
                    not (rt.gr == ("", "namespaces") and (new.get("spec") or {}).get("finalizers")):
                return self._remove(rt, old, dry)
            strip = lambda o: {**o, "metadata": {**o["metadata"], "managedFields": [
                {k: v for k, v in e.items() if k != "time"} for e in o["metadata"].get("managedFields", [])]}}
            if strip(new) == strip(old):
                return self.out(rt, old)    # no-op writes change nothing, like a real server
            return self._commit(rt, old, new, dry)

    def apply(self, rt: ResourceType, ns: str | None, name: str, config: dict, sub: str, manager: str,
              force: bool, dry: bool = False) -> tuple[int, dict]:
        """Server-side apply: merge config in, owning its fields; drop fields this manager no longer sets."""
        with self.lock:
            if not isinstance(config, dict):
                raise bad_request("apply patch must be an object")
            check_type(rt, config, required=True)
            if config.get("metadata", {}).get("name", name) != name:
                raise bad_request(f"the name of the object ({config['metadata']['name']}) does not match "
                                  f"the name on the URL ({name})")
            only_status = True if sub == "status" else (False if rt.status else None)
            if only_status is False:
                config = {k: v for k, v in config.items() if k != "status"}
            fields = tracked_paths(config, only_status)
            me: Owner = (manager, "Apply", sub)
            old = self.objects.get(self.key(rt, ns, name))
            if old is None:
                if sub:
                    raise not_found(rt, name)
                body = merge_patch(config, {"metadata": {"name": name}})
                return 201, self.create(rt, ns, body, None, dry, owners={me: fields})
            owners = owners_of(old)
            conflicts = {(who, p) for who, paths in owners.items() if who != me
                         for p in paths & fields if get_path(old, p) != get_path(config, p)}
            if conflicts and not force:
                listing = "; ".join(f'conflict with "{who[0]}"'
                                    f'{" using " + old["apiVersion"] if who[1] == "Update" else ""}: .{".".join(p)}'
                                    for who, p in sorted(conflicts))
                raise ApiError(409, "Conflict", f"Apply failed with {len(conflicts)} conflict(s): {listing}",
                               details(rt, name, causes=[{"reason": "FieldManagerConflict", "field": ".".join(p),
                                                          "message": f'conflict with "{who[0]}"'}
                                                         for who, p in sorted(conflicts)]))
            for who, p in conflicts:
                owners[who].discard(p)
            others = set().union(*(paths for who, paths in owners.items() if who != me))
            result = copy.deepcopy(old)
            for p in owners.get(me, set()) - fields - others:
                del_path(result, p)
            owners[me] = fields
            result = merge_patch(result, config)
            return 200, self.update(rt, ns, name, result, sub or "", None, dry, owners=owners)

    def delete(self, rt: ResourceType, ns: str | None, name: str, options: dict, dry: bool = False) -> dict:
        with self.lock:
            obj = self.current(rt, ns, name)
            pre = options.get("preconditions") or {}
            for key in ("uid", "resourceVersion"):
                if pre.get(key) and pre[key] != obj["metadata"].get(key):
                    raise ApiError(409, "Conflict", f"Precondition failed: {key} in precondition: {pre[key]}, "
                                   f"{key} in object meta: {obj['metadata'].get(key)}")
            if rt.gr == ("", "namespaces") and self.terminate_namespaces:
                return self._terminate(rt, obj, dry)
            if rt.gr == ("", "namespaces"):
                for (g, p, o_ns, o_name), child in list(self.objects.items()):
                    if o_ns == name and not dry:
                        self._remove(self.registry.find(g, None, p), child, dry)
                gone = self._remove(rt, obj, dry)
                gone["metadata"]["deletionTimestamp"] = now()
                gone["status"] = {"phase": "Terminating"}
                return gone
            if obj["metadata"].get("finalizers"):
                if obj["metadata"].get("deletionTimestamp"):
                    return self.out(rt, obj)
                marked = copy.deepcopy(obj)
                marked["metadata"].update(deletionTimestamp=now(), deletionGracePeriodSeconds=0)
                return self._commit(rt, obj, marked, dry)
            gone = self._remove(rt, obj, dry)
            if rt.returns_deleted:
                return gone
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": details(rt, name, uid=obj["metadata"]["uid"])}

    # ----- internals

    def _terminate(self, rt: ResourceType, namespace: dict, dry: bool) -> dict:
        """DELETE of a Namespace on a real server (pkg/registry/core/namespace/storage/storage.go):
        marked Terminating; the namespace controller empties and removes it."""
        if namespace["metadata"].get("deletionTimestamp"):
            return self.out(rt, namespace)
        marked = copy.deepcopy(namespace)
        marked["metadata"]["deletionTimestamp"] = now()
        marked["status"] = {"phase": "Terminating"}
        return self._commit(rt, namespace, marked, dry)

    def _check_namespace(self, rt: ResourceType, ns: str | None, obj: dict) -> str | None:
        meta = obj["metadata"]
        if not rt.namespaced:
            meta.pop("namespace", None)
            return None
        ns = ns or meta.get("namespace")
        if not ns or meta.get("namespace", ns) != ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        meta["namespace"] = ns
        namespace = self.objects.get(("", "namespaces", "", ns))
        if namespace is None:
            raise not_found(self.registry.find("", "v1", "namespaces"), ns)
        if namespace["metadata"].get("deletionTimestamp"):  # the NamespaceLifecycle admission plugin
            raise ApiError(403, "Forbidden", f'{rt.plural} "{name_of(obj)}" is forbidden: unable to create new '
                           f"content in namespace {ns} because it is being terminated",
                           details(rt, name_of(obj), causes=[{"reason": "NamespaceTerminating",
                                                               "message": f"namespace {ns} is being terminated",
                                                               "field": "metadata.namespace"}]))
        return ns

    def _sync_crd(self, old: dict | None, new: dict | None) -> None:
        """Serve the versions of a created or changed CRD; stop serving (and drop objects) when deleted."""
        if old:
            names, group = old["spec"]["names"], old["spec"]["group"]
            self.registry.remove_gr(group, names["plural"])
            if new is None:
                for key, obj in list(self.objects.items()):
                    if key[:2] == (group, names["plural"]):
                        del self.objects[key]
                        self._log("DELETED", (group, names["plural"]), obj)
        if new:
            spec = new["spec"]
            for v in spec["versions"]:
                if v.get("served", True):
                    self.registry.add(ResourceType(
                        spec["group"], v["name"], spec["names"]["kind"], spec["names"]["plural"],
                        spec.get("scope", "Namespaced") == "Namespaced", tuple(spec["names"].get("shortNames", [])),
                        "status" in (v.get("subresources") or {}), custom=True))

    def _commit(self, rt: ResourceType, old: dict | None, new: dict, dry: bool) -> dict:
        if dry:
            return self.out(rt, new)
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        key = self.key(rt, new["metadata"].get("namespace"), new["metadata"]["name"])
        self.objects[key] = new
        self._log("MODIFIED" if old else "ADDED", rt.gr, new, bump=False)
        if rt.gr == CRD_PLURAL:
            self._sync_crd(old, new)
        return self.out(rt, new)

    def _remove(self, rt: ResourceType, obj: dict, dry: bool) -> dict:
        if not dry:
            del self.objects[self.key(rt, obj["metadata"].get("namespace"), obj["metadata"]["name"])]
            self._log("DELETED", rt.gr, obj)
            if rt.gr == CRD_PLURAL:
                self._sync_crd(obj, None)
        return self.out(rt, obj)

    def _log(self, kind: str, gr: tuple[str, str], obj: dict, bump: bool = True) -> None:
        if bump:
            self.rv += 1
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = str(self.rv)
        self.events.append(Event(self.rv, kind, gr, copy.deepcopy(obj)))
        self.changed.notify_all()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            self.changed.notify_all()

    def watch(self, rt: ResourceType, ns: str | None, query: dict) -> Iterator[dict]:
        """Validate now, then stream events (initial ADDEDs when resourceVersion is unset or "0")."""
        by_labels = label_selector(query.get("labelSelector", ""))
        by_fields = field_selector(query.get("fieldSelector", ""))
        try:
            timeout = float(query.get("timeoutSeconds") or 1800)
            since = int(query.get("resourceVersion") or 0)
        except ValueError:
            raise bad_request("invalid resourceVersion or timeoutSeconds") from None
        wanted = lambda o: ((ns is None or o["metadata"].get("namespace") == ns)
                            and by_labels(o["metadata"].get("labels") or {}) and by_fields(o["metadata"]))
        with self.lock:
            initial = [] if since else [o for o in self.select(rt, ns) if wanted(o)]
            since = since or self.rv

        def stream() -> Iterator[dict]:
            nonlocal since
            deadline = time.monotonic() + timeout
            for obj in initial:
                yield {"type": "ADDED", "object": obj}
            while True:
                with self.lock:
                    start = bisect.bisect_right(self.events, since, key=lambda e: e.rv)
                    fresh = [e for e in self.events[start:] if e.gr == rt.gr]
                    if not fresh and not self.closed and time.monotonic() < deadline:
                        self.changed.wait(max(0.0, deadline - time.monotonic()))
                        continue
                    if self.events:
                        since = max(since, self.events[-1].rv)
                for e in fresh:
                    if wanted(e.obj):
                        yield {"type": e.type, "object": self.out(rt, e.obj)}
                if self.closed or time.monotonic() >= deadline:
                    return
        return stream()

