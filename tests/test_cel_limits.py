"""StatusCollector expressions past the CEL library's limits are refused as not compiling, with the
field named, instead of crashing or hanging ksgitops: the library (common-expression-language 0.10)
panics on a syntax error past column 65,535, overflows its stack on long chains of operators and
takes minutes over many characters it cannot read; cel-go's parser refuses all of these earlier,
and its limits are the ones kept where the library allows. Comprehensions over large list literals
are refused before they run for hours. Ordinary expressions are untouched."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, run_cli_subprocess
from ksgitops.core.status import celscan
from ksgitops.core.status.celcompile import (MAX_BAD_CHARACTERS, MAX_DEPTH, MAX_SIZE, compile_expression,
                                             most_literal_elements)
from ksgitops.core.status.collectors import compile_collector
from ksgitops.model import Obj, Origin


def numbers(count: int) -> str:
    return "[" + ", ".join(str(i) for i in range(count)) + "]"


COLUMN_PAST_65535 = "1" + " " * 69_997 + "+)"  # the library panicked: traceback, exit 1
PLUS_CHAIN = "+".join(["1"] * 29_000)  # its stack overflowed (from about 21,800 terms): segmentation fault
NESTED_MAPS = f"size({numbers(200)}.map(x, {numbers(200)}.map(y, {numbers(200)}.map(z, x + y + z))))"  # hours
CRASHES = [
    (COLUMN_PAST_65535, "invalid CEL: 70,000 characters (at most 60,000)"),
    (PLUS_CHAIN, "invalid CEL: brackets, chained operators and selections nest 28,999 deep (at most 250)"),
    (NESTED_MAPS, "list and map literals hold 600 elements, with comprehensions nesting 3 deep (at most 31: the "
                  "work can grow as the number of elements to the power 4)"),
]
# Compiles one StatusCollector and evaluates it on one WEC, as `ksgitops status` does: in a child
# process, so that a crash or a hang fails one test instead of the run.
CHILD = """
import json, sys
from ksgitops.core.status.collectors import compile_collector
from ksgitops.model import Obj, Origin
body = {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "c"},
        "spec": {"select": [{"name": "n", "def": sys.stdin.read()}]}}
collector, problems = compile_collector(Obj("wds", body, Origin("c.yaml", 3)))
if collector is not None:
    problems += collector.evaluate_with_problems([{"inventory": {"name": "w"}, "obj": {}, "returned": {}}])[1]
print(json.dumps([str(p) for p in problems]))
"""


def child_problems(expression: str) -> list[str]:
    try:
        result = subprocess.run([sys.executable, "-c", CHILD], input=expression, capture_output=True, text=True,
                                cwd=ROOT, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("compiling and evaluating the expression took more than 60 s")
    assert result.returncode == 0 and not result.stderr, (result.returncode, result.stderr[-2000:])
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def problem(text: str) -> str:
    """compile_expression's reason for refusing `text`, or "" when it compiles."""
    return compile_expression(text)[1]


# --- what crashed or hung ---------------------------------------------------------------------------

@pytest.mark.parametrize(("expression", "message"), CRASHES, ids=["column", "chain", "comprehensions"])
def test_expressions_past_the_librarys_limits_are_compile_problems(expression: str, message: str) -> None:
    assert child_problems(expression) == [f"c.yaml:3: StatusCollector c: spec.select[0].def: {message}"]


@pytest.mark.parametrize("expression", [COLUMN_PAST_65535, PLUS_CHAIN], ids=["column", "chain"])
def test_status_warns_about_them_like_any_invalid_cel(expression: str, example: Path) -> None:
    (example / "spaces/wmw-c/collectors.yaml").write_text(
        "apiVersion: control.kubestellar.io/v1alpha1\nkind: StatusCollector\nmetadata: {name: big}\n"
        f"spec:\n  select:\n  - name: n\n    def: {json.dumps(expression)}\n")
    placement = example / "spaces/wmw-c/edge-placement-c.yaml"
    placement.write_text(placement.read_text().replace(
        "  wantSingletonReportedState: true", "  wantSingletonReportedState: true\n  statusCollectors: [big]"))
    result = run_cli_subprocess("status", str(example), cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]  # a StatusCollector that does not compile is a warning
    assert "Traceback" not in result.stderr
    [line] = [ln for ln in result.stderr.splitlines() if "StatusCollector big" in ln]
    assert line.startswith("spaces/wmw-c/collectors.yaml:1: warning: StatusCollector big: spec.select[0].def: "
                           "invalid CEL: "), line


# --- the limits, at their edges ---------------------------------------------------------------------

def test_size_limit() -> None:
    assert MAX_SIZE == 60_000
    string = "'" + "a" * (MAX_SIZE - 2) + "'"
    assert problem(string) == ""
    assert problem(string + " ") == "invalid CEL: 60,001 characters (at most 60,000)"


@pytest.mark.parametrize(("link", "counted"), [
    ("+1", 1), ("- 2 * 3", 1), (" * 2", 1), (" < 1", 1), (".a", 1), ("[0]", 1), ("['k'].a", 2), (".f(1)[0]", 2),
])
def test_nesting_limit(link: str, counted: int) -> None:
    assert MAX_DEPTH == 250
    links = MAX_DEPTH // counted
    assert celscan.nesting_depth(celscan.tokens("obj" + link * links)) == MAX_DEPTH
    assert not problem("obj" + link * links).startswith("invalid CEL: brackets")
    assert problem("obj" + link * (links + 1)).startswith(
        f"invalid CEL: brackets, chained operators and selections nest {MAX_DEPTH + counted} deep (at most 250)")


def test_brackets_count_from_the_operators_after_them() -> None:
    """`(..((1 + 1 + 1) + 1 + 1)..)`: the innermost 1 is under every + of every level, as cel-go counts."""
    text = "(" * 60 + "1" + ("+1" * 2 + ")") * 60
    assert celscan.nesting_depth(celscan.tokens(text)) == 120
    text = "(" * 90 + "1" + ("+1" * 3 + ")") * 90
    assert problem(text) == "invalid CEL: brackets, chained operators and selections nest 270 deep (at most 250)"


@pytest.mark.parametrize(("text", "depth"), [
    ("obj", 1),
    ("obj.a.b", 2),
    ("a + b * c - d", 2),  # a is under both additive operators; b under * and -
    ("a * b * c + d", 3),
    ("a < b + c", 1),
    ("a && b && c && d || e", 1),  # balanced, as cel-go builds them
    ("!!!!-a", 1),
    ("c ? a.b : d", 1),
    ("f(g(h(x)))", 4),  # an expression inside three brackets
    ("[[[x]]]", 4),
    ("(x).a.b + 1", 3),
    ("a[i].b", 2),
    ("'.a.b.c + ((((' + x", 1),  # nothing in a string counts
    ("x // .a.b + ((((\n+ 1", 1),  # nor in a comment
    ("r'\\' + x.a.b", 2),  # a raw string has no escapes
])
def test_nesting_depth(text: str, depth: int) -> None:
    assert celscan.nesting_depth(celscan.tokens(text)) == depth


def test_unreadable_characters() -> None:
    assert MAX_BAD_CHARACTERS == 100
    assert problem("1 " + "#" * 100) == "invalid CEL: 1:3: Syntax error: token recognition error at: '#'"
    assert problem("1\n +" + "é" * 101) == ("invalid CEL: 2:3: Syntax error: 101 characters no CEL token starts "
                                            "with, the first 'é' (at most 100)")
    assert problem("'" + "#" * 200 + "' + x").startswith("undeclared reference to 'x'")  # in a string, no matter
    assert problem("'open\n" + "@" * 101).startswith("invalid CEL: 2:1: Syntax error: 101 characters")


@pytest.mark.parametrize(("depth", "most"), [(1, 1000), (2, 100), (3, 31)])
def test_literal_elements_with_comprehensions(depth: int, most: int) -> None:
    assert most_literal_elements(depth) == most

    def nested(elements: int) -> str:
        expression, left = "true", elements
        for level in range(depth):
            size = left if level == depth - 1 else elements // depth
            expression = f"{numbers(size)}.all(v{level}, {expression})"
            left -= size
        return expression

    assert problem(nested(most)) == ""
    assert problem(nested(most + 1)).startswith(f"list and map literals hold {most + 1:,} elements, with "
                                                f"comprehensions nesting {depth} deep (at most {most:,}")


def test_literals_count_with_comprehensions_only() -> None:
    assert problem(f"obj.spec.replicas in {numbers(5000)}") == ""
    assert problem(f"obj.spec.replicas in {numbers(5000)} && obj.spec.c.exists(c, c == 1)").startswith(
        "list and map literals hold 5,000 elements")
    assert problem("{" + ", ".join(f"'k{i}': {i}" for i in range(1001)) + "}.exists(k, k == 'k1')").startswith(
        "list and map literals hold 1,001 elements")


def test_the_librarys_own_nesting_limit_reads_plainly() -> None:
    assert problem("(" * 100 + "1" + ")" * 100) == "invalid CEL: 1:97: Syntax error: Recursion limit of 96 exceeded"


# --- what KubeStellar users write still compiles ----------------------------------------------------

KUBESTELLAR_STYLE = [
    "obj.status.availableReplicas",
    "returned.status.availableReplicas",
    "size(returned)",
    "inventory.name",
    "has(returned.status.readyReplicas) ? returned.status.readyReplicas : 0",
    'obj.metadata.name == "nginx" && obj.metadata.namespace == "default" && inventory.name.startsWith("edge")',
    "returned.status.conditions.exists(c, c.type == 'Available' && c.status == 'True')",
    "returned.status.conditions.filter(c, c.status != 'True').map(c, c.type)",
    "obj.spec.replicas == returned.status.availableReplicas ? 'ready' : 'progressing'",
    "obj.metadata.labels['app.kubernetes.io/name'] in ['web', 'api', 'db']",
    "obj.spec.template.spec.containers.all(c, c.ports.exists(p, p.containerPort in [80, 443]))",
    "// ready replicas (or none)\nhas(returned.status.readyReplicas)\n  ? returned.status.readyReplicas\n  : 0",
    "double(returned.status.availableReplicas) / double(obj.spec.replicas) * 100.0 >= 50.0",
    "timestamp(returned.status.conditions[0].lastTransitionTime) > timestamp('2024-01-01T00:00:00Z')",
]


@pytest.mark.parametrize("expression", KUBESTELLAR_STYLE)
def test_ordinary_expressions_compile(expression: str) -> None:
    assert problem(expression) == ""
    assert celscan.nesting_depth(celscan.tokens(expression)) < 10


def test_long_ordinary_expressions_compile() -> None:
    names = " && ".join(f"obj.metadata.name != 'app-{i}'" for i in range(400))  # 12,000 characters
    assert problem(names) == ""
    total = " + ".join(f"returned.status.counts.c{i}" for i in range(240))  # 240 chained +
    assert problem(total) == ""


def spec(expression: Any) -> dict[str, Any]:
    return {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector",
            "metadata": {"name": "c"}, "spec": {"select": [{"name": "n", "def": expression}]}}


def test_a_refused_expression_is_a_problem_at_the_collectors_line() -> None:
    collector, problems = compile_collector(Obj("wds", spec("x" * 60_001), Origin("spaces/wds/c.yaml", 7)))
    assert collector is None
    assert [str(p) for p in problems] == [
        "spaces/wds/c.yaml:7: StatusCollector c: spec.select[0].def: invalid CEL: 60,001 characters (at most 60,000)"]


@pytest.mark.parametrize("placed", [True, False], ids=["placed", "unplaced"])
def test_validate_compiles_every_status_collector(placed: bool, example: Path, cli: Any) -> None:
    """validate says what status would say of a StatusCollector, before any report comes back."""
    (example / "spaces/wmw-c/collectors.yaml").write_text(
        "apiVersion: control.kubestellar.io/v1alpha1\nkind: StatusCollector\nmetadata: {name: typo}\n"
        "spec:\n  select:\n  - name: n\n    def: 'obj.status.replicas +'\n")
    if placed:
        placement = example / "spaces/wmw-c/edge-placement-c.yaml"
        placement.write_text(placement.read_text().replace(
            "  wantSingletonReportedState: true", "  wantSingletonReportedState: true\n  statusCollectors: [typo]"))
    result = cli("validate", str(example))
    assert result.code == 0, result
    [line] = [ln for ln in result.err.splitlines() if "StatusCollector typo" in ln]
    assert line.startswith("spaces/wmw-c/collectors.yaml:1: warning: StatusCollector typo: spec.select[0].def: "
                           "invalid CEL: "), line
    assert cli("validate", str(example), "--strict").code == 2


class PanicException(BaseException):
    """What the CEL library (through pyo3) raises when its Rust code panics: no Exception."""


class _Panicking:
    def compile(self, text: str) -> Any:
        raise PanicException("index out of bounds")

    def Context(self, variables: Any) -> Any:  # noqa: N802 - the library's name
        raise PanicException("index out of bounds")


def test_a_library_panic_is_a_problem_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any panic the limits above do not foresee: compiling says so, evaluating is a failure as data."""
    from ksgitops.core.status import celcompile, celeval
    monkeypatch.setattr(celcompile, "cel_library", _Panicking)
    monkeypatch.setattr(celeval, "cel_library", _Panicking)
    compile_expression.cache_clear()
    try:
        assert compile_expression("obj.status.replicas + 1") == (None, "invalid CEL: the CEL library failed on it (a panic)")
    finally:
        compile_expression.cache_clear()
    assert celeval.RowContexts(("obj",)).context({"obj": {}}) is None

    class Program:
        def execute(self, ctx: Any) -> Any:
            raise PanicException("overflow")
    expr = celcompile_expr(Program())
    assert celeval.run_expression(expr, None) == (False, "evaluation error (the CEL library panicked)")
    with pytest.raises(KeyboardInterrupt):  # other BaseExceptions still stop the run
        class Stopped:
            def execute(self, ctx: Any) -> Any:
                raise KeyboardInterrupt
        celeval.run_expression(celcompile_expr(Stopped()), None)


def celcompile_expr(program: Any) -> Any:
    from ksgitops.core.status.celeval import Expr
    return Expr(path="spec.select[0].def", source="x", program=program)
