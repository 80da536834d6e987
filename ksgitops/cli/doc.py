"""The command-line documentation, made from the click definitions themselves, so it cannot drift
from the code: the README's tables of commands and exit codes (tests/test_newcomer.py checks the
README holds them) and docs/REFERENCE.md's options of every command (tests/test_reference.py).

    python -m ksgitops.cli.doc                           # print the README's tables
    python -m ksgitops.cli.doc --write README.md         # replace the generated blocks in a file
    python -m ksgitops.cli.doc --write docs/REFERENCE.md
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import click

from .commands import cli
from .base import EXIT_CODES, KsCommand, global_options

BEGIN = "<!-- commands: made by `python -m ksgitops.cli.doc --write README.md`; do not edit by hand -->"
END = "<!-- end of the generated commands -->"
OPTIONS_BEGIN = "<!-- options: made by `python -m ksgitops.cli.doc --write docs/REFERENCE.md`; do not edit by hand -->"
OPTIONS_END = "<!-- end of the generated options -->"
# click arguments carry no help text: what each one means (a new argument without an entry fails the doc)
ARGUMENTS = {
    "directory": ("a folder that does not exist yet, or one that holds no spaces/, ksgitops.yaml or STATUS.md "
                  "(`.`: here, after `git init`)"),
    "repo": ("the ksgitops repository (a folder holding `spaces/`); default: the first folder upwards "
             "from the current directory that holds `spaces/`"),
    "wec": "a SyncTarget name, `<inventory-space>/<synctarget>`, or a mailbox name",
    "action": "`start` (a detached process; `--foreground`: this one), `stop` or `status`",
    "obj": "`Kind[.group]/[namespace/]name`, e.g. `ReplicaSet.apps/commonstuff/commond`; absent: every object",
}
ORDER = ("init", "validate", "reconcile", "diff", "render", "explain", "wecs", "status", "fold-in",
         "collect", "spaces", "sync", "run", "monitor")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _option(param: click.Option) -> str:
    flag = param.opts[0]
    if param.is_flag:
        return f"[{'/'.join([flag, *param.secondary_opts])}]"  # a pair, as --git/--no-git
    if isinstance(param.type, click.Choice):
        value = "|".join(str(c) for c in param.type.choices)
    else:
        value = param.metavar or max(param.opts, key=len).lstrip("-").upper()
    return f"{flag} {value}" if param.required else f"[{flag} {value}]"


def synopsis(name: str, command: click.Command) -> str:
    parts = [f"ksgitops {name}"]
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if isinstance(param, click.Option):
            parts.append(_option(param))
        else:
            metavar = param.metavar or str(param.name).upper()
            parts.append(metavar if param.required or metavar.startswith("[") else f"[{metavar}]")
    return " ".join(parts)


def summary(command: click.Command) -> str:
    """The first paragraph of the command's help, on one line."""
    return " ".join((command.help or "").split("\n\n")[0].split())


def commands_in_order() -> list[tuple[str, click.Command]]:
    names = [n for n in ORDER if n in cli.commands] + sorted(set(cli.commands) - set(ORDER))
    return [(n, cli.commands[n]) for n in names]


def tables() -> str:
    rows = ["| command | does | exit codes |", "|---|---|---|"]
    for name, command in commands_in_order():
        exits = command.exits if isinstance(command, KsCommand) else ""
        rows.append(f"| `{_cell(synopsis(name, command))}` | {_cell(summary(command))} | {_cell(exits)} |")
    rows += ["", "| exit code | meaning (every command) |", "|---|---|"]
    rows += [f"| {code} | {_cell(text)} |" for code, text in EXIT_CODES.items()]
    return "\n".join([BEGIN, *rows, END]) + "\n"


def _value(param: click.Parameter) -> str:
    """What an option takes, in words: its choices, its range, or nothing for a flag."""
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    if isinstance(kind, click.Choice):
        return "|".join(f"`{c}`" for c in kind.choices)
    if param.metavar and isinstance(param, click.Option):
        return f"`{param.metavar}`"
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        low = f"{kind.min:g} {'<' if kind.min_open else '≤'} " if kind.min is not None else ""
        high = f" {'<' if kind.max_open else '≤'} {kind.max:g}" if kind.max is not None else ""
        return f"{'integer' if isinstance(kind, click.IntRange) else 'number'}, {low}x{high}"
    if isinstance(kind, click.Path):
        return "path"
    return "text"


def _default(param: click.Parameter) -> str:
    if param.required:
        return "required"
    default = param.default
    if isinstance(default, bool) or not isinstance(default, (str, int, float)):
        return ""
    return f"`{default}`"


def _meaning(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        text = param.help or ""
        if param.envvar and str(param.envvar) not in text:
            text += f" Environment variable: `{param.envvar}`."
        return text.strip()
    return ARGUMENTS[str(param.name)]


def _name(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    return f"`{param.metavar or str(param.name).upper()}`".replace("[", "").replace("]", "")


def _param_rows(params: Sequence[click.Parameter]) -> list[str]:
    rows = ["| argument or option | value | default | meaning |", "|---|---|---|---|"]
    for param in params:
        if not getattr(param, "hidden", False):
            cells = (_name(param), _value(param), _default(param), _meaning(param))
            rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return rows


def options_reference() -> str:
    """docs/REFERENCE.md's block: the global options, then each command with its synopsis, full
    help, every argument and option, and its exit codes."""
    lines = [OPTIONS_BEGIN, "#### Global options", "",
             "Accepted before or after the command, by every command.", ""]
    lines += _param_rows(global_options(hidden=False)) + [""]
    for name, command in commands_in_order():
        help_text = " ".join((command.help or "").split())
        exits = command.exits if isinstance(command, KsCommand) else ""
        lines += [f"#### `ksgitops {name}`", "", f"`{synopsis(name, command)}`", "", help_text, ""]
        lines += _param_rows(command.params) + ["", f"Exit codes: {exits}.", ""]
    lines += ["#### Exit codes", "", "| exit code | meaning (every command) |", "|---|---|"]
    lines += [f"| {code} | {_cell(text)} |" for code, text in EXIT_CODES.items()]
    return "\n".join([*lines, OPTIONS_END]) + "\n"


BLOCKS = ((BEGIN, END, tables), (OPTIONS_BEGIN, OPTIONS_END, options_reference))


def replace_in(text: str) -> str:
    """`text` with every generated block it holds replaced by the current one."""
    found = False
    for begin, end_mark, make in BLOCKS:
        if begin in text:
            start, end = text.index(begin), text.index(end_mark) + len(end_mark) + 1
            text = text[:start] + make() + text[end:]
            found = True
    if not found:
        raise ValueError("no generated block (a line such as " + BEGIN + ") in the file")
    return text


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        path = Path(argv[1])
        path.write_text(replace_in(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    sys.stdout.write(tables())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
