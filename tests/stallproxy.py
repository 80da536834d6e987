"""A TCP proxy on 127.0.0.1 that can hold a server's answer back, to catch a client in a socket read.

`StallingProxy(port)` forwards every connection to 127.0.0.1:`port` both ways. After `arm()`, the
next bytes the server sends are held back: `stalled` is set while they wait, and they go on to the
client when the test calls `release()` (or after `hold` seconds at most). A client that reads from
the socket meanwhile is blocked inside that read, which is where a signal must not break it.
"""
from __future__ import annotations

import socket
import threading
from typing import Iterator

import pytest


class StallingProxy:
    def __init__(self, port: int, hold: float = 30.0) -> None:
        self.target = port
        self.hold = hold
        self.stalled = threading.Event()
        self._released = threading.Event()
        self._armed = False
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._open: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def arm(self) -> None:
        """Hold back the next bytes any server connection sends."""
        with self._lock:
            self._armed = True
            self.stalled.clear()
            self._released.clear()

    def release(self) -> None:
        self._released.set()

    def close(self) -> None:
        self._closed = True
        self.release()
        for sock in [self._listener, *self._open]:
            try:
                sock.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            self._open += [client, server]
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _take_hold(self) -> bool:
        with self._lock:
            armed, self._armed = self._armed, False
            return armed

    def _pump(self, source: socket.socket, dest: socket.socket, answers: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if answers and self._take_hold():
                    self.stalled.set()
                    self._released.wait(self.hold)
                dest.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dest.shutdown(socket.SHUT_WR)
            except OSError:
                pass


@pytest.fixture
def stalling_proxy() -> Iterator[type[StallingProxy]]:
    """StallingProxy, closed after the test (every proxy the test made)."""
    made: list[StallingProxy] = []

    class Tracked(StallingProxy):
        def __init__(self, port: int, hold: float = 30.0) -> None:
            super().__init__(port, hold)
            made.append(self)

    yield Tracked
    for proxy in made:
        proxy.close()
