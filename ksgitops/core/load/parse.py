"""Parse one source file into documents with line numbers, guarding against hostile input.

YAML goes through PyYAML's C parser (YAML 1.1 booleans as kubectl reads them, but timestamps kept
as strings so every value stays JSON, and no base-60 numbers, which kubectl's reader does not
have); JSON through orjson (a byte order mark skipped). Limits: files over 10 MiB, non-UTF-8
text, alias bombs and recursive aliases, non-mapping documents, non-JSON values (jsonshape.py) and
duplicate keys in a mapping or a source file's JSON object (kubectl refuses them too; a YAML merge
key may still be overridden) are all fatal, reported as `file:line: message`; so are what YAML's
reader refuses (a NUL or another control character) and scalars its constructors cannot read (an
explicit `!!bool maybe`, an integer of more digits than int() reads), which PyYAML reports
without a line.

Read as kubectl reads files: a `kind: List` document, or a `v1` `...List` one, stands for its
`items`, each with its own line. A label or annotation value that YAML reads as a boolean, a
number or null (`extended: yes`) is one error at the value's line that shows the quoted form; the
documents are still returned, so later checks see them.
"""
from __future__ import annotations

import json
import re
from typing import Any

from msgspec import Struct
import orjson
import yaml

from ...model import Origin, Problem
from . import jsonlines
from .jsonshape import line_of, located, shape_error
from .snapshot import MAX_FILE_BYTES as MAX_FILE_BYTES  # sources larger are refused (read before parsing)
from .yamlread import Loader, NotJson, refused_character, tab_hint
from ..serialize import nesting_error as nesting_error  # documents.py takes it from here

MAX_EXPANDED_NODES = 1_000_000


class ParsedFile(Struct, frozen=True):
    """Documents of one file as (line, body) pairs, or the fatal problems that stopped parsing."""

    docs: tuple[tuple[int, dict[str, Any]], ...]
    problems: tuple[Problem, ...] = ()
    # per document's text, when read document by document (documents.py): (its digest, its first
    # line, how many documents, parse problems and conversion problems it gave)
    pieces: tuple[tuple[bytes, int, int, int, int], ...] = ()

    def __eq__(self, other: object) -> bool:  # the same documents and problems, however they were read
        if type(other) is not ParsedFile:
            return NotImplemented
        return (self.docs, self.problems) == (other.docs, other.problems)

    __hash__ = None  # type: ignore[assignment]  # its documents are dicts


def parse_file(path: str, data: bytes) -> ParsedFile:
    """Parse `data` (the bytes of repo-relative `path`) into mapping documents."""
    if len(data) > MAX_FILE_BYTES:
        return _fail(path, 0, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        return _fail(path, line, "file is not valid UTF-8")
    if path.endswith(".json"):
        return _parse_json(path, text, source=True)
    return _parse_yaml(path, text, data)


def parse_json(path: str, data: bytes) -> ParsedFile:
    """`data` as one JSON document (whatever the file's name), with the same checks as parse_file."""
    if len(data) > MAX_FILE_BYTES:
        return _fail(path, 0, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        return _parse_json(path, data.decode("utf-8"))
    except UnicodeDecodeError as e:
        return _fail(path, data[: e.start].count(b"\n") + 1, "file is not valid UTF-8")


def plain_json(data: bytes) -> dict[str, Any] | None:
    """The one document parse_json would read from `data` with nothing to say about it, when that
    is cheap to tell: a small, shallow JSON object that is neither a List nor has metadata (the
    reports agents write); None: ask parse_json."""
    if len(data) > MAX_FILE_BYTES or data[:1] != b"{" or data.count(b"{") + data.count(b"[") > 100 \
            or _DIGIT_RUN in data.translate(_DIGITS):  # _LONG_DIGITS in UTF-8, at 7x its speed
        return None
    try:
        doc = orjson.loads(data)  # refuses what is not UTF-8, as the decode before parse_json's does
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) and "metadata" not in doc and not is_list(doc) else None


def _fail(path: str, line: int, message: str) -> ParsedFile:
    return ParsedFile((), (Problem(Origin(path, line), message),))


def _parse_json(path: str, text: str, source: bool = False) -> ParsedFile:
    """One JSON document. A `source` file is also refused when an object gives a key twice (as
    in YAML); a byte order mark is skipped, as kubectl's reader does."""
    text = text.removeprefix("\ufeff")
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        return _fail(path, int(getattr(e, "lineno", 0) or 0), f"malformed JSON: {e.msg}")
    if not isinstance(doc, dict):
        return _fail(path, 1, "document is not a mapping (an object must be a JSON object)")
    if source:
        duplicate = _json_duplicate(text)
        if duplicate:
            return _fail(path, *duplicate)
    # orjson gives only JSON values: shallow, without long numbers, nothing shape_error could find
    plain = text.count("{") + text.count("[") <= 100 and not _LONG_DIGITS.search(text)
    error = None if plain else shape_error(doc)
    if error:
        return _fail(path, 1, located(*error))
    start = jsonlines.first(text)
    found = _json_expanded(text, start, doc, ())
    docs, problems = [], []
    composed: list[yaml.Node | None] = []
    for line, (_, body, at) in zip(jsonlines.lines(text, [offset for offset, _, _ in found]), found):
        docs.append((line, body))
        wrong = _scalar_metadata_problems(path, line, body, None)
        if wrong:  # each value at its own line: the text composed, once, only for such a finding
            if not composed:
                composed.append(_json_node(text))
            wrong = _scalar_metadata_problems(path, line, body, _item_node(composed[0], at))
        problems.extend(wrong)
    return _checked(path, docs, problems)


def _json_expanded(text: str, offset: int, doc: Any, at: tuple[int, ...] | None
                   ) -> list[tuple[int, Any, tuple[int, ...] | None]]:
    """(offset, body, item indices) of the JSON document at `offset`, or (recursively) of the items
    of a List, each at its own offset (the List's, and no indices, when the text cannot be followed)."""
    if not isinstance(doc, dict) or not is_list(doc):
        return [(offset, doc, at)]
    try:
        offsets = jsonlines.items(text, offset)
    except ValueError:
        offsets = []
    if len(offsets) != len(doc["items"]):
        return [(offset, body, None) for _, body, _ in _expanded(1, doc, None)]
    return [found for i, (item, item_at) in enumerate(zip(doc["items"], offsets))
            for found in _json_expanded(text, item_at, item, None if at is None else (*at, i))]


def _item_node(node: yaml.Node | None, at: tuple[int, ...] | None) -> yaml.Node | None:
    if at is None:
        return None
    for i in at:
        items = child_node(node, "items")
        node = items.value[i] if isinstance(items, yaml.SequenceNode) and i < len(items.value) else None
    return node


def _json_node(text: str) -> yaml.Node | None:
    """The JSON document as YAML composes it (JSON is YAML), for the lines of values it holds;
    None when YAML reads it otherwise."""
    loader = Loader(text)
    try:
        return loader.get_single_node()  # type: ignore[no-any-return]
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    finally:
        loader.dispose()


class _Duplicate(Exception):
    pass


def _refuse_duplicate_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise _Duplicate
    return mapping


def _json_duplicate(text: str) -> tuple[int, str] | None:
    """(line, message) when an object of the JSON text gives a key twice. The line comes from
    reading the text as YAML (JSON is YAML), which names both places."""
    try:
        json.loads(text, object_pairs_hook=_refuse_duplicate_pairs)
        return None
    except _Duplicate:
        pass
    try:
        yaml.load(text, Loader=Loader)  # noqa: S506 - the safe loader of this module
    except yaml.MarkedYAMLError as e:
        if e.problem and e.problem_mark and e.problem.startswith("duplicate key"):
            return e.problem_mark.line + 1, f"malformed JSON: {e.problem.replace('a mapping', 'an object')}"
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        pass
    return 1, "malformed JSON: an object gives a key twice"


def _checked(path: str, docs: list[tuple[int, Any]], problems: list[Problem]) -> ParsedFile:
    """A List item that is not a mapping is as fatal as a document that is not one."""
    for line, body in docs:
        if not isinstance(body, dict):
            return _fail(path, line, f"a List item is not a mapping (found {type(body).__name__})")
    return ParsedFile(tuple(docs), tuple(problems))


# --- kubectl's reading of a file: List documents, and metadata values that are not strings --------

def is_list(doc: dict[str, Any]) -> bool:
    """`kind: List`, or a `v1` kind ending in List, with `items` (kubectl flattens these)."""
    kind = doc.get("kind")
    if not isinstance(kind, str) or not isinstance(doc.get("items"), list):
        return False
    return kind == "List" or (doc.get("apiVersion") == "v1" and kind.endswith("List"))


def _expanded(line: int, doc: Any, node: yaml.Node | None) -> list[tuple[int, Any, yaml.Node | None]]:
    """The document itself, or (recursively) the items of a List, each with its own line."""
    if not isinstance(doc, dict) or not is_list(doc):
        return [(line, doc, node)]
    item_nodes = child_node(node, "items")
    out = []
    for i, item in enumerate(doc["items"]):
        item_node = item_nodes.value[i] if isinstance(item_nodes, yaml.SequenceNode) else None
        item_line = item_node.start_mark.line + 1 if item_node is not None else line
        out.extend(_expanded(item_line, item, item_node))
    return out


def child_node(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value node of `key` in a mapping node (None when absent or not a mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None


_SCALAR_WORDS = {bool: "a boolean", int: "a number", float: "a number", type(None): "null"}


def _scalar_metadata_problems(path: str, line: int, doc: Any, node: yaml.Node | None) -> list[Problem]:
    """One error per label or annotation value that is not a string, at the value's line, with
    the quoted form that works (the Kubernetes API refuses such a value; kubectl does too)."""
    md = doc.get("metadata") if isinstance(doc, dict) else None
    if not isinstance(md, dict):
        return []
    problems = []
    for field in ("labels", "annotations"):
        values = md.get(field)
        if not isinstance(values, dict):
            continue
        for key, value in values.items():
            word = _SCALAR_WORDS.get(type(value))
            if word is None:
                continue
            value_node = child_node(child_node(child_node(node, "metadata"), field), key)
            text = value_node.value if isinstance(value_node, yaml.ScalarNode) else _json_text(value)
            at = value_node.start_mark.line + 1 if value_node is not None else line
            shown = f"the unquoted value {text}" if text else "an empty value"
            what = field[:-1]
            problems.append(Problem(Origin(path, at), f"{what} {key}: {shown} is read as {word}, but "
                                    f"{'an' if what[0] == 'a' else 'a'} {what} value must be a string; quote it: "
                                    f"{key}: {_quoted(text)}"))
    return problems


def _json_text(value: Any) -> str:
    return "" if value is None else orjson.dumps(value).decode()


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


_LONG_DIGITS = re.compile(r"[0-9]{16}")  # |n| > 2^53 needs 16 digits
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))  # a digit -> "1", else "0"
_DIGIT_RUN = b"1" * 16


def _parse_yaml(path: str, text: str, data: bytes) -> ParsedFile:
    nesting = nesting_error(text)
    if nesting:
        return _fail(path, *nesting)
    return parse_yaml_documents(path, text, b"&" in data)


def parse_yaml_documents(path: str, text: str, may_alias: bool = True) -> ParsedFile:
    """The YAML documents of `text` (lines counted from its start), once the whole file it is
    part of passed the size, UTF-8 and nesting checks."""
    docs: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    loader = Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            line = node.start_mark.line + 1
            if may_alias:
                error = _alias_error(node)
                if error:
                    return _fail(path, line, error)
            doc = loader.construct_document(node)
            if doc is None:
                continue
            shape = shape_error(doc)
            if shape:
                return _fail(path, line_of(node, shape[1]) or line, located(*shape))
            for item_line, body, item_node in _expanded(line, doc, node):
                docs.append((item_line, body))
                problems.extend(_scalar_metadata_problems(path, item_line, body, item_node))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 0
        problem = str(e.problem or e.context)
        return _fail(path, line, f"{'' if isinstance(e, NotJson) else 'malformed YAML: '}{problem}"
                                 f"{tab_hint(text, e.problem_mark, problem)}")
    except yaml.reader.ReaderError as e:
        return _fail(path, *refused_character(text, e.character))
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as e:
        return _fail(path, 0, f"malformed YAML: {type(e).__name__}")
    finally:
        loader.dispose()
    return _checked(path, docs, problems)


def _alias_error(root: yaml.Node) -> str | None:
    """Reject recursive aliases and documents whose aliases expand past MAX_EXPANDED_NODES. A walk
    with its own stack: the answer never depends on how deep the caller's stack already is."""
    sizes: dict[int, int] = {}  # a node's size, aliases expanded, once known
    active = {id(root)}  # the nodes on the walk's path
    stack: list[list[Any]] = [[root, iter(_children(root)), 1]]  # node, children left, size so far
    while stack:
        frame = stack[-1]
        for child in frame[1]:
            key = id(child)
            if key in sizes:
                frame[2] += sizes[key]
                continue
            if key in active:
                return "recursive YAML alias"
            active.add(key)
            stack.append([child, iter(_children(child)), 1])
            break
        else:
            stack.pop()
            node, _, total = frame
            active.discard(id(node))
            sizes[id(node)] = total
            if total > MAX_EXPANDED_NODES:
                return f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes (alias bomb)"
            if stack:
                stack[-1][2] += total
    return None


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
