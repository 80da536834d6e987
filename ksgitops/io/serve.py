"""Observability of the long-running runtime: Prometheus metrics, /healthz, /readyz, JSON logs.

`Observer` holds the metrics (its own registry, so tests and several runtimes in one process never
share counters) and the readiness state; `serve(port, observer)` answers HTTP on a daemon thread:
- `/healthz`: 200 while the loop is alive (a cycle started within `stall_after` seconds), else 503;
- `/readyz`: 200 after the first successful cycle, 503 before (and while the last cycle failed);
- `/metrics`: the Prometheus text format.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST


class Observer:
    def __init__(self, stall_after: float = 300.0) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.cycles = Counter("ksgitops_cycles", "Reconcile cycles run", registry=r)
        self.failures = Counter("ksgitops_cycle_failures", "Cycles that failed", registry=r)
        self.push_retries = Counter("ksgitops_push_retries", "Pushes refused by the remote and retried", registry=r)
        self.commits = Counter("ksgitops_commits", "Commits pushed", registry=r)
        self.reconcile_seconds = Histogram("ksgitops_reconcile_seconds", "Seconds per cycle that did work",
                                           buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300), registry=r)
        self.wecs = Gauge("ksgitops_wecs", "WECs (SyncTargets) in the last reconcile", registry=r)
        self.objects = Gauge("ksgitops_objects", "Workload objects placed in the last reconcile", registry=r)
        self.last_success = Gauge("ksgitops_last_success_timestamp_seconds", "When the last cycle succeeded",
                                  registry=r)
        self.ready = False
        self.stall_after = stall_after
        self._last_start = time.monotonic()

    def cycle_started(self) -> None:
        self._last_start = time.monotonic()

    def alive(self) -> bool:
        return time.monotonic() - self._last_start < self.stall_after


class _Handler(BaseHTTPRequestHandler):
    observer: Observer

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, generate_latest(self.observer.registry), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            ok = self.observer.alive()
            self._send(200 if ok else 503, b"ok\n" if ok else b"stalled\n")
        elif path == "/readyz":
            ok = self.observer.ready
            self._send(200 if ok else 503, b"ready\n" if ok else b"not ready\n")
        else:
            self._send(404, b"not found\n")

    def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - probes are not news
        return


def serve(port: int, observer: Observer, host: str = "0.0.0.0") -> ThreadingHTTPServer:  # noqa: S104 - a container's probe port
    handler = type("Handler", (_Handler,), {"observer": observer})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="ksgitops-http", daemon=True).start()
    return server


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
    return logger
