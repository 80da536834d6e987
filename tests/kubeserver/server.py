"""The HTTP server, the test-facing `KubeServer` handle (kubeconfig, knobs, request log, direct
access) and `main`, which serves one in a process of its own."""
from __future__ import annotations

import argparse
import json
import signal
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

import yaml

from .errors import ApiError
from .resources import ResourceType
from .rest import Api
from .store import Store


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: bytes = field(repr=False, default=b"")

    def json(self) -> Any:
        return Api.parse(self.body, yaml_ok=True)


def take_request(handler: BaseHTTPRequestHandler, knobs: Any) -> LoggedRequest | None:
    """Read one request and log it with `knobs.log`, after `knobs.delay` seconds; None when
    `knobs.unreachable`: the connection is then closed without an answer (the client sees a
    dropped connection)."""
    body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    if knobs.unreachable:
        handler.close_connection = True
        return None
    if knobs.delay:
        time.sleep(knobs.delay)
    url = urlsplit(handler.path)
    request = LoggedRequest(handler.command, url.path, dict(parse_qsl(url.query, keep_blank_values=True)),
                            handler.headers.get("Content-Type", ""), body)
    knobs.log(request)
    return request


def write_chunk(out: Any, data: bytes) -> None:
    """One chunk of a chunked HTTP/1.1 body, sent at once (watch events must not wait in a buffer)."""
    out.write(b"%x\r\n%s\r\n" % (len(data), data))
    out.flush()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else Nagle + delayed ACK cost ~40 ms per request
    server: _HttpServer

    def log_message(self, *args) -> None:
        pass

    def _serve(self) -> None:
        kube = self.server.kube
        request = take_request(self, kube)
        if request is None:
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        if kube.fail_status:
            code, doc = kube.fail_status, ApiError(kube.fail_status, "ServiceUnavailable" if kube.fail_status == 503
                                                   else "InternalError", "injected failure").status()
        else:
            code, doc = kube.api.handle(self.command, request.path, request.query, headers, request.body)
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            if isinstance(doc, dict):
                data = json.dumps(doc).encode()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in doc:
                write_chunk(self.wfile, json.dumps(event).encode() + b"\n")
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    kube: KubeServer


class KubeServer:
    """A loopback Kubernetes API server; `controllers=True` runs stand-ins of a cluster's controllers
    (tests/kubecontrollers.py). Knobs: `unreachable` (connections are closed without an answer),
    `delay` (seconds before each answer), `fail_status` (answer every request with that code, e.g. 503)."""

    def __init__(self, controllers: bool = False) -> None:
        self.store = Store(terminate_namespaces=controllers)
        self.api = Api(self.store)
        if controllers:
            from kubecontrollers import Controllers
            self.controllers: Controllers | None = Controllers(self.store)
        else:
            self.controllers = None
        self.requests: list[LoggedRequest] = []
        self.unreachable = False
        self.delay = 0.0
        self.fail_status: int | None = None
        self._httpd: _HttpServer | None = None
        self._lock = threading.Lock()

    # ----- lifecycle

    def start(self, port: int = 0) -> Self:
        if self.controllers:
            self.controllers.start()
        self._httpd = _HttpServer(("127.0.0.1", port), _Handler)
        self._httpd.kube = self
        # a short poll: stop() (shutdown) waits for the serving loop to notice, up to one poll
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name=f"kubeserver-{self.port}", daemon=True).start()
        return self

    def stop(self) -> None:
        self.store.close()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, context: str = "loopback") -> dict:
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": context, "cluster": {"server": self.url}}],
                "users": [{"name": context, "user": {"token": "kubeserver-dummy-token"}}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
                "current-context": context}

    def write_kubeconfig(self, path: Path, context: str = "loopback") -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(self.kubeconfig(context), sort_keys=False))
        return path

    # ----- request log

    def log(self, request: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def requests_matching(self, method: str | None = None, path: str | None = None) -> list[LoggedRequest]:
        """Logged requests with that method and/or exact path."""
        with self._lock:
            return [r for r in self.requests if method in (None, r.method) and path in (None, r.path)]

    # ----- direct access for tests (no HTTP; same semantics, status kept as given)

    def resource_type(self, group: str, version: str, kind_or_plural: str) -> ResourceType:
        rt = self.store.registry.find(group, version, kind_or_plural)
        if rt is None:
            raise KeyError(f"no resource {kind_or_plural!r} in {group or 'core'}/{version}")
        return rt

    def put(self, obj: dict) -> dict:
        """Create or replace obj (apiVersion and kind required), status included; returns it as stored."""
        group, _, version = obj["apiVersion"].rpartition("/")
        rt = self.resource_type(group, version, obj["kind"])
        meta = obj.get("metadata", {})
        ns = meta.get("namespace") if rt.namespaced else None
        with self.store.lock:
            if self.store.objects.get(self.store.key(rt, ns, meta.get("name", ""))):
                return self.store.update(rt, ns, meta["name"], obj, "raw", None)
            return self.store.create(rt, ns, obj, None, raw=True)

    def get(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str) -> dict | None:
        try:
            return self.store.read(self.resource_type(group, version, kind_or_plural), namespace, name)
        except ApiError:
            return None

    def objects(self, group: str, version: str, kind_or_plural: str, namespace: str | None = None) -> list[dict]:
        return self.store.select(self.resource_type(group, version, kind_or_plural), namespace)

    def set_status(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str,
                   status: dict) -> dict:
        rt = self.resource_type(group, version, kind_or_plural)
        return self.store.update(rt, namespace, name, {"status": status}, "status", "kubeserver")

    def delete(self, group: str, version: str, kind_or_plural: str, namespace: str | None, name: str) -> None:
        self.store.delete(self.resource_type(group, version, kind_or_plural), namespace, name, {})

    @property
    def resource_version(self) -> int:
        return self.store.rv


# ---------------------------------------------------------------------------------------------
# A server of its own: `python tests/kubeserver --kubeconfig FILE`

def main(argv: list[str] | None = None) -> None:
    """Serve one KubeServer in this process until SIGTERM or SIGINT; write a kubeconfig for it
    (atomically, once it listens) and print its URL. Tests then reach it only through the API, as
    they would a real cluster (KSGITOPS_TEST_KUBECONFIG=FILE)."""
    parser = argparse.ArgumentParser(prog="kubeserver", description=main.__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True, help="where to write its kubeconfig")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    parser.add_argument("--context", default="kubeserver", help="context name in the kubeconfig")
    parser.add_argument("--controllers", action="store_true",
                        help="run stand-ins of a cluster's controllers (tests/kubecontrollers.py)")
    args = parser.parse_args(argv)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = KubeServer(controllers=args.controllers).start(args.port)
    try:
        partial = args.kubeconfig.with_name(args.kubeconfig.name + ".partial")
        server.write_kubeconfig(partial, args.context).replace(args.kubeconfig)
        print(server.url, flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()

