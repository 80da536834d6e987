"""Deterministic bytes for generated files: sorted keys, fixed style, LF, trailing newline."""
from __future__ import annotations

import re
from typing import Any

import orjson
import yaml

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(value: Any) -> bytes:
    text = yaml.dump(value, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
                     allow_unicode=True, width=1_000_000)
    return text.encode("utf-8")


def dump_yaml_all(values: list[Any]) -> bytes:
    return b"---\n".join(dump_yaml(v) for v in values)


_PLAIN = re.compile(r"[a-z]([-a-z0-9.]*[a-z0-9])?")
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


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
    """Read back a file we generated ourselves (trusted shape)."""
    return yaml.load(data, Loader=_Loader)  # noqa: S506 - safe loader


def deep_copy(value: Any) -> Any:
    """A fast deep copy of JSON data."""
    return orjson.loads(orjson.dumps(value))
