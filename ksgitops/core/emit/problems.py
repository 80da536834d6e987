"""Reconcile's problems, kept where status can read them: `spaces/<space>/.ksgitops/problems.yaml`.

Reconcile knows things status cannot recompute cheaply (a per-(object, WEC) customization error
needs the mailbox built), so every reconcile (work tree, `--commit`, the runtime) writes, for each
space that has problems, one `SpaceProblems` file (schema/problems.json) and removes it when the
space has none. A problem belongs to the space its file is in (`Problem.space`): a customization
error for (object, WEC) lands in the WDS that holds the object. Entries are sorted (errors first,
then by file, line, object, WEC, message) and hold no object data (problems never quote it). One
finding on many WECs is one entry with `wecCount` and the first few WEC names. A space with an
error of its own is `Frozen` (isolation.py), and its file says what is kept (`frozen`).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple

from ...model import FEW_WECS, Origin, Problem
from ..serialize import dump_yaml, load_yaml
from ..load.snapshot import GENERATED_DIR
from ..tree import Generated

PROBLEMS_FILE = "problems.yaml"
API_VERSION = "ksgitops.kubestellar.io/v1alpha1"
KIND = "SpaceProblems"
RECONCILED = "Reconciled"
FROZEN = "Frozen"
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
    wec_count: int = 0  # the WECs concerned, when more than one (`wec` and `mailbox` are then "")
    wecs: tuple[str, ...] = ()  # the first few of them, sorted

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
                           ("mailbox", self.mailbox), ("wecCount", self.wec_count), ("wecs", list(self.wecs))):
            if value:
                doc[key] = value
        return doc

    @property
    def wec_text(self) -> str:
        """The WEC column: a name, or `N WECs: a, b, …`."""
        if self.wec_count:
            return f"{self.wec_count} WECs: {', '.join(self.wecs)}{', …' if self.wec_count > len(self.wecs) else ''}"
        return self.wec


def entry(problem: Problem, names: Mapping[str, str]) -> SpaceProblem:
    """A Problem as a file entry; `problem.wec` is a mailbox, `names` gives its WEC name."""
    message = problem.message
    if problem.obj and message.startswith(f"{problem.obj}: "):
        message = message[len(problem.obj) + 2:]  # the object has its own field
    rank, file, line = SEVERITIES.index(problem.severity), problem.origin.path, problem.origin.line
    if problem.wecs:
        shown = tuple(sorted(names.get(mb, mb) for mb in problem.wecs)[:FEW_WECS])
        return SpaceProblem(rank, file, line, problem.obj, "", "", message, len(problem.wecs), shown)
    return SpaceProblem(rank, file, line, problem.obj, names.get(problem.wec, problem.wec), problem.wec, message)


def problem_files(spaces: Iterable[str], problems: Iterable[Problem], names: Mapping[str, str],
                  frozen: Any = None, homes: Mapping[str, str] | None = None) -> Generated:
    """One root per space: its problems file, or None (no problems: the file goes). A space with
    an error of its own is Frozen; `frozen` (isolation.Frozen) says what that keeps. A problem in
    a mailbox (a kept file that does not read) goes to the inventory space of its WEC (`homes`:
    mailbox -> that space), as a mailbox holds no problems file of its own (a folder named as a
    mailbox that reads as a source space keeps its own)."""
    owned = sorted(set(spaces))
    by_space: dict[str, set[SpaceProblem]] = {space: set() for space in owned}
    homes = homes or {}
    for problem in problems:
        found = by_space.get(problem.space) if problem.space in by_space else by_space.get(homes.get(problem.space, ""))
        if found is not None:
            found.add(entry(problem, names))
    out: Generated = {}
    for space, found in by_space.items():
        broken = any(e.is_error and not e.wec and not e.wec_count for e in found)
        section = frozen.section(space, names) if broken and frozen is not None else None
        out[problems_root(space)] = dump_yaml(document(space, sorted(found), FROZEN if broken else RECONCILED,
                                                       section)) if found else None
    return out


def document(space: str, entries: list[SpaceProblem], state: str = RECONCILED,
             frozen: dict[str, Any] | None = None) -> dict[str, Any]:
    errors = sum(1 for e in entries if e.is_error)
    doc = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": space}, "state": state,
           "errors": errors, "warnings": len(entries) - errors, "problems": [e.as_json() for e in entries]}
    if frozen:
        doc["frozen"] = frozen
    return doc


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
    line, count, wecs = item.get("line", 0), item.get("wecCount", 0), item.get("wecs", [])
    if not all(isinstance(v, str) for v in text.values()) or not text["file"] or not text["message"] \
            or type(line) is not int or type(count) is not int \
            or not (isinstance(wecs, list) and all(isinstance(w, str) for w in wecs)):
        return None
    return SpaceProblem(SEVERITIES.index(item["severity"]), text["file"], line, text["object"], text["wec"],
                        text["mailbox"], text["message"], count, tuple(wecs))


__all__ = ["PROBLEMS_FILE", "FROZEN", "SpaceProblem", "problems_root", "problem_files", "parse_problems", "entry",
           "document", "ParsedProblems"]
