"""Work spread over forked children (io/fs/forked.spread) and the status step that uses it: the
results, and every byte status writes, are those of one process doing all the work, whatever a
child does (fails, dies, is never started)."""
from __future__ import annotations

import functools
import importlib.util
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import git, git_init
from ksgitops.core.status.recompute import in_sequence
from ksgitops.core.status.summary import MemorySource, StatusMemo, summarize, with_reports
from ksgitops.io.fs import forked
from ksgitops.app import usecases as app
from status_reports import COMMOND, COMMON_CM, FLORIN, GUILDER, cm_report, outputs, rs_report

ROOT = Path(__file__).resolve().parent.parent
CPUS = len(os.sched_getaffinity(0))


def _bench(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"ksgitops_bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = mod  # type: ignore[union-attr]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return mod


@pytest.fixture
def result(example: Path) -> Any:
    return app.compute(app.open_source(example, app.WORKTREE))


@pytest.fixture
def three_workers(monkeypatch) -> None:
    """Three workers whatever the machine has. Threads that earlier tests left in this process
    (a server's, a pool's) do not count: only a thread started by the test keeps it from forking."""
    monkeypatch.setattr(forked, "workers", lambda: 3)
    before = threading.active_count()
    monkeypatch.setattr(forked, "may_fork", lambda: threading.active_count() == before)


def _slowly(i: int) -> tuple[int, int]:
    time.sleep(0.01)  # every process takes chunks before they run out
    return i, os.getpid()


def _slowly_pid(i: int) -> int:
    return _slowly(i)[1]


def test_results_come_in_the_items_order_from_three_processes(three_workers) -> None:
    pids = list(forked.spread(list(range(60)), _slowly, least=5))
    assert [i for i, _ in pids] == list(range(60))
    assert len({pid for _, pid in pids}) == 3 and os.getpid() in {pid for _, pid in pids}


def test_fewer_items_than_least_twice_stay_in_this_process(three_workers) -> None:
    pids = list(forked.spread(list(range(9)), lambda i: os.getpid(), least=5))
    assert set(pids) == {os.getpid()}


@pytest.mark.parametrize("how", ["raises", "killed", "exits"])
def test_a_failing_child_costs_only_time(three_workers, how: str) -> None:
    parent = os.getpid()

    def work(i: int) -> tuple[int, int]:
        time.sleep(0.01)
        if os.getpid() != parent and i >= 20:
            if how == "raises":
                raise RuntimeError("only in the child")
            if how == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(0)  # ends without its result: not taken for an empty one
        return i, i * i
    assert list(forked.spread(list(range(30)), work, least=5)) == [(i, i * i) for i in range(30)]


def test_an_error_in_the_parents_share_is_raised_after_the_children_ended(three_workers) -> None:
    parent = os.getpid()

    def work(i: int) -> int:
        time.sleep(0.01)
        if os.getpid() == parent:
            raise ValueError("in the parent")
        return i
    with pytest.raises(ValueError, match="in the parent"):
        list(forked.spread(list(range(30)), work, least=5))
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left behind, not even a zombie


def test_a_fork_the_system_refuses_means_doing_the_share_here(three_workers, monkeypatch) -> None:
    real, forks = os.fork, []

    def refusing() -> int:
        forks.append(True)
        if len(forks) == 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")  # a pid limit reached
        return real()
    monkeypatch.setattr(os, "fork", refusing)
    before = len(os.listdir("/proc/self/fd"))
    assert [i for i, _ in forked.spread(list(range(60)), _slowly, least=5)] == list(range(60))
    assert len(forks) >= 2 and len(os.listdir("/proc/self/fd")) == before  # no descriptor left open


def test_a_parent_leaving_kills_its_children_instead_of_waiting(three_workers) -> None:
    """Ctrl-C, an error or an abandoned cycle in this process's share: the children's shares are
    not wanted, and waiting for them could take as long as the whole work."""
    parent = os.getpid()

    def work(i: int) -> int:
        if os.getpid() != parent:
            time.sleep(60)
        elif i >= 0:
            time.sleep(0.5)  # the children have started their first chunk
            raise KeyboardInterrupt
        return i
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        list(forked.spread(list(range(30)), work, least=5))
    assert time.monotonic() - started < 20
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_a_child_meets_none_of_its_parents_signal_handlers(three_workers) -> None:
    """The default actions (Ctrl-C ends a child at once) and no wake-up descriptor of the parent's
    (a child's signal must not wake the parent's loop)."""
    read, write = os.pipe()
    os.set_blocking(write, False)
    old = signal.signal(signal.SIGINT, lambda *_: None)
    old_fd = signal.set_wakeup_fd(write)
    try:
        found = list(forked.spread(list(range(60)), _handlers, least=5))
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, old)
        os.close(read)
        os.close(write)
    theirs = [(default, wakeup) for pid, default, wakeup in found if pid != os.getpid()]
    assert theirs and all(default and wakeup == -1 for default, wakeup in theirs)
    assert all(not default for pid, default, _ in found if pid == os.getpid())


def _handlers(i: int) -> tuple[int, bool, int]:
    time.sleep(0.03)
    wakeup = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(wakeup)
    return os.getpid(), signal.getsignal(signal.SIGINT) is signal.SIG_DFL, wakeup


def test_never_forks_beside_another_thread(three_workers) -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert set(forked.spread(list(range(30)), _slowly_pid, least=5)) == {os.getpid()}
    finally:
        stop.set()
        other.join()


def test_status_spread_gives_the_bytes_and_memo_of_one_process(result: Any, three_workers) -> None:
    """Each of the example's two mailboxes (and objects) in a process of its own, memo carried
    from run to run: outputs and memo equal those of a run in sequence."""
    spread = functools.partial(forked.spread, least=1)
    rng = random.Random(11)
    reports: dict[str, dict[str, bytes]] = {FLORIN: {}, GUILDER: {}}
    memos = {"spread": StatusMemo(), "sequence": StatusMemo()}
    for step in range(12):
        mb = rng.choice([FLORIN, GUILDER])
        if rng.random() < 0.5:
            reports[mb][f"{COMMOND}.yaml"] = rs_report(rng.choice([0, 1]), f"2026-01-01T00:00:{step:02d}Z")
        else:
            reports[mb][f"{COMMON_CM}.yaml"] = cm_report(f"2026-01-01T00:01:{step:02d}Z")
        source = MemorySource(with_reports(result.generated, reports))
        spread_out = summarize(result, source, memos["spread"], spread=spread)
        sequence_out = summarize(result, source, memos["sequence"], spread=in_sequence)
        assert outputs(spread_out) == outputs(sequence_out), f"step {step}"
        assert spread_out.combined == sequence_out.combined
        assert {k: (m.key, m.summary, m.problems) for k, m in memos["spread"].mailboxes.items()} == \
            {k: (m.key, m.summary, m.problems) for k, m in memos["sequence"].mailboxes.items()}


@pytest.mark.skipif(CPUS < 2, reason="needs two CPUs to spread over")
def test_status_commit_on_two_cpus_commits_the_tree_of_one(tmp_path: Path) -> None:
    """End to end on a generated fleet large enough to spread (a real fork, a real repository):
    `status --commit` on every CPU and pinned to one commit the same tree."""
    fleet, reports = _bench("fleet"), _bench("reports")
    src = tmp_path / "src"
    fleet.generate(src, 160, 6, seed=5)
    git_init(src)
    reported = tmp_path / "reported.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(reported))
    _ksgitops(["reconcile", str(reported), "--commit"], "all")
    assert reports.commit_reports(str(reported)) > 160
    trees = []
    for cpus in ("all", "one"):
        bare = tmp_path / f"{cpus}.git"
        git(tmp_path, "clone", "-q", "--bare", str(reported), str(bare))
        _ksgitops(["status", str(bare), "--commit"], cpus)
        trees.append(git(bare, "rev-parse", "main^{tree}"))
    assert trees[0] != git(reported, "rev-parse", "main^{tree}")  # status committed
    assert trees[0] == trees[1]


def _ksgitops(args: list[str], cpus: str) -> None:
    pin = (lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})) if cpus == "one" else None
    done = subprocess.run([sys.executable, "-m", "ksgitops", *args], cwd=ROOT, capture_output=True, text=True,
                          preexec_fn=pin)
    assert done.returncode in (0, 1), done.stderr
