"""Reconcile's problems, kept where status can read them: `spaces/<space>/.ksgitops/problems.yaml`.

Reconcile knows things status cannot recompute cheaply (a per-(object, WEC) customization error
needs the mailbox built), so every reconcile (work tree, `--commit`, the runtime) writes, for each
space that has problems, one `SpaceProblems` file (schema/problems.json) and removes it when the
space has none. A problem belongs to the space its file is in (`Problem.space`): a customization
error for (object, WEC) lands in the WDS that holds the object. Entries are sorted (errors first,
then by file, line, object, WEC, message) and hold no object data (problems never quote it).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple

from ..model import Origin, Problem
from .serialize import dump_yaml, load_yaml
from .snapshot import GENERATED_DIR
from .tree import Generated

PROBLEMS_FILE = "problems.yaml"
API_VERSION = "ksgitops.kubestellar.io/v1alpha1"
KIND = "SpaceProblems"
RECONCILED = "Reconciled"
SEVERITIES = ("error", "warning")


def problems_root(space: str) -> str:
    return f"spaces/{space}/{GENERATED_DIR}/{PROBLEMS_FILE}"


class SpaceProblem(NamedTuple):
    """One entry of a problems file. Tuples sort errors first, then by where and what."""

    rank: int  # 0 error, 1 warning
    file: str
    line: int  # 0: unknown
    object: str
    wec: str
    mailbox: str
    message: str

    @property
    def severity(self) -> str:
        return SEVERITIES[self.rank]

    @property
    def is_error(self) -> bool:
        return self.rank == 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"severity": self.severity, "file": self.file, "message": self.message}
        for key, value in (("line", self.line), ("object", self.object), ("wec", self.wec),
                           ("mailbox", self.mailbox)):
            if value:
                doc[key] = value
        return doc


def entry(problem: Problem, names: Mapping[str, str]) -> SpaceProblem:
    """A Problem as a file entry; `problem.wec` is a mailbox, `names` gives its WEC name."""
    message = problem.message
    if problem.obj and message.startswith(f"{problem.obj}: "):
        message = message[len(problem.obj) + 2:]  # the object has its own field
    return SpaceProblem(SEVERITIES.index(problem.severity), problem.origin.path, problem.origin.line,
                        problem.obj, names.get(problem.wec, problem.wec), problem.wec, message)


def problem_files(spaces: Iterable[str], problems: Iterable[Problem], names: Mapping[str, str]) -> Generated:
    """One root per space: its problems file, or None (no problems: the file goes)."""
    owned = sorted(set(spaces))
    by_space: dict[str, set[SpaceProblem]] = {space: set() for space in owned}
    for problem in problems:
        found = by_space.get(problem.space)
        if found is not None:
            found.add(entry(problem, names))
    return {problems_root(space): dump_yaml(document(space, sorted(found))) if found else None
            for space, found in by_space.items()}


def document(space: str, entries: list[SpaceProblem], state: str = RECONCILED) -> dict[str, Any]:
    errors = sum(1 for e in entries if e.is_error)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": space}, "state": state,
            "errors": errors, "warnings": len(entries) - errors, "problems": [e.as_json() for e in entries]}


class ParsedProblems(NamedTuple):
    state: str
    entries: list[SpaceProblem]
    problems: list[Problem]  # why (part of) the file was ignored


def parse_problems(path: str, data: bytes) -> ParsedProblems:
    """A problems file read back; what is not well formed is skipped with a warning (the file is
    ours, but it sits in git where anyone may edit it)."""
    try:
        doc = load_yaml(data)
    except Exception:  # noqa: BLE001 - any unreadable file is one warning
        doc = None
    items = doc.get("problems") if isinstance(doc, dict) and doc.get("kind") == KIND else None
    if not isinstance(items, list):
        return ParsedProblems(RECONCILED, [], [_warn(path, "not a SpaceProblems document, ignored")])
    assert isinstance(doc, dict)
    found = [_entry(item) for item in items]
    entries = sorted(e for e in found if e is not None)
    skipped = len(found) - len(entries)
    state = doc.get("state")
    return ParsedProblems(state if isinstance(state, str) and state else RECONCILED, entries,
                          [_warn(path, f"{skipped} malformed entries ignored")] if skipped else [])


def _warn(path: str, message: str) -> Problem:
    return Problem(Origin(path), f"problems file: {message}", "warning")


def _entry(item: Any) -> SpaceProblem | None:
    if not isinstance(item, dict) or item.get("severity") not in SEVERITIES:
        return None
    text = {k: item.get(k, "") for k in ("file", "object", "wec", "mailbox", "message")}
    line = item.get("line", 0)
    if not all(isinstance(v, str) for v in text.values()) or not text["file"] or not text["message"] \
            or type(line) is not int:
        return None
    return SpaceProblem(SEVERITIES.index(item["severity"]), text["file"], line, text["object"], text["wec"],
                        text["mailbox"], text["message"])


__all__ = ["PROBLEMS_FILE", "SpaceProblem", "problems_root", "problem_files", "parse_problems", "entry",
           "document", "ParsedProblems"]
