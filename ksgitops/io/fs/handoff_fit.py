"""What makes a monitor fit to run an asker's command in a worker it forks (handoff_worker.py):
the same package files and libraries (by stamp, else by content), and the same powers."""
from __future__ import annotations

import hashlib
import os
import resource
from typing import Any

from ...core.load.schemas import schema_dir
from . import handoff


def credentials(pid: str) -> list[Any] | None:
    """What a process may do beyond its uid: groups, capabilities, seccomp, namespaces, cgroup, root,
    resource limits, OOM score, LSM label, priority and CPU affinity (None: not readable). A worker
    runs with the monitor's, so the asker's must be the same."""
    try:
        with open(f"/proc/{pid}/status") as f:
            status = [line for line in f.read().splitlines()
                      if line.split(":")[0] in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd",
                                                "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters")]
        spaces = sorted((name, os.readlink(f"/proc/{pid}/ns/{name}")) for name in os.listdir(f"/proc/{pid}/ns"))
        with open(f"/proc/{pid}/cgroup") as f:
            cgroup = f.read()
        root = os.stat(f"/proc/{pid}/root")
        with open(f"/proc/{pid}/oom_score_adj") as f:
            oom = f.read()
        label = _read_or_none(f"/proc/{pid}/attr/current")  # the LSM's (AppArmor, SELinux) confinement
        number = os.getpid() if pid == "self" else int(pid)
        limits = [resource.prlimit(number, getattr(resource, name))
                  for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_"))]
        return [status, spaces, cgroup, [root.st_dev, root.st_ino], limits, oom, label,
                os.getpriority(os.PRIO_PROCESS, number), sorted(os.sched_getaffinity(number))]
    except (OSError, ValueError):
        return None


def contents_of(paths: list[str]) -> list[bytes | None]:
    """A digest of each file's bytes (None where it is gone)."""
    found: list[bytes | None] = []
    for path in paths:
        try:
            with open(path, "rb") as f:
                found.append(hashlib.file_digest(f, "blake2b").digest())
        except OSError:
            found.append(None)
    return found


def _read_or_none(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def stamp_of(paths: list[str]) -> list[Any]:
    """Size, mtime and inode of each file (None where it is gone)."""
    stamp: list[Any] = []
    for path in paths:
        try:
            st = os.stat(path)
            stamp.append([st.st_size, st.st_mtime_ns, st.st_ino])
        except OSError:
            stamp.append(None)
    return stamp


def package_stamp() -> list[Any]:
    """Every file of the package and its schemas, with its stamp: an edit or an upgrade changes it."""
    paths = []
    for base in (handoff.PACKAGE, str(schema_dir())):
        for top, folders, files in os.walk(base):
            folders[:] = sorted(f for f in folders if f != "__pycache__")
            paths += [os.path.join(top, name) for name in sorted(files) if not name.endswith((".pyc", ".pyo"))]
    return [[path, stamp] for path, stamp in zip(paths, stamp_of(paths))]
