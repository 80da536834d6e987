"""The README's tables of commands and exit codes, made from the click definitions themselves, so
the documentation cannot drift from the code (tests/test_newcomer.py checks the README holds them).

    python -m ksgitops.cli_doc               # print the tables
    python -m ksgitops.cli_doc --write README.md   # replace them in the README
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .cli import cli
from .cli_base import EXIT_CODES, KsCommand

BEGIN = "<!-- commands: made by `python -m ksgitops.cli_doc --write README.md`; do not edit by hand -->"
END = "<!-- end of the generated commands -->"
ORDER = ("init", "validate", "reconcile", "diff", "render", "explain", "wecs", "status", "fold-in",
         "collect", "spaces", "sync", "run")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _option(param: click.Option) -> str:
    flag = param.opts[0]
    if param.is_flag:
        return f"[{flag}]"
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


def replace_in(text: str) -> str:
    """`text` with the generated block replaced by the current tables."""
    start, end = text.index(BEGIN), text.index(END) + len(END) + 1
    return text[:start] + tables() + text[end:]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        path = Path(argv[1])
        path.write_text(replace_in(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    sys.stdout.write(tables())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
