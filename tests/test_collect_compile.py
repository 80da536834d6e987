"""ksgitops.core.status.collectors, StatusCollector compilation (CEL): invalid expressions and
shapes are problems naming the field (line and column included), the allowed functions, number
text as Go's strconv.FormatFloat writes it, comprehension depth, the average of huge integers."""
from __future__ import annotations

import math
from typing import Any

import cel
import pytest

from ksgitops.core.status.celcompile import FUNCTIONS, comprehension_depth
from ksgitops.core.status.celvalues import format_number, to_value
from ksgitops.core.status.collectors import compile_collector
from ksgitops.model import Obj, Origin
from collector_rows import FLEET, ORIGIN, SELECT, aggregator, collector_obj, compiled, num, problems_of


# --- compile problems ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "path"), [
    ({"filter": "1 +", "select": SELECT}, "spec.filter"),
    ({"groupBy": [{"name": "a", "def": "inventory.name"}, {"name": "b", "def": "returned.status.("}],
      "combinedFields": [aggregator("COUNT")]}, "spec.groupBy[1].def"),
    ({"combinedFields": [aggregator("COUNT"), aggregator("SUM", subject="obj.spec.replicas +* 2")]},
     "spec.combinedFields[1].subject"),
    ({"combinedFields": [{"name": "n", "type": "COUNT", "subject": "'unterminated"}]}, "spec.combinedFields[0].subject"),
    ({"select": [{"name": "a", "def": "inventory.name"}, {"name": "b", "def": "a ? b"}]}, "spec.select[1].def"),
])
def test_invalid_cel_is_a_problem_naming_the_field(spec: dict[str, Any], path: str) -> None:
    messages = problems_of(spec)
    assert len(messages) == 1
    assert messages[0].startswith(f"StatusCollector sc: {path}: invalid CEL: 1:")
    assert "\n" not in messages[0]


def test_invalid_cel_reports_line_and_column_and_keeps_going() -> None:
    spec = {"filter": "true &&", "select": [{"name": "a", "def": "x.y..z"}, {"name": "b", "def": "inventory.name"}]}
    messages = problems_of(spec)
    assert messages == [
        ("StatusCollector sc: spec.filter: invalid CEL: 1:8: Syntax error: mismatched input '<EOF>' expecting "
         "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
        "StatusCollector sc: spec.select[0].def: invalid CEL: 1:5: Syntax error: no viable alternative at input '..'",
    ]


@pytest.mark.parametrize(("expr", "message"), [
    ("status.replicas", "undeclared reference to 'status' (expressions see inventory, obj, returned)"),
    ("propagation.lastGeneration > 0", "undeclared reference to 'propagation'"),
    ("obj.metadata.name.lowerAscii()", "unknown function 'lowerAscii' (CEL's standard library only)"),
    ("math.greatest(1, 2)", "undeclared reference to 'math'"),
    ("'a,b'.split(',').size()", "unknown function 'split'"),
])
def test_undeclared_names_and_unknown_functions_are_compile_problems(expr: str, message: str) -> None:
    [problem] = problems_of({"select": [{"name": "x", "def": expr}]})
    assert problem.startswith(f"StatusCollector sc: spec.select[0].def: {message}")


@pytest.mark.parametrize("expr", [
    "returned.status.conditions.exists(c, c.type == 'Ready')",
    "obj.spec.containers.map(ctr, ctr.image).exists_one(i, i == 'x')",
    "obj.spec.containers.all(c, has(c.image)) && obj.spec.containers.filter(c, c.name == 'a').size() == 1",
    "type(obj.spec.replicas) == int && type(null) == null_type",
    "timestamp(returned.status.t).getFullYear() > 2000 && duration('1h') > duration('1m')",
    "'app' in obj.metadata.labels && obj.metadata.labels['app'].matches('^w')",
])
def test_valid_expressions_compile(expr: str) -> None:
    compiled({"select": [{"name": "x", "def": expr}]})


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_allowed_function_exists_in_the_library(name: str) -> None:
    calls = {
        "size": "size('ab')", "contains": "'ab'.contains('a')", "startsWith": "'ab'.startsWith('a')",
        "endsWith": "'ab'.endsWith('b')", "matches": "'ab'.matches('a')", "int": "int('1')",
        "uint": "uint(1)", "double": "double(1)", "string": "string(1)", "bytes": "bytes('a')",
        "type": "type(1)", "dyn": "dyn(1)", "duration": "duration('1s')",
        "timestamp": "timestamp('2020-01-01T00:00:00Z')",
    }
    expr = calls.get(name, f"timestamp('2020-01-02T03:04:05Z').{name}()")
    program = cel.compile(expr)
    assert name in program.functions()
    program.execute({})  # raises if the library does not implement it


@pytest.mark.parametrize(("spec", "expected"), [
    ({"select": SELECT, "combinedFields": [aggregator("COUNT")]},
     "spec.combinedFields: must be empty when select is given"),
    ({"groupBy": [{"name": "a", "def": "inventory.name"}]},
     "spec.combinedFields: must not be empty when groupBy is given"),
    ({"combinedFields": [{"name": "s", "type": "SUM"}]}, "spec.combinedFields[0].subject: required for SUM"),
    ({"combinedFields": [{"name": "s", "type": "MEDIAN", "subject": "1"}]},
     "spec.combinedFields[0].type: must be one of COUNT, SUM, AVG, MIN, MAX"),
    ({"select": [{"name": "a", "def": "1"}, {"name": "a", "def": "2"}]}, "spec.select[1].name: duplicate column name 'a'"),
    ({"groupBy": [{"name": "a", "def": "1"}], "combinedFields": [aggregator("COUNT", "a")]},
     "spec.combinedFields[0].name: duplicate column name 'a'"),
    ({"combinedFields": [{"name": "x", "type": "NOPE"}, aggregator("COUNT", "b"), aggregator("COUNT", "b")]},
     ["spec.combinedFields[0].type: must be one of COUNT, SUM, AVG, MIN, MAX",
      "spec.combinedFields[2].name: duplicate column name 'b'"]),
    ({"select": [{"name": "", "def": "1"}]}, "spec.select[0].name: must be a non-empty string"),
    ({"select": [{"name": "a", "def": 3}]}, "spec.select[0].def: must be a non-empty CEL expression (a string)"),
    ({"select": [{"name": "a"}]}, "spec.select[0].def: must be a non-empty CEL expression (a string)"),
    ({"select": ["inventory.name"]}, "spec.select[0]: must be an object with name and def"),
    ({"select": {"a": "1"}}, "spec.select: must be a list"),
    ({"select": SELECT, "limit": -1}, "spec.limit: must be an integer >= 0"),
    ({"select": SELECT, "limit": True}, "spec.limit: must be an integer >= 0"),
    ({"select": SELECT, "limit": "5"}, "spec.limit: must be an integer >= 0"),
    ({"filter": 1, "select": SELECT}, "spec.filter: must be a non-empty CEL expression (a string)"),
    ("everything", "spec: must be an object"),
])
def test_shape_problems(spec: Any, expected: str | list[str]) -> None:
    expected = [expected] if isinstance(expected, str) else expected
    assert problems_of(spec) == [f"StatusCollector sc: {e}" for e in expected]


def test_problem_is_at_the_objects_origin_and_prints_file_line() -> None:
    _, problems = compile_collector(collector_obj({"select": [{"name": "a", "def": "("}]}))
    assert str(problems[0]).startswith("spaces/wds/collectors.yaml:7: StatusCollector sc: spec.select[0].def: invalid CEL")


def test_a_valid_collector_has_no_problems_and_remembers_what_it_reads() -> None:
    collector, problems = compile_collector(collector_obj({"select": [{"name": "w", "def": "inventory.name"}]}, "mine"))
    assert problems == [] and collector is not None
    assert collector.name == "mine" and collector.origin == ORIGIN and collector.limit == 20
    assert collector.variables == ("inventory",)


def test_no_spec_or_no_outputs_gives_an_empty_result() -> None:
    for spec in (None, {}, {"filter": "true"}):
        assert compiled(spec).evaluate(FLEET) == {"name": "sc", "columnNames": [], "rows": []}


# --- number text (Go's strconv.FormatFloat(x, 'g', -1, 64)) ------------------------------------------

@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (7, "7"), (-12, "-12"), (2**64 + 1, "18446744073709551617"),
    (0.0, "0"), (-0.0, "-0"), (3.0, "3"), (2.5, "2.5"), (-2.5, "-2.5"), (100000.0, "100000"),
    (123456.0, "123456"), (1000000.0, "1e+06"), (1234567.0, "1.234567e+06"), (1e21, "1e+21"),
    (0.0001, "0.0001"), (0.00012, "0.00012"), (1e-05, "1e-05"), (1.5e-07, "1.5e-07"),
    (0.1 + 0.2, "0.30000000000000004"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (5e-324, "5e-324"), (math.inf, "+Inf"), (-math.inf, "-Inf"), (math.nan, "NaN"),
])
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


def test_format_number_rejects_bools() -> None:
    with pytest.raises(TypeError):
        format_number(True)


def test_to_value_of_bools_is_bool_not_number() -> None:
    assert to_value(True) == {"type": "Bool", "bool": True}
    assert to_value(1) == num("1")


@pytest.mark.parametrize("text, depth", [
    ("size(returned.status.conditions)", 0),
    ("returned.status.conditions.exists(c, c.type == 'Ready')", 1),
    ("[1, 2].map(x, [3].map(y, x + y))", 2),
    ("[1].all(x, x > 0) && [2].exists(y, y == 2)", 1),  # side by side, not nested
    ("'.map(x, (' + \".filter(y, (\" + [1].map(z, z)", 1),  # in strings, nothing counts
])
def test_comprehension_depth(text: str, depth: int) -> None:
    assert comprehension_depth(text) == depth


def test_comprehensions_nest_at_most_three_deep() -> None:
    def nested(levels: int) -> str:
        expression = "1"
        for level in range(levels):
            expression = f"[1, 2].map(v{level}, {expression})"
        return f"size({expression})"

    def problems(text: str) -> list[str]:
        body = {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector", "metadata": {"name": "c"},
                "spec": {"select": [{"name": "n", "def": text}]}}
        return [p.message for p in compile_collector(Obj("wds", body, Origin("c.yaml", 1)))[1]]

    assert problems(nested(3)) == []
    assert problems(nested(4)) == ["StatusCollector c: spec.select[0].def: comprehensions nest 4 deep (at most 3: "
                                   "each level multiplies the work, and a deeper one could run for hours)"]


@pytest.mark.parametrize(("numbers", "expected"), [
    ([10 ** 400, 10 ** 400], math.inf),  # an exact sum no double holds: the mean was an OverflowError (exit 4)
    ([-(10 ** 400), 1], -math.inf),
    ([3, 4], 3.5),
])
def test_the_average_of_integers_beyond_a_double_is_infinite(numbers: list[int], expected: float) -> None:
    from ksgitops.core.status.celvalues import aggregate
    assert aggregate("AVG", len(numbers), numbers) == aggregate("AVG", 1, [expected])
