"""`ksgitops monitor`: the work tree's change feed (app/monitor.py), so that `reconcile` and `diff`
look only at what changed instead of every path they own."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ..io.fs.locate import Need, locate
from ..model import counted
from .base import KsCommand, dump, output_option


@click.command(cls=KsCommand, name="monitor", exits="0; 1 `status`: no monitor runs; 2 not a git work tree; "
                                                      "3 the monitor could not start")
@click.argument("action", type=click.Choice(["start", "stop", "status"]))
@click.argument("repo", required=False, default=None, type=click.Path(file_okay=False, path_type=Path))
@click.option("--foreground", is_flag=True, help="`start`: run the monitor in this process until SIGTERM (a container's "
                                                 "main process, a service manager's unit).")
@click.option("--plan-ahead/--no-plan-ahead", default=True, show_default=True,
              help="`start`: as it starts, and once the work tree is quiet (0.3 s after a change), run a quiet `diff` "
                   "at a lower priority and keep its plan, so that the next `diff` or `reconcile` applies it instead of "
                   "computing. --no-plan-ahead spends no CPU between commands.")
@click.option("--idle-exit", type=click.FloatRange(min=0), default=0, metavar="SECONDS",
              help="`start`: stop after SECONDS in which no command asked it anything (0, the default: never). "
                   "A monitor a work-tree command started by itself (KSGITOPS_MONITOR) stops after 3 hours.")
@click.option("--ready-fd", type=int, default=None, hidden=True)
@output_option("text", "json")
def monitor_cmd(action: str, repo: Path | None, foreground: bool, plan_ahead: bool, idle_exit: float,
                ready_fd: int | None, output: str) -> None:
    """Start, stop or show the work tree's change feed: a process that watches the work tree
    (inotify) so that `reconcile` and `diff` ask it what changed instead of looking at every path
    they own. Without one, or when it lost events, they look at everything, as before. It also
    keeps ksgitops loaded: `reconcile`, `diff`, `validate`, `render`, `explain`, `wecs` and `status`
    hand themselves to it and run in a process it forks, without start-up or imports (when it runs
    the same interpreter and package files; KSGITOPS_HANDOFF=0 keeps every command in its own process).
    In a bare repository it watches nothing and only runs the commands given that repository.
    Each ksgitops folder of a repository has its own (a monorepo's infra/staging/ and infra/prod/).
    A work-tree `reconcile` or `diff` at a terminal that checked 50,000 generated paths or more
    one by one starts a monitor itself, after its answer (KSGITOPS_MONITOR: `auto`, the default;
    `on`: always, as a script may ask; `off`: never, only a hint)."""
    from ..app import monitor
    root = locate(repo, Need.WATCH)  # a bare repository's monitor watches nothing and runs its commands
    if action == "start" and (foreground or ready_fd is not None):
        from .entry import preload, run
        sys.exit(monitor.serve(root, ready_fd, run, preload, plan_ahead, idle_exit))
    if action == "start":
        facts, started = monitor.start(root, plan_ahead, idle_exit)
        _show(facts, "started" if started else "already running", output)
    elif action == "stop":
        stopped = monitor.stop(root)
        dump({"stopped": stopped}) if output == "json" else click.echo("stopped" if stopped else "no monitor was running")
    else:
        running = monitor.status(root)
        if running is None:
            dump({"running": False}) if output == "json" else click.echo("no monitor runs for this work tree")
            sys.exit(1)
        _show(running, "running", output)


def _show(facts: dict, state: str, output: str) -> None:
    if output == "json":
        dump({"running": True, "state": state,
              **{k: facts.get(k) for k in ("pid", "folders", "token", "restarts", "handoff", "served", "refused",
                                           "idleExit")}})
        return
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(facts.get("started") or 0)))
    watching = f"watching {facts.get('folders')} folders" if facts.get("folders") else "watching nothing"
    click.echo(f"{state}: pid {facts.get('pid')}, {watching} since {since}"
               f"{', restarted ' + str(facts['restarts']) + ' times after lost events' if facts.get('restarts') else ''}"
               f"{'; ran ' + str(facts['served']) + ' commands handed to it' if facts.get('handoff') else ''}"
               f"{'; the last one it did not run: ' + str(facts['refused']) if facts.get('refused') else ''}"
               f"{'; it stops after ' + _duration(facts['idleExit']) + ' without a command' if facts.get('idleExit') else ''}")


def _duration(seconds: float) -> str:
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return counted(count, unit)
    return f"{seconds:g} s"
