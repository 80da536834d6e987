"""Hostile values that must be input errors, never crashes, end to end through the command line:
deep nesting (YAML flow and block, explicit keys, JSON), integers kustomize would round, NaN and
infinity, annotations or labels that are no map, YAML values JSON has not (binary, Python tags,
complex or non-string keys); `reconcile` exits 2 with `file:line: message` and the space
contributes nothing. And a number of thousands of digits is no status number.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bad_input_checks import CM, Files, assert_clean, assert_contributes_nothing, assert_problem, example_files, ks


def _json_nested(depth: int) -> str:
    return ('{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep", "namespace": "commonstuff"}, '
            '"extra": ' + '{"a": ' * depth + '"x"' + "}" * depth + "}\n")


NESTING: list[tuple[str, str]] = [  # (file name, content)
    ("flow-50000.yaml", "a: " + "[" * 50_000 + "]" * 50_000 + "\n"),
    ("flow-5000.yaml", "a: " + "[" * 5_000 + "]" * 5_000 + "\n"),
    ("flow-150.yaml", "a: " + "{b: " * 150 + "c" + "}" * 150 + "\n"),
    ("block-150.yaml", "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 150)) + " " * 150 + "c\n"),
    ("dashes-30000.yaml", "a:\n" + "- " * 30_000 + "x\n"),
    ("keys-40000.yaml", "? " * 40_000 + "a\n"),
    ("dash-keys-20000.yaml", "- ? " * 20_000 + "a\n"),
    ("json-150.json", _json_nested(150)),
    ("json-300.json", _json_nested(300)),
]


@pytest.mark.parametrize("name, content", [pytest.param(name, content, id=name) for name, content in NESTING])
def test_deep_nesting_is_an_input_error_not_a_crash(name: str, content: str, tree: Callable[[Files], Path]) -> None:
    """Hostile nesting: exit 2 with `file:line: ...nesting...`, never a crash (SIGSEGV) or internal error."""
    rel = f"spaces/wmw-c/{name}"
    repo = tree({**example_files(), rel: content})
    result = ks("reconcile", repo)
    assert result.returncode == 2, (result.returncode, result.stderr[-300:])
    assert_clean(result.stderr)
    assert_problem(result.stderr, rel, None, "nest|deep")
    assert_contributes_nothing(repo)


@pytest.mark.parametrize("number", ["123456789012345678901234567890", str(2**63 - 1), str(2**53 + 1)])
def test_integer_that_kustomize_would_round_is_an_input_error(number: str, tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/big.yaml":
                 CM + f"metadata: {{name: bigint, namespace: commonstuff}}\nspec: {{n: {number}}}\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/big.yaml", 4, "spec.n: integer|2\\^53")


def test_integer_at_the_exact_limit_is_accepted(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/big.yaml":
                 CM + f"metadata: {{name: bigint, namespace: commonstuff}}\nspec: {{n: {2**53}}}\n"})
    assert ks("reconcile", repo).returncode == 0


def test_annotations_that_are_not_a_map_are_an_input_error(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/ann.yaml":
                 CM + "metadata:\n  name: ann\n  namespace: commonstuff\n  annotations: [a, b]\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/ann.yaml", 6, r"metadata\.annotations")  # the field's line


def test_labels_that_are_not_a_map_are_an_input_error(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/lab.yaml":
                 CM + "metadata:\n  name: lab\n  namespace: commonstuff\n  labels: [a, b]\n"})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    assert_problem(result.stderr, "spaces/wmw-c/lab.yaml", 6, r"metadata\.labels")


def test_nan_and_infinity_are_input_errors(tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/nan.yaml":
                 CM + "metadata: {name: nan, namespace: commonstuff}\nspec: {n: .nan, m: .inf}\n"})
    result = ks("reconcile", repo)
    assert_clean(result.stderr)
    assert result.returncode == 2, result
    assert_problem(result.stderr, "spaces/wmw-c/nan.yaml", 4, "spec.n: NaN")  # the field, at its line


@pytest.mark.parametrize("content, line, pattern", [
    (CM + "metadata: {name: b, namespace: commonstuff}\ndata:\n  a: !!binary aGVsbG8=\n", 5, "data.a: .*not JSON"),
    ("a: !!python/object/apply:os.system ['true']\n", 1, "malformed YAML"),
    ("? [a]\n: b\n", 1, "malformed YAML"),
    (CM + "metadata: {name: k, namespace: commonstuff}\ndata:\n  1: one\n", 5, "data: map key 1 is not a string"),
    (CM + "metadata: {name: 7, namespace: commonstuff}\n", 1, r"metadata\.name"),
])
def test_non_json_yaml_values_are_input_errors(content: str, line: int, pattern: str,
                                               tree: Callable[[Files], Path]) -> None:
    repo = tree({**example_files(), "spaces/wmw-c/odd.yaml": content})
    result = ks("reconcile", repo)
    assert result.returncode == 2, result
    assert_clean(result.stderr)
    assert_problem(result.stderr, "spaces/wmw-c/odd.yaml", line, pattern)
    assert_contributes_nothing(repo)


def test_a_number_of_thousands_of_digits_is_no_status_number() -> None:
    """int() refuses more than 4,300 digits: a StatusCollector subject (or a report) that long gave exit 4."""
    from ksgitops.core.status.celvalues import as_number
    assert as_number("9" * 5000) == (None, "is a string of more than 400 characters, not a number")
    assert as_number(" 12 ") == (12, "")
