"""The commands that work with the fleet and its reported state: status, collect, sync, spaces,
fold-in and run. commands.py adds them to the group (FLEET_COMMANDS)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..lazy import lazy_module
from .. import __version__
from ..app.shutdown import Abandoned, Shutdown
from ..io.fs import afterwards
from ..io.fs.locate import Need, locate
from ..model import counted
from .base import KsCommand, confined_json, dump, exit_if_confined, output_option, print_frozen, print_problems, problem_json

if TYPE_CHECKING:
    from ..app import usecases as app
else:
    app = lazy_module("ksgitops.app.usecases")

REPO = click.argument("repo", required=False, default=None, type=click.Path(file_okay=False, path_type=Path))


@click.command(cls=KsCommand, name="status", exits="0; 2 invalid input; 3 git or push failure")
@REPO
@click.option("--commit", "do_commit", is_flag=True,
              help="Summarize the branch head's mailboxes and commit the summary (only when it changed).")
@click.option("--source", default="HEAD", show_default=True, metavar="BRANCH", help="The branch to summarize with --commit.")
@click.option("--push", "do_push", is_flag=True, help="Commit, then push the branch (never forced).")
@click.option("--remote", default="origin", show_default=True, help="The remote to push to.")
@output_option("text", "json")
def status_cmd(repo: Path | None, do_commit: bool, source: str, do_push: bool, remote: str, output: str) -> None:
    """Summarize the WECs' reported state: CombinedStatus files and STATUS.md.

    When 128 or more mailboxes changed, the work is shared with forked processes, one per CPU this
    process may run on (at most 8; `taskset` gives it fewer); the output is the same bytes."""
    with afterwards.answered_first():  # the status memo kept once the command has answered
        _status(repo, do_commit, source, do_push, remote, output)


def _status(repo: Path | None, do_commit: bool, source: str, do_push: bool, remote: str, output: str) -> None:
    root = locate(repo, Need.GIT if do_commit or do_push else Need.WORKTREE)
    if do_push:
        from ..app import publish as publishing  # a use case of its own, loaded when asked for (see `run`)
        published = publishing.publish(root, publishing.branch_of(root, source), remote, do_reconcile=False, do_status=True)
        assert published.status is not None  # asked for
        outcome = published.status
    else:
        outcome = app.status_commit(root, source) if do_commit else app.status_worktree(root)
    counts = outcome.output.counts
    total = sum(counts.values())
    if output == "json":
        dump({"changed": outcome.changed, "commit": outcome.commit, "objects": len(outcome.output.combined),
              "wecs": len(outcome.result.wecs), "health": counts,
              "problems": [problem_json(p) for p in outcome.problems], **outcome.output.facts(),
              **confined_json(outcome.result)})
        exit_if_confined(outcome.result)
        return
    print_problems(outcome.problems)
    print_frozen(outcome.result)
    others = "".join(f", {n} {h}" for h, n in counts.items() if h != "Healthy")
    what, folded = "", outcome.folded
    if do_commit:
        what = f", committed {outcome.commit[:12]}" if outcome.commit else \
            f", no status change; committed {folded.commit[:12]}, the reports folded in" if folded and folded.commit \
            else ", no commit (unchanged)"
    unsent = ("; no mailbox holds them yet: `ksgitops reconcile` writes the mailboxes, then the WECs' reports "
              "come back into them" if outcome.output.combined and not total else "")
    click.echo(f"{counted(len(outcome.output.combined), 'object')} on {counted(len(outcome.result.wecs), 'WEC')}: "
               f"{counts.get('Healthy', 0)}/{total} healthy{others}; {counted(len(outcome.changed), 'status file')} "
               f"changed{what}{unsent}")
    exit_if_confined(outcome.result)


@click.command(cls=KsCommand, name="collect", exits="0; 2 invalid input; 3 some WEC unreachable")
@REPO
@click.option("--kubeconfig", default=None, metavar="FILE", help="Kubeconfig file(s) (default $KUBECONFIG or ~/.kube/config).")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds per WEC.")
@click.option("--workers", default=8, show_default=True, type=click.IntRange(min=1), help="WECs read at once.")
@output_option("text", "json")
def collect_cmd(repo: Path | None, kubeconfig: str | None, timeout: float, workers: int, output: str) -> None:
    """Pull reported state from the WECs reachable through a kubeconfig into reported/."""
    from ..app import agent  # loaded when asked for (see `run`)
    outcome = agent.collect(locate(repo), kubeconfig, timeout, workers)
    for name, reason in sorted(outcome.unreachable.items()):
        click.echo(f"{name}: unreachable: {reason}", err=True)
    for line in outcome.problems:
        click.echo(line, err=True)
    if output == "json":
        dump({"collected": outcome.collected, "unreachable": outcome.unreachable, "skipped": outcome.skipped,
              "changed": outcome.changed, "reports": outcome.reports, "problems": outcome.problems})
    else:
        click.echo(f"collected {counted(len(outcome.collected), 'WEC')}, {counted(outcome.reports, 'report')}, "
                   f"{counted(len(outcome.changed), 'mailbox', 'mailboxes')} changed; {len(outcome.unreachable)} unreachable, "
                   f"{len(outcome.skipped)} skipped (no kubeconfig context or mailbox)")
    sys.exit(outcome.exit_code)


@click.command(cls=KsCommand, name="sync", exits="0; 2 invalid input; 3 git or Kubernetes failure")
@click.option("--mailbox", required=True, help="The mailbox space this WEC consumes (spaces/NAME).")
@click.option("--kubeconfig", default=None, help="Kubeconfig of the WEC (default $KUBECONFIG or ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--repo", default=".", show_default=True, help="Git URL or local path of the repository.")
@click.option("--branch", default="main", show_default=True, help="Branch holding the mailboxes.")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0, or 3 on a git or Kubernetes failure).")
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds between cycles.")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Where the bare clone lives (default sync/ in $KSGITOPS_CACHE_DIR, else ~/.cache/ksgitops/sync).")
@click.option("--inventory-namespace", default="kube-system", show_default=True,
              help="Namespace of the ConfigMap recording what the agent applied.")
@click.option("--dry-run", is_flag=True, help="Print what one cycle would do to the WEC (one line per object); change nothing.")
def sync_cmd(mailbox: str, kubeconfig: str | None, context: str | None, repo: str, branch: str, once: bool,
             interval: float, cache_dir: Path | None, inventory_namespace: str, dry_run: bool) -> None:
    """The agent beside a WEC: apply its mailbox (server-side apply, prune, create-only), report, upsync, push."""
    from ..app import agent  # loaded when asked for (see `run`)
    runner = agent.Agent(agent.SyncOptions(mailbox, repo, branch, kubeconfig, context, cache_dir, inventory_namespace))
    if dry_run:
        plan, errors = runner.plan()
        for line in errors:
            click.echo(line, err=True)
        for line in plan.lines() if plan is not None else []:
            click.echo(line)
        sys.exit(3 if plan is None else 0)

    def show(outcome: Any) -> None:
        for line in [*outcome.notes, *outcome.errors]:
            click.echo(line, err=True)
        click.echo(outcome.summary())

    shutdown = Shutdown()  # a signal stops the agent between write steps, never inside a fetch or push
    with shutdown.installed():
        try:
            if once:
                outcome = runner.cycle(guard=shutdown)
                show(outcome)
            else:
                outcome = None
                runner.run(interval, shutdown, show)
        except Abandoned:
            click.echo(ABANDONED, err=True)
            return
    if outcome is not None:
        sys.exit(outcome.exit_code)


ABANDONED = ("ksgitops: stopped: a second signal abandoned the cycle between two write steps; nothing was cut "
             "short, the next start begins afresh")


@click.command(cls=KsCommand, name="spaces", exits="0; 2 invalid input; 3 --apply failed")
@REPO
@click.option("--kubeconfig", "kubeconfigs", multiple=True, metavar="[PROVIDER=]FILE",
              help="Kubeconfig for kubeconfig providers without spec.Config; PROVIDER=FILE for one provider.")
@click.option("--apply", "do_apply", is_flag=True,
              help="Carry out the plan: create/delete managed git spaces, write discovered Space objects and phases.")
@output_option("text", "json")
def spaces_cmd(repo: Path | None, kubeconfigs: tuple[str, ...], do_apply: bool, output: str) -> None:
    """List every space (Space objects, providers' spaces) and the space manager's plan; --apply carries it out."""
    from ..app import spaces as use_case  # loaded when asked for (see `run`)
    outcome = use_case.spaces(locate(repo), kubeconfigs, do_apply)
    if output == "json":
        dump(outcome.as_json())
    else:
        print_problems(outcome.problems)
        click.echo(outcome.as_text(), nl=False)
    sys.exit(outcome.exit_code)


@click.command(cls=KsCommand, name="fold-in", exits="0; 2 invalid input; 3 git failure")
@REPO
@click.option("--source", default="HEAD", show_default=True, metavar="BRANCH", help="The branch to commit on.")
@output_option("text", "json")
def fold_in_cmd(repo: Path | None, source: str, output: str) -> None:
    """Commit the WECs' report refs (refs/heads/ksgitops/reported/<mailbox>) into their mailboxes."""
    outcome = app.fold_in(locate(repo, Need.GIT), source)
    if output == "json":
        dump({"commit": outcome.commit, "folded": outcome.folded,
              "problems": [problem_json(p) for p in outcome.problems]})
        return
    print_problems(outcome.problems)
    what = f"committed {outcome.commit[:12]}" if outcome.commit else "no commit (nothing new)"
    click.echo(f"reports of {counted(len(outcome.folded), 'WEC')} folded in, {what}")


SECONDS = click.FloatRange(min=0, max=7 * 86400, min_open=True)  # more than 0, at most a week


def _seconds(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and value != value:  # NaN passes every range check
        raise click.BadParameter(f"{value} is not a number of seconds.", ctx, param)
    return value


@click.command(cls=KsCommand, name="run", exits="runs until SIGTERM, then 0; 2 a bad option or the port in use; with --once, the cycle's exit code")
@click.option("--repo", "repo_arg", required=True, help="A git URL or bare repository (cloned), or a work tree.")
@click.option("--branch", default="main", show_default=True, help="The branch to reconcile, commit on and push.")
@click.option("--interval", type=SECONDS, callback=_seconds, default=None,
              help="Seconds between polls (> 0); default RepoConfig poll.intervalSeconds, else 60.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where clones live (default $KSGITOPS_WORKDIR, else ~/.cache/ksgitops).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, envvar="KSGITOPS_PORT",
              help="/healthz, /readyz, /metrics; 0: none (env KSGITOPS_PORT).")
@click.option("--log-format", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="One line per event: text, or a JSON object.")
@click.option("--push-retries", type=click.IntRange(min=0),
              help="Refused pushes to retry (default RepoConfig push.retries).")
@click.option("--max-backoff", type=SECONDS, callback=_seconds, default=300.0, show_default=True,
              help="Longest wait after failed cycles (doubling from --interval, jittered).")
@click.option("--unready-after", type=click.IntRange(min=1), default=3, show_default=True,
              help="/readyz fails after this many failed cycles in a row.")
@click.option("--no-status", is_flag=True, help="Reconcile only; do not summarize reported state.")
@click.option("--watch", is_flag=True, help="Local work tree: react to file changes (debounced).")
@click.option("--once", is_flag=True, help="Run one cycle and exit (0, or the failure's exit code).")
def run_cmd(repo_arg: str, branch: str, interval: float | None, workdir: Path | None, port: int, log_format: str,
            push_retries: int | None, max_backoff: float, unready_after: int, no_status: bool, watch: bool,
            once: bool) -> None:
    """The long-running loop: poll (or watch), reconcile, summarize, commit, push."""

    # The fleet's use cases are imported where a command runs them: loaded for every command,
    # they add ~0.3 s to each start-up, `--help` included (measured with python -X importtime).
    from ..app import runtime, runtimes
    from ..io.git.remote import redact
    from ..io.serve import Observer, serve, setup_logging
    logger = setup_logging(log_format)
    observer = Observer(stall_after=max(300.0, 10 * (interval or 0), 2 * max_backoff), unready_after=unready_after)
    shutdown = Shutdown()
    shutdown.install()
    server = serve(port, observer) if port else None
    try:
        base = workdir or Path(os.environ.get("KSGITOPS_WORKDIR") or Path.home() / ".cache" / "ksgitops")
        rt = runtimes.open_runtime(repo_arg, branch, base, observer, push_retries, not no_status)
        logger.info(f"ksgitops {__version__} running on {redact(repo_arg)} (branch {branch})",
                    extra={"fields": {"event": "start", "interval": interval, "maxBackoff": max_backoff,
                                      "port": server.port if server else None}})
        code = runtime.loop(rt, interval, shutdown, once=once, watch=watch, max_backoff=max_backoff)
    finally:
        if server is not None:
            server.shutdown()
    if code:
        sys.exit(code)


FLEET_COMMANDS = (status_cmd, collect_cmd, sync_cmd, spaces_cmd, fold_in_cmd, run_cmd)
