"""What every command shares: global options in any position, `-o/--output`, exit codes, errors
(also as JSON), suggestions for mistyped commands. Only the CLI modules import click.
"""
from __future__ import annotations

import difflib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

import click

from ..lazy import lazy_module
from ..io.fs.locate import locate
from ..model import Problem
from ..names import printable

if TYPE_CHECKING:
    from ..app import usecases as app
else:
    app = lazy_module("ksgitops.app.usecases")

# Exit codes of every command (the README's table is checked against these).
EXIT_CODES: dict[int, str] = {
    0: "success; `diff`: nothing would change",
    1: "`diff`: something would change",
    2: ("usage error, not a ksgitops repository, invalid input (`file:line: message`), or a symbolic "
        "link on the way to a path ksgitops owns (`path: is a symbolic link`); nothing written, except "
        "when the errors are confined to spaces or WECs: those are frozen and the rest is done"),
    3: ("git, push, cluster or environment failure: a refused push, a locked ref, an unreachable WEC "
        "(`collect`, `sync`), a full disk, a file size limit, no permission, a read-only file system, "
        "a file name too long, an I/O error; one line naming the path, nothing left half-written"),
    4: "internal error: a bug; `--debug` shows the traceback",
    130: "interrupted (Ctrl-C)",
}
OK_OR_INVALID = "0; 2 invalid input"
GLOBAL_NOTE = "Global options --debug, -C DIR and --no-color may also come after the command."


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Global options land in ctx.meta, which every context of one invocation shares."""
    if param.name == "chdir":
        ctx.meta.setdefault("chdir", []).extend(value)
    elif value:
        ctx.meta[str(param.name)] = True
    return value


def global_options(hidden: bool) -> list[click.Option]:
    return [
        click.Option(["--debug"], is_flag=True, expose_value=False, callback=_remember, hidden=hidden,
                     help="Show a traceback for unexpected failures."),
        click.Option(["-C", "chdir"], multiple=True, metavar="DIR", expose_value=False, callback=_remember,
                     hidden=hidden, help="Run as if started in DIR (like git -C; may repeat)."),
        click.Option(["--no-color", "no_color"], is_flag=True, expose_value=False, callback=_remember,
                     hidden=hidden, help="No colour (also: the NO_COLOR environment variable)."),
    ]


class KsCommand(click.Command):
    """A command with the global options, its exit codes in --help, and -C applied when it runs."""

    def __init__(self, *args: Any, exits: str = OK_OR_INVALID, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exits = exits
        self.params.extend(global_options(hidden=True))
        self.epilog = f"Exit codes: {exits}. {GLOBAL_NOTE}"

    def invoke(self, ctx: click.Context) -> Any:
        cwd = os.getcwd()
        try:
            for folder in ctx.meta.get("chdir", []):
                try:
                    os.chdir(folder)
                except OSError as e:
                    raise click.UsageError(f"-C {folder}: cannot change to it ({e.strerror})", ctx) from None
            return super().invoke(ctx)
        finally:
            os.chdir(cwd)  # in-process callers (tests) keep their directory


class KsGroup(click.Group):
    command_class = KsCommand

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=3, cutoff=0.5)
            if close:
                ctx.fail(f"No such command {name!r}. Did you mean {' or '.join(repr(c) for c in close)}?")
        return super().resolve_command(ctx, args)


class _Format(click.Choice):
    """A Choice that also takes `-o=json` (click passes the `=` on for short options)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("="):
            value = value[1:]
        return super().convert(value, param, ctx)


def output_option(*formats: str) -> Callable[[Any], Any]:
    return click.option("-o", "--output", "output", type=_Format(formats), default=formats[0], show_default=True,
                        help="Output format (-o json, -o=json, --output=json).")


def wants_json(argv: Sequence[str]) -> bool:
    """Whether the command line asks for `-o json` in any spelling (read before click parses it, so
    that usage errors too can answer in JSON)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in ("json", "=json"):
            return True
        if arg in ("-ojson", "-o=json", "--output=json"):
            return True
    return False


# --- printing results and errors -------------------------------------------------------------------

def dump(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, sort_keys=True))


def print_problems(problems: Sequence[Problem]) -> None:
    for problem in problems:
        click.echo(printable(str(problem)), err=True)


def problem_json(p: Problem) -> dict[str, Any]:
    """One problem for machines: file and line are null when the finding has none (repo-wide)."""
    has_file = p.origin.path != "ksgitops"
    return {"file": p.origin.path if has_file else None, "line": p.origin.line or None,
            "space": p.space or None, "message": p.message, "severity": p.severity,
            **({"wec": p.shown[0], "mailbox": p.wec} if p.wec and not p.wecs else {}),
            **({"object": p.obj} if p.obj else {}),
            **({"wecCount": len(p.wecs), "wecs": list(p.shown)} if p.wecs else {})}


def print_frozen(result: Any) -> list[Any]:
    """What the run froze, one line each on stderr (`spaces/<space>: frozen: ...`); returns it."""
    units = app.frozen_units(result)
    for unit in units:
        click.echo(str(unit), err=True)
    return units


def confined_json(result: Any) -> dict[str, Any]:
    """What a JSON result adds when the command ends with exit 2 for errors of spaces or WECs: the
    `errors` and the `exitCode`, as a failure's document has them."""
    errors = result.confined_errors
    return {"errors": [problem_json(p) for p in errors], "exitCode": 2} if errors else {}


def exit_if_confined(result: Any) -> None:
    """Exit 2 when a space or WEC has errors (its problems are printed; the rest was done)."""
    if result.confined_errors:
        sys.exit(2)


def fail(problems: Sequence[Problem], code: int, as_json: bool, quiet: bool = False) -> None:
    """Exit with `code`: the errors on stderr, one line each (unless click showed them already),
    and with `-o json` also as a JSON document on stdout."""
    if not quiet:
        print_problems(problems)
    if as_json:
        try:
            dump({"errors": [problem_json(p) for p in problems], "exitCode": code})
        except OSError:  # stdout itself failed (a full disk): the lines above said why
            drop_stdout()
    sys.exit(code)


def drop_stdout() -> None:
    """Send what is left of stdout nowhere: it cannot be written, and the interpreter would try
    again at exit (and end with 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # AttributeError: no stdout at all
        pass


def complete_wecs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of WEC: the WECs of the repository around the current directory."""
    try:
        return [r["wec"] for r in app.list_wecs(locate(None))[0] if r["wec"].startswith(incomplete)]
    except Exception:  # noqa: BLE001 - completion never fails loudly
        return []


def color_enabled(stream: Any = None) -> bool:
    """Colour only on a terminal, never with NO_COLOR (any non-empty value) or --no-color."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get("no_color"):
        return False
    if os.environ.get("NO_COLOR"):
        return False
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)())
