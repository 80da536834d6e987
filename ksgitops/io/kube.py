"""The one Kubernetes client path of ksgitops: collect, sync and the kubeconfig space provider all
reach API servers through `Cluster`; no other module imports `kubernetes`.

A `Cluster` is one API server reached through a kubeconfig context. It uses the `kubernetes`
client for what that client is good at — reading kubeconfig files (certificates, tokens, exec and
OIDC plugins), TLS, the connection pool — and speaks the REST protocol itself, by path, with JSON
in and out. That is where the client cannot do the job: ksgitops handles arbitrary kinds (whatever
a mailbox holds, custom resources included) and already knows each object's resource from its
mailbox path, so the typed models do not fit, and the dynamic client would discover every API group
of every WEC before its first request (seconds per WEC over a slow link, and a discovery cache file
per process); here discovery is one group version, asked for only when a kind must be resolved.

Every request has a timeout, and a `Cluster` can carry a deadline (collect's per-WEC timeout):
each request gets at most the time left. There are no automatic retries: the callers decide
(collect skips the WEC, sync retries next cycle).

Errors are `KubeError`s with one-line messages that are safe to print: no credentials (URLs lose
their user info, request headers are never shown) and no object data (`quiet=True` calls, used
for Secrets, drop the API server's message and keep only the HTTP status and reason).
"""
from __future__ import annotations

import functools
import os
import re
import time
from types import SimpleNamespace
from typing import Any, Generator
from urllib.parse import quote, urlencode, urlsplit

from msgspec import Struct
import orjson

from .git.remote import scrub

DEFAULT_TIMEOUT = 10.0
APPLY_PATCH = "application/apply-patch+yaml"  # JSON is YAML: the body is sent as JSON
_MESSAGE_LIMIT = 200


@functools.cache
def _lib() -> Any:
    """`kubernetes` and `urllib3`, imported on first use: together they take ~0.45 s to import
    (measured, python -X importtime), which no command that never talks to a cluster should pay."""
    import kubernetes.client
    import kubernetes.config
    import urllib3
    return SimpleNamespace(client=kubernetes.client, config=kubernetes.config, urllib3=urllib3)


class KubeError(Exception):
    """A failure talking to a cluster; `str()` is one safe line."""


class Unreachable(KubeError):
    """The cluster could not be reached at all (connection, TLS, timeout, authentication)."""


class ApiFailure(KubeError):
    """The API server answered with an error status."""

    def __init__(self, status: int, reason: str, message: str = "") -> None:
        self.status = status
        self.reason = reason
        super().__init__(f"HTTP {status} {reason}" + (f": {message}" if message else ""))


def default_kubeconfig() -> str:
    """What kubectl reads: $KUBECONFIG (a `:`-separated list) or ~/.kube/config."""
    return os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


def kubeconfig_contexts(kubeconfig: str | None) -> tuple[list[str], str | None]:
    """The context names of a kubeconfig (a path or `:`-separated paths) and the current one.
    Raises KubeError when it cannot be read."""
    try:
        contexts, current = _lib().config.list_kube_config_contexts(config_file=kubeconfig or default_kubeconfig())
    except Exception as e:  # noqa: BLE001 - ConfigException, YAML and OS errors alike
        raise KubeError(f"kubeconfig: {_safe(e)}") from None
    names = [str(c.get("name")) for c in contexts or [] if isinstance(c, dict) and c.get("name")]
    return names, (str(current["name"]) if isinstance(current, dict) and current.get("name") else None)


def api_path(api_version: str, resource: str, namespace: str = "", name: str = "", subresource: str = "") -> str:
    """The REST path of a collection (no name) or an object."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if namespace:
        path += f"/namespaces/{quote(namespace, safe='')}"
    path += f"/{resource}"
    if name:
        path += f"/{quote(name, safe='')}"
    if subresource:
        path += f"/{subresource}"
    return path


class ApiResource(Struct, frozen=True):
    name: str  # plural
    kind: str
    namespaced: bool
    verbs: tuple[str, ...] = ()


class Cluster:
    """One API server, through one kubeconfig context (None: the current context)."""

    def __init__(self, kubeconfig: str | None, context: str | None, timeout: float = DEFAULT_TIMEOUT,
                 deadline: float | None = None) -> None:
        self.context = context
        self.timeout = timeout
        self.deadline = deadline  # time.monotonic() value after which every request fails
        config = _lib().client.Configuration()
        try:
            _lib().config.load_kube_config(config_file=kubeconfig or default_kubeconfig(), context=context,
                                           client_configuration=config, persist_config=False)
        except Exception as e:  # noqa: BLE001 - a broken context is one line, like an unreachable server
            raise Unreachable(f"kubeconfig context {context!r}: {_safe(e)}") from None
        config.retries = False  # no hidden retries: a timeout is a timeout
        self._config = config
        self._client = _lib().client.ApiClient(config)
        self.server = _server_name(config.host)
        self._discovered: dict[str, dict[str, ApiResource]] = {}

    def close(self) -> None:
        try:
            self._client.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests

    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
                content_type: str = "application/json") -> tuple[int, Any]:
        """(status, decoded JSON body or None). Raises Unreachable on transport failures."""
        response = self._send(method, path, query, body, content_type)
        status, raw = response.status, response.data
        if status in (401, 403) and path in ("/api", "/apis"):
            raise Unreachable(f"HTTP {status} {'Unauthorized' if status == 401 else 'Forbidden'} ({self.server})")
        try:
            decoded = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            decoded = None
        return status, decoded

    def _send(self, method: str, path: str, query: dict[str, Any] | None, body: Any, content_type: str,
              stream_for: float | None = None) -> Any:
        """The urllib3 response; with `stream_for` seconds, unread (a watch streams that long)."""
        remaining = self.timeout
        if self.deadline is not None:
            remaining = min(remaining, self.deadline - time.monotonic())
            if remaining <= 0:
                raise Unreachable(f"timed out ({self.server})")
        url = self._config.host.rstrip("/") + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json", "User-Agent": "ksgitops"}
        for setting in self._config.auth_settings().values():
            auth: Any = setting
            if auth.get("in") == "header" and auth.get("value"):
                headers[str(auth["key"])] = str(auth["value"])
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = body if isinstance(body, bytes) else orjson.dumps(body)
        read = remaining if stream_for is None else remaining + stream_for
        try:
            return self._client.rest_client.pool_manager.request(
                method, url, body=data, headers=headers, retries=False, preload_content=stream_for is None,
                timeout=_lib().urllib3.Timeout(connect=remaining, read=read))
        except Exception as e:  # noqa: BLE001 - every transport failure becomes one safe line
            raise Unreachable(_transport_reason(e, self.server)) from None

    def _check(self, status: int, decoded: Any, quiet: bool) -> Any:
        if 200 <= status < 300:
            return decoded
        if status == 401:
            raise Unreachable(f"HTTP 401 Unauthorized ({self.server})")
        raise _failure(status, decoded, quiet)

    def probe(self) -> None:
        """One cheap authenticated request: raises Unreachable when the cluster cannot be used."""
        status, decoded = self.request("GET", "/api")
        self._check(status, decoded, quiet=False)

    def get(self, api_version: str, resource: str, namespace: str, name: str, quiet: bool = False) -> dict[str, Any] | None:
        """The live object, or None when it (or its resource type) does not exist."""
        status, decoded = self.request("GET", api_path(api_version, resource, namespace, name))
        if status == 404:
            return None
        return self._check(status, decoded, quiet)  # type: ignore[no-any-return]

    def list_objects(self, api_version: str, resource: str, namespace: str = "", label_selector: str = "",
                     quiet: bool = False) -> list[dict[str, Any]]:
        """Every object of a collection (all namespaces when `namespace` is ""), paginated;
        [] when the resource type does not exist."""
        return self.list_with_version(api_version, resource, namespace, label_selector, quiet)[0]

    def list_with_version(self, api_version: str, resource: str, namespace: str = "", label_selector: str = "",
                          quiet: bool = False) -> tuple[list[dict[str, Any]], str]:
        """`list_objects` and the list's resourceVersion (where a watch goes on from)."""
        query: dict[str, Any] = {"limit": 500}
        if label_selector:
            query["labelSelector"] = label_selector
        items: list[dict[str, Any]] = []
        while True:
            status, decoded = self.request("GET", api_path(api_version, resource, namespace), query)
            if status == 404:
                return items, ""
            page = self._check(status, decoded, quiet) or {}
            items += [item for item in page.get("items") or [] if isinstance(item, dict)]
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, str((page.get("metadata") or {}).get("resourceVersion") or "")
            query["continue"] = token

    def watch_objects(self, api_version: str, resource: str, namespace: str = "", label_selector: str = "",
                      resource_version: str = "", seconds: int = 2) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """(event type, object) of one server-side watch that ends after `seconds`."""
        query: dict[str, Any] = {"watch": "1", "timeoutSeconds": max(1, seconds)}
        if label_selector:
            query["labelSelector"] = label_selector
        if resource_version:
            query["resourceVersion"] = resource_version
        response = self._send("GET", api_path(api_version, resource, namespace), query, None, "", float(seconds))
        try:
            if response.status != 200:
                raw = response.read()
                self._check(response.status, orjson.loads(raw) if raw.startswith(b"{") else None, False)
            pending = b""
            for chunk in response.stream(65536):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    event = orjson.loads(line) if line.strip() else None
                    if isinstance(event, dict) and isinstance(event.get("object"), dict):
                        yield str(event.get("type")), event["object"]
        except (_lib().urllib3.exceptions.HTTPError, OSError) as e:
            raise Unreachable(_transport_reason(e, self.server)) from None
        finally:
            response.release_conn()

    def answers(self) -> bool:
        """Whether the API server answers at all (any HTTP status): the space provider's probe."""
        try:
            self._send("GET", "/version", None, None, "")
            return True
        except Unreachable:
            return False

    def apply(self, api_version: str, resource: str, namespace: str, name: str, body: dict[str, Any],
              manager: str, force: bool = True, quiet: bool = False) -> dict[str, Any]:
        """Server-side apply (creates the object when absent)."""
        query = {"fieldManager": manager, **({"force": "true"} if force else {})}
        status, decoded = self.request("PATCH", api_path(api_version, resource, namespace, name), query,
                                       orjson.dumps(body), APPLY_PATCH)
        return self._check(status, decoded, quiet)  # type: ignore[no-any-return]

    def create(self, api_version: str, resource: str, namespace: str, body: dict[str, Any], manager: str,
               quiet: bool = False) -> dict[str, Any] | None:
        """POST; None when the object already exists (409 AlreadyExists)."""
        status, decoded = self.request("POST", api_path(api_version, resource, namespace), {"fieldManager": manager},
                                       body)
        if status == 409:
            return None
        return self._check(status, decoded, quiet)  # type: ignore[no-any-return]

    def delete(self, api_version: str, resource: str, namespace: str, name: str, uid: str = "") -> bool:
        """DELETE (background propagation), only if the object still has `uid` when one is given.
        False when it was already gone or is now another object (409 precondition failed)."""
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        if uid:
            options["preconditions"] = {"uid": uid}
        status, decoded = self.request("DELETE", api_path(api_version, resource, namespace, name), body=options)
        if status in (404, 409):
            return False
        self._check(status, decoded, quiet=True)
        return True

    def api_resources(self, group_version: str) -> dict[str, ApiResource] | None:
        """Discovery of one group version: plural -> ApiResource (subresources left out); None
        when the server does not serve that group version."""
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        status, decoded = self.request("GET", path)
        if status == 404:
            return None
        found = self._check(status, decoded, quiet=False) or {}
        out = {}
        for r in found.get("resources") or []:
            name = str(r.get("name", ""))
            if name and "/" not in name:
                out[name] = ApiResource(name, str(r.get("kind", "")), bool(r.get("namespaced")),
                                        tuple(str(v) for v in r.get("verbs") or []))
        return out

    def resource_of(self, api_version: str, kind: str) -> ApiResource | None:
        """The resource serving `kind` in `api_version` (discovery of that group version, kept)."""
        if api_version not in self._discovered:
            self._discovered[api_version] = self.api_resources(api_version) or {}
        return next((r for r in self._discovered[api_version].values() if r.kind == kind), None)

    def group_versions(self) -> list[str]:
        """The preferred `group/version` of every API group the server serves, `v1` first."""
        status, decoded = self.request("GET", "/apis")
        found = self._check(status, decoded, quiet=False) or {}
        out = ["v1"]
        for group in found.get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                out.append(str(preferred))
        return out

    def preferred_version(self, group: str) -> str | None:
        """`group/version` (or `v1` for the core group) the server prefers; None when unknown."""
        if not group:
            return "v1"
        status, decoded = self.request("GET", f"/apis/{quote(group, safe='.')}")
        if status == 404:
            return None
        found = self._check(status, decoded, quiet=False) or {}
        preferred = (found.get("preferredVersion") or {}).get("groupVersion")
        if not preferred:
            versions = found.get("versions") or []
            preferred = versions[0].get("groupVersion") if versions else None
        return str(preferred) if preferred else None


def _failure(status: int, decoded: Any, quiet: bool) -> ApiFailure:
    reason = message = ""
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        reason = str(decoded.get("reason") or "")
        message = "" if quiet else _one_line(str(decoded.get("message") or ""))
    return ApiFailure(status, reason or _HTTP_REASONS.get(status, "Error"), message)


_HTTP_REASONS = {400: "BadRequest", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
                 410: "Gone", 415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
                 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout"}


def _server_name(host: str) -> str:
    """host:port of the API server (never user info or paths)."""
    parts = urlsplit(host)
    return parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else "?"


def _transport_reason(error: BaseException, server: str) -> str:
    urllib3 = _lib().urllib3
    seen: set[int] = set()
    chain = []
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = getattr(current, "reason", None) if isinstance(getattr(current, "reason", None), BaseException) \
            else (current.__cause__ or current.__context__)
    for e in chain:
        if isinstance(e, (urllib3.exceptions.TimeoutError, TimeoutError)):
            return f"timed out ({server})"
    for e in chain:
        if isinstance(e, urllib3.exceptions.SSLError) or type(e).__name__.startswith("SSL"):
            return f"TLS error ({server})"
    for e in chain:
        if isinstance(e, ConnectionRefusedError):
            return f"connection refused ({server})"
        if isinstance(e, OSError) and e.strerror:
            return f"{e.strerror.lower()} ({server})"
    text = str(error)
    errno = re.search(r"\[Errno -?\d+\] ([^'\"\)\]]+)", text)
    if errno:
        return f"{errno.group(1).strip().lower()} ({server})"
    if isinstance(error, urllib3.exceptions.ProtocolError):
        return f"connection broken ({server})"
    return f"{type(error).__name__} ({server})"


def _safe(error: BaseException) -> str:
    return _one_line(scrub(str(error))) or type(error).__name__


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."
