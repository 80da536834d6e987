"""The line of one field of a loaded object, for a problem found after parsing.

A parsed body keeps only its document's first line. A check that finds a problem in one field (the
`kind:` of an unknown kind, a ConfigMap value, an annotation, a StatusCollector's name) makes it a
`Located`: the problem at the document's line and the field's path. `FieldLines` then gives it the
field's line: the file is read again and composed (YAML nodes, no values), only when such a problem
is found and its line is not in the cache. The line is kept by blob, path, document line and field,
so a run whose files did not change reads none; a memo of per-object checks keeps the `Located`
(its content, not its text, decides it) and its line is looked up anew for the blob at hand.
Without a snapshot (or when anything fails) a problem keeps its document's line.

Problems found while a file is parsed (convert.py's schema checks, memoized by document content)
are `FieldProblem`s: Problems at the document's line that keep the field's path, which
`FieldLines.resolved` turns into the field's line when the file's problems are collected (read.py).
"""
from __future__ import annotations

from typing import Any, Iterable, MutableMapping

from msgspec import Struct
from msgspec.structs import replace
import yaml

from ...model import Obj, Origin, Problem
from .jsonshape import FieldPath
from .parse import child_node, is_list
from .yamlread import Loader
from .snapshot import Snapshot

FIELD_LINE = "field-line-of"  # parse cache: (blob, path, document line, field path) -> its line, 0: unknown


class Located(Struct, frozen=True):
    """A problem about one field: `at`, its path in the object's body."""

    problem: Problem
    at: FieldPath


class FieldProblem(Problem, frozen=True, order=True):
    """A Problem about the field `at` of its document, made where no snapshot is at hand (while a
    file is parsed). A Problem to whatever reads a parse, it is made one at the field's line by
    `FieldLines.resolved` before it is reported."""

    at: FieldPath = ()


def at_field(problem: Problem, at: FieldPath) -> Problem:
    """`problem` as a FieldProblem about `at` (itself when `at` names no field)."""
    if not at:
        return problem
    return FieldProblem(problem.origin, problem.message, problem.severity, problem.wec, problem.obj, problem.wecs,
                        problem.names, at=at)


class FieldLines:
    """Lines of fields in a snapshot's files, kept in `cache` (the parse cache) by blob."""

    def __init__(self, snapshot: Snapshot | None = None, cache: MutableMapping[Any, Any] | None = None) -> None:
        self.snapshot = snapshot
        self.cache = cache if cache is not None else {}
        self._composed: dict[str, list[yaml.Node]] = {}  # by blob, this run

    def placed(self, found: Iterable[Problem | Located], obj: Obj) -> list[Problem]:
        """`found` (an object's problems) as Problems, each Located one at its field's line."""
        return [self.at(item, obj) if isinstance(item, Located) else item for item in found]

    def resolved(self, problems: Iterable[Problem], blob: str) -> list[Problem]:
        """`problems` of the file whose content is `blob`, each FieldProblem a Problem at its field's line."""
        return [self._resolved(p, blob) if isinstance(p, FieldProblem) else p for p in problems]

    def _resolved(self, problem: FieldProblem, blob: str) -> Problem:
        origin = problem.origin
        line = self.line(blob, origin, problem.at) or origin.line
        return Problem(Origin(origin.path, line), problem.message, problem.severity, problem.wec, problem.obj,
                       problem.wecs, problem.names)

    def at(self, item: Located, obj: Obj) -> Problem:
        origin = item.problem.origin
        line = self.line(obj.key, origin, item.at)
        return replace(item.problem, origin=Origin(origin.path, line)) if line else item.problem

    def line(self, blob: str, origin: Origin, at: FieldPath) -> int:
        """The line of field `at` of the document at `origin` in the file whose content is `blob`."""
        if self.snapshot is None or not blob:
            return 0
        key = (FIELD_LINE, blob, origin.path, origin.line, at)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = self._find(blob, origin, at)
        return found  # type: ignore[no-any-return]

    def _find(self, blob: str, origin: Origin, at: FieldPath) -> int:
        nodes = self._composed.get(blob)
        if nodes is None:
            nodes = self._composed[blob] = self._compose(blob, origin.path)
        node = _document_at(nodes, origin.line)
        return _line_of(node, at) if node is not None else 0

    def _compose(self, blob: str, path: str) -> list[yaml.Node]:
        source = self.snapshot.file(path) if self.snapshot is not None else None
        if source is None or source.key != blob:
            return []
        loader = Loader(source.read().decode("utf-8", "replace").removeprefix("\ufeff"))
        nodes = []
        try:
            while loader.check_node():
                nodes.append(loader.get_node())
        except (yaml.YAMLError, ValueError, TypeError, RecursionError):
            return []  # it parsed once (or as JSON, which YAML may read otherwise): keep the document's line
        finally:
            loader.dispose()
        return nodes


def _line_of(node: yaml.Node | None, at: FieldPath) -> int:
    """The line of the field at `at`: a key's own line (a mapping below it starts on the next), an
    item's; as deep as the path can be followed (a merge key hides where a value came from)."""
    line = 0
    for step in at:
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            pair = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == step), None)
            if pair is None:
                break
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _document_at(nodes: list[yaml.Node], line: int) -> yaml.Node | None:
    """The node of the object whose document (or List item) starts at `line`."""
    for node in nodes:
        found = _item_at(node, line)
        if found is not None:
            return found
    return None


def _item_at(node: yaml.Node, line: int) -> yaml.Node | None:
    items = child_node(node, "items")
    if isinstance(items, yaml.SequenceNode) and _reads_as_list(node):
        return next((f for f in (_item_at(item, line) for item in items.value) if f is not None), None)
    return node if node.start_mark.line + 1 == line else None


def _reads_as_list(node: yaml.Node) -> bool:
    kind, version = child_node(node, "kind"), child_node(node, "apiVersion")
    doc: dict[str, Any] = {"kind": getattr(kind, "value", None), "apiVersion": getattr(version, "value", None),
                           "items": []}
    return is_list(doc)
