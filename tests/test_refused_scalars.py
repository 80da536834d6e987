"""Text YAML refuses, and scalars its constructors cannot read, are errors at their line.

- libyaml's reader refuses control characters anywhere in a stream (a NUL, U+0001, DEL, most C1
  controls: YAML 1.1 and 1.2's c-printable); it reports an offset, not a line;
- Python's int() reads at most sys.get_int_max_str_digits() (4,300) decimal digits and raises a
  ValueError without a mark; such an integer is beyond ±2^53, which ksgitops refuses anyway;
- a scalar whose explicit tag its text does not fit (`!!bool maybe`, `!!int ""`), or that the
  resolver takes for an integer that int() refuses (`0x_`), failed with a ValueError, KeyError,
  IndexError or AttributeError from PyYAML's constructors: no line, or exit 4;
- a tab where YAML wants indentation is said to be one (libyaml says only "found character that
  cannot start any token").
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from ksgitops.core.load.convert import read_source
from ksgitops.core.load.documents import read_by_document
from minimal_fleet import configmaps_placement, one_wec_inventory

Tree = Callable[[dict[str, "str | bytes"]], Path]
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: ns}\ndata:\n"
BEYOND = "integer beyond ±2^53 would lose precision in kustomize and JSON readers (quote it)"
PLACEMENT = configmaps_placement()
INVENTORY = one_wec_inventory()


def not_valid(tag: str) -> str:
    return f"malformed YAML: the value is not a valid {tag} (quote it to keep it as text)"


def refused(code: int) -> str:
    return (f"malformed YAML: character U+{code:04X} may not appear in YAML text; in a double-quoted string, "
            f"write it as \\u{code:04X}")


CASES: dict[str, tuple[str, int, str]] = {  # name: (text, line, message)
    "int-4301-digits": (CM % "a" + "  n: " + "1" * 4301 + "\n", 5, BEYOND),
    "int-negative-5000-digits": (CM % "a" + "  x: y\n  n: -" + "9" * 5000 + "\n", 6, BEYOND),
    "int-explicit-tag-4301-digits": (CM % "a" + "  n: !!int " + "1" * 4301 + "\n", 5, BEYOND),
    "int-in-list-item": ("apiVersion: v1\nkind: List\nitems:\n- " + (CM % "a").replace("\n", "\n  ")
                         + "  n: " + "7" * 4400 + "\n", 8, BEYOND),
    "int-in-second-document": (CM % "a" + "  n: '1'\n---\n" + CM % "b" + "  n: " + "1" * 4301 + "\n", 11, BEYOND),
    "nul-in-quoted-string": (CM % "a" + '  x: "a\0b"\n', 5, refused(0)),
    "nul-in-plain-string": (CM % "a" + "  x: a\0b\n", 5, refused(0)),
    "nul-after-multibyte-text": (CM % "a" + "  é: ééé\n  x: 'a\0'\n", 6, refused(0)),
    "nul-in-second-document": (CM % "a" + "  n: '1'\n---\n" + CM % "b" + "  x: a\0b\n", 11, refused(0)),
    "nul-in-a-comment": ("# a\0b\n" + CM % "a", 1, refused(0)),
    "control-character": (CM % "a" + "  x: a\x01b\n", 5, refused(1)),
    "del": (CM % "a" + "\n  x: a\x7fb\n", 6, refused(0x7F)),
    "explicit-bool": (CM % "a" + "  x: !!bool maybe\n", 5, not_valid("!!bool")),
    "explicit-int-empty": (CM % "a" + '  x: !!int ""\n', 5, not_valid("!!int")),
    "explicit-float": (CM % "a" + "  x: !!float abc\n", 5, not_valid("!!float")),
    "explicit-timestamp": (CM % "a" + "  x: !!timestamp abc\n", 5, not_valid("!!timestamp")),
    "hex-without-digits": (CM % "a" + "  x: 0x_\n", 5, not_valid("!!int")),
    "tab-indent": ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: a\n", 4,
                   "malformed YAML: found character that cannot start any token (a tab: YAML indents with spaces only)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("read", [read_source, read_by_document], ids=["whole", "by-document"])
def test_the_error_names_the_line(name: str, read: Callable[..., Any]) -> None:
    text, line, message = CASES[name]
    parsed = read("spaces/wds/x.yaml", text.encode())
    assert [str(p) for p in parsed.problems] == [f"spaces/wds/x.yaml:{line}: {message}"]
    assert parsed.docs == ()


@pytest.mark.parametrize("text, value", [
    ("n: " + "1" * 4300, None),  # int() reads it; shape_error refuses it with its field
    ("n: !!int 12", 12), ("n: 0x1f", 31), ("n: 1_000", 1000), ("n: !!float 1.5", 1.5), ("n: !!bool true", True),
])
def test_what_reads_still_reads(text: str, value: Any) -> None:
    parsed = read_source("x.yaml", (CM % "a" + "  " + text + "\n").encode())
    if value is None:
        assert [str(p) for p in parsed.problems] == [f"x.yaml:5: data.n: {BEYOND}"]
    else:
        assert not parsed.problems and parsed.docs[0][1]["data"]["n"] == value


@pytest.mark.parametrize("name", ["int-4301-digits", "nul-in-quoted-string", "nul-in-second-document",
                                  "explicit-bool", "explicit-timestamp"])
def test_validate_names_file_and_line(name: str, tree: Tree, cli: Any) -> None:
    text, line, message = CASES[name]
    repo = tree({"spaces/inv/inv.yaml": INVENTORY, "spaces/wds/p.yaml": PLACEMENT, "spaces/wds/x.yaml": text})
    result = cli("validate", str(repo))
    assert result.code == 2, result
    assert f"spaces/wds/x.yaml:{line}: {message}\n" in result.err, result
    assert "internal error" not in result.err and "Traceback" not in result.err
