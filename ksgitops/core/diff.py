"""The plan of a reconcile, for people: per-WEC unified diffs of rendered objects (pure).

Like pip-tools' `diff`, this only computes; `reconcile` does. Secret values are redacted on both
sides, so a diff says that a Secret changed and never what it holds.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .render import redact_pair, render_mailbox
from .serialize import dump_yaml
from .tree import FileTree


@dataclass
class WecDiff:
    wec: str
    mailbox: str
    diff: str


@dataclass
class DiffResult:
    changed: bool
    wecs: list[WecDiff] = field(default_factory=list)

    @property
    def affected(self) -> list[str]:
        return [w.wec for w in self.wecs]

    def as_json(self) -> dict[str, Any]:
        return {"changed": self.changed, "affectedWecs": self.affected,
                "wecs": {w.wec: {"mailbox": w.mailbox, "diff": w.diff} for w in self.wecs}}


def mailbox_diff(mailbox: str, old: FileTree | None, new: FileTree | None) -> str:
    """Unified diff of the rendered objects of one mailbox ('' when they render the same)."""
    before = dict(render_mailbox(old)) if old else {}
    after = dict(render_mailbox(new)) if new else {}
    chunks: list[str] = []
    for rel in sorted(set(before) | set(after)):
        a, b = redact_pair(before.get(rel), after.get(rel))
        if a == b:
            continue
        a_text = dump_yaml(a).decode().splitlines(keepends=True) if a is not None else []
        b_text = dump_yaml(b).decode().splitlines(keepends=True) if b is not None else []
        path = f"spaces/{mailbox}/objects/{rel}.yaml"
        chunks.extend(difflib.unified_diff(a_text, b_text, f"a/{path}", f"b/{path}"))
    return "".join(chunks)


def markdown(result: DiffResult) -> str:
    lines = [f"### ksgitops diff: {len(result.wecs)} WECs affected", ""]
    if not result.wecs:
        lines.append("No WEC would receive different objects." if not result.changed
                     else "Generated files change, but no WEC would receive different objects.")
    for w in result.wecs:
        lines += [f"<details><summary>{w.wec} (<code>spaces/{w.mailbox}</code>)</summary>", "",
                  "```diff", w.diff.rstrip("\n"), "```", "</details>", ""]
    return "\n".join(lines) + "\n"


def text(result: DiffResult) -> str:
    body = "".join(w.diff for w in result.wecs)
    return body + f"{len(result.wecs)} WECs affected\n"
