"""How a source file's YAML is read, as kubectl's reader (sigs.k8s.io/yaml over go-yaml v2) reads
it: YAML 1.1's booleans and numbers but base-60 ones and timestamps, `1e3` a number, a key given
twice in one mapping refused, and a scalar its constructor cannot read (an explicit `!!bool maybe`,
an integer of more digits than int() reads) or a character YAML refuses (a NUL) refused at its
line, where PyYAML would give none. Pure."""
from __future__ import annotations

import re
from typing import Any

import yaml

from .jsonshape import BEYOND_INT_LIMIT


class Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """Safe loader without the timestamp resolver: '2024-01-01' stays a string, as JSON needs;
    a key given twice in one mapping is an error (sigs.k8s.io/yaml, which kubectl uses, refuses it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        own = node.value  # flatten_mapping leaves here the mapping's own entries, merge keys removed
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        if len(mapping) != len(node.value):  # fewer keys than entries: a duplicate, or an override
            _refuse_duplicates(self, own)
        return mapping


def _refuse_duplicates(loader: Any, entries: list[tuple[yaml.Node, yaml.Node]]) -> None:
    """Raise at the second occurrence of a key among a mapping's own entries (a key that only
    overrides one brought in by a merge key `<<` is no duplicate)."""
    first: dict[Any, int] = {}
    for key_node, _ in entries:
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in first:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} in a mapping (first at line {first[key]})", key_node.start_mark)
        first[key] = line


_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:timestamp", _INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# YAML 1.1's numbers but its base-60 ones: kubectl's reader (go-yaml v2) takes `12:30`, `1:20:30.5` and
# `11:22:33:44:55` as text, where PyYAML would turn them into 750, 4830.5 and a large integer.
Loader.add_implicit_resolver(_INT_TAG, re.compile(r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""", re.X), list("-+0123456789"))
Loader.add_implicit_resolver(_FLOAT_TAG, re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""", re.X), list("-+0123456789."))
# kubectl's reader takes `1e3` as a number (YAML 1.1 wants a dot): read it as kubectl does.
Loader.add_implicit_resolver(
    _FLOAT_TAG, re.compile(r"^[-+]?(?:[0-9]+)(?:[eE][-+]?[0-9]+)$"), list("-+0123456789"))


class NotJson(yaml.constructor.ConstructorError):
    """A value YAML reads and JSON cannot hold, said as shape_error says it."""


def _int(loader: Any, node: yaml.ScalarNode) -> int:
    """YAML's integer; decimal text of more digits than int() reads (sys.get_int_max_str_digits,
    4,300) is far beyond what JSON readers keep, and said so at its line."""
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:
        if _DECIMAL.fullmatch(node.value):
            raise NotJson(None, None, BEYOND_INT_LIMIT, node.start_mark) from None
        raise


def _at_its_line(construct: Any) -> Any:
    """`construct`, its failure on a scalar the resolver did not vouch for (an explicit `!!bool
    maybe`, `!!int ""`; an implicit `0x_`) raised at the scalar's line, as the parser's are."""
    def checked(loader: Any, node: yaml.Node) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, IndexError, AttributeError, TypeError):
            message = f"the value is not a valid !!{str(node.tag).rpartition(':')[2]} (quote it to keep it as text)"
            raise yaml.constructor.ConstructorError(None, None, message, node.start_mark) from None
    return checked


_DECIMAL = re.compile(r"[-+]?[0-9_]+")
Loader.add_constructor(_INT_TAG, _at_its_line(_int))
for _tag in (_FLOAT_TAG, "tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"):
    Loader.add_constructor(_tag, _at_its_line(Loader.yaml_constructors[_tag]))


def refused_character(text: str, character: int | str) -> tuple[int, str]:
    """(line, message) of a character YAML refuses anywhere (a NUL, another control character):
    the reader stops at its first one, which is then the text's first of that character."""
    code = character if isinstance(character, int) else ord(character)
    at = text.find(chr(code))
    return (text.count("\n", 0, at) + 1 if at >= 0 else 0,
            f"malformed YAML: character U+{code:04X} may not appear in YAML text; in a double-quoted string, "
            f"write it as \\u{code:04X}")


def tab_hint(text: str, mark: Any, problem: str) -> str:
    """What to add to a parse error found at a tab that does not say so: YAML indents with spaces."""
    if mark is None or "tab" in problem:
        return ""
    lines = text.split("\n", mark.line + 1)
    line = lines[mark.line] if mark.line < len(lines) else ""
    return " (a tab: YAML indents with spaces only)" if line[mark.column:mark.column + 1] == "\t" else ""
