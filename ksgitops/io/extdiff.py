"""`ksgitops diff` through an external program, the way `kubectl diff` uses KUBECTL_EXTERNAL_DIFF.

kubectl writes what is live into a temporary folder `LIVE-*` and what would be applied into
`MERGED-*`, one YAML file per object named `[group.]version.Kind.namespace.name`, and runs the
program on the two folders: by default `diff -u -N`; else the first word of KUBECTL_EXTERNAL_DIFF,
with the other words as arguments when they hold only letters, digits, `-` and `=` (others are
dropped with a warning). Here LIVE is what each WEC receives now and MERGED what it would receive,
only the objects that change, each file name prefixed with its mailbox so that every WEC fits in one
flat pair of folders. Secret values are redacted as in the built-in diff.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from ..core.readout.diff import WecDiff
from ..model import KsgitopsError

ENV = "KUBECTL_EXTERNAL_DIFF"
DEFAULT = ("diff", "-u", "-N")
_SAFE_ARGUMENT = re.compile(r"^[A-Za-z0-9=-]+\Z")


def command(value: str) -> tuple[list[str], list[str]]:
    """(argv, dropped words) for a KUBECTL_EXTERNAL_DIFF value; the default without one."""
    if not value:
        return list(DEFAULT), []
    program, *words = value.split(" ")
    kept = [w for w in words if _SAFE_ARGUMENT.match(w)]
    return [program, *kept], [w for w in words if not _SAFE_ARGUMENT.match(w)]


def write_versions(wecs: Sequence[WecDiff], live: Path, merged: Path) -> int:
    """Write both sides of every change; returns the number of objects written."""
    from ..core.serialize import dump_yaml  # loaded when there is something to write
    count = 0
    for wec in wecs:
        for change in wec.changes:
            name = f"{wec.mailbox}.{change.file_name}"
            for folder, body in ((live, change.old), (merged, change.new)):
                if body is not None:
                    (folder / name).write_bytes(dump_yaml(body))
            count += 1
    return count


def run(wecs: Sequence[WecDiff], value: str) -> int:
    """Run the program on LIVE and MERGED folders; its exit code (0 same, 1 different, >1 failed)."""
    argv, dropped = command(value)
    for word in dropped:
        print(f"warning: {ENV}: argument {word!r} ignored (only letters, digits, '-' and '=' are allowed, "
              "as in kubectl)", file=sys.stderr)
    live = Path(tempfile.mkdtemp(prefix="LIVE-"))
    merged = Path(tempfile.mkdtemp(prefix="MERGED-"))
    try:
        write_versions(wecs, live, merged)
        sys.stdout.flush()
        inherit = _has_fileno(sys.stdout)  # an interactive program needs the real terminal
        try:
            proc = subprocess.run([*argv, str(live), str(merged)], check=False,
                                  stdout=None if inherit else subprocess.PIPE)
        except OSError as e:
            raise KsgitopsError(f"{ENV}: cannot run {argv[0]!r} ({e.strerror})") from None
        if not inherit:
            sys.stdout.write(proc.stdout.decode(errors="replace"))
        return proc.returncode
    finally:
        shutil.rmtree(live, ignore_errors=True)
        shutil.rmtree(merged, ignore_errors=True)


def _has_fileno(stream: object) -> bool:
    try:
        stream.fileno()  # type: ignore[attr-defined]
        return True
    except (AttributeError, OSError, ValueError):
        return False
