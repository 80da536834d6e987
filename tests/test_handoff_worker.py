"""What a worker of the work tree's monitor (io/fs/handoff_worker.py, io/git/cache.py) finds and
keeps: the monitor's state folder and the pickles it holds (taken from memory only when their
bytes are the same, however the folder is named, never through a link or a FIFO), a bare
repository's monitor, git's configuration from the asker's home, and the memos a `reconcile
--commit` keeps after its answer while a reader waits for them."""
from __future__ import annotations

import json
import os
import pickle
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_example_sources, git_init
from ksgitops.io.fs import handoff, paths
from ksgitops.io.git import cache
from ksgitops.io.fs.feed import request
from handoff_twins import ks, served
from monitor_process import start


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the monitor is Linux's")


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
