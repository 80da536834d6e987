"""Stopping a long-running command between write steps, never inside one.

A *write step* changes durable state and must happen whole: writing a commit's objects and moving
its branch, a push, a fetch (it moves refs), a write into a work tree, a cache or memo file. What
lies between write steps is computation, which can be thrown away at any moment.

- The first SIGTERM, SIGINT or SIGHUP (unless ignored, as under `nohup`) asks to stop: the cycle
  under way finishes (its commit is made and pushed), no other cycle starts, and every wait (the
  poll interval, a backoff) ends at once.
- A second one abandons the cycle: a write step under way still finishes, no other write step
  starts, and computation under way stops at once (`Abandoned` is raised inside it).

Code that runs a cycle marks computation with `with guard.computing():` and calls
`guard.checkpoint()` before each write step; nothing else needs to know about signals.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from types import FrameType
from typing import Iterator


# SIGHUP too: a closed terminal or session and `docker kill -s HUP` (dumb-init, PID 1 of the image,
# passes it on) would otherwise end the program wherever it is; but not when it is ignored as
# the program starts (`nohup`): the user asked it to outlive the session
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Abandoned(BaseException):
    """Unwinds an abandoned cycle (a BaseException, so no `except Exception` swallows it)."""


class Shutdown:
    def __init__(self, requested: threading.Event | None = None) -> None:
        self.requested = requested or threading.Event()  # the first signal (or a caller) sets it
        self.abandoned = False  # the second signal sets it
        self._computing = 0

    def install(self) -> None:
        """Handle STOP_SIGNALS in this (the main) thread. System calls a signal interrupts
        are restarted (SA_RESTART): libgit2 does not retry an interrupted socket read, so without
        it a signal would make a fetch or push under way fail."""
        for sig in STOP_SIGNALS:
            if sig == signal.SIGHUP and signal.getsignal(sig) == signal.SIG_IGN:
                continue
            signal.signal(sig, self.on_signal)
            signal.siginterrupt(sig, False)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """`install()` for the length of a `with` block; the previous handlers come back after it
        (a command run in-process, by a test or an embedding program, leaves no handler behind)."""
        previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
        self.install()
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def on_signal(self, signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        if not self.requested.is_set():
            self.requested.set()
            return
        self.abandoned = True
        if self._computing:
            raise Abandoned()

    def checkpoint(self) -> None:
        """Call before a write step: raises Abandoned once the cycle is abandoned."""
        if self.abandoned:
            raise Abandoned()

    @contextmanager
    def computing(self) -> Iterator[None]:
        """A stretch without writes: a second signal stops it where it is."""
        self.checkpoint()
        self._computing += 1
        try:
            yield
        finally:
            self._computing -= 1

    def sleep(self, seconds: float) -> None:
        """A wait inside a cycle (a push retry's backoff): cut short when the cycle is abandoned."""
        deadline = time.monotonic() + seconds
        while not self.abandoned and (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.05))
        self.checkpoint()
