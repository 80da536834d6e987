"""Deterministic bytes for generated files: sorted keys, fixed style, LF, trailing newline."""
from __future__ import annotations

import copy
import functools
import re
from typing import Any

import orjson
import yaml


# YAML 1.2 readers (kustomize, go-yaml) take plain `1e3`, `0o17` or `.5` as numbers where PyYAML's
# YAML 1.1 rules see strings: teach the dumper those patterns so such strings get quoted.
YAML12_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
YAML12_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Sorted, block-style YAML that YAML 1.1 and 1.2 readers both read back as written."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", YAML12_FLOAT, list("-+.0123456789"))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", YAML12_INT, list("-+0123456789"))


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    """Multi-line strings as literal blocks, so files and diffs show them line by line."""
    style = "|" if "\n" in text.rstrip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(value: Any) -> bytes:
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     allow_unicode=True, width=1_000_000)
    return text.encode("utf-8")


def dump_yaml_all(values: list[Any]) -> bytes:
    return b"---\n".join(dump_yaml(v) for v in values)


_PLAIN = re.compile(r"[a-z]([-a-z0-9.]*[a-z0-9])?")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


@functools.lru_cache(maxsize=1 << 16)  # a fleet's names, each written in several SinglePlacementSlices
def yaml_str(text: str) -> str:
    """A YAML scalar that always reads back as exactly `text` (for hand-built templates).
    Names starting with a letter stay plain unless YAML 1.1 would read them as a bool or null."""
    if _PLAIN.fullmatch(text) and text not in _YAML_WORDS:
        return text
    if text.isprintable() and text == text.strip():
        return "'" + text.replace("'", "''") + "'"
    return orjson.dumps(text).decode()  # a JSON string is a valid double-quoted YAML scalar


def dump_json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def canonical_json(value: Any) -> bytes:
    """Compact sorted JSON: for hashing and set membership, never written to files."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(data: bytes) -> Any:
    """Read back a file we generated ourselves (trusted shape, but maybe edited by hand: nesting
    deeper than the sources may have raises ValueError before libyaml's composer, which recurses
    in C, would overflow its stack)."""
    if len(data) > MAX_NESTING:  # shorter text cannot nest that deep
        found = nesting_error(data.decode("utf-8", "replace"))
        if found is not None:
            raise ValueError(f"line {found[0]}: {found[1]}")
    return yaml.load(data, Loader=_Loader)  # noqa: S506 - safe loader


MAX_NESTING = 500  # libyaml's composer recurses in C: far deeper input would overflow its stack


def nesting_error(text: str) -> tuple[int, str] | None:
    """A conservative bound on nesting before libyaml sees the text: flow brackets (counted as if
    none were quoted) and block indentation/sequence markers. Returns (line, message)."""
    message = f"YAML nesting is deeper than {MAX_NESTING} levels"
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_NESTING:
            return text.count("\n", 0, match.start()) + 1, message
    indent = _INDENT.search(text)
    if indent:
        return text.count("\n", 0, indent.start()) + 1, message
    if _LONG_LINE.search(text):  # block nesting needs columns: only long lines can hide it
        return _event_depth_error(text, message)
    return None


def _event_depth_error(text: str, message: str) -> tuple[int, str] | None:
    """Exact nesting depth from the parser's events (libyaml's parser keeps its own stack;
    only the composer recurses)."""
    loader = _Loader(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_NESTING:
                    return event.start_mark.line + 1, message
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError:
        return None  # the real parse reports it with its line
    finally:
        loader.dispose()
    return None


_BRACKETS = re.compile(r"[\[\]{}]")
_INDENT = re.compile(r"^[ \t-]{%d,}" % (2 * MAX_NESTING), re.MULTILINE)
_LONG_LINE = re.compile(r"^.{%d,}" % MAX_NESTING, re.MULTILINE)


def deep_copy(value: Any) -> Any:
    """A fast deep copy of JSON data."""
    return orjson.loads(orjson.dumps(value))


_ATOMS = frozenset({str, int, float, bool, type(None)})


def plain_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """copy.deepcopy of parsed YAML or JSON, at under half its cost: dicts and lists copied (a
    node YAML shares through an alias stays shared in the copy), scalars kept (they are
    immutable), anything else left to deepcopy. Any key or number orjson would refuse is fine."""
    memo = {} if memo is None else memo
    kind = type(value)
    if kind in _ATOMS:
        return value
    found = memo.get(id(value))
    if found is not None:
        return found
    out: Any
    if kind is dict:
        out = memo[id(value)] = {}
        for key, item in value.items():
            out[key] = plain_copy(item, memo)
        return out
    if kind is list:
        out = memo[id(value)] = []
        out.extend([plain_copy(item, memo) for item in value])
        return out
    return copy.deepcopy(value, memo)
