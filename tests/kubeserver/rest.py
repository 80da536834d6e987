"""REST routing: (method, path, query, headers, body) -> (code, document or event stream)."""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import yaml

from .errors import ApiError, bad_request
from .patches import json_patch, merge_patch
from .resources import VERSION_INFO, ResourceType
from .store import Store


PATCH_TYPES = ("application/apply-patch+yaml", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/json-patch+json")


@dataclass
class Route:
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str


class Api:
    def __init__(self, store: Store) -> None:
        self.store = store

    def handle(self, method: str, path: str, query: dict, headers: dict, body: bytes) -> tuple[int, Any]:
        """(status code, JSON document) or (200, iterator of watch events)."""
        try:
            parts = [unquote(p) for p in path.strip("/").split("/") if p]
            discovery = self.discovery(parts)
            if discovery is not None:
                if method != "GET":
                    raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
                return 200, discovery
            with self.store.lock:
                return self.dispatch(method, self.route(parts), query, headers, body)
        except ApiError as e:
            return e.code, e.status()
        except Exception as e:  # noqa: BLE001 -- a bug here, or input we do not handle: answer like a real server would
            return 500, ApiError(500, "InternalError", f"kubeserver: {e!r}").status()

    def discovery(self, parts: list[str]) -> dict | None:
        registry = self.store.registry
        with self.store.lock:
            if parts == ["version"]:
                return VERSION_INFO
            if parts == ["api"]:
                return {"kind": "APIVersions", "versions": ["v1"],
                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
            if parts == ["apis"]:
                return registry.group_list()
            if len(parts) == 2 and parts[0] == "apis" and parts[1] in registry.versions():
                return registry.api_group(parts[1])
            if (len(parts) == 2 and parts[0] == "api") or (len(parts) == 3 and parts[0] == "apis"):
                found = registry.resource_list("" if parts[0] == "api" else parts[1], parts[-1])
                if found is None:
                    raise ApiError(404, "NotFound", "the server could not find the requested resource")
                return found
        return None

    def route(self, parts: list[str]) -> Route:
        missing = ApiError(404, "NotFound", "the server could not find the requested resource")
        if len(parts) >= 3 and parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise missing
        find = lambda plural: self.store.registry.types.get((group, version, plural))
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3 and find(rest[2]) and find(rest[2]).namespaced:
            ns, rest = rest[1], rest[2:]
        rt = find(rest[0])
        if rt is None or len(rest) > 3 or (rt.namespaced and ns is None and len(rest) > 1):
            raise missing
        sub = rest[2] if len(rest) == 3 else ""
        if sub and not (sub == "status" and rt.status):
            raise missing
        return Route(rt, ns, rest[1] if len(rest) > 1 else None, sub)

    def dispatch(self, method: str, r: Route, query: dict, headers: dict, body: bytes) -> tuple[int, Any]:
        store, rt = self.store, r.rt
        dry = query.get("dryRun") == "All"
        manager = query.get("fieldManager") or headers.get("user-agent", "unknown").split("/")[0]
        if r.name is None:
            if method == "GET" and query.get("watch") in ("true", "1"):
                return 200, store.watch(rt, r.namespace, query)
            if method == "GET":
                return 200, self.listing(rt, r.namespace, query)
            if method == "POST" and (r.namespace or not rt.namespaced):
                return 201, store.create(rt, r.namespace, self.parse(body), manager, dry)
            if method == "DELETE":
                items = store.select(rt, r.namespace, query.get("labelSelector", ""), query.get("fieldSelector", ""))
                for o in items:
                    store.delete(rt, o["metadata"].get("namespace"), o["metadata"]["name"], {}, dry)
                return 200, {"apiVersion": rt.api_version, "kind": f"{rt.kind}List",
                             "metadata": {"resourceVersion": str(store.rv)}, "items": items}
        elif method == "GET":
            return 200, store.read(rt, r.namespace, r.name)
        elif method == "PUT":
            return 200, store.update(rt, r.namespace, r.name, self.parse(body), r.sub, manager, dry)
        elif method == "DELETE":
            return 200, store.delete(rt, r.namespace, r.name, self.parse(body) if body.strip() else {}, dry)
        elif method == "PATCH":
            return self.patch(r, query, headers.get("content-type", "").split(";")[0].strip(), body, manager, dry)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def listing(self, rt: ResourceType, ns: str | None, query: dict) -> dict:
        items = self.store.select(rt, ns, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        meta: dict = {"resourceVersion": str(self.store.rv)}
        if query.get("continue"):
            after = json.loads(base64.urlsafe_b64decode(query["continue"]))
            items = [o for o in items if [o["metadata"].get("namespace", ""), o["metadata"]["name"]] > after]
        limit = int(query.get("limit") or 0)
        if 0 < limit < len(items):
            last = items[limit - 1]["metadata"]
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps([last.get("namespace", ""), last["name"]]).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {"apiVersion": rt.api_version, "kind": f"{rt.kind}List", "metadata": meta, "items": items}

    def patch(self, r: Route, query: dict, ctype: str, body: bytes, manager: str, dry: bool) -> tuple[int, Any]:
        if ctype not in PATCH_TYPES:
            raise ApiError(415, "UnsupportedMediaType", f'the body of the request was in an unknown format - '
                           f'accepted media types include: {", ".join(PATCH_TYPES)}')
        if ctype == "application/apply-patch+yaml":
            if not query.get("fieldManager"):
                raise bad_request("PATCH, application/apply-patch+yaml requires fieldManager to be set")
            config = self.parse(body, yaml_ok=True)
            return self.store.apply(r.rt, r.namespace, r.name, config, r.sub, query["fieldManager"],
                                    query.get("force") == "true", dry)
        patch = self.parse(body)
        current = self.store.read(r.rt, r.namespace, r.name)
        if ctype == "application/json-patch+json":
            if not isinstance(patch, list):
                raise bad_request("JSON patch must be a list of operations")
            result = json_patch(current, patch)
        else:
            if not isinstance(patch, dict):
                raise bad_request("merge patch must be an object")
            result = merge_patch(current, patch)
        return 200, self.store.update(r.rt, r.namespace, r.name, result, r.sub, manager, dry)

    @staticmethod
    def parse(body: bytes, yaml_ok: bool = False) -> Any:
        try:
            return json.loads(body)
        except ValueError:
            if yaml_ok:
                try:
                    return yaml.safe_load(body)
                except yaml.YAMLError:
                    pass
            raise bad_request("the request body is not valid JSON" + (" or YAML" if yaml_ok else "")) from None

