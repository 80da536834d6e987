"""The command line: the only modules that import click and rich are this one and its helpers
(cli/base.py: shared options, exit codes, errors; cli/output.py: progress, colour, pager).

Exit codes are in cli/base.py EXIT_CODES (the README's table is checked against them). Errors print
one line each (`file:line: message`), also as a JSON document with `-o json`; a traceback only with
--debug. REPO is found like git finds its repository (io/fs/locate.py).
"""
from __future__ import annotations

import gc
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import click

from ..lazy import lazy_module
from .. import __version__
from .base import KsGroup, color_enabled, complete_wecs, confined_json, drop_stdout, dump, exit_if_confined, fail, global_options, output_option, print_frozen, print_problems, problem_json, wants_json
from .fleet import FLEET_COMMANDS
from .monitor import monitor_cmd
from .entry import GC_THRESHOLD
from .output import ProgressBars, print_paged, style_diff, wec_table
from ..io.fs import afterwards
from ..io.fs.locate import Need, locate
from ..model import KsgitopsError, Origin, Problem, counted, few

if TYPE_CHECKING:
    from ..app import usecases as app
    from ..core import serialize
    from ..core.readout import diff as diffs, explain as explaining, render as rendering
    from ..io import extdiff
else:  # loaded by the commands that use them: a proven no-op never needs the pipeline's rooms
    app = lazy_module("ksgitops.app.usecases")
    serialize = lazy_module("ksgitops.core.serialize")
    diffs = lazy_module("ksgitops.core.readout.diff")
    explaining = lazy_module("ksgitops.core.readout.explain")
    rendering = lazy_module("ksgitops.core.readout.render")
    extdiff = lazy_module("ksgitops.io.extdiff")

REPO = click.argument("repo", required=False, default=None, type=click.Path(file_okay=False, path_type=Path))


WEC = click.argument("wec", shell_complete=complete_wecs)


@click.group(cls=KsGroup, context_settings={"help_option_names": ["-h", "--help"]},
             params=global_options(hidden=False))
@click.version_option(__version__, prog_name="ksgitops")
def cli() -> None:
    """ksgitops: KubeStellar's multi-cluster configuration management, done the GitOps way.

    REPO, where a command takes one, defaults to the ksgitops repository around the current
    directory (the first folder upwards holding spaces/, like git). Global options may come
    before or after the command.
    """


@cli.command(exits="0; 2 DIRECTORY holds spaces/, ksgitops.yaml or STATUS.md already (or is not a folder, or lies "
                   "in a git directory: a bare repository, a .git); "
                   "3 writing DIRECTORY or git failed")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--git/--no-git", "git", default=None,
              help="Make DIRECTORY a git repository whose first commit is the starter (default: unless it "
                   "lies in a git work tree already); --no-git: never.")
@click.option("--demo-reports", is_flag=True,
              help="Also copy the example's made-up WEC reports (mailboxes' reported/), so that `status` "
                   "shows health as WECs report it; no cluster sent them.")
def init(directory: Path, git: bool | None, demo_reports: bool) -> None:
    """Start a repository in DIRECTORY from the bundled example (KubeStellar's example1: two WECs,
    two workload spaces), reconciled, its STATUS.md written (no WEC has reported yet), and made a
    git repository with the starter as its first commit. DIRECTORY may also be a repository just
    made (`git init`, a clone of a new GitHub repository): the starter goes beside its files,
    overwriting none, and nothing is committed."""
    import shlex
    from ..app import starter  # init's own use case
    started = starter.init_repo(directory, git, demo_reports)
    reports = ("demonstration reports in the mailboxes' reported/ (made up: no cluster sent them)"
               if started.demo_reports else "no WEC has reported yet")
    click.echo(f"initialized {directory} from the example: {counted(len(started.wecs), 'WEC')} "
               f"({', '.join(started.wecs)}), reconciled; {reports}: {started.healthy} healthy")
    if started.kept:
        click.echo(f"{directory}: spaces/ and STATUS.md written beside what was there, which init left as it was: "
                   f"{few(started.kept)}")
    add = "git add spaces STATUS.md" if started.kept else "git add -A"
    if started.first is not None:
        click.echo(f"{directory}: a new git repository, the starter its first commit "
                   f"{started.first.commit[:12]} on {started.first.branch} (by {started.first.author})"
                   + ("; what was there is not committed: add what you want yourself" if started.kept else ""))
    elif started.top:  # `git init` (or a clone) came first
        click.echo(f"{directory} is a git repository already: nothing committed; commit the starter "
                   f"(`{add} && git commit`) for `reconcile --commit` and for Flux or Argo CD to read it")
    elif started.enclosing is not None:
        click.echo(f"{directory} lies in the git work tree {started.enclosing}: nothing committed, no repository "
                   "made (--git makes it one of its own; `--commit` needs spaces/ at the top of a repository)")
    else:
        click.echo(f"{directory}: not a git repository (--no-git); `reconcile --commit` needs one")
    here = directory.resolve() == Path.cwd().resolve()
    click.echo("next: ksgitops wecs" if here else f"next: cd {shlex.quote(str(directory))} && ksgitops wecs")


@cli.command(exits="0 valid; 2 invalid (with --strict: also any warning)")
@REPO
@output_option("text", "json")
@click.option("--strict", is_flag=True, help="Treat warnings as errors (exit 2 when there is any).")
def validate(repo: Path | None, output: str, strict: bool) -> None:
    """Check the input: KubeStellar's and ksgitops' kinds against their schemas; every object's
    identity, name, labels and annotations; of other objects only the kind and version, top-level
    fields, ConfigMap and Secret keys and values, and the keys a Secret's type requires (no
    Kubernetes schema: kubectl checks the rest); every
    StatusCollector's CEL, as `status` does. Exit 2 on any error (customization errors included).
    Warnings (`file:line: warning: ...`) never fail it, unless --strict."""
    root = locate(repo)
    try:
        with ProgressBars(output) as progress:
            result = app.compute(app.open_source(root, app.WORKTREE), progress=progress)
    except KsgitopsError as e:
        if output != "json":
            raise
        dump({"valid": False, "problems": [problem_json(p) for p in e.problems],
              "errors": [problem_json(p) for p in e.problems], "exitCode": e.exit_code})
        sys.exit(e.exit_code)
    problems = result.problems + app.collector_problems(result)
    errors = problems if strict else result.errors
    warnings = len(problems) - len(result.errors)
    if output == "json":
        dump({"valid": not errors, "problems": [problem_json(p) for p in problems],
              "frozen": [u.as_json() for u in app.frozen_units(result)],
              **({"errors": [problem_json(p) for p in errors], "exitCode": 2} if errors else {})})
    else:
        print_problems(problems)
        click.echo(f"{'invalid' if errors else 'valid'}: {counted(len(result.wecs), 'WEC')}, "
                   f"{counted(sum(len(v) for v in result.placements.values()), 'placement')}, "
                   f"{counted(len(result.errors), 'error')}, {counted(warnings, 'warning')}"
                   f"{' (--strict: warnings are errors)' if strict and warnings else ''}")
        if result.frozen:
            click.echo(f"reconcile would freeze: {result.frozen.trailer()}")
    if errors:
        sys.exit(2)


@cli.command(name="reconcile", exits="0; 2 invalid input (a part with errors is frozen, the rest is written); "
                                     "3 git or push failure")
@REPO
@click.option("--source", default=None, metavar="REF", help="worktree (default) or a git REF (default HEAD with --commit).")
@click.option("--commit", "do_commit", is_flag=True, help="Reconcile a commit (--source, default HEAD: uncommitted changes are not used) and commit the "
                   "generated files on its branch.")
@click.option("--push", "do_push", is_flag=True, help="Commit, then push the branch (never forced; retried on a moved remote).")
@click.option("--remote", default="origin", show_default=True, help="The remote to push to.")
@output_option("text", "json")
def reconcile_cmd(repo: Path | None, source: str | None, do_commit: bool, do_push: bool, remote: str, output: str) -> None:
    """Write the generated files (mailboxes, SinglePlacementSlices); --commit/--push commit them."""
    with afterwards.answered_first():  # the cache and the run record kept once the command has answered
        _reconcile(repo, source, do_commit, do_push, remote, output)


def _reconcile(repo: Path | None, source: str | None, do_commit: bool, do_push: bool, remote: str, output: str) -> None:
    do_commit = do_commit or do_push
    source = source or ("HEAD" if do_commit else app.WORKTREE)
    root = locate(repo, Need.GIT if do_commit else Need.WORKTREE)
    pushed = None
    outcome: app.ReconcileOutcome | app.ProvenOutcome
    with ProgressBars(output) as progress:
        if do_push:
            from ..app import publish as publishing  # loaded when asked for (see `run` in fleet.py)
            published = publishing.publish(root, publishing.branch_of(root, source), remote, progress=progress)
            assert published.reconciled is not None  # publish reconciles unless told not to
            outcome, pushed = published.reconciled, published.pushed
        elif do_commit:
            outcome = app.reconcile_commit(root, source, progress)
        else:
            outcome = app.reconcile_worktree(root, progress, source)
    result = outcome.result
    print_problems(result.problems)
    frozen = print_frozen(result)
    if output == "json":
        dump({"commit": outcome.commit, "changed": outcome.changed_roots, "wecs": len(result.wecs),
              "problems": [problem_json(p) for p in result.problems], "frozen": [u.as_json() for u in frozen],
              **({"pushed": pushed} if pushed is not None else {}), **confined_json(result)})
    else:
        what = f"committed {outcome.commit[:12]}" if outcome.commit else ("no commit (unchanged)" if do_commit else "written" if outcome.changed_roots else "up to date")
        if pushed is not None:
            what += ", pushed" if pushed else ", nothing to push"
        click.echo(f"{_wec_count(result)}, {counted(len(outcome.changed_roots), 'generated folder')} changed, {what}"
                   + (f"; frozen: {result.frozen.trailer()}" if result.frozen else ""))
    exit_if_confined(result)



def _wec_count(result: Any) -> str:
    """`2 WECs` or, with frozen ones, `2 WECs (1 frozen)`: the WECs read and those kept as they
    stand (a WEC of an inventory file that does not parse is known by its mailbox only)."""
    frozen = result.frozen.wecs if result.frozen else {}
    if not frozen:
        return counted(len(result.wecs), "WEC")  # a proven run's WECs stay packed (core/results.py)
    total = len(result.wecs) + sum(1 for mailbox in frozen if mailbox not in result.wecs)
    return f"{counted(total, 'WEC')} ({len(frozen)} frozen)"

@cli.command(exits="0 nothing would change; 1 changes; 2 invalid input (a part with errors would be frozen: "
                   "the diff shows the rest); 3 git failure")
@REPO
@click.option("--against", default=None, metavar="REF", help="Compare with the generated files in REF's tree.")
@output_option("text", "json", "markdown")
def diff(repo: Path | None, against: str | None, output: str) -> None:
    """Dry run: per-WEC diffs of what reconcile would change (through $PAGER on a terminal;
    KUBECTL_EXTERNAL_DIFF runs another diff program, as kubectl diff does). With a monitor
    running, the reconcile that follows while nothing changed applies this diff's plan."""
    with afterwards.answered_first():  # the work tree's record, its plan and the cache kept once it has answered
        _diff(repo, against, output)


def _diff(repo: Path | None, against: str | None, output: str) -> None:
    root = locate(repo)
    with ProgressBars(output) as progress:
        result, planned = app.plan_diff(root, against, progress)
    print_problems(result.problems)
    if output == "json":
        dump({**planned.as_json(), "problems": [problem_json(p) for p in result.problems], **confined_json(result)})
    elif output == "markdown":
        click.echo(diffs.markdown(planned), nl=False)
    elif os.environ.get(extdiff.ENV):
        code = extdiff.run(planned.wecs, os.environ[extdiff.ENV]) if planned.wecs else 0
        click.echo(f"{counted(len(planned.wecs), 'WEC')} affected")
        if code > 1:
            raise KsgitopsError(f"{extdiff.ENV}: the diff program exited {code}", exit_code=code)
    else:
        text = diffs.text(planned)
        print_paged(style_diff(text) if color_enabled() else text, page=True)
    exit_if_confined(result)
    sys.exit(1 if planned.changed else 0)


@cli.command(exits="0; 2 invalid input or unknown WEC")
@WEC
@REPO
@output_option("yaml", "json")
def render(wec: str, repo: Path | None, output: str) -> None:
    """Print the final manifests one WEC receives, in kustomize's order (for kubectl apply -f -);
    -o json prints them as one v1 List. A frozen WEC's are its mailbox as it stands (exit 2)."""
    root = locate(repo)
    with ProgressBars(output) as progress:
        result, mailbox = app.compute_for_wec(root, wec, progress)
    print_problems([p for p in result.problems if not p.wec or mailbox in p.mailboxes])
    print_frozen(result)
    tree = app.mailbox_tree(root, result, mailbox)
    rendered = rendering.render_mailbox(tree, f"spaces/{mailbox}") if tree else []  # a file that does not read: exit 2
    objects = rendering.in_apply_order([body for _, body in rendered])
    if output == "json":
        dump(rendering.as_list(objects))
    else:
        click.echo(serialize.dump_yaml_all(objects).decode(), nl=False)
    exit_if_confined(result)


@cli.command(exits="0; 2 invalid input, unknown WEC or object")
@WEC
@click.argument("obj", metavar="[OBJECT]", required=False)
@REPO
@output_option("text", "json")
def explain(wec: str, obj: str | None, repo: Path | None, output: str) -> None:
    """Why objects are (not) placed on WEC: per placement, whether it reaches the WEC (location
    selectors) and selects the object (downsync clauses). OBJECT is Kind[.group]/[namespace/]name."""
    if obj is not None and repo is None and Path(obj).is_dir():
        repo, obj = Path(obj), None
    root = locate(repo)
    with ProgressBars(output) as progress:
        result, mailbox = app.compute_for_wec(root, wec, progress)
    print_problems(result.confined_errors)
    if mailbox in result.frozen.wecs:  # render shows that mailbox as it stands
        raise KsgitopsError(f"WEC {wec} is frozen: its mailbox spaces/{mailbox} is kept as it stands until "
                            f"{result.frozen.why_whole(mailbox)[1]} (`ksgitops render {wec}` shows it)")
    if mailbox not in result.mailboxes:  # kept whole by a frozen workload space, nothing computed for it
        raise KsgitopsError(f"WEC {wec}'s mailbox spaces/{mailbox} is kept as it stands until the errors of the "
                            "workload spaces that place on it are fixed")
    data = explaining.explain_object_on(result, mailbox, obj) if obj else explaining.explain_wec(result, mailbox)
    if obj and not data["matches"]:
        raise KsgitopsError(explaining.no_match_message(result, obj))
    dump({**data, **confined_json(result)}) if output == "json" else click.echo(explaining.as_text(data))
    exit_if_confined(result)


@cli.command(exits="0; 2 invalid input")
@REPO
@output_option("text", "json")
def wecs(repo: Path | None, output: str) -> None:
    """List the WECs: SyncTarget labels, mailbox (marked frozen when an error keeps it as it stands),
    and how many placements reach each."""
    root = locate(repo)
    with ProgressBars(output) as progress:
        rows, result = app.list_wecs(root, progress)
    print_problems(result.confined_errors)
    if output == "json":
        dump({"wecs": rows, **confined_json(result)})
    else:
        click.echo(wec_table(rows), nl=False)
    exit_if_confined(result)

for _command in (*FLEET_COMMANDS, monitor_cmd):
    cli.add_command(_command)


def main(argv: list[str] | None = None) -> None:
    gc.set_threshold(*GC_THRESHOLD)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        _main(args)
    finally:
        _settle_stdout()


def _main(args: list[str]) -> None:
    debug, as_json = "--debug" in args, wants_json(args)
    try:
        cli.main(args=args, prog_name="ksgitops", standalone_mode=False)
    except KsgitopsError as e:
        if debug:
            traceback.print_exc()
        fail(e.problems, e.exit_code, as_json)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        fail([Problem(Origin("ksgitops"), e.format_message())], 2, as_json, quiet=True)
    except click.exceptions.Abort:
        sys.exit(130)
    except OSError as e:  # the environment failed where no writer caught it: still one line, exit 3
        if debug:
            raise
        fail([Problem(Origin(str(e.filename or "ksgitops")), str(e.strerror or e))], 3, as_json)
    except Exception as e:  # noqa: BLE001 - the one place that turns surprises into one line
        if _is_git_error(e):
            if debug:
                raise
            fail([Problem(Origin("git"), " ".join(str(e).split()))], 3, as_json)
        if debug:
            raise
        message = f"internal error ({type(e).__name__}); run with --debug for a traceback"
        fail([Problem(Origin("ksgitops"), message)], 4, as_json)


def _settle_stdout() -> None:
    """stdout written out before the command ends: a failure to is one line and exit 3."""
    if sys.stdout is None:  # started with it closed: nothing was written
        return
    try:
        sys.stdout.flush()
    except OSError as e:
        drop_stdout()
        print(f"ksgitops: standard output: {e.strerror or e}", file=sys.stderr)
        sys.exit(3)


def _is_git_error(error: Exception) -> bool:
    """libgit2 failed (a corrupt or locked repository): a git failure, exit 3, not a bug."""
    pygit2 = sys.modules.get("pygit2")
    return pygit2 is not None and isinstance(error, pygit2.GitError)


_: Callable[..., Any] = main
