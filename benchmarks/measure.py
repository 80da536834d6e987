"""The benchmark harness's tools: timed children, git plumbing, and the work-tree checks.

Every measured command runs through spawn_timed.py (see there why), so a figure is the command's
own wall time and peak RSS whatever the harness holds.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
GiB = 1024 ** 3
MiB = 1024 ** 2
BENCH_IDENTITY = (("user.name", "ksgitops-bench"), ("user.email", "bench@example.invalid"),
                  ("commit.gpgsign", "false"), ("core.autocrlf", "false"))


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ timed runs

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
    """Run argv as a fresh grandchild (through spawn_timed.py); its wall time and peak RSS."""
    log_dir.mkdir(parents=True, exist_ok=True)
    run = Run(argv=argv, stdout_path=str(log_dir / f"{label}.out"), stderr_path=str(log_dir / f"{label}.err"))
    result = log_dir / f"{label}.rusage.json"
    result.unlink(missing_ok=True)
    with open(run.stdout_path, "wb") as out, open(run.stderr_path, "wb") as err:
        subprocess.run([sys.executable, "-S", "-E", str(HERE / "spawn_timed.py"), str(result), str(timeout), *argv],
                       cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, check=False,
                       timeout=timeout + 120)
    try:
        figures = json.loads(result.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        run.exit_code = -1
        return run
    run.seconds, run.max_rss = figures["seconds"], figures["max_rss"]
    run.exit_code, run.timed_out = figures["exit_code"], figures["timed_out"]
    return run


def ksgitops_command(spec: str | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    env.setdefault("NO_COLOR", "1")
    env["PYTHONUNBUFFERED"] = "1"
    if spec:
        return shlex.split(spec), env
    exe = console_script()
    if exe:
        return [exe], env
    # not installed: run the package from this checkout
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), env.get("PYTHONPATH")]))
    return [sys.executable, "-m", "ksgitops"], env


def console_script() -> str | None:
    """ksgitops' console script as pip installed it, which is what a user of a virtual environment
    or pipx runs: the one beside this interpreter's, else the first on PATH whose first line starts
    Python. A version manager's shim found first on PATH is passed over: pyenv's is a bash script
    that runs `pyenv exec` (0.08-0.13 s here), and every figure would measure the manager."""
    beside = Path(sysconfig.get_path("scripts")) / "ksgitops"
    found = [str(beside)] if beside.is_file() else []
    found += [str(Path(d) / "ksgitops") for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    for path in found:
        if os.access(path, os.X_OK) and Path(path).is_file() and _shebang_python(path):
            return path
    return None


PIP_SH_LAUNCHER = "'''exec' "  # pip's second line when the interpreter's path is too long for #!


def _shebang_python(path: str) -> str | None:
    """The Python a script starts: `#!/path/python`, `#!/usr/bin/env python3`, or pip's launcher
    for a long interpreter path (`#!/bin/sh`, then the interpreter quoted after PIP_SH_LAUNCHER)."""
    try:
        with open(path, "rb") as f:
            first, second = (f.readline().decode("utf-8", "replace") for _ in range(2))
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if len(words) > 1 and Path(words[0]).name == "env":
        words = [shutil.which(words[1]) or words[1]]
    elif words and Path(words[0]).name == "sh" and second.startswith(PIP_SH_LAUNCHER):
        words = shlex.split(second[len(PIP_SH_LAUNCHER):])[:1]
    return words[0] if words and Path(words[0]).name.startswith("python") else None


def ensure_bytecode(ks: list[str], env: dict[str, str]) -> str:
    """Compile ksgitops' modules for the interpreter that runs it, as `pip install` does: with
    PYTHONDONTWRITEBYTECODE set (some sandboxes set it) every measured process would otherwise
    compile the whole package again (~0.3 s of each figure a user never pays). Says what it did."""
    python = python_of(ks)
    where = subprocess.run([python, "-c", "import os, ksgitops; print(os.path.dirname(ksgitops.__file__))"],
                           env=env, capture_output=True, text=True, check=False).stdout.strip()
    if not where:
        return "bytecode: ksgitops not importable by its interpreter (not compiled)"
    done = subprocess.run([python, "-m", "compileall", "-q", where], env=env, capture_output=True, check=False)
    return f"bytecode: compiled before measuring ({where})" if done.returncode == 0 else \
        f"bytecode: could not be written in {where} (each process compiles what it imports)"


def python_of(ks: list[str]) -> str:
    """The interpreter that runs ksgitops: ks itself, a console script's shebang, else ours."""
    if Path(ks[0]).name.startswith("python"):
        return ks[0]
    return _shebang_python(ks[0]) or sys.executable


# ------------------------------------------------------------------------------------------- git

def git(repo: Path, *args: str, capture: bool = False, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(["git", "-C", str(repo), *args], check=True, text=True, env=env,
                         stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
    return res.stdout.strip() if capture else ""


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD", capture=True)


def head_tree(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD^{tree}", capture=True)


def subtree(repo: Path, tree: str, path: str) -> str:
    """The id of the tree at `path` inside `tree`."""
    return git(repo, "rev-parse", f"{tree}:{path}", capture=True)


def init_repo(repo: Path) -> None:
    git(repo, "init", "-q", "-b", "main")
    for key, value in BENCH_IDENTITY:
        git(repo, "config", key, value)
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
    git(bare, "read-tree", "main", env=env)
    git(bare, "update-index", "--cacheinfo", f"100644,{blob},{rel}", env=env)
    tree = git(bare, "write-tree", capture=True, env=env)
    ident = [arg for key, value in BENCH_IDENTITY[:2] for arg in ("-c", f"{key}={value}")]
    commit = git(bare, *ident, "commit-tree", tree, "-p", "main", "-m", message, capture=True, env=env)
    git(bare, "update-ref", "refs/heads/main", commit)


def worktree_tree(repo: Path, index: Path) -> str:
    """The git tree id of everything in the work tree (sources and generated files), through a
    private index so that the repository's own index is not touched. The index is kept between
    calls: git then re-reads only files whose stat data changed (racily clean ones included)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(index))
    git(repo, "add", "-A", env=env)
    return git(repo, "write-tree", capture=True, env=env)


# --------------------------------------------------------------------------- file-system checks

Stamp = tuple[int, int, int]


def _walk_stamps(root: Path) -> Iterator[tuple[str, Stamp]]:
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = os.path.join(folder, name)
            st = os.lstat(path)
            yield os.path.relpath(path, root), (st.st_ino, st.st_size, st.st_mtime_ns)


def stamps(root: Path) -> dict[str, Stamp]:
    """(inode, size, mtime) of every file below root but .git: a file rewritten, replaced,
    added or removed changes this map, even when its bytes are the same."""
    return dict(_walk_stamps(root))


def stamp_changes(root: Path, before: dict[str, Stamp]) -> list[str]:
    """Paths added, removed or rewritten below root since `before` was taken, sorted. Compares
    while walking, so that only one map of a large work tree is held at a time."""
    changed, present = [], 0
    for rel, stamp in _walk_stamps(root):
        if rel in before:
            present += 1
        if before.get(rel) != stamp:
            changed.append(rel)
    if present < len(before):
        now = {rel for rel, _ in _walk_stamps(root)}
        changed += [rel for rel in before if rel not in now]
    return sorted(changed)


def generated_files(repo: Path, mailbox: str, folder: str = "objects") -> list[Path]:
    return sorted(p for p in (repo / "spaces" / mailbox / folder).rglob("*") if p.is_file())


def sample_evenly(items: list[str], k: int) -> list[str]:
    if len(items) <= k:
        return list(items)
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


def report_tool(action: str, repo: Path) -> str:
    """benchmarks/reports.py in a child process, so that its memory stays out of the harness."""
    return subprocess.run([sys.executable, str(HERE / "reports.py"), action, str(repo)], check=True,
                          capture_output=True, text=True).stdout.strip()
