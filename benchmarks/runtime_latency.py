"""Push-to-reconciled latency of `ksgitops run` over a loopback `git daemon`.

    python benchmarks/runtime_latency.py --wecs 1000 --objects 200 --interval 1

A synthetic fleet (fleet.py) is committed and served with `git daemon` on 127.0.0.1; `ksgitops run`
polls it (its own bare clone, JSON logs, probes on a free port). After the first cycle:
- idle cycles: the `seconds` of cycles that found nothing new (fetch + compare), from its logs;
- latency: a "human" pushes one Location label change with the git CLI; the clock runs from the
  push's return until `git ls-remote` shows the branch moved past it (the cycle's one
  commit pushed), polled every 20 ms. Repeated `--rounds` times.
Target: latency ≤ 2 s + the poll interval; an idle cycle ≤ 0.2 s.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import fleet  # noqa: E402
from gitdaemon import GitDaemon  # noqa: E402

GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@e", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="b@e")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=GIT_ENV).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(port: int, proc: subprocess.Popen[str], timeout: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"ksgitops run exited {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                if r.status == 200:
                    return time.perf_counter() - start
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError("ksgitops run never became ready")


def measure(wecs: int, objects: int, interval: float, rounds: int, workdir: str | None) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="ksgitops-latency-", dir=workdir))
    proc = None
    try:
        src = base / "src"
        fleet.generate(src, wecs, objects)
        git(src, "init", "-q", "-b", "main")
        git(src, "add", "-A")
        git(src, "commit", "-q", "-m", "fleet")
        with GitDaemon(base / "served") as daemon:
            daemon.bare("fleet.git", src)
            human = base / "human"
            git(base, "clone", "-q", daemon.url("fleet.git"), str(human))
            port = free_port()
            log = open(base / "run.log", "w+")
            proc = subprocess.Popen(["ksgitops", "run", "--repo", daemon.url("fleet.git"), "--interval", str(interval),
                                     "--port", str(port), "--log-format", "json", "--workdir", str(base / "work")],
                                    stdout=subprocess.DEVNULL, stderr=log, text=True)
            first = wait_ready(port, proc, 600)
            time.sleep(3 * interval)  # a few idle cycles
            latencies = []
            for r in range(rounds):
                git(human, "pull", "-q", "--rebase", "origin", "main")
                changed = fleet.change_location_label(human, r + 2)
                git(human, "commit", "-qam", f"bench: Location change {r}")
                git(human, "push", "-q", "origin", "main")
                pushed = git(human, "rev-parse", "HEAD")
                t0 = time.perf_counter()
                while True:
                    head = git(human, "ls-remote", "origin", "refs/heads/main").split()[0]
                    if head != pushed:
                        latencies.append(time.perf_counter() - t0)
                        break
                    if time.perf_counter() - t0 > 120:
                        raise RuntimeError("no reconciled commit within 120 s")
                    time.sleep(0.02)
                del changed
                time.sleep(2 * interval)
            proc.terminate()
            proc.wait(timeout=60)
            log.seek(0)
            events = [json.loads(line) for line in log if line.startswith("{")]
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        shutil.rmtree(base, ignore_errors=True)
    idle = [e["seconds"] for e in events if e.get("event") == "cycle" and e.get("action") == "idle"]
    worked = [e["seconds"] for e in events if e.get("event") == "cycle" and e.get("action") == "reconciled"]
    return {"wecs": wecs, "objects": objects, "interval": interval, "first_ready_s": first,
            "latency_s": latencies, "latency_median_s": statistics.median(latencies), "latency_max_s": max(latencies),
            "idle_cycles": len(idle), "idle_median_s": statistics.median(idle) if idle else None,
            "idle_max_s": max(idle) if idle else None, "reconcile_cycle_median_s": statistics.median(worked[1:] or worked),
            "target_latency_s": 2.0 + interval, "target_idle_s": 0.2}


def markdown(m: dict[str, object]) -> str:
    ok_latency = float(m["latency_max_s"]) <= float(m["target_latency_s"])  # type: ignore[arg-type]
    ok_idle = m["idle_max_s"] is not None and float(m["idle_median_s"]) <= 0.2  # type: ignore[arg-type]
    verdict = lambda ok: "**met**" if ok else "**missed**"  # noqa: E731
    return "\n".join([
        f"| size | measurement | figure | target | result |", "|---|---|---|---|---|",
        f"| {m['wecs']:,} × {m['objects']} | push → reconciled commit on the remote (median / max of "
        f"{len(m['latency_s'])}, poll interval {m['interval']} s) | {m['latency_median_s']:.2f} s / "  # type: ignore[arg-type]
        f"{m['latency_max_s']:.2f} s | ≤ 2 s + interval = {m['target_latency_s']:.1f} s | {verdict(ok_latency)} |",
        f"| {m['wecs']:,} × {m['objects']} | idle poll cycle (median / max of {m['idle_cycles']}) | "
        f"{m['idle_median_s']:.3f} s / {m['idle_max_s']:.3f} s | ≤ 0.2 s | {verdict(ok_idle)} |",
        f"| {m['wecs']:,} × {m['objects']} | a cycle that reconciled (median) | {m['reconcile_cycle_median_s']:.2f} s | — | — |",
        f"| {m['wecs']:,} × {m['objects']} | start: clone + first reconcile + status until /readyz | "
        f"{m['first_ready_s']:.1f} s | — | — |",
    ]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wecs", type=int, default=1000)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workdir")
    args = ap.parse_args(argv)
    print(markdown(measure(args.wecs, args.objects, args.interval, args.rounds, args.workdir)), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
