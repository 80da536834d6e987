"""Commands handed to the work tree's monitor (io/fs/handoff.py, handoff_worker.py), with real
monitor processes: a handed command prints, exits and writes exactly what it does run in its own
process (errors, two at once, from another folder included); a monitor holding other code or
another interpreter's settings runs nothing (the command runs here); a signal reaches the worker;
a pager runs in the asking process, on its terminal."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import copy_example_sources, git_init, run_cli_on_a_terminal, work_tree_files
from ksgitops.io.fs import handoff, paths
from ksgitops.io.git import cache
from ksgitops.io.fs.feed import request
from test_monitor import alive, start

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")


def ks(*args: str, cwd: Path | None = None, handed: bool = True, env: dict[str, str] | None = None,
       python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *python, "-m", "ksgitops", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, handoff.ENV: "1" if handed else "0", **(env or {})}, timeout=300)


def served(repo: Path) -> int:
    reply = request(str(repo if repo.suffix == ".git" else repo / ".git"), {"op": "status"})
    assert reply is not None and reply.get("handoff") is True, reply
    return int(reply["served"])


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The example twice: the first with a monitor, the second without."""
    mine, other = (git_init(copy_example_sources(tmp_path / name)) for name in ("monitored", "alone"))
    pid = start(mine)
    yield mine, other
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def same_run(mine: Path, other: Path, *args: str, cwd: str = "") -> str:
    """Run `args` in both twins ({} stands for the repo), handed over in the first; assert the same
    exit code, output and files. Returns the first's stdout."""
    before = served(mine)
    runs = [ks(*(a.replace("{}", str(repo)) for a in args), cwd=repo / cwd, handed=handed)
            for repo, handed in ((mine, True), (other, False))]
    assert served(mine) == before + 1, args
    shown = [(r.returncode, r.stdout.replace(str(repo), "REPO"), r.stderr.replace(str(repo), "REPO"))
             for r, repo in zip(runs, (mine, other))]
    assert shown[0] == shown[1], args
    assert work_tree_files(mine) == work_tree_files(other), args
    return runs[0].stdout


def test_a_handed_command_prints_exits_and_writes_as_one_run_here(twins: tuple[Path, Path]) -> None:
    mine, other = twins
    assert ks("reconcile", str(mine), handed=False).returncode == 0  # the monitor's first look covers everything
    assert ks("reconcile", str(other), handed=False).returncode == 0
    same_run(mine, other, "reconcile")
    for repo in twins:
        path = repo / "spaces/imw1/florin.yaml"
        path.write_text(path.read_text().replace("env: prod", "env: staging", 1))
    assert "staging" in (mine / "spaces/imw1/florin.yaml").read_text()
    same_run(mine, other, "diff", "{}")
    same_run(mine, other, "-C", "{}", "diff", "-o", "json")
    same_run(mine, other, "validate", ".", cwd="spaces")  # the asker's working folder
    same_run(mine, other, "reconcile", ".")
    same_run(mine, other, "wecs", "{}", "-o", "json")
    wec = json.loads(ks("wecs", str(other), "-o", "json", handed=False).stdout)["wecs"][0]["wec"]
    assert "kind:" in same_run(mine, other, "render", wec, "{}")
    for repo in twins:  # invalid input: the error, its exit code, the part frozen
        (repo / "spaces/wmw-c/broken.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n")
    same_run(mine, other, "reconcile", "{}")
    same_run(mine, other, "diff", "{}", "--debug")


def test_two_handed_commands_at_once_end_as_two_runs_here(twins: tuple[Path, Path]) -> None:
    mine, other = twins
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                        "  namespace: commonstuff\ndata:\n  a: b\n")
    before = served(mine)
    env = {**os.environ, handoff.ENV: "1"}
    racing = [subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    codes = [p.wait(timeout=300) for p in racing]
    assert codes == [0, 0], [p.stderr.read() for p in racing]  # type: ignore[union-attr]
    assert served(mine) == before + 2
    assert ks("reconcile", str(other), handed=False).returncode == 0
    assert work_tree_files(mine) == work_tree_files(other)


def test_a_signal_to_the_asker_reaches_the_worker(twins: tuple[Path, Path]) -> None:
    """Ctrl-C while a handed `reconcile` waits for another writer's lock: it ends as the same run
    here ends, and writes nothing."""
    mine, other = twins
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                        "  namespace: commonstuff\n")
    codes = []
    for repo, handed in ((mine, True), (other, False)):
        before = work_tree_files(repo)
        lock = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1" if handed else "0"})
            _until_waiting_for(repo, proc)
            proc.send_signal(signal.SIGINT)
            codes.append(proc.wait(timeout=60))
        finally:
            os.close(lock)
        assert work_tree_files(repo) == before
    assert codes == [130, 130]
    assert served(mine) == 1


def _until_waiting_for(folder: Path, proc: subprocess.Popen[bytes]) -> int:
    """Until some process waits for the lock on `folder` (/proc/locks lists a waiter with `->`): its pid."""
    inode = os.stat(folder).st_ino
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with open("/proc/locks") as f:
            for line in f:
                fields = line.split()
                if "->" in fields and fields[-3].endswith(f":{inode}"):
                    return int(fields[5])
        assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
        time.sleep(0.02)
    raise AssertionError("no process waits for the lock")


def _held(repo: Path) -> int:
    lock = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def test_an_asker_killed_outright_takes_its_worker_along(twins: tuple[Path, Path]) -> None:
    """SIGKILL cannot be passed on: the worker sees its asker's end of the socket close and dies
    as the command run there would have, before it writes anything."""
    mine, _ = twins
    (mine / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                  "  namespace: commonstuff\n")
    before = work_tree_files(mine)
    lock = _held(mine)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1"})
        worker = _until_waiting_for(mine, proc)
        assert worker != proc.pid and served(mine) == 1
        proc.kill()
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(worker)
    finally:
        os.close(lock)
    time.sleep(0.2)
    assert work_tree_files(mine) == before


@pytest.mark.parametrize("how", ["nohup", "terminated"])
def test_a_signal_ignored_or_fatal_ends_a_handed_command_as_one_run_here(twins: tuple[Path, Path], how: str) -> None:
    """`nohup`: SIGHUP ignored, the run goes on; SIGTERM: the asker dies of it, as the command here would."""
    for repo in twins:
        (repo / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                      "  namespace: commonstuff\n")
    ended = []
    for repo, handed in zip(twins, (True, False)):
        lock = _held(repo)
        try:
            proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1" if handed else "0"},
                                    preexec_fn=(lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
                                    if how == "nohup" else None)
            _until_waiting_for(repo, proc)
            proc.send_signal(signal.SIGHUP if how == "nohup" else signal.SIGTERM)
            time.sleep(0.3)
        finally:
            os.close(lock)
        ended.append(proc.wait(timeout=120))
    assert ended == ([0, 0] if how == "nohup" else [-signal.SIGTERM, -signal.SIGTERM])
    assert work_tree_files(twins[0]) == work_tree_files(twins[1])  # both written, or neither
    assert served(twins[0]) == 1


def test_a_pager_runs_in_the_asking_process_on_its_terminal(twins: tuple[Path, Path], tmp_path: Path) -> None:
    mine, other = twins
    for repo in twins:
        path = repo / "spaces/imw1/florin.yaml"
        path.write_text(path.read_text().replace("env: prod", "env: staging", 1))
    pages = []
    for repo, handed in ((mine, True), (other, False)):
        out = tmp_path / f"paged-{handed}"
        script = f"import os, sys; open('{out}', 'w').write(str(os.getsid(0)) + '\\n' + sys.stdin.read())"
        pager = f'{sys.executable} -c "{script}"'
        code, _ = run_cli_on_a_terminal("diff", str(repo),
                                        env={"KSGITOPS_PAGER": pager, handoff.ENV: "1" if handed else "0"})
        assert code == 1
        sid, _, text = out.read_text().partition("\n")
        assert int(sid) == os.getsid(0)  # the asker's session, not the monitor's
        pages.append(text.replace(str(repo), "REPO"))
    assert pages[0] == pages[1] and "WECs affected" in pages[0]
    assert served(mine) == 1


def test_the_state_folder_is_the_one_the_monitor_uses() -> None:
    assert handoff.STATE == paths.STATE_DIR


def test_a_worker_takes_a_pickle_from_memory_only_when_its_bytes_are_the_same(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "_warm", {})
    path = tmp_path / "cache.pickle"
    path.write_bytes(pickle.dumps({"n": 1}))
    assert cache.warm(tmp_path) and not cache.warm(tmp_path)  # read once, then only when it changed
    held = cache.unpickle(path)
    assert held == {"n": 1} and cache.unpickle(path) is held
    before = path.stat()
    path.write_bytes(pickle.dumps({"n": 2}))  # same size, rewritten in place, times set back
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert cache.unpickle(path) == {"n": 2}  # no new warm yet: the bytes decide
    assert cache.warm(tmp_path) and cache.unpickle(path) == {"n": 2}
    path.unlink()
    cache.warm(tmp_path)
    assert cache._warm == {}


def test_a_worker_finds_what_the_monitor_holds_however_it_names_the_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`reconcile . --commit` inside a bare repository names its state folder relative to its
    working folder, a link may name it otherwise again: the monitor's copy is found all the same."""
    monkeypatch.setattr(cache, "_warm", {})
    state = tmp_path / "repo.git" / "ksgitops-state"
    state.mkdir(parents=True)
    (state / "cache.pickle").write_bytes(pickle.dumps({"n": 1}))
    (tmp_path / "link.git").symlink_to(tmp_path / "repo.git")
    assert cache.warm(tmp_path / "link.git" / "ksgitops-state")
    held = cache.unpickle(state / "cache.pickle")
    monkeypatch.chdir(tmp_path / "repo.git")
    assert cache.unpickle(Path("ksgitops-state/cache.pickle")) is held
    monkeypatch.chdir(tmp_path)
    assert cache.unpickle(Path("link.git/ksgitops-state/cache.pickle")) is held


def test_a_bare_repository_s_monitor_watches_nothing_and_runs_its_commands(tmp_path: Path) -> None:
    src = git_init(copy_example_sources(tmp_path / "src"))
    mine, other = tmp_path / "mine.git", tmp_path / "other.git"
    for bare in (mine, other):
        subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    pid = start(mine)
    try:
        reply = request(str(mine), {"op": "status"})
        assert reply is not None and reply["folders"] == 0 and reply["served"] == 0

        def both(*args: str) -> None:
            runs = [ks(*(a.replace("{}", str(bare)) for a in args), cwd=tmp_path, handed=handed)
                    for bare, handed in ((mine, True), (other, False))]
            assert runs[0].returncode == runs[1].returncode, args
            shown = [re.sub(r"committed [0-9a-f]+", "committed C", r.stdout.replace(str(bare), "R"))  # the clock's
                     for r, bare in zip(runs, (mine, other))]
            assert shown[0] == shown[1], args
            assert runs[0].stderr.replace(str(mine), "R") == runs[1].stderr.replace(str(other), "R"), args
            trees = [subprocess.run(["git", "-C", str(bare), "rev-parse", "main^{tree}"], capture_output=True,
                                    text=True, check=True).stdout for bare in (mine, other)]
            assert trees[0] == trees[1], args

        both("reconcile", "{}", "--commit")
        for bare in (mine, other):  # the same source change on top of each one's reconcile commit
            for command in (["fetch", "-q", str(bare), "main"], ["reset", "-q", "--hard", "FETCH_HEAD"]):
                subprocess.run(["git", "-C", str(src), *command], check=True)
            path = src / "spaces/imw1/florin.yaml"
            path.write_text(path.read_text().replace("env: prod", "env: staging", 1))
            subprocess.run(["git", "-C", str(src), "commit", "-qam", "staging"], check=True)
            subprocess.run(["git", "-C", str(src), "push", "-q", str(bare), "main"], check=True)
        both("reconcile", "{}", "--commit")
        both("wecs", "{}", "-o", "json")
        assert served(mine) == 3
        for command in (["fetch", "-q", str(mine), "main"], ["reset", "-q", "--hard", "FETCH_HEAD"]):
            subprocess.run(["git", "-C", str(src), *command], check=True)
        path.write_text(path.read_text().replace("env: staging", "env: prod", 1))
        subprocess.run(["git", "-C", str(src), "commit", "-qam", "prod"], check=True)
        subprocess.run(["git", "-C", str(src), "push", "-q", str(mine), "main"], check=True)
        assert ks("reconcile", str(mine), "--commit", cwd=tmp_path, handed=True).returncode == 0
        # the worker keeps the cache and the run record after its answer; a reader waits for them
        record = cache.DiskCache.for_git_dir(str(mine)).record
        head = subprocess.run(["git", "-C", str(mine), "rev-parse", "main"], capture_output=True, text=True,
                              check=True).stdout.strip()
        assert record is not None and record.tip == head
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_worker_finds_git_s_configuration_from_the_asker_s_home(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """libgit2 (loaded by the monitor) fixed where the global configuration lives when it started:
    a worker looks again from the environment it took."""
    import pygit2
    from pygit2.enums import ConfigLevel
    from ksgitops.io.fs import handoff_worker
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    try:
        handoff_worker._git_config_as_asked()
        assert pygit2.settings.search_path[ConfigLevel.GLOBAL] == str(tmp_path)
        assert pygit2.settings.search_path[ConfigLevel.XDG] == str(tmp_path / "xdg" / "git")
    finally:
        monkeypatch.undo()
        handoff_worker._git_config_as_asked()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(") ", 1)[1][0]


@pytest.mark.parametrize("orphaned", [False, True])
def test_ctrl_z_stops_the_worker_with_its_asker(twins: tuple[Path, Path], orphaned: bool) -> None:
    """Ctrl-Z (SIGTSTP) stops both, SIGCONT resumes both; in an orphaned process group the kernel
    stops neither (a stopped worker with a running asker would wait forever)."""
    mine, _ = twins
    (mine / "spaces/wmw-c/extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n"
                                                  "  namespace: commonstuff\n")
    lock = _held(mine)
    try:
        placed: dict[str, Any] = {"start_new_session": True} if orphaned else {"process_group": 0}
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(mine)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, handoff.ENV: "1"}, **placed)
        worker = _until_waiting_for(mine, proc)
        proc.send_signal(signal.SIGTSTP)
        if orphaned:
            time.sleep(0.5)
            assert "T" not in (_state(proc.pid), _state(worker))
            os.close(lock)
            assert proc.wait(timeout=120) == 0
            return
        deadline = time.monotonic() + 10
        while not (_state(proc.pid) == "T" and _state(worker) == "T") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (_state(proc.pid), _state(worker)) == ("T", "T")
        proc.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 10
        while "T" in (_state(proc.pid), _state(worker)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "T" not in (_state(proc.pid), _state(worker))
    finally:
        with contextlib.suppress(OSError):
            os.close(lock)
        with contextlib.suppress(OSError, NameError):
            os.kill(worker, signal.SIGCONT)  # never left stopped, whatever failed
    assert proc.wait(timeout=120) == 0


SLOW_RECORD = '''
import os, time
if os.environ.get("KSGITOPS_TEST_SLOW_RECORD"):
    import ksgitops.io.git.cache as cache
    write = cache._write
    def slow(path, data):
        if str(path).endswith("reconciled.pickle"):
            time.sleep(float(os.environ["KSGITOPS_TEST_SLOW_RECORD"]))
        return write(path, data)
    cache._write = slow
'''


@pytest.mark.parametrize("handed", [True, False], ids=["handed", "own process"])
def test_reconcile_commit_answers_before_its_memos_are_kept_and_a_reader_waits_for_them(tmp_path: Path,
                                                                                       handed: bool) -> None:
    """The worker (handed) or a child (in its own process) keeps the memos once the command has
    answered: a pipe's reader sees its end at the answer, and the state folder's lock is held until
    they are kept."""
    src = git_init(copy_example_sources(tmp_path / "src"))
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(bare)], check=True)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_RECORD)  # loaded by the monitor (and by the askers: the same path)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "KSGITOPS_TEST_SLOW_RECORD": "4"}
    started = ks("monitor", "start", str(bare), "-o", "json", env=env)
    assert started.returncode == 0, started.stderr
    pid = int(json.loads(started.stdout)["pid"])
    try:
        assert ks("reconcile", str(bare), "--commit", env=env).returncode == 0
        cache.DiskCache.for_git_dir(str(bare)).record  # noqa: B018 - waits for the first run's memos
        path = src / "spaces/wmw-c/httpd.yaml"
        for command in (["fetch", "-q", str(bare), "main"], ["reset", "-q", "--hard", "FETCH_HEAD"]):
            subprocess.run(["git", "-C", str(src), *command], check=True)
        path.write_text(path.read_text().replace("<!DOCTYPE html>", "<!DOCTYPE html>\n    <!-- edited -->", 1))
        subprocess.run(["git", "-C", str(src), "commit", "-qam", "edited"], check=True)
        subprocess.run(["git", "-C", str(src), "push", "-q", str(bare), "main"], check=True)
        served_before = served(bare)
        done = ks("reconcile", ".", "--commit", env=env, handed=handed, cwd=bare)  # its output through pipes, to their end
        assert done.returncode == 0 and "committed" in done.stdout, done.stderr
        assert served(bare) == served_before + handed
        head = subprocess.run(["git", "-C", str(bare), "rev-parse", "main"], capture_output=True, text=True,
                              check=True).stdout.strip()
        record_file = bare / paths.STATE_DIR / cache.RECORD_FILE
        assert pickle.loads(record_file.read_bytes())["record"].tip != head  # answered, the record not yet kept
        record = cache.DiskCache.for_git_dir(str(bare)).record  # waits for the worker's lock
        assert record is not None and record.tip == head
    finally:
        os.kill(pid, signal.SIGKILL)


def test_the_monitor_s_warm_read_never_follows_a_link_nor_waits_on_a_fifo(tmp_path: Path) -> None:
    outside = tmp_path / "outside.pickle"
    outside.write_bytes(pickle.dumps({"n": "outside"}))
    state = tmp_path / "state"
    state.mkdir()
    (state / "plain.pickle").write_bytes(pickle.dumps({"n": 1}))
    (state / "link.pickle").symlink_to(outside)
    os.mkfifo(state / "fifo.pickle")
    try:
        assert cache.warm(state)  # returns: the FIFO is not opened
        assert set(cache._warm) == {str(state / "plain.pickle")}
        with pytest.raises(OSError):
            cache.unpickle(state / "fifo.pickle")  # a run's own read does not wait on it either
    finally:
        cache._warm.clear()
