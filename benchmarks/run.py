"""ksgitops benchmark harness: one command, every figure with its target, a Markdown report on stdout.

    python benchmarks/run.py                                  # 1,000 WECs x 200 objects, every row
    python benchmarks/run.py --fleet project,independent      # both generators, side by side
    python benchmarks/run.py --rows worktree,kustomize        # a subset of the rows
    python benchmarks/run.py --large                          # 10,000 x 200: bare and work tree
    python benchmarks/run.py --quick                          # 50 x 40: a smoke test

For each fleet and size it generates a synthetic repository (benchmarks/fleet.py or
benchmarks/fleet_independent.py), commits it with the git CLI, and times `ksgitops` as fresh
processes (wall time and peak RSS, through spawn_timed.py) in three modes, each on its own copy:
bare (a bare clone, `reconcile --commit`, then status and fold-in), worktree (plain `reconcile`
and `diff` in a work tree) and checkout (`reconcile --commit` in a work tree); scenarios.py says
what each runs and checks. Side by side in the same run: `kubectl kustomize` of a sample of the
overlays, `git checkout` of the reconciled commit, and the interpreter's start-up (the floors).

Progress goes to stderr. Exit status: 0 when every step ran and every check passed, 1 when a step
failed or a check did not hold (a no-op that wrote, a work tree unlike the bare result, ...), and
with --strict also 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from filesystem import MEMORY, PROBE, discard, remove_discarded  # noqa: E402
from measure import ensure_bytecode, ksgitops_command, log, python_of, timed  # noqa: E402
from scenarios import GROUPS, SizeResult, Step, bench_size  # noqa: E402
from table import FLOORS, report, targets_missed  # noqa: E402

FLEETS = {"project": "fleet", "independent": "fleet_independent"}
ALL_ROWS = (*GROUPS, "floor")
LARGE = (10000, 200)
LARGE_ROWS = ("bare", "worktree", "kustomize", "floor")
FLOOR_RUNS = 5


def parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in filter(None, (p.strip().lower() for p in text.split(","))):
        w, _, o = part.partition("x")
        try:
            out.append((int(w), int(o)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad size {part!r}: use WECSxOBJECTS, e.g. 1000x200")
    if not out:
        raise argparse.ArgumentTypeError("no sizes given")
    return out


def parse_list(choices: tuple[str, ...]):  # type: ignore[no-untyped-def]
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        names = list(choices) if names == ["all"] else names
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'nothing'}: choose from {', '.join(choices)} or all")
        return names
    return parse


def arguments(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Benchmark ksgitops against its targets.")
    size = ap.add_argument_group("sizes (default 1,000 WECs x 200 objects)")
    size.add_argument("--wecs", type=int, help="WECs for a single size")
    size.add_argument("--objects", type=int, help="workload objects for a single size")
    size.add_argument("--sizes", type=parse_sizes, help="comma-separated WECSxOBJECTS, e.g. 100x200,1000x200")
    size.add_argument("--quick", action="store_true", help="50 WECs x 40 objects (smoke test)")
    size.add_argument("--large", action="store_true",
                      help=f"10,000 WECs x 200 objects; rows {','.join(LARGE_ROWS)} unless --rows is given")
    ap.add_argument("--fleet", type=parse_list(tuple(FLEETS)), default=["project"],
                    help="project (benchmarks/fleet.py), independent (benchmarks/fleet_independent.py) or both, "
                         "comma-separated (default project)")
    ap.add_argument("--rows", type=parse_list(ALL_ROWS),
                    help=f"row groups to run, comma-separated: {', '.join(ALL_ROWS)} (default all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kustomize-sample", type=int, default=20, metavar="N",
                    help="overlays to build with kubectl kustomize (default 20)")
    ap.add_argument("--ksgitops", metavar="CMD", help="command that runs ksgitops (default: the `ksgitops` console script "
                                                      "beside this interpreter's or on PATH, passing over a version "
                                                      "manager's shim; else `python -m ksgitops` from this checkout)")
    ap.add_argument("--timeout", type=float, default=3600, help="per-command timeout, seconds")
    ap.add_argument("--workdir", help="where the temporary repos go (default: $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the generated repos and logs")
    ap.add_argument("--json", metavar="FILE", help="also write every figure as JSON (benchmarks/plot.py reads it)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    return ap.parse_args(argv)


def sizes_of(args: argparse.Namespace) -> list[tuple[int, int]]:
    if args.quick:
        return [(50, 40)]
    if args.large:
        return [LARGE]
    if args.sizes:
        return list(args.sizes)
    return [(args.wecs or 1000, args.objects or 200)]


def measure_floors(ks: list[str], env: dict[str, str], args: argparse.Namespace, logs: Path) -> dict[str, Step]:
    python = python_of(ks)
    commands = {"floor.python": lambda i: [python, "-c", "pass"],
                "floor.import": lambda i: [python, "-c", "import ksgitops.cli.commands"],
                "floor.files": lambda i: [python, "-c", PROBE, str(logs / f"probe-{i}")],
                "floor.memory": lambda i: [python, "-c", MEMORY]}
    floors = {}
    for key, _ in FLOORS:
        runs = [timed(commands[key](i), cwd=Path.cwd(), env=env, log_dir=logs, label=f"{key}-{i}",
                      timeout=args.timeout) for i in range(FLOOR_RUNS)]
        good = [r for r in runs if r.ok]
        floors[key] = Step(statistics.median(r.seconds for r in good) if good else None,
                           int(statistics.median(r.max_rss for r in good)) if good else None,
                           len(good) == len(runs), f"median of {len(good)}" if good else runs[0].tail(3))
    return floors


def tool_version(argv: list[str], env: dict[str, str] | None = None) -> str:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        text = (res.stdout or res.stderr).strip().splitlines()
        return text[0] if res.returncode == 0 and text else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def header(args: argparse.Namespace, ks: list[str], env: dict[str, str], started: _dt.datetime,
           seconds: float, rows: list[str], bytecode: str) -> list[str]:
    kubectl = shutil.which("kubectl")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"## ksgitops benchmark — {started.strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average at the end {load}",
        f"- ksgitops: `{shlex.join(ks)}` ({tool_version([*ks, '--version'], env)})",
        f"- kubectl: {tool_version([kubectl, 'version', '--client']) if kubectl else 'not found'}",
        f"- fleets: {', '.join(args.fleet)}, seed {args.seed}; rows: {', '.join(rows)}; each figure is one fresh "
        f"process (wall time, peak RSS of that process)",
        f"- {bytecode}",
        f"- harness wall time: {seconds / 60:.1f} min",
    ]


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    rows = args.rows or list(LARGE_ROWS if args.large else ALL_ROWS)
    groups = {r for r in rows if r in GROUPS}
    if shutil.which("git") is None:
        print("benchmarks/run.py: the git CLI is needed to set up the repos", file=sys.stderr)
        return 2
    started, clock = _dt.datetime.now(_dt.timezone.utc), time.perf_counter()
    ks, env = ksgitops_command(args.ksgitops)
    bytecode = ensure_bytecode(ks, env)
    logs = Path(tempfile.mkdtemp(prefix="ksgitops-bench-floors-", dir=args.workdir))
    discard(logs)
    results: list[SizeResult] = []
    try:
        floors = measure_floors(ks, env, args, logs) if "floor" in rows else {}
        for fleet_name in args.fleet:
            fleet = importlib.import_module(FLEETS[fleet_name])
            for wecs, objects in sizes_of(args):
                if groups:
                    results.append(bench_size(fleet_name, fleet, wecs, objects, groups, args, ks, env))
    finally:
        remove_discarded()
    seconds = time.perf_counter() - clock
    print(report(results, floors, header(args, ks, env, started, seconds, rows, bytecode)), end="")
    for res in results if args.keep else []:
        log(f"kept {', '.join(res.workdirs)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"date": started.isoformat(), "harness_seconds": seconds, "seed": args.seed, "rows": rows,
                       "machine": platform.platform(), "cpus": os.cpu_count(),
                       "floors": {k: asdict(v) for k, v in floors.items()},
                       "results": [asdict(r) for r in results]}, f, indent=2)
    if any(r.problems for r in results) or any(not f.ok for f in floors.values()):
        return 1
    return 1 if args.strict and targets_missed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
