"""The command line: the only module that imports click and rich, and maps errors to exit codes.

Exit codes (README): 0 ok; 1 `diff` found changes; 2 invalid input (a refused link too); 3 git,
push or environment failure (a full disk, no permission, a read-only file system); 4 a bug.
Errors print one line each (`file:line: message`); a traceback only with --debug.
"""
from __future__ import annotations

import gc
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import click

from . import __version__, app
from .model import KsgitopsError, Problem

# Start-up is most of a command that has little to do (a no-op reconcile is ~0.1 s of work), so
# modules that only some commands need are imported inside those commands.

REPO = click.argument("repo", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))


def _print_problems(problems: list[Problem]) -> None:
    for problem in problems:
        click.echo(str(problem), err=True)


def _dump(data: Any) -> None:
    import json
    click.echo(json.dumps(data, indent=2, sort_keys=True))


class _Progress:
    """A rich progress bar on stderr, only when stderr is a terminal and the work is long."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._bar: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int) -> None:
        if total < 50 or not sys.stderr.isatty():
            return
        if self._bar is None:
            from rich.console import Console
            from rich.progress import Progress
            self._bar = Progress(console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=total)
        self._bar.update(self._task, completed=done)
        if done >= total:
            self._bar.stop()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ksgitops")
@click.option("--debug", is_flag=True, help="Show tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """ksgitops: KubeStellar's multi-cluster configuration management, done the GitOps way."""
    ctx.obj = {"debug": debug}


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
def init(directory: Path) -> None:
    """Scaffold a repo in DIRECTORY from the bundled example."""
    import shutil
    from importlib import resources
    if directory.exists() and any(directory.iterdir()):
        raise KsgitopsError(f"{directory}: exists and is not empty")
    checkout = Path(__file__).resolve().parents[1] / "examples" / "repo"  # a source checkout
    installed = Path(str(resources.files("ksgitops"))) / "example"  # shipped in the wheel
    source = checkout if checkout.is_dir() else installed
    if not source.is_dir():
        raise KsgitopsError(f"the bundled example is missing ({installed})")
    shutil.copytree(source, directory, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__init__.py", "__pycache__"))
    click.echo(f"initialized {directory} from the example; run: ksgitops reconcile {directory}")


@cli.command()
@REPO
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def validate(repo: Path, output: str) -> None:
    """Check schemas and semantics; exit 2 on any error (customization errors included)."""
    try:
        result = app.compute(app.open_source(repo, app.WORKTREE))
    except KsgitopsError as e:
        if output != "json":
            raise
        _dump({"valid": False, "problems": [_problem_json(p) for p in e.problems]})
        sys.exit(e.exit_code)
    errors = result.errors
    if output == "json":
        _dump({"valid": not errors, "problems": [_problem_json(p) for p in result.problems]})
    else:
        _print_problems(result.problems)
        click.echo(f"{'invalid' if errors else 'valid'}: {len(result.wecs)} WECs, "
                   f"{sum(len(v) for v in result.placements.values())} placements, {len(errors)} errors")
    if errors:
        sys.exit(2)


def _problem_json(p: Problem) -> dict[str, Any]:
    return {"file": p.origin.path, "line": p.origin.line, "message": p.message,
            "severity": p.severity, **({"wec": p.wec} if p.wec else {})}


@cli.command(name="reconcile")
@REPO
@click.option("--source", default=None, help="worktree (default) or a git REF (default HEAD with --commit).")
@click.option("--commit", "do_commit", is_flag=True, help="Commit the generated files on the branch.")
@click.option("--push", "do_push", is_flag=True, help="Commit, then push the branch (never forced; retried on a moved remote).")
@click.option("--remote", default="origin", show_default=True, help="The remote to push to.")
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def reconcile_cmd(repo: Path, source: str | None, do_commit: bool, do_push: bool, remote: str, output: str) -> None:
    """Write the generated files (mailboxes, SinglePlacementSlices)."""
    do_commit = do_commit or do_push
    source = source or ("HEAD" if do_commit else app.WORKTREE)
    progress = _Progress("reconciling")
    pushed = None
    outcome: app.ReconcileOutcome | app.ProvenOutcome
    if do_push:
        published = app.publish(repo, app.branch_of(repo, source), remote, progress=progress)
        assert published.reconciled is not None  # publish reconciles unless told not to
        outcome, pushed = published.reconciled, published.pushed
    elif do_commit:
        outcome = app.reconcile_commit(repo, source, progress)
    else:
        outcome = app.reconcile_worktree(repo, progress, source)
    _print_problems(outcome.problems)
    if output == "json":
        _dump({"commit": outcome.commit, "changed": outcome.changed_roots, "wecs": outcome.wec_count,
               "problems": [_problem_json(p) for p in outcome.problems],
               **({"pushed": pushed} if pushed is not None else {})})
        return
    what = f"committed {outcome.commit[:12]}" if outcome.commit else ("no commit (unchanged)" if do_commit else "written")
    if pushed is not None:
        what += ", pushed" if pushed else ", nothing to push"
    click.echo(f"{outcome.wec_count} WECs, {len(outcome.changed_roots)} generated folders changed, {what}")


@cli.command()
@REPO
@click.option("--against", default=None, help="Compare with the generated files in REF's tree.")
@click.option("-o", "output", type=click.Choice(["text", "json", "markdown"]), default="text")
def diff(repo: Path, against: str | None, output: str) -> None:
    """Dry run: per-WEC diffs of what reconcile would change. Exit 0 none, 1 changes."""
    from .core import diff as diffs
    result, planned = app.plan_diff(repo, against)
    _print_problems(result.problems)
    if output == "json":
        _dump(planned.as_json())
    elif output == "markdown":
        click.echo(diffs.markdown(planned), nl=False)
    else:
        click.echo(diffs.text(planned), nl=False)
    sys.exit(1 if planned.changed else 0)


@cli.command()
@click.argument("wec")
@REPO
@click.option("-o", "output", type=click.Choice(["yaml", "json"]), default="yaml")
def render(wec: str, repo: Path, output: str) -> None:
    """Print the final manifests one WEC receives."""
    from .core.render import render_mailbox
    from .core.serialize import dump_yaml_all
    result, mailbox = app.compute_for_wec(repo, wec)
    _print_problems([p for p in result.problems if not p.wec or p.wec == mailbox])
    tree = result.generated[f"spaces/{mailbox}"]
    objects = [body for _, body in render_mailbox(tree)] if isinstance(tree, dict) else []
    if output == "json":
        _dump(objects)
    else:
        click.echo(dump_yaml_all(objects).decode(), nl=False)


@cli.command()
@click.argument("wec")
@click.argument("obj", metavar="[OBJECT]", required=False)
@click.argument("repo", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def explain(wec: str, obj: str | None, repo: Path, output: str) -> None:
    """Why objects are (not) placed on WEC; OBJECT is Kind[.group]/[namespace/]name."""
    from .core.explain import as_text, explain_object_on, explain_wec
    if obj is not None and repo == Path(".") and Path(obj).is_dir():
        repo, obj = Path(obj), None
    result, mailbox = app.compute_for_wec(repo, wec)
    data = explain_object_on(result, mailbox, obj) if obj else explain_wec(result, mailbox)
    if obj and not data["matches"]:
        raise KsgitopsError(f"no workload object matches {obj!r} (Kind[.group]/[namespace/]name)")
    _dump(data) if output == "json" else click.echo(as_text(data))


@cli.command(name="status")
@REPO
@click.option("--commit", "do_commit", is_flag=True,
              help="Summarize the branch head's mailboxes and commit the summary (only when it changed).")
@click.option("--source", default="HEAD", show_default=True, help="The branch to summarize with --commit.")
@click.option("--push", "do_push", is_flag=True, help="Commit, then push the branch (never forced).")
@click.option("--remote", default="origin", show_default=True, help="The remote to push to.")
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def status_cmd(repo: Path, do_commit: bool, source: str, do_push: bool, remote: str, output: str) -> None:
    """Summarize the WECs' reported state: CombinedStatus files and STATUS.md."""
    if do_push:
        published = app.publish(repo, app.branch_of(repo, source), remote, do_reconcile=False, do_status=True)
        assert published.status is not None  # asked for
        outcome = published.status
    else:
        outcome = app.status_commit(repo, source) if do_commit else app.status_worktree(repo)
    counts = outcome.output.counts
    total = sum(counts.values())
    if output == "json":
        _dump({"changed": outcome.changed, "commit": outcome.commit, "objects": len(outcome.output.combined),
               "wecs": len(outcome.result.wecs), "health": counts,
               "problems": [_problem_json(p) for p in outcome.problems], **outcome.output.facts()})
        return
    _print_problems(outcome.problems)
    others = "".join(f", {n} {h}" for h, n in counts.items() if h != "Healthy")
    what = ""
    if do_commit:
        what = f", committed {outcome.commit[:12]}" if outcome.commit else ", no commit (unchanged)"
    click.echo(f"{len(outcome.output.combined)} objects on {len(outcome.result.wecs)} WECs: "
               f"{counts.get('Healthy', 0)}/{total} healthy{others}; {len(outcome.changed)} status files changed{what}")


@cli.command(name="collect")
@REPO
@click.option("--kubeconfig", default=None, help="Kubeconfig file(s) (default $KUBECONFIG or ~/.kube/config).")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds per WEC.")
@click.option("--workers", default=8, show_default=True, type=click.IntRange(min=1), help="WECs read at once.")
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def collect_cmd(repo: Path, kubeconfig: str | None, timeout: float, workers: int, output: str) -> None:
    """Pull reported state from the WECs reachable through a kubeconfig into reported/. Exit 3 when any is unreachable."""
    from . import agent
    outcome = agent.collect(repo, kubeconfig, timeout, workers)
    for name, reason in sorted(outcome.unreachable.items()):
        click.echo(f"{name}: unreachable: {reason}", err=True)
    for line in outcome.problems:
        click.echo(line, err=True)
    if output == "json":
        _dump({"collected": outcome.collected, "unreachable": outcome.unreachable, "skipped": outcome.skipped,
               "changed": outcome.changed, "reports": outcome.reports, "problems": outcome.problems})
    else:
        click.echo(f"collected {len(outcome.collected)} WECs, {outcome.reports} reports, "
                   f"{len(outcome.changed)} mailboxes changed; {len(outcome.unreachable)} unreachable, "
                   f"{len(outcome.skipped)} skipped (no kubeconfig context or mailbox)")
    sys.exit(outcome.exit_code)


@cli.command(name="sync")
@click.option("--mailbox", required=True, help="The mailbox space this WEC consumes (spaces/NAME).")
@click.option("--kubeconfig", default=None, help="Kubeconfig of the WEC (default $KUBECONFIG or ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--repo", default=".", show_default=True, help="Git URL or local path of the repository.")
@click.option("--branch", default="main", show_default=True, help="Branch holding the mailboxes.")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0, or 3 on a git or Kubernetes failure).")
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds between cycles.")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Where the bare clone lives (default $KSGITOPS_CACHE_DIR or ~/.cache/ksgitops/sync).")
@click.option("--inventory-namespace", default="kube-system", show_default=True,
              help="Namespace of the ConfigMap recording what the agent applied.")
def sync_cmd(mailbox: str, kubeconfig: str | None, context: str | None, repo: str, branch: str, once: bool,
             interval: float, cache_dir: Path | None, inventory_namespace: str) -> None:
    """The agent beside a WEC: apply its mailbox (server-side apply, prune, create-only), report, upsync, push."""
    import signal
    import threading
    from . import agent
    runner = agent.Agent(agent.SyncOptions(mailbox, repo, branch, kubeconfig, context, cache_dir, inventory_namespace))

    def show(outcome: Any) -> None:
        for line in [*outcome.notes, *outcome.errors]:
            click.echo(line, err=True)
        click.echo(outcome.summary())

    if once:
        outcome = runner.cycle()
        show(outcome)
        sys.exit(outcome.exit_code)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    runner.run(interval, stop, show)


@cli.command(name="spaces")
@REPO
@click.option("--kubeconfig", "kubeconfigs", multiple=True, metavar="[PROVIDER=]FILE",
              help="Kubeconfig for kubeconfig providers without spec.Config; PROVIDER=FILE for one provider.")
@click.option("--apply", "do_apply", is_flag=True,
              help="Carry out the plan: create/delete managed git spaces, write discovered Space objects and phases.")
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def spaces_cmd(repo: Path, kubeconfigs: tuple[str, ...], do_apply: bool, output: str) -> None:
    """List every space (Space objects, providers' spaces) and the space manager's plan; --apply carries it out."""
    from . import spaces_cmd as use_case
    outcome = use_case.spaces(repo, kubeconfigs, do_apply)
    if output == "json":
        _dump(outcome.as_json())
    else:
        _print_problems(outcome.problems)
        click.echo(outcome.as_text(), nl=False)
    sys.exit(outcome.exit_code)


@cli.command(name="fold-in")
@REPO
@click.option("--source", default="HEAD", show_default=True, help="The branch to commit on.")
@click.option("-o", "output", type=click.Choice(["text", "json"]), default="text")
def fold_in_cmd(repo: Path, source: str, output: str) -> None:
    """Commit the WECs' report refs (refs/heads/ksgitops/reported/<mailbox>) into their mailboxes."""
    outcome = app.fold_in(repo, source)
    if output == "json":
        _dump({"commit": outcome.commit, "folded": outcome.folded,
               "problems": [_problem_json(p) for p in outcome.problems]})
        return
    _print_problems(outcome.problems)
    what = f"committed {outcome.commit[:12]}" if outcome.commit else "no commit (nothing new)"
    click.echo(f"{len(outcome.folded)} WECs' reports folded in, {what}")


SECONDS = click.FloatRange(min=0, max=7 * 86400, min_open=True)  # more than 0, at most a week


def _seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if value != value:  # NaN passes every range check
        raise click.BadParameter(f"{value} is not a number of seconds.", ctx, param)
    return value


@cli.command(name="run")
@click.option("--repo", "repo_arg", required=True, help="A git URL or bare repository (cloned), or a work tree.")
@click.option("--branch", default="main", show_default=True)
@click.option("--interval", type=SECONDS, callback=_seconds, default=60.0, show_default=True,
              help="Seconds between polls (> 0).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where clones live (default $KSGITOPS_WORKDIR, else ~/.cache/ksgitops).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, envvar="KSGITOPS_PORT",
              help="/healthz, /readyz, /metrics; 0: none (env KSGITOPS_PORT).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--push-retries", type=click.IntRange(min=0), help="Refused pushes to retry (default RepoConfig pushRetries).")
@click.option("--max-backoff", type=SECONDS, callback=_seconds, default=300.0, show_default=True,
              help="Longest wait after failed cycles (doubling from --interval, jittered).")
@click.option("--unready-after", type=click.IntRange(min=1), default=3, show_default=True,
              help="/readyz fails after this many failed cycles in a row.")
@click.option("--no-status", is_flag=True, help="Reconcile only; do not summarize reported state.")
@click.option("--watch", is_flag=True, help="Local work tree: react to file changes (debounced).")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0, or the failure's exit code).")
def run_cmd(repo_arg: str, branch: str, interval: float, workdir: Path | None, port: int, log_format: str,
            push_retries: int | None, max_backoff: float, unready_after: int, no_status: bool, watch: bool,
            once: bool) -> None:
    """The long-running loop: poll (or watch), reconcile, summarize, commit, push."""
    import os

    from . import runtime
    from .io.remote import redact
    from .io.serve import Observer, serve, setup_logging
    from .shutdown import Shutdown
    logger = setup_logging(log_format)
    observer = Observer(stall_after=max(300.0, 10 * interval, 2 * max_backoff), unready_after=unready_after)
    shutdown = Shutdown()
    shutdown.install()
    server = serve(port, observer) if port else None
    try:
        base = workdir or Path(os.environ.get("KSGITOPS_WORKDIR") or Path.home() / ".cache" / "ksgitops")
        rt = runtime.open_runtime(repo_arg, branch, base, observer, push_retries, not no_status)
        logger.info(f"ksgitops {__version__} running on {redact(repo_arg)} (branch {branch})",
                    extra={"fields": {"event": "start", "interval": interval, "maxBackoff": max_backoff,
                                      "port": server.port if server else None}})
        code = runtime.loop(rt, interval, shutdown, once=once, watch=watch, max_backoff=max_backoff)
    finally:
        if server is not None:
            server.shutdown()
    if code:
        sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    # A run allocates millions of small objects and makes almost no reference cycles: collecting
    # the youngest generation every 700 allocations cost ~13% of a full reconcile (1,000 WECs).
    gc.set_threshold(100_000, 50, 100)
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        cli.main(args=argv, prog_name="ksgitops", standalone_mode=False)
    except KsgitopsError as e:
        if debug:
            traceback.print_exc()
        _print_problems(e.problems)
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(2)
    except click.exceptions.Abort:
        sys.exit(130)
    except OSError as e:  # the environment failed where no writer caught it: still one line, exit 3
        if debug:
            raise
        click.echo(f"{e.filename or 'ksgitops'}: {e.strerror or e}", err=True)
        sys.exit(3)
    except Exception as e:  # noqa: BLE001 - the one place that turns surprises into one line
        if _is_git_error(e):
            if debug:
                raise
            click.echo(f"git: {' '.join(str(e).split())}", err=True)
            sys.exit(3)
        if debug:
            raise
        click.echo(f"ksgitops: internal error ({type(e).__name__}); run with --debug for a traceback", err=True)
        sys.exit(4)


def _is_git_error(error: Exception) -> bool:
    """libgit2 failed (a corrupt or locked repository): a git failure, exit 3, not a bug."""
    pygit2 = sys.modules.get("pygit2")
    return pygit2 is not None and isinstance(error, pygit2.GitError)


_: Callable[..., Any] = main
