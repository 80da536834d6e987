"""Observability of the long-running runtime: Prometheus metrics, /healthz, /readyz, JSON logs.

`Observer` holds the metrics (its own registry, so tests and several runtimes in one process never
share counters) and the liveness and readiness state; `serve(port, observer)` answers HTTP:
- `/healthz`: 200 while the loop is alive (a cycle started within `stall_after` seconds), else 503;
- `/readyz`: 200 once a cycle succeeded, until `unready_after` cycles in a row fail; 503 before
  the first success and after that many failures, the body saying why (the last error, one line);
- `/metrics`: the Prometheus text format.

The server is waitress: one I/O thread reads every connection (poll), so a slow or silent client
costs a socket, never a thread; only complete requests reach the fixed pool of `WORKERS` threads.
A connection idle for `IDLE_TIMEOUT` seconds is closed; past `CONNECTIONS` open connections, new
ones wait in the kernel's backlog.
"""
from __future__ import annotations

import errno
import json
import logging
import socket
import threading
import time
from http import HTTPStatus
from typing import Any, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..model import KsgitopsError, counted

WORKERS = 4  # threads answering complete requests
CONNECTIONS = 512  # open connections at most (each costs a file descriptor)
IDLE_TIMEOUT = 5  # seconds a connection may stay silent (headers included) before it is closed
DEFAULT_UNREADY_AFTER = 3


class Observer:
    def __init__(self, stall_after: float = 300.0, unready_after: int = DEFAULT_UNREADY_AFTER) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.cycles = Counter("ksgitops_cycles", "Reconcile cycles run", registry=r)
        self.failures = Counter("ksgitops_cycle_failures", "Cycles that failed", registry=r)
        self.push_retries = Counter("ksgitops_push_retries", "Pushes refused by the remote and retried", registry=r)
        self.commits = Counter("ksgitops_commits", "Commits pushed", registry=r)
        self.degraded = Counter("ksgitops_degraded_cycles", "Cycles that committed the healthy part and kept a "
                                "broken part frozen", registry=r)
        self.frozen = Gauge("ksgitops_frozen_parts", "Spaces and WECs the last reconcile kept frozen "
                            "(their sources have errors)", registry=r)
        self.reconcile_seconds = Histogram("ksgitops_reconcile_seconds", "Seconds per cycle that did work",
                                           buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=r)
        self.wecs = Gauge("ksgitops_wecs", "WECs (SyncTargets) in the last reconcile", registry=r)
        self.objects = Gauge("ksgitops_objects", "Workload objects placed in the last reconcile", registry=r)
        self.last_success = Gauge("ksgitops_last_success_timestamp_seconds", "When the last cycle succeeded",
                                  registry=r)
        self.failures_in_a_row = Gauge("ksgitops_consecutive_failures", "Cycles failed in a row (0 after a success)",
                                       registry=r)
        self.backoff = Gauge("ksgitops_backoff_seconds",
                             "Seconds the loop waits before the next cycle because cycles failed (0 after a success)",
                             registry=r)
        self.stall_after = stall_after
        self.unready_after = unready_after
        self._last_start = time.monotonic()
        self._lock = threading.Lock()
        self._succeeded = False
        self._failed = 0
        self._last_error = ""

    def cycle_started(self) -> None:
        self._last_start = time.monotonic()

    def alive(self) -> bool:
        return time.monotonic() - self._last_start < self.stall_after

    def cycle_succeeded(self) -> None:
        with self._lock:
            self._succeeded, self._failed, self._last_error = True, 0, ""
        self.failures_in_a_row.set(0)
        self.backoff.set(0)
        self.last_success.set(time.time())

    def cycle_failed(self, reason: str) -> int:
        """Record a failed cycle (`reason`: one line, nothing secret); returns the failures in a row."""
        with self._lock:
            self._failed += 1
            self._last_error = reason
            failed = self._failed
        self.failures.inc()
        self.failures_in_a_row.set(failed)
        return failed

    @property
    def ready(self) -> bool:
        return self.readiness()[0]

    def readiness(self) -> tuple[bool, str]:
        """(ready, one line saying why)."""
        with self._lock:
            succeeded, failed, error = self._succeeded, self._failed, self._last_error
        cycles = counted(failed, "cycle")
        if not succeeded:
            return False, "not ready: no cycle has succeeded yet" + (f"; {cycles} failed, the last with: {error}"
                                                                       if failed else "")
        if failed >= self.unready_after:
            return False, f"not ready: {cycles} failed in a row; the last with: {error}"
        return True, "ready" + (f" ({cycles} failed since the last success; the last with: {error})" if failed else "")


def _application(observer: Observer) -> Callable[..., Iterable[bytes]]:
    """The WSGI application answering the three paths (GET and HEAD)."""

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        content_type = "text/plain; charset=utf-8"
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            code, body = 405, b"only GET and HEAD\n"
        elif path == "/metrics":
            code, body, content_type = 200, generate_latest(observer.registry), CONTENT_TYPE_LATEST
        elif path == "/healthz":
            ok = observer.alive()
            code, body = (200, b"ok\n") if ok else (503, b"stalled: no cycle started for too long\n")
        elif path == "/readyz":
            ok, text = observer.readiness()
            code, body = 200 if ok else 503, f"{text}\n".encode()
        else:
            code, body = 404, b"not found\n"
        start_response(f"{code} {HTTPStatus(code).phrase}",
                       [("Content-Type", content_type), ("Content-Length", str(len(body)))])
        return [body]

    return application


class ProbeServer:
    """The probe and metrics server, answering on a daemon thread until `shutdown()`."""

    def __init__(self, observer: Observer, port: int, host: str) -> None:
        from waitress.server import create_server  # on first use: ~60 ms (python -X importtime), `run` only
        listener = socket.create_server((host, port), backlog=1024)  # OSError here: nothing else started yet
        self._map: dict[int, Any] = {}
        self._server = create_server(
            _application(observer), map=self._map, sockets=[listener], ident="ksgitops", threads=WORKERS,
            connection_limit=CONNECTIONS, channel_timeout=IDLE_TIMEOUT, cleanup_interval=1, asyncore_use_poll=True,
            max_request_header_size=8192, max_request_body_size=1024, expose_tracebacks=False)
        self.port = int(listener.getsockname()[1])
        threading.Thread(target=self._server.run, name="ksgitops-http", daemon=True).start()

    def shutdown(self) -> None:
        from waitress import wasyncore
        self._server.task_dispatcher.shutdown(timeout=1)
        wasyncore.close_all(self._map)


def serve(port: int, observer: Observer, host: str = "0.0.0.0") -> ProbeServer:  # noqa: S104 - a container's probe port
    """The probe server on `port` (0: any free port); a port that cannot be had is a KsgitopsError
    naming it (exit 2)."""
    try:
        return ProbeServer(observer, port, host)
    except OSError as e:
        reason = {errno.EADDRINUSE: "already in use (another process listens on it)",
                  errno.EACCES: "not permitted (ports below 1024 need privileges)"}.get(e.errno or 0, e.strerror)
        raise KsgitopsError(f"--port {port}: {reason}") from None


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, message, and the record's `fields` extra."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(record.created)),
                                "level": record.levelname.lower(), "message": record.getMessage()}
        data.update(getattr(record, "fields", {}) or {})
        return json.dumps(data, sort_keys=True, default=str)


def setup_logging(fmt: str) -> logging.Logger:
    logger = logging.getLogger("ksgitops")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    server_log = logging.getLogger("waitress")  # the probe server's own warnings (limits reached)
    server_log.handlers[:] = [handler]
    server_log.setLevel(logging.WARNING)
    server_log.propagate = False
    return logger
