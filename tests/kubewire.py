"""A wire between the program under test and one API server: a loopback HTTP proxy that forwards
every request unchanged, records it, and can fail on demand.

What a test observes here is what crossed the wire, whatever is behind it (the in-memory
KubeServer, a KubeServer in another process, a real cluster): the requests an agent made and in
which order, and how it copes with a server that stops answering (`unreachable`: connections are
closed without an answer) or answers late (`delay`). The upstream is reached with the `kubernetes`
client's own configuration (TLS, client certificates, tokens, exec plugins), so the program under
test only ever sees plain HTTP and a dummy token: no real credential reaches its output.
"""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import urllib3
import yaml
from kubeserver import LoggedRequest, take_request, write_chunk

WIRE_TOKEN = "ksgitops-wire-dummy-token"
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FORWARDED = ("content-type", "accept", "user-agent")
_RETURNED = ("content-type", "warning", "audit-id")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HttpServer

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        wire = self.server.wire
        request = take_request(self, wire)
        if request is None:
            return
        try:
            response = wire.forward(self.command, self.path, request.body,
                                    {k: v for k, v in self.headers.items() if k.lower() in _FORWARDED})
        except urllib3.exceptions.HTTPError:
            self.close_connection = True  # the upstream did not answer: neither do we
            return
        try:
            self._relay(response)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            response.release_conn()

    def _relay(self, response: Any) -> None:
        self.send_response(response.status)
        for key, value in response.headers.items():
            if key.lower() in _RETURNED:
                self.send_header(key, value)
        if not response.chunked:
            data = response.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")  # a watch: pass each chunk on as it comes
        self.end_headers()
        for chunk in response.read_chunked(decode_content=True):
            write_chunk(self.wfile, chunk)
        self.wfile.write(b"0\r\n\r\n")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    wire: KubeWire


class KubeWire:
    """The proxy for one API server, given by a kubeconfig file and context."""

    def __init__(self, kubeconfig: Path, context: str) -> None:
        from kubernetes import config
        self.requests: list[LoggedRequest] = []
        self.unreachable = False
        self.delay = 0.0
        self._api = config.new_client_from_config(config_file=str(kubeconfig), context=context)
        self._upstream = self._api.configuration.host.rstrip("/")
        self._lock = threading.Lock()
        self._httpd: _HttpServer | None = None

    def start(self) -> Self:
        self._httpd = _HttpServer(("127.0.0.1", 0), _Handler)
        self._httpd.wire = self
        # a short poll: stop() (shutdown) waits for the serving loop to notice, up to one poll
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                         name=f"kubewire-{self.port}", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        self._api.close()

    @property
    def port(self) -> int:
        assert self._httpd, "wire not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def forward(self, method: str, target: str, body: bytes, headers: dict[str, str]) -> Any:
        headers = dict(headers)
        for setting in self._api.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return self._api.rest_client.pool_manager.request(
            method, self._upstream + target, body=body or None, headers=headers, retries=False,
            preload_content=False, timeout=urllib3.Timeout(connect=10, read=None))

    # ----- what crossed the wire

    def log(self, request: LoggedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def writes(self, since: int = 0) -> list[LoggedRequest]:
        with self._lock:
            return [r for r in self.requests[since:] if r.method in WRITES]

    # ----- how the program under test reaches it

    def kubeconfig(self, context: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": context, "cluster": {"server": self.url}}],
                "users": [{"name": context, "user": {"token": WIRE_TOKEN}}],
                "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
                "current-context": context}


def write_kubeconfig(path: Path, wires: dict[str, KubeWire]) -> Path:
    """One kubeconfig with a context per wire, named as the keys, in that order."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [],
                              "contexts": [], "current-context": next(iter(wires), "")}
    for name, wire in wires.items():
        single = wire.kubeconfig(name)
        for section in ("clusters", "users", "contexts"):
            merged[section] += single[section]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(merged, sort_keys=False))
    return path
