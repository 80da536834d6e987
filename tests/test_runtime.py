"""`ksgitops run` and `--push` against a real `git daemon` on 127.0.0.1.

A "human" is the git CLI in a clone of its own; reconcilers are RemoteRuntimes (in-process) or
`ksgitops` subprocesses. Every remote is a bare repository that logs its ref updates, so a test
can prove that no update was forced: each logged head is a descendant of the one before.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pygit2
import pytest

from conftest import copy_example_sources, git, git_init
from gitdaemon import GitDaemon, git_daemon  # noqa: F401 - the fixture
from ksgitops.app import publish as publishing, usecases as app, runtime, runtimes
from ksgitops.core.load.repoconfig import SOURCE_TRAILER
from ksgitops.io.serve import Observer, serve
from ksgitops.model import GitError

BRANCH = "main"


# --- helpers ---------------------------------------------------------------------------------------

def served_example(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git") -> Path:
    """The example's sources, committed and served as `name`; ref updates are logged."""
    source = git_init(copy_example_sources(tmp_path / f"seed-{name}"))
    bare = daemon.bare(name, source)
    subprocess.run(["git", "-C", str(bare), "config", "core.logAllRefUpdates", "always"], check=True)
    return bare


def human_clone(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git", who: str = "human") -> Path:
    path = tmp_path / who
    subprocess.run(["git", "clone", "-q", daemon.url(name), str(path)], check=True)
    return path


def human_edit(clone: Path, path: str, old: str, new: str, message: str) -> str:
    """Commit a source edit in the human's clone and push it (rebasing on what reconcilers pushed)."""
    file = clone / path
    for _ in range(20):
        git(clone, "pull", "-q", "--rebase", "origin", BRANCH)
        file.write_text(file.read_text().replace(old, new))
        git(clone, "commit", "-qam", message)
        try:
            git(clone, "push", "-q", "origin", BRANCH)
            return git(clone, "rev-parse", "HEAD")
        except subprocess.CalledProcessError:
            git(clone, "reset", "-q", "--hard", "HEAD~1")
            time.sleep(0.05)
    raise AssertionError("the human could not push")


def flip_env(clone: Path, path: str, message: str) -> str:
    """Commit and push a change of the file's first `env:` label (prod <-> dev)."""
    git(clone, "pull", "-q", "--rebase", "origin", BRANCH)
    text = (clone / path).read_text()
    old, new = ("env: prod", "env: dev") if "env: prod" in text else ("env: dev", "env: prod")
    return human_edit(clone, path, old, new, message)


def remote_head(bare: Path) -> str:
    return git(bare, "rev-parse", BRANCH)


def fast_forward_only(bare: Path) -> list[str]:
    """The branch's logged heads, oldest first; asserts each update was a fast-forward."""
    lines = (bare / "logs" / "refs" / "heads" / BRANCH).read_text().splitlines()
    heads = []
    for line in lines:
        old, new = line.split()[:2]
        if set(old) != {"0"}:
            assert subprocess.run(["git", "-C", str(bare), "merge-base", "--is-ancestor", old, new]).returncode == 0, \
                f"forced update {old[:12]} -> {new[:12]}"
        heads.append(new)
    return heads


def fresh_generated(bare: Path, tmp_path: Path, label: str) -> dict[str, str]:
    """Tree ids of the generated roots a fresh reconcile + status of the head's sources gives."""
    clone = tmp_path / f"fresh-{label}"
    subprocess.run(["git", "clone", "-q", "--bare", str(bare), str(clone)], check=True)
    repo = pygit2.Repository(str(clone))
    src = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit)
    app.reconcile_commit(clone, BRANCH)
    app.status_commit(clone, BRANCH)
    return generated_ids(clone, src)


def generated_ids(repo_path: Path, exclude_sources_of: Any = None) -> dict[str, str]:
    """{path: tree or blob id} of every generated root of the branch head (mailboxes, .ksgitops, STATUS.md)."""
    repo = pygit2.Repository(str(repo_path))
    tree = repo.references[f"refs/heads/{BRANCH}"].peel(pygit2.Commit).tree
    ids = {"STATUS.md": str(tree["STATUS.md"].id)} if "STATUS.md" in tree else {}
    for space in repo[tree["spaces"].id]:
        sub = repo[space.id]
        if "-mb-" in space.name:
            ids[f"spaces/{space.name}"] = str(space.id)
        elif ".ksgitops" in sub:
            ids[f"spaces/{space.name}/.ksgitops"] = str(sub[".ksgitops"].id)
    return ids


def trailer(bare: Path, rev: str = BRANCH) -> str | None:
    message = git(bare, "log", "-1", "--format=%B", rev)
    found = [line.split(": ", 1)[1] for line in message.splitlines() if line.startswith(f"{SOURCE_TRAILER}: ")]
    return found[0] if found else None


def remote_runtime(daemon: GitDaemon, tmp_path: Path, name: str = "fleet.git", who: str = "rt") -> runtimes.RemoteRuntime:
    return runtimes.RemoteRuntime(daemon.url(name), BRANCH, tmp_path / f"work-{who}", Observer(), retries=8)


# --- one reconciler -----------------------------------------------------------------------------------

def test_cycles_reconcile_summarize_push_and_ignore_their_own_commits(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    sources = remote_head(bare)
    rt = remote_runtime(git_daemon, tmp_path)
    assert rt.repo.is_bare
    first = rt.cycle()
    assert first.action == "reconciled" and first.pushed and first.commit == first.head  # reconcile + status: one commit
    assert remote_head(bare) == first.head and git(bare, "rev-parse", f"{BRANCH}~1") == sources
    assert trailer(bare) == sources
    assert "[skip ci]" in git(bare, "log", "-1", "--format=%B")
    tree = git(bare, "ls-tree", "--name-only", BRANCH).split()
    assert "STATUS.md" in tree
    assert rt.cycle().action == "idle"  # its own commits trigger nothing

    human = human_clone(git_daemon, tmp_path)
    edited = human_edit(human, "spaces/imw1/florin.yaml", "env: prod", "env: dev", "florin leaves prod")
    second = rt.cycle()
    assert second.action == "reconciled" and second.pushed
    assert trailer(bare) == edited
    ls = git(bare, "ls-tree", "-r", "--name-only", BRANCH, "spaces/imw1-mb-florin/objects")
    assert "commonstuff" not in ls  # placement c no longer reaches florin
    fast_forward_only(bare)


def test_a_commit_touching_only_generated_paths_triggers_nothing(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    ours = remote_runtime(git_daemon, tmp_path, who="ours")
    assert ours.cycle().action == "reconciled"
    other = remote_runtime(git_daemon, tmp_path, who="other")  # another reconciler, started later
    assert other.cycle().action == "reconciled" and not other.cycle().pushed  # it had nothing to add
    human = human_clone(git_daemon, tmp_path)
    (human / "spaces/wmw-c/.ksgitops/status/note.txt").parent.mkdir(parents=True, exist_ok=True)
    (human / "spaces/wmw-c/.ksgitops/status/note.txt").write_text("generated-looking\n")
    git(human, "add", "-A")
    git(human, "commit", "-qm", "a generated-only change")
    git(human, "push", "-q", "origin", BRANCH)
    assert ours.cycle().action == "generated-only"
    assert remote_head(bare) == git(human, "rev-parse", "HEAD")


def test_new_reports_are_summarized_without_reconciling(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    rt = remote_runtime(git_daemon, tmp_path)
    rt.cycle()
    human = human_clone(git_daemon, tmp_path)
    report = human / "spaces/imw1-mb-florin/reported/core/configmaps/commonstuff/httpd-htdocs.yaml"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text('{"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "commonstuff", '
                      '"name": "httpd-htdocs"}, "reportedAt": "2030-01-01T00:00:00Z"}\n')
    git(human, "add", "-A")
    git(human, "commit", "-qm", "florin reports")
    git(human, "push", "-q", "origin", BRANCH)
    result = rt.cycle()
    assert result.action == "summarized" and result.pushed and result.commit == remote_head(bare)
    assert "2030-01-01T00:00:00Z" in git(bare, "show", f"{BRANCH}:STATUS.md")


# --- concurrent writers -----------------------------------------------------------------------------

def test_racing_reconcilers_and_a_human_lose_nothing_and_never_force(git_daemon: GitDaemon, tmp_path: Path) -> None:
    bare = served_example(git_daemon, tmp_path)
    human = human_clone(git_daemon, tmp_path)
    runtimes = [remote_runtime(git_daemon, tmp_path, who=f"r{i}") for i in range(3)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def reconciler(rt: runtimes.RemoteRuntime) -> None:
        while not stop.is_set():
            try:
                rt.cycle()
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
                return

    threads = [threading.Thread(target=reconciler, args=(rt,)) for rt in runtimes]
    for t in threads:
        t.start()
    pushed = []
    try:
        for i in range(4):
            pushed.append(flip_env(human, "spaces/imw1/guilder.yaml", f"edit {i}"))
            time.sleep(0.2)
    finally:
        time.sleep(1.0)
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not errors, errors
    for rt in runtimes:  # settle: one more cycle each, then all agree
        rt.cycle()
    final = remote_head(bare)
    for sha in pushed:  # no human commit lost
        assert subprocess.run(["git", "-C", str(bare), "merge-base", "--is-ancestor", sha, final]).returncode == 0
    fast_forward_only(bare)
    assert trailer(bare) == pushed[-1] or trailer(bare, f"{BRANCH}~1") == pushed[-1]
    assert generated_ids(bare) == fresh_generated(bare, tmp_path, "final")


def test_reconcile_push_recomputes_when_the_remote_moved(git_daemon: GitDaemon, tmp_path: Path, cli) -> None:
    bare = served_example(git_daemon, tmp_path)
    mine = human_clone(git_daemon, tmp_path, who="ci")
    other = human_clone(git_daemon, tmp_path, who="other")
    edited = human_edit(other, "spaces/imw1/florin.yaml", "env: prod", "env: dev", "meanwhile")
    result = cli("reconcile", str(mine), "--push", "-o", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["pushed"] is True
    assert trailer(bare) == edited  # reconciled on the new upstream head, not the stale one
    assert git(mine, "rev-parse", "HEAD") == remote_head(bare)
    assert git(mine, "status", "--porcelain") == ""
    fast_forward_only(bare)


@pytest.mark.parametrize("one_commit", [False, True], ids=["reconcile-push", "run-cycle"])
def test_push_gives_up_loudly_after_the_bound(git_daemon: GitDaemon, tmp_path: Path, one_commit: bool) -> None:
    """`reconcile --push` in a checkout, and a `run` cycle (reconcile + status, one commit) in a bare clone."""
    bare = served_example(git_daemon, tmp_path)
    mine = tmp_path / "ci.git"
    if one_commit:
        subprocess.run(["git", "clone", "-q", "--bare", git_daemon.url("fleet.git"), str(mine)], check=True)
    else:
        mine = human_clone(git_daemon, tmp_path, who="ci")
    other = human_clone(git_daemon, tmp_path, who="other")
    retries: list[str] = []

    def meanwhile(stage: str, done: int, total: int) -> None:  # someone pushes while every attempt reconciles
        if stage == "computing" and done == 1:
            flip_env(other, "spaces/imw1/florin.yaml", f"race {len(retries)}")

    with pytest.raises(GitError) as info:
        publishing.publish(mine, BRANCH, retries=2, sleep=lambda s: None, progress=meanwhile, do_status=one_commit,
                    one_commit=one_commit, on_retry=lambda attempt, reason: retries.append(reason))
    assert "gave up after 3 attempts" in str(info.value.problems[0]) and len(retries) == 2
    assert trailer(bare) is None  # the remote holds only the other's commits
    fast_forward_only(bare)


# --- crashes -----------------------------------------------------------------------------------------

def test_sigkill_at_random_points_never_leaves_a_partial_commit(git_daemon: GitDaemon, tmp_path: Path) -> None:
    """50 reconcilers killed at random moments (0 to 0.8 s into `reconcile --push`): every ref,
    local and remote, points at a complete commit (git fsck), and the remote only fast-forwarded."""
    import random
    bare = served_example(git_daemon, tmp_path)
    human = human_clone(git_daemon, tmp_path)
    rng = random.Random(1234)
    deadline = time.monotonic() + 150
    trials = 0
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    while trials < 50 and time.monotonic() < deadline:
        if trials % 10 == 0:  # new sources now and then, so there is something to commit
            flip_env(human, "spaces/imw1/guilder.yaml", f"edit {trials}")
        clone = tmp_path / f"k{trials}"
        subprocess.run(["git", "clone", "-q", git_daemon.url("fleet.git"), str(clone)], check=True)
        proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "reconcile", str(clone), "--push"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        check = subprocess.run(["git", "-C", str(clone), "fsck", "--no-dangling", "--connectivity-only"],
                               capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        trials += 1
    assert trials >= 50, f"only {trials} trials in the time bound"
    check = subprocess.run(["git", "-C", str(bare), "fsck", "--no-dangling"], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    fast_forward_only(bare)


# --- the process: signals, probes, metrics, logs ------------------------------------------------------

def test_probes_and_metrics(git_daemon: GitDaemon, tmp_path: Path) -> None:
    served_example(git_daemon, tmp_path)
    observer = Observer()
    server = serve(0, observer, host="127.0.0.1")
    port = server.port

    def get(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    try:
        assert get("/readyz")[0] == 503 and get("/healthz")[0] == 200
        rt = runtimes.RemoteRuntime(git_daemon.url("fleet.git"), BRANCH, tmp_path / "work", observer)
        assert runtime.loop(rt, 0.1, threading.Event(), once=True) == 0
        assert get("/readyz") == (200, "ready\n")
        status, text = get("/metrics")
        assert status == 200
        values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
                  if line and not line.startswith("#")}
        assert values["ksgitops_cycles_total"] == 1 and values["ksgitops_cycle_failures_total"] == 0
        assert values["ksgitops_wecs"] == 2 and values["ksgitops_commits_total"] == 1
        assert values["ksgitops_reconcile_seconds_count"] == 1 and values["ksgitops_last_success_timestamp_seconds"] > 0
        assert get("/nope")[0] == 404
    finally:
        server.shutdown()


def test_run_process_serves_probes_logs_json_and_exits_0_on_sigterm(git_daemon: GitDaemon, tmp_path: Path) -> None:
    served_example(git_daemon, tmp_path)
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, KSGITOPS_GIT_TOKEN="s3cr3t-token-value", PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "ksgitops", "run", "--repo", git_daemon.url("fleet.git"),
                             "--interval", "0.2", "--port", str(port), "--log-format", "json",
                             "--workdir", str(tmp_path / "work")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline and not ready:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    ready = r.status == 200
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert ready, "never became ready"
        time.sleep(0.5)  # a few idle cycles
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    actions = [e["action"] for e in events if e.get("event") == "cycle"]
    assert actions[0] == "reconciled" and "idle" in actions[1:]
    assert "s3cr3t-token-value" not in err


def test_credentials_never_appear_in_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSGITOPS_GIT_TOKEN", "tok-123-secret")
    with pytest.raises(GitError) as info:
        runtimes.RemoteRuntime("http://user:pa55word@127.0.0.1:9/none.git", BRANCH, tmp_path, Observer()).cycle()
    text = str(info.value.problems[0])
    assert "127.0.0.1:9" in text and "pa55word" not in text and "tok-123-secret" not in text


def test_local_watch_mode_reconciles_on_change(example: Path) -> None:
    rt = runtimes.LocalRuntime(example, Observer())
    stop = threading.Event()
    cycles: list[Any] = []
    thread = threading.Thread(target=runtime.loop, args=(rt, 30.0, stop),
                              kwargs={"watch": True, "on_cycle": cycles.append})
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not cycles and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (example / "spaces/imw1-mb-florin/kustomization.yaml").is_file()
        assert (example / "STATUS.md").is_file()
        florin = example / "spaces/imw1/florin.yaml"
        florin.write_text(florin.read_text().replace("env: prod", "env: dev"))
        while len(cycles) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(cycles) >= 2, "no cycle after a source change (the interval is 30 s: only the watch can do it)"
        assert not (example / "spaces/imw1-mb-florin/objects/core/configmaps/commonstuff").exists()
        time.sleep(1.0)
        assert len(cycles) == 2  # its own writes do not trigger it again
    finally:
        stop.set()
        thread.join(timeout=10)


def test_an_unreachable_remote_fails_cycles_without_ending_the_loop(tmp_path: Path) -> None:
    with GitDaemon(tmp_path / "served") as daemon:
        served_example(daemon, tmp_path)
        observer = Observer()
        rt = runtimes.RemoteRuntime(daemon.url("fleet.git"), BRANCH, tmp_path / "work", observer)
        assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 0 and observer.ready
    # the daemon is gone: every fetch fails
    assert runtime.loop(rt, 0.05, threading.Event(), once=True) == 3
    assert observer.ready  # one failed cycle is not enough to be taken out of service
    stop = threading.Event()
    thread = threading.Thread(target=runtime.loop, args=(rt, 0.05, stop), kwargs={"max_backoff": 0.1})
    thread.start()
    time.sleep(0.5)
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    failures = observer.failures._value.get()  # noqa: SLF001 - the counter's own value
    assert failures >= 3, failures
    assert not observer.ready and "fetch of main" in observer.readiness()[1]
