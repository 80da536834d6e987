"""A real detached `ksgitops monitor` beside a work tree: with it, a no-op looks at no owned path;
every change still gets seen (the same bytes as a twin work tree reconciled without a monitor,
through random edits, hand edits that set times back included, and edits through another name of
a file); a monitor killed, or stopped mid-stream into lost events, costs only time. A terminal is
told of the monitor when a run checks many paths one by one."""
from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import benchmark_module, git_init, work_tree_files
from ksgitops.app import monitor as monitoring, usecases as app
from ksgitops.io.fs import statcache
from ksgitops.io.fs.feed import request
from monitor_process import alive, start
from monitor_process import monitored  # noqa: F401 - the fixture
from test_worktree_proof import until_proven

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class Observed:
    """Counts the owned paths a run lstat's to check generated roots."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths = 0
        self.roots: set[str] = set()
        original = statcache.observe

        def counted(base: str, shape: Any) -> Any:
            self.paths += len(shape)
            self.roots.add(base.rpartition("/spaces/")[2])
            return original(base, shape)
        monkeypatch.setattr(statcache, "observe", counted)


def test_a_no_op_looks_at_no_owned_path(monitored: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _ = monitored
    until_proven(repo)  # the first run after the start looks at everything, and keeps the token
    until_proven(repo)
    observed = Observed(monkeypatch)
    assert isinstance(app.reconcile_worktree(repo), app.ProvenOutcome)
    assert app.plan_diff(repo, None)[1].changed is False
    assert observed.paths == 0
    florin = repo / "spaces/imw1-mb-florin/syncerconfig.yaml"
    before = florin.stat()
    florin.write_bytes(florin.read_bytes().replace(b"a", b"b", 1))  # same size, times set back
    os.utime(florin, ns=(before.st_atime_ns, before.st_mtime_ns))
    outcome = app.reconcile_worktree(repo)
    assert outcome.changed_roots == ["spaces/imw1-mb-florin"]
    assert observed.roots == {"imw1-mb-florin"}  # only the mailbox the monitor saw change


def _touch_back(path: Path, edit: Callable[[Path], None]) -> None:
    """An edit that leaves the file's mtime as it was."""
    before = path.stat()
    edit(path)
    if path.exists():
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


EDITS: list[Callable[[Path, random.Random], None]] = []


def edit(fn: Callable[[Path, random.Random], None]) -> Callable[[Path, random.Random], None]:
    EDITS.append(fn)
    return fn


@edit
def _label(repo: Path, rng: random.Random) -> None:
    benchmark_module("fleet").change_location_label(repo, rng.randint(1, 8))


@edit
def _workload(repo: Path, rng: random.Random) -> None:
    benchmark_module("fleet").edit_workload_object(repo)


@edit
def _generated_in_place(repo: Path, rng: random.Random) -> None:
    files = sorted(p for p in work_tree_files(repo) if "-mb-" in p and "/objects/" in p)
    _touch_back(repo / rng.choice(files), lambda p: p.write_bytes(p.read_bytes().replace(b":", b"=", 1)))


@edit
def _generated_gone_or_stray(repo: Path, rng: random.Random) -> None:
    files = sorted(p for p in work_tree_files(repo) if "-mb-" in p and "/patches/" not in p and "reported" not in p)
    path = repo / rng.choice(files)
    if rng.random() < 0.5:
        path.unlink()
    else:
        (path.parent / "stray.yaml").write_text("stray: true\n")


@edit
def _mailbox_renamed_away(repo: Path, rng: random.Random) -> None:
    mailboxes = sorted(p for p in os.listdir(repo / "spaces") if "-mb-" in p)
    os.rename(repo / "spaces" / rng.choice(mailboxes), repo / "elsewhere")
    shutil.rmtree(repo / "elsewhere")


@edit
def _source_in_place(repo: Path, rng: random.Random) -> None:
    sources = sorted(p for p in work_tree_files(repo) if p.startswith("spaces/apps/") and p.endswith(".yaml"))
    _touch_back(repo / rng.choice(sources), lambda p: p.write_bytes(p.read_bytes() + b"\n# note\n"))


def test_with_a_monitor_every_change_is_seen_as_without_one(tmp_path: Path) -> None:
    """Twin work trees get the same edits, one with a monitor: after each, `diff` says the same and
    `reconcile` leaves the same bytes; a `diff` that computed before the reconcile included."""
    fleet = benchmark_module("fleet")
    twins = []
    for name in ("watched", "plain"):
        fleet.generate(tmp_path / name, wecs=8, objects=12, seed=5)
        twins.append(git_init(tmp_path / name))
    watched, plain = twins
    pid = start(watched)
    try:
        rngs = [random.Random(21), random.Random(21)]
        for step in range(14):
            if step:
                choice = rngs[0].choice(EDITS)
                rngs[1].choice(EDITS)
                for repo, rng in zip(twins, rngs):
                    choice(repo, rng)
            if step % 3 == 1:
                diffs = [app.plan_diff(repo, None)[1].changed for repo in twins]
                assert diffs[0] == diffs[1], (step, choice.__name__)
            for repo in twins:
                app.reconcile_worktree(repo)
            assert work_tree_files(watched) == work_tree_files(plain), (step, choice.__name__ if step else "")
            assert app.plan_diff(watched, None)[1].changed is False
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_a_killed_monitor_costs_only_time(monitored: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    repo, pid = monitored
    until_proven(repo)
    until_proven(repo)
    os.kill(pid, signal.SIGKILL)
    florin = repo / "spaces/imw1-mb-florin/syncerconfig.yaml"
    expected = florin.read_bytes()
    _touch_back(florin, lambda p: p.write_bytes(expected.replace(b"a", b"b", 1)))
    observed = Observed(monkeypatch)
    assert app.reconcile_worktree(repo).changed_roots == ["spaces/imw1-mb-florin"]
    assert florin.read_bytes() == expected
    recorded = statcache.WorkTreeRecord.load(repo, str(repo / ".git")).roots
    assert observed.roots == {root.removeprefix("spaces/") for root in recorded}  # no monitor: every root looked at
    pid = start(repo)  # a new history: the first run looks at everything, the next at nothing
    try:
        until_proven(repo)
        observed.paths = 0
        assert isinstance(app.reconcile_worktree(repo), app.ProvenOutcome) and observed.paths == 0
    finally:
        os.kill(pid, signal.SIGKILL)


def test_events_lost_while_the_monitor_stood_still_mean_checking_everything(monitored: tuple[Path, int],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    repo, pid = monitored
    until_proven(repo)
    until_proven(repo)
    scratch = repo / "scratch"
    scratch.mkdir()
    status = monitoring.status(repo)  # the monitor has seen it, and watches it
    assert status is not None and status["restarts"] == 0
    os.kill(pid, signal.SIGSTOP)
    try:
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        for i in range(limit // 2 + 100):  # more events than the kernel queues for a reader standing still
            (scratch / f"f{i}").write_bytes(b"")
            (scratch / f"f{i}").unlink()
        florin = repo / "spaces/imw1-mb-florin/syncerconfig.yaml"
        expected = florin.read_bytes()
        _touch_back(florin, lambda p: p.write_bytes(expected.replace(b"a", b"b", 1)))
    finally:
        os.kill(pid, signal.SIGCONT)
    assert app.reconcile_worktree(repo).changed_roots == ["spaces/imw1-mb-florin"]
    assert florin.read_bytes() == expected
    status = monitoring.status(repo)
    assert status is not None and status["restarts"] == 1 and status["pid"] == pid


def test_a_terminal_is_told_of_the_monitor_when_checks_are_many(example_git: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    until_proven(example_git)
    capsys.readouterr()
    monkeypatch.setenv("KSGITOPS_MONITOR", "off")  # told of it only (test_monitor_auto.py: started)
    monkeypatch.setattr(app, "ADVISE_FROM", 10)
    app.reconcile_worktree(example_git)
    assert "hint" not in capsys.readouterr().err  # not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    app.reconcile_worktree(example_git)
    err = capsys.readouterr().err
    assert "generated paths one by one; `ksgitops monitor start` keeps a change feed" in err
    monkeypatch.setattr(app, "ADVISE_FROM", 10_000)
    app.reconcile_worktree(example_git)
    assert "hint" not in capsys.readouterr().err  # a small work tree
    monkeypatch.setattr(app, "ADVISE_FROM", 10)
    pid = start(example_git)
    try:
        app.reconcile_worktree(example_git)
        assert "hint" not in capsys.readouterr().err  # a monitor answers
    finally:
        os.kill(pid, signal.SIGKILL)


def test_events_lost_while_a_question_waits_give_unknown_and_the_monitor_goes_on(monitored: tuple[Path, int]) -> None:
    import threading
    repo, pid = monitored
    git_dir = str(repo / ".git")
    token = request(git_dir, {"op": "status"})["token"]
    churn = repo / "scratch"
    churn.mkdir()
    assert monitoring.status(repo) is not None  # the folder is watched
    os.kill(pid, signal.SIGSTOP)
    replies: list[Any] = []
    asking = threading.Thread(target=lambda: replies.append(request(git_dir, {"since": token}, timeout=60)))
    try:
        asking.start()
        time.sleep(0.3)  # the question waits first, then more events than the kernel's queue holds
        limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
        for i in range(limit + 100):
            os.close(os.open(churn / f"f{i}", os.O_CREAT | os.O_WRONLY))
    finally:
        os.kill(pid, signal.SIGCONT)
    asking.join()
    assert replies[0] is not None and replies[0]["changed"] is None  # unknown: events were lost
    again = request(git_dir, {"since": replies[0]["token"]})
    assert again is not None and again["changed"] == [] and alive(pid)
    (churn / "f1").write_text("seen\n")
    assert request(git_dir, {"since": again["token"]})["changed"] == ["scratch/f1"]


def test_a_file_changed_through_another_name_is_still_seen(monitored: tuple[Path, int]) -> None:
    """Hard links: an edit through one name raises no event for the other. A source or generated
    file with another name in the work tree is looked at on every run."""
    repo, pid = monitored
    until_proven(repo)
    source = repo / "spaces/wmw-c/httpd.yaml"
    generated = repo / "spaces/imw1-mb-florin/syncerconfig.yaml"
    os.link(source, repo / "source-elsewhere.yaml")
    os.link(generated, repo / "generated-elsewhere.yaml")
    until_proven(repo)
    until_proven(repo)
    assert monitoring.status(repo)["restarts"] >= 1  # the links themselves started a new history
    expected = generated.read_bytes()
    with open(repo / "generated-elsewhere.yaml", "r+b") as f:  # the same inode, edited in place
        f.write(expected.replace(b"a", b"b", 1))
    outcome = app.reconcile_worktree(repo)
    assert outcome.changed_roots == ["spaces/imw1-mb-florin"] and generated.read_bytes() == expected
    until_proven(repo)
    with open(repo / "source-elsewhere.yaml", "ab") as f:
        f.write(b"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: commonstuff\n")
    assert app.plan_diff(repo, None)[1].changed is True
    assert app.reconcile_worktree(repo).changed_roots
