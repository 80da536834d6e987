"""The probe server of `ksgitops run` (io/serve.py) over real sockets on 127.0.0.1.

Half-open connections (connected, headers never finished) must cost a socket, never a thread:
`/healthz` keeps answering quickly while hundreds of them are held, the thread count stays where it
was, silent connections are closed after the idle timeout. The bounds asserted are correctness
bounds (a probe answers within 2 s), not speed figures.
"""
from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from ksgitops.io.serve import IDLE_TIMEOUT, Observer, serve
from ksgitops.model import KsgitopsError


def request(port: int, path: str, method: str = "GET") -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture
def probe_server():
    observer = Observer(unready_after=2)
    server = serve(0, observer, host="127.0.0.1")
    try:
        yield observer, server
    finally:
        server.shutdown()


def test_half_open_connections_cost_no_thread_and_healthz_stays_fast(probe_server) -> None:
    """250 connections held for 40 s, half of them silent, half trickling a header byte now and then
    (so they stay open past the idle timeout): /healthz answers every time within 2 s, and the
    process gains no thread. The silent ones are closed by the server after the idle timeout."""
    _, server = probe_server
    threads = threading.active_count()
    silent: list[socket.socket] = []
    trickling: list[socket.socket] = []
    try:
        for i in range(250):
            conn = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            if i % 2:
                conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nX-Slow: ")
                trickling.append(conn)
            else:
                silent.append(conn)
        deadline = time.monotonic() + 40
        latencies, peak = [], threads
        while time.monotonic() < deadline:
            started = time.monotonic()
            assert request(server.port, "/healthz") == (200, "ok\n")
            latencies.append(time.monotonic() - started)
            peak = max(peak, threading.active_count())
            for conn in trickling:
                conn.sendall(b"x")
            time.sleep(1.0)
        assert len(latencies) >= 20 and max(latencies) < 2.0, latencies
        assert peak <= threads, f"{peak} threads while {len(silent) + len(trickling)} connections were open"
        assert sum(_closed_by_server(c) for c in trickling) == 0  # they never were idle that long
        assert sum(_closed_by_server(c) for c in silent) == len(silent)  # idle for 40 s > IDLE_TIMEOUT
    finally:
        for conn in silent + trickling:
            conn.close()


def _closed_by_server(conn: socket.socket) -> bool:
    """Without waiting (a wait would leave the other connections idle)."""
    conn.setblocking(False)
    try:
        return conn.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_a_silent_connection_is_closed_after_the_idle_timeout(probe_server) -> None:
    _, server = probe_server
    with socket.create_connection(("127.0.0.1", server.port), timeout=IDLE_TIMEOUT + 5) as conn:
        started = time.monotonic()
        assert conn.recv(1) == b""  # blocks until the server closes it
        assert IDLE_TIMEOUT - 0.5 <= time.monotonic() - started < IDLE_TIMEOUT + 3


def test_oversized_headers_are_refused_without_reading_on(probe_server) -> None:
    _, server = probe_server
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nX-Big: " + b"a" * 16384 + b"\r\n\r\n")
        assert conn.recv(64).split(b" ")[1] == b"431"


def test_paths_methods_and_readiness_bodies(probe_server) -> None:
    observer, server = probe_server
    assert request(server.port, "/readyz") == (503, "not ready: no cycle has succeeded yet\n")
    observer.cycle_failed("spaces/wds/x.yaml:3: broken")
    assert request(server.port, "/readyz") == (
        503, "not ready: no cycle has succeeded yet; 1 cycle failed, the last with: spaces/wds/x.yaml:3: broken\n")
    observer.cycle_succeeded()
    assert request(server.port, "/readyz") == (200, "ready\n")
    observer.cycle_failed("fetch failed")
    assert request(server.port, "/readyz") == (
        200, "ready (1 cycle failed since the last success; the last with: fetch failed)\n")
    observer.cycle_failed("fetch failed again")
    assert request(server.port, "/readyz") == (503, "not ready: 2 cycles failed in a row; the last with: fetch failed again\n")
    assert request(server.port, "/healthz") == (200, "ok\n")
    assert request(server.port, "/healthz", "HEAD") == (200, "")
    assert request(server.port, "/healthz", "POST")[0] == 405
    assert request(server.port, "/nope")[0] == 404
    status, metrics = request(server.port, "/metrics")
    assert status == 200 and "ksgitops_consecutive_failures 2.0" in metrics
    assert "ksgitops_cycle_failures_total 3.0" in metrics


def test_a_port_in_use_is_one_error_naming_it_and_starts_nothing() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        threads = threading.active_count()
        with pytest.raises(KsgitopsError) as info:
            serve(port, Observer(), host="127.0.0.1")
        assert [str(p) for p in info.value.problems] == [f"ksgitops: --port {port}: already in use (another process listens on it)"]
        assert info.value.exit_code == 2 and threading.active_count() == threads
