"""Half of a large check in a forked child: lstat is one system call per path, the GIL lets two
threads overlap little of it, and a forked child's half costs the parent only the pipe's bytes."""
from __future__ import annotations

import os
import threading
from typing import Callable


def may_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1  # never fork beside other threads


def in_child(work: Callable[[], bytes], size: int) -> Callable[[], bytes | None]:
    """Start `work` in a forked child; the returned function waits for its `size` bytes (None:
    the child failed, and the caller does the work itself)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no cleanup, no output but the pipe
        try:
            os.close(read)
            data = memoryview(work())
            while data:
                data = data[os.write(write, data):]
            os._exit(0)
        finally:
            os._exit(1)
    os.close(write)

    def result() -> bytes | None:
        chunks = []
        try:
            while chunk := os.read(read, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(read)
            _, status = os.waitpid(pid, 0)
        data = b"".join(chunks)
        return data if status == 0 and len(data) == size else None
    return result
