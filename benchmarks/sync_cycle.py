"""One `ksgitops sync` cycle for a ~200-object mailbox with nothing changed.

    python benchmarks/sync_cycle.py [--objects 200] [--rounds 5] [--wecs 1]

A synthetic fleet (fleet.py) is committed with the git CLI and reconciled (`ksgitops reconcile
--commit`); the mailbox holding the most objects is chosen (`--objects` is raised until it holds at
least that many). The loopback Kubernetes REST server of tests/kubeserver/ runs in this process.
`ksgitops sync --once` then runs as fresh subprocesses against the local repository: a first cycle
(applies everything, pushes the first report commit), then `--rounds` cycles with nothing changed.
The same no-change cycle is also timed in-process (`agent.Agent(...).cycle()`, a warm-up call
first), i.e. without Python start-up and imports. The server's request log gives the requests of
each no-change cycle; none may write (POST/PUT/PATCH/DELETE). Target: a no-change cycle ≤ 1 s.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import fleet
from kubeserver import KubeServer

TARGET = 1.0
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@e", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="b@e")


def run(*cmd: str, cwd: Path | None = None) -> str:
    done = subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, env=GIT_ENV, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr}{done.stdout}")
    return done.stdout.strip()


def build(repo: Path, wecs: int, objects: int) -> tuple[str, int, int]:
    """Generate, commit, reconcile; (mailbox, its object count, --objects used) once it holds enough."""
    asked = objects
    while True:
        shutil.rmtree(repo, ignore_errors=True)
        fleet.generate(repo, wecs, objects)
        run("git", "init", "-q", "-b", "main", cwd=repo)
        run("git", "add", "-A", cwd=repo)
        run("git", "commit", "-q", "-m", "fleet", cwd=repo)
        run("ksgitops", "reconcile", str(repo), "--commit")
        counts = {mb.name: sum(1 for f in (mb / "objects").rglob("*") if f.is_file())
                  for mb in (repo / "spaces").glob("*-mb-*")}
        mailbox, count = max(sorted(counts.items()), key=lambda kv: kv[1])
        if count >= asked:
            return mailbox, count, objects
        objects += max(1, asked - count)


def sync_cmd(mailbox: str, kubeconfig: Path, repo: Path, cache: Path) -> list[str]:
    return ["ksgitops", "sync", "--mailbox", mailbox, "--kubeconfig", str(kubeconfig), "--repo", str(repo),
            "--cache-dir", str(cache), "--once"]


def timed_subprocess(server: KubeServer, cmd: list[str]) -> tuple[float, list, str]:
    """Wall seconds, the requests the server saw meanwhile, the summary line."""
    seen = len(server.requests)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"sync exited {done.returncode}:\n{done.stderr}{done.stdout}")
    return seconds, server.requests[seen:], done.stdout.strip()


def timed_in_process(server: KubeServer, cycle: Callable[[], Any]) -> tuple[float, list, str]:
    """The same for one `Agent.cycle()` call in this process."""
    seen = len(server.requests)
    start = time.perf_counter()
    outcome = cycle()
    seconds = time.perf_counter() - start
    if outcome.exit_code:
        raise RuntimeError(f"in-process cycle failed: {outcome.errors}")
    return seconds, server.requests[seen:], outcome.summary()


def measure(objects: int, rounds: int, wecs: int, workdir: str | None, keep: bool) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="ksgitops-sync-", dir=workdir))
    try:
        repo = base / "repo"
        mailbox, count, used = build(repo, wecs, objects)
        with KubeServer() as server:
            kubeconfig = server.write_kubeconfig(base / "kubeconfig")
            cmd = sync_cmd(mailbox, kubeconfig, repo, base / "cache")
            first, first_reqs, first_line = timed_subprocess(server, cmd)
            idle = [timed_subprocess(server, cmd) for _ in range(rounds)]
            from ksgitops.app import agent
            runner = agent.Agent(agent.SyncOptions(mailbox, str(repo), kubeconfig=str(kubeconfig),
                                                   cache_dir=base / "cache"))
            timed_in_process(server, runner.cycle)  # warm-up: imports, first connection
            inproc = [timed_in_process(server, runner.cycle) for _ in range(rounds)]
        no_change = idle + inproc
        return {
            "mailbox": mailbox, "count": count, "objects": used, "wecs": wecs,
            "first": first, "first_requests": len(first_reqs),
            "first_writes": sum(r.method in WRITES for r in first_reqs), "first_line": first_line,
            "idle": [s for s, _, _ in idle], "inproc": [s for s, _, _ in inproc],
            "requests": sorted({len(reqs) for _, reqs, _ in no_change}),
            "writes": sorted({sum(r.method in WRITES for r in reqs) for _, reqs, _ in no_change}),
            "methods": sorted({r.method for _, reqs, _ in no_change for r in reqs}),
            "committed": [line for _, _, line in no_change if "committed" in line or "pushed" in line],
            "idle_line": idle[-1][2] if idle else "",
        }
    finally:
        if keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


def span(values: list[int]) -> str:
    return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def report(r: dict, load: str) -> str:
    idle, inproc = r["idle"], r["inproc"]
    worst = max(idle) if idle else float("nan")
    met = "met" if worst <= TARGET and r["writes"] == [0] else "missed"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        (f"`sync` cycle, {stamp}: mailbox `{r['mailbox']}` with {r['count']} objects "
         f"(fleet of {r['wecs']} WEC(s), --objects {r['objects']}), loopback kubeserver in the harness process; "
         f"load average before: {load}."),
        "",
        "| figure | value |",
        "|---|---|",
        (f"| first cycle (applies everything), subprocess | {r['first']:.2f} s "
         f"({r['first_requests']} requests, {r['first_writes']} writes) |"),
        (f"| no-change cycle, subprocess, median / max of {len(idle)} | "
         f"{statistics.median(idle):.2f} s / {worst:.2f} s |"),
        f"| no-change cycle, in-process, median of {len(inproc)} | {statistics.median(inproc):.3f} s |",
        f"| requests per no-change cycle | {span(r['requests'])} ({', '.join(r['methods'])}) |",
        f"| writes per no-change cycle | {span(r['writes'])} |",
        f"| target (no-change cycle) | ≤ {TARGET:g} s |",
        f"| result | {met} |",
    ]
    if r["committed"]:
        lines += ["", f"Odd: a no-change cycle committed or pushed: {r['committed'][0]}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--objects", type=int, default=200, help="minimum objects in the mailbox (default 200)")
    p.add_argument("--rounds", type=int, default=5, help="no-change cycles of each kind (default 5)")
    p.add_argument("--wecs", type=int, default=1, help="WECs in the fleet (default 1)")
    p.add_argument("--workdir", default=None, help="where the temporary repository goes")
    p.add_argument("--keep", action="store_true", help="keep the repository, cache and kubeconfig")
    args = p.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    r = measure(args.objects, max(1, args.rounds), args.wecs, args.workdir, args.keep)
    print(f"first cycle: {r['first_line']}\nno-change cycle: {r['idle_line']}", file=sys.stderr)
    print(report(r, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
