"""How the CLI shows things to a person: progress bars, colour, a pager. Each is on only for a
terminal: piped output, `-o json`, NO_COLOR and --no-color get plain text.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from typing import Any

import click

from .base import color_enabled
from ..io.fs.handoff_worker import handoff_link
from ..names import printable


class ProgressBars:
    """The Progress callback the use cases get: one rich bar per stage (loading, computing,
    writing) on stderr, only when stderr is a terminal and the output is not JSON. Small work gets
    no bars: they appear once a stage has MIN_ITEMS items, with the stages before it shown done.
    A context manager: the bars go when the work ends."""

    MIN_ITEMS = 50

    def __init__(self, output: str = "text") -> None:
        self.enabled = output != "json" and sys.stderr.isatty()
        self._bar: Any = None
        self._stages: dict[str, tuple[int, int]] = {}
        self._tasks: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        self._stages[stage] = (done, total)
        if self._bar is None and total < self.MIN_ITEMS:
            return
        if self._bar is None:
            self._start()
        for name, (count, size) in self._stages.items():
            if name not in self._tasks:
                self._tasks[name] = self._bar.add_task(name, total=size)
            self._bar.update(self._tasks[name], completed=count, total=size)

    def _start(self) -> None:
        from rich.console import Console  # on first use: ~50 ms (python -X importtime), only for a terminal
        from rich.progress import Progress
        self._bar = Progress(console=Console(stderr=True, no_color=not color_enabled(sys.stderr)), transient=True)
        self._bar.start()

    def __enter__(self) -> "ProgressBars":
        return self

    def __exit__(self, *_: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


_DIFF_STYLES = (("+++", {"bold": True}), ("---", {"bold": True}), ("@@", {"fg": "cyan"}),
                ("+", {"fg": "green"}), ("-", {"fg": "red"}))


def style_diff(text: str) -> str:
    """A unified diff coloured as git colours one (only called when colour is on)."""
    lines = []
    for line in text.splitlines(keepends=True):
        style = next((s for prefix, s in _DIFF_STYLES if line.startswith(prefix)), None)
        body, end = (line[:-1], "\n") if line.endswith("\n") else (line, "")
        lines.append(click.style(body, **style) + end if style else line)  # type: ignore[arg-type]
    return "".join(lines)


def pager_command() -> str | None:
    """The pager for a terminal: KSGITOPS_PAGER, else PAGER, else less; None for none (empty, `cat`,
    or not installed)."""
    pager = os.environ.get("KSGITOPS_PAGER", os.environ.get("PAGER", "less")).strip()
    if not pager or pager == "cat":
        return None
    try:
        program = shlex.split(pager)[0]
    except (ValueError, IndexError):
        return None
    return pager if shutil.which(program) else None


def print_paged(text: str, page: bool = False) -> None:
    """Print `text` on stdout; through the pager when asked and stdout is a terminal (like git,
    with LESS=FRX unless LESS is set: short output stays on the screen, colours pass)."""
    pager = pager_command() if page and sys.stdout is not None and sys.stdout.isatty() else None
    if pager is None:
        click.echo(text, nl=False, color=color_enabled())
        return
    env = {**os.environ}
    env.setdefault("LESS", "FRX")
    sys.stdout.flush()
    if handoff_link.conn is not None:  # a monitor's worker: the terminal belongs to the process that asked
        handoff_link.page(pager, env, text)
        return
    proc = subprocess.Popen(pager, shell=True, stdin=subprocess.PIPE, env=env)  # noqa: S602 - the user's own PAGER
    try:
        proc.communicate(text.encode())
    except BrokenPipeError:  # the reader quit early
        pass


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell, as `kubectl get` prints them."""
    rows = [[printable(str(c)) for c in row] for row in rows]
    widths = [max(len(str(c)) for c in column) for column in zip(headers, *rows)]
    return "".join("   ".join(str(c).ljust(w) for c, w in zip(line, widths)).rstrip() + "\n"
                   for line in [headers, *rows])


def wec_table(rows: list[dict[str, Any]]) -> str:
    return table(["WEC", "SPACE", "MAILBOX", "PLACEMENTS", "LABELS"],
                 [[r["wec"], r["inventorySpace"], r["mailbox"] + (" (frozen)" if r["frozen"] else ""), str(r["placements"]),
                   ",".join(f"{k}={v}" for k, v in r["labels"].items())] for r in rows])
