"""ksgitops.core.status.collectors, StatusCollector evaluation (CEL): aggregation with and without
groupBy, numeric subjects, zero WECs. Select, filter, evaluation errors and row-order independence:
tests/test_collect_rows.py; compile problems and number text: tests/test_collect_compile.py."""
from __future__ import annotations

import json

import pytest

from collector_rows import ALL_AGGREGATES, FLEET, ORIGIN, ZERO, aggregator, binding, column, compiled, num, string


# --- aggregation without groupBy ---------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "expected"), [
    ("COUNT", "5"), ("SUM", "9"), ("AVG", "1.8"), ("MIN", "0"), ("MAX", "3"),
])
def test_each_aggregate_without_group_by_is_one_row(kind: str, expected: str) -> None:
    result = compiled({"combinedFields": [aggregator(kind)]}).evaluate(FLEET)
    assert result == {"name": "sc", "columnNames": [kind.lower()], "rows": [{"columns": [num(expected)]}]}


def test_all_aggregates_together_keep_the_declared_column_order() -> None:
    fields = [aggregator("MAX", "hi"), aggregator("COUNT", "n"), aggregator("AVG", "mean")]
    result = compiled({"combinedFields": fields}).evaluate(FLEET)
    assert result["columnNames"] == ["hi", "n", "mean"]
    assert result["rows"] == [{"columns": [num("3"), num("5"), num("1.8")]}]


# --- aggregation with groupBy ------------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "east", "west"), [
    ("COUNT", "3", "2"), ("SUM", "6", "3"), ("AVG", "2", "1.5"), ("MIN", "0", "1"), ("MAX", "3", "2"),
])
def test_each_aggregate_per_group(kind: str, east: str, west: str) -> None:
    spec = {"groupBy": [{"name": "region", "def": "returned.status.region"}],
            "combinedFields": [aggregator(kind)]}
    result = compiled(spec).evaluate(FLEET)
    assert result["columnNames"] == ["region", kind.lower()]
    assert result["rows"] == [{"columns": [string("east"), num(east)]},
                              {"columns": [string("west"), num(west)]}]


def test_group_by_several_keys_makes_one_row_per_distinct_tuple_sorted() -> None:
    spec = {"groupBy": [{"name": "region", "def": "returned.status.region"},
                        {"name": "ready", "def": "returned.status.availableReplicas >= 2"}],
            "combinedFields": [aggregator("COUNT", "n"), aggregator("SUM", "sum")]}
    result = compiled(spec).evaluate(FLEET)
    assert result["columnNames"] == ["region", "ready", "n", "sum"]
    assert [row["columns"] for row in result["rows"]] == [
        [string("east"), {"type": "Bool", "bool": False}, num("1"), num("0")],
        [string("east"), {"type": "Bool", "bool": True}, num("2"), num("6")],
        [string("west"), {"type": "Bool", "bool": False}, num("1"), num("1")],
        [string("west"), {"type": "Bool", "bool": True}, num("1"), num("2")],
    ]


def test_group_keys_are_equal_when_their_values_print_equal() -> None:
    rows = [binding("w1", {"k": 1}), binding("w2", {"k": 1.0}), binding("w3", {"k": "1"}),
            binding("w4", {"k": True}), binding("w5", {})]
    spec = {"groupBy": [{"name": "k", "def": "returned.status.k"}], "combinedFields": [aggregator("COUNT", "n")]}
    result = compiled(spec).evaluate(rows)
    # Null (the missing key) < Bool < Number (1 and 1.0 together) < String
    assert [row["columns"] for row in result["rows"]] == [
        [{"type": "Null"}, num("1")],
        [{"type": "Bool", "bool": True}, num("1")],
        [num("1"), num("2")],
        [string("1"), num("1")],
    ]


def test_numbers_in_group_keys_sort_by_value_not_text() -> None:
    rows = [binding(f"w{n}", {"n": n}) for n in (10, 9, 100, -1, 2.5)]
    spec = {"groupBy": [{"name": "n", "def": "returned.status.n"}], "combinedFields": [aggregator("COUNT", "c")]}
    assert column(compiled(spec).evaluate(rows), "n") == ["-1", "2.5", "9", "10", "100"]


def test_limit_applies_to_groups_too() -> None:
    spec = {"groupBy": [{"name": "wec", "def": "inventory.name"}], "combinedFields": [aggregator("COUNT", "n")],
            "limit": 2}
    assert column(compiled(spec).evaluate(FLEET), "wec") == ["wec-a", "wec-b"]


# --- numeric subjects -----------------------------------------------------------------------------------

def test_sum_of_ints_is_exact_past_2_to_the_53() -> None:
    big = 2**53
    rows = [binding("w1", {"n": big}), binding("w2", {"n": 1}), binding("w3", {"n": 1})]
    result = compiled({"combinedFields": [aggregator("SUM", subject="returned.status.n")]}).evaluate(rows)
    assert column(result, "sum") == [str(big + 2)]  # float addition would give 9007199254740992


def test_sum_of_doubles_does_not_depend_on_row_order() -> None:
    values = [1e16, 1.0, -1e16, 1.0, 0.5]
    spec = {"combinedFields": [aggregator("SUM", subject="returned.status.n"),
                               aggregator("AVG", subject="returned.status.n")]}
    collector = compiled(spec)
    outcomes = set()
    for order in ([0, 1, 2, 3, 4], [0, 2, 1, 3, 4], [1, 3, 0, 2, 4], [4, 0, 1, 2, 3]):
        rows = [binding(f"w{i}", {"n": values[i]}) for i in order]
        outcomes.add(json.dumps(collector.evaluate(rows)))
    assert len(outcomes) == 1
    assert column(json.loads(outcomes.pop()), "sum") == ["2.5"]  # the exact sum


def test_numeric_strings_count_and_other_subjects_are_skipped_and_reported() -> None:
    rows = [binding("w1", {"n": "4"}), binding("w2", {"n": "1.5e1"}), binding("w3", {"n": 2}),
            binding("w4", {"n": None}), binding("w5", {"n": "lots"}), binding("w6", {"n": True}),
            binding("w7", {"n": [1]}), binding("w8", {})]
    spec = {"combinedFields": [aggregator(k, subject="returned.status.n") for k in ZERO]}
    result, problems = compiled(spec).evaluate_with_problems(rows)
    assert result["rows"] == [{"columns": [num("8"), num("21"), num("7"), num("2"), num("15")]}]
    messages = [p.message for p in problems]
    assert all(p.severity == "warning" and p.origin == ORIGIN for p in problems)
    # one warning per (field, reason), for each of SUM, AVG, MIN and MAX (fields 1..4)
    for i in range(1, 5):
        path = f"StatusCollector sc: spec.combinedFields[{i}].subject"
        assert f"{path}: is a string that is not a number on 1 WEC (w5)" in messages
        assert f"{path}: is a bool, not a number on 1 WEC (w6)" in messages
        assert f"{path}: is a list, not a number on 1 WEC (w7)" in messages
        assert f"{path}: no such key on 1 WEC (w8)" in messages
    assert not any("w4" in m for m in messages)  # null is skipped silently
    assert len(messages) == 16


def test_count_counts_rows_whatever_its_subject() -> None:
    spec = {"combinedFields": [{"name": "n", "type": "COUNT", "subject": "returned.status.missing"}]}
    result, problems = compiled(spec).evaluate_with_problems(FLEET)
    assert column(result, "n") == ["5"]
    assert problems == []


def test_min_and_max_ignore_nan_and_break_ties_by_text() -> None:
    rows = [binding("w1", {"n": 0.0}), binding("w2", {"n": -0.0}), binding("w3", {"n": 0})]
    spec = {"combinedFields": [aggregator("MIN", subject="returned.status.n"),
                               aggregator("MAX", subject="returned.status.n"),
                               aggregator("SUM", "nan", subject="0.0 / 0.0"),
                               aggregator("MAX", "maxnan", subject="0.0 / 0.0")]}
    collector = compiled(spec)
    for order in (rows, rows[::-1], [rows[1], rows[0], rows[2]]):
        result = collector.evaluate(order)
        assert result["rows"] == [{"columns": [num("-0"), num("0"), num("NaN"), num("-Inf")]}]


def test_infinite_subjects() -> None:
    spec = {"combinedFields": [aggregator("SUM", subject="returned.status.n / 0.0"),
                               aggregator("MAX", subject="returned.status.n / 0.0")]}
    collector = compiled(spec)
    assert collector.evaluate([binding("w1", {"n": 1.0})])["rows"][0]["columns"] == [num("+Inf"), num("+Inf")]
    both = [binding("w1", {"n": 1.0}), binding("w2", {"n": -1.0})]
    assert collector.evaluate(both)["rows"][0]["columns"] == [num("NaN"), num("+Inf")]


# --- zero WECs ---------------------------------------------------------------------------------------

def test_zero_wecs_gives_kubestellar_identities() -> None:
    result = compiled({"combinedFields": ALL_AGGREGATES}).evaluate([])
    assert result == {"name": "sc", "columnNames": ["count", "sum", "avg", "min", "max"],
                      "rows": [{"columns": [num(ZERO[k]) for k in ("COUNT", "SUM", "AVG", "MIN", "MAX")]}]}
    # the non-finite values are strings: the result is strict JSON
    json.dumps(result, allow_nan=False)


def test_everything_filtered_out_is_the_zero_wec_case() -> None:
    spec = {"filter": "false", "combinedFields": ALL_AGGREGATES}
    result = compiled(spec).evaluate(FLEET)
    assert [c["float"] for c in result["rows"][0]["columns"]] == ["0", "0", "NaN", "+Inf", "-Inf"]


def test_zero_wecs_with_group_by_has_no_rows() -> None:
    spec = {"groupBy": [{"name": "r", "def": "returned.status.region"}], "combinedFields": ALL_AGGREGATES}
    result = compiled(spec).evaluate([])
    assert result == {"name": "sc", "columnNames": ["r", "count", "sum", "avg", "min", "max"], "rows": []}


def test_a_group_without_numeric_subjects_has_the_identities() -> None:
    spec = {"groupBy": [{"name": "r", "def": "returned.status.region"}],
            "combinedFields": [aggregator(k, subject="returned.status.missing") for k in ZERO]}
    result = compiled(spec).evaluate(FLEET[:1])
    assert result["rows"] == [{"columns": [string("east"), num("1"), num("0"), num("NaN"), num("+Inf"), num("-Inf")]}]
