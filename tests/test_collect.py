"""Tests for ksgitops.core.status.collectors: StatusCollector compilation and evaluation (CEL)."""
from __future__ import annotations

import copy
import json
import math
import random
from typing import Any

import cel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.status.celcompile import FUNCTIONS, comprehension_depth
from ksgitops.core.status.celvalues import format_number, to_value
from ksgitops.core.status.collectors import compile_collector
from ksgitops.model import Obj, Origin

ORIGIN = Origin("spaces/wds/collectors.yaml", 7)
ZERO = {"COUNT": "0", "SUM": "0", "AVG": "NaN", "MIN": "+Inf", "MAX": "-Inf"}


def collector_obj(spec: Any, name: str = "sc") -> Obj:
    body = {"apiVersion": "control.kubestellar.io/v1alpha1", "kind": "StatusCollector",
            "metadata": {"name": name}, "spec": spec}
    return Obj("wds", body, ORIGIN)


def compiled(spec: dict[str, Any], name: str = "sc"):
    collector, problems = compile_collector(collector_obj(spec, name))
    assert problems == [], [str(p) for p in problems]
    assert collector is not None
    return collector


def problems_of(spec: Any) -> list[str]:
    collector, problems = compile_collector(collector_obj(spec))
    assert collector is None
    assert problems and all(p.origin == ORIGIN and p.is_error for p in problems)
    return [p.message for p in problems]


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
              "spec": {"replicas": 3}}


def binding(wec: str, status: dict[str, Any] | None = None, obj: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"inventory": {"name": wec}, "obj": DEPLOYMENT if obj is None else obj,
            "returned": {"status": {} if status is None else status}}


def num(text: str) -> dict[str, str]:
    return {"type": "Number", "float": text}


def string(text: str) -> dict[str, str]:
    return {"type": "String", "string": text}


def column(result: dict[str, Any], name: str) -> list[Any]:
    """The values of one column, row by row, as plain text/JSON for short assertions."""
    i = result["columnNames"].index(name)
    out = []
    for row in result["rows"]:
        value = row["columns"][i]
        out.append(value.get("float", value.get("string", value.get("bool", value.get(
            "array", value.get("object", value["type"]))))))
    return out


# Five WECs: availableReplicas 3, 1, 0, 2, 3; region east/west.
FLEET = [
    binding("wec-a", {"availableReplicas": 3, "region": "east"}),
    binding("wec-b", {"availableReplicas": 1, "region": "west"}),
    binding("wec-c", {"availableReplicas": 0, "region": "east"}),
    binding("wec-d", {"availableReplicas": 2, "region": "west"}),
    binding("wec-e", {"availableReplicas": 3, "region": "east"}),
]


def aggregator(kind: str, name: str | None = None, subject: str = "returned.status.availableReplicas"):
    field: dict[str, Any] = {"name": name or kind.lower(), "type": kind}
    if kind != "COUNT":
        field["subject"] = subject
    return field


ALL_AGGREGATES = [aggregator(k) for k in ("COUNT", "SUM", "AVG", "MIN", "MAX")]


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


# --- select ------------------------------------------------------------------------------------------

SELECT = [{"name": "wec", "def": "inventory.name"},
          {"name": "available", "def": "returned.status.availableReplicas"}]


def test_select_gives_one_row_per_wec_sorted_by_wec_name() -> None:
    shuffled = [FLEET[i] for i in (3, 0, 4, 2, 1)]
    result = compiled({"select": SELECT}).evaluate(shuffled)
    assert result["columnNames"] == ["wec", "available"]
    assert column(result, "wec") == ["wec-a", "wec-b", "wec-c", "wec-d", "wec-e"]
    assert column(result, "available") == ["3", "1", "0", "2", "3"]


def test_select_sorts_by_wec_even_when_the_name_is_not_a_column() -> None:
    spec = {"select": [{"name": "available", "def": "returned.status.availableReplicas"}]}
    result = compiled(spec).evaluate(FLEET[::-1])
    assert column(result, "available") == ["3", "1", "0", "2", "3"]


@pytest.mark.parametrize(("limit", "expected"), [
    (None, [f"wec-{i:02d}" for i in range(20)]),
    (3, ["wec-00", "wec-01", "wec-02"]),
    (0, []),
    (100, [f"wec-{i:02d}" for i in range(25)]),
])
def test_select_limit(limit: int | None, expected: list[str]) -> None:
    rows = [binding(f"wec-{i:02d}") for i in reversed(range(25))]
    spec: dict[str, Any] = {"select": SELECT[:1]}
    if limit is not None:
        spec["limit"] = limit
    assert column(compiled(spec).evaluate(rows), "wec") == expected


def test_select_limit_applies_after_the_filter() -> None:
    spec = {"filter": "returned.status.availableReplicas >= 2", "select": SELECT[:1], "limit": 2}
    assert column(compiled(spec).evaluate(FLEET), "wec") == ["wec-a", "wec-d"]


def test_select_value_types() -> None:
    spec = {"select": [
        {"name": "s", "def": "obj.metadata.name + '@' + inventory.name"},
        {"name": "i", "def": "obj.spec.replicas * 2"},
        {"name": "d", "def": "double(obj.spec.replicas) / 2.0"},
        {"name": "b", "def": "inventory.name.startsWith('wec-')"},
        {"name": "n", "def": "null"},
        {"name": "o", "def": "{'b': 1, 'a': [1.5, null]}"},
        {"name": "l", "def": "[obj.metadata.labels.app, 1.0 / 0.0]"},
        {"name": "t", "def": "timestamp('2024-05-01T10:00:00Z')"},
        {"name": "u", "def": "duration('90s')"},
        {"name": "y", "def": "b'hi'"},
    ]}
    result = compiled(spec).evaluate([binding("wec-1")])
    assert result["rows"] == [{"columns": [
        string("web@wec-1"), num("6"), num("1.5"), {"type": "Bool", "bool": True}, {"type": "Null"},
        {"type": "Object", "object": {"a": [1.5, None], "b": 1}}, {"type": "Array", "array": ["web", "+Inf"]},
        string("2024-05-01T10:00:00Z"), string("90s"), string("aGk="),
    ]}]
    assert list(result["rows"][0]["columns"][5]["object"]) == ["a", "b"]  # sorted keys
    json.dumps(result, allow_nan=False)


def test_object_values_have_sorted_keys_whatever_the_input_order() -> None:
    spec = {"select": [{"name": "labels", "def": "obj.metadata.labels"}]}
    labels = {f"k{i:02d}": str(i) for i in range(30)}
    reordered = dict(sorted(labels.items(), reverse=True))
    a = compiled(spec).evaluate([binding("w", obj={"metadata": {"labels": labels}})])
    b = compiled(spec).evaluate([binding("w", obj={"metadata": {"labels": reordered}})])
    assert json.dumps(a) == json.dumps(b)
    assert list(a["rows"][0]["columns"][0]["object"]) == sorted(labels)


# --- filter ----------------------------------------------------------------------------------------

def test_filter_keeps_rows_where_it_is_true() -> None:
    spec = {"filter": "returned.status.region == 'west'", "combinedFields": [aggregator("COUNT", "n")]}
    assert column(compiled(spec).evaluate(FLEET), "n") == ["2"]


def test_filter_on_inventory_name() -> None:
    rows = [binding("wec-1"), binding("edge-1"), binding("wec-2")]
    spec = {"filter": 'inventory.name.startsWith("wec-")', "select": SELECT[:1]}
    assert column(compiled(spec).evaluate(rows), "wec") == ["wec-1", "wec-2"]


def test_filter_null_or_false_drop_silently_errors_and_non_bools_drop_with_a_warning() -> None:
    rows = [binding("keep", {"f": True}), binding("false", {"f": False}), binding("null", {"f": None}),
            binding("missing", {}), binding("number", {"f": 1}), binding("text", {"f": "true"})]
    spec = {"filter": "returned.status.f", "select": SELECT[:1]}
    result, problems = compiled(spec).evaluate_with_problems(rows)
    assert column(result, "wec") == ["keep"]
    assert [p.message for p in problems] == [
        "StatusCollector sc: spec.filter: evaluated to int, not a bool on 1 WEC (number)",
        "StatusCollector sc: spec.filter: evaluated to string, not a bool on 1 WEC (text)",
        "StatusCollector sc: spec.filter: no such key on 1 WEC (missing)",
    ]


def test_has_makes_a_missing_field_a_clean_false() -> None:
    rows = [binding("w1", {"conditions": [{"type": "Available", "status": "True"}]}), binding("w2", {})]
    spec = {"filter": "has(returned.status.conditions) && returned.status.conditions.exists("
                      "c, c.type == 'Available' && c.status == 'True')",
            "select": SELECT[:1]}
    result, problems = compiled(spec).evaluate_with_problems(rows)
    assert column(result, "wec") == ["w1"]
    assert problems == []


# --- evaluation errors -------------------------------------------------------------------------------

def test_select_errors_are_null_columns_and_one_warning_per_field_and_reason() -> None:
    rows = [binding(f"w{i}", {"n": i} if i % 2 else {}) for i in range(1, 8)]
    spec = {"select": [{"name": "n", "def": "returned.status.n"}, {"name": "q", "def": "10 / (returned.status.n - 3)"}]}
    result, problems = compiled(spec).evaluate_with_problems(rows)
    assert column(result, "n") == ["1", "Null", "3", "Null", "5", "Null", "7"]
    assert column(result, "q") == ["-5", "Null", "Null", "Null", "5", "Null", "2"]
    assert [p.message for p in problems] == [
        "StatusCollector sc: spec.select[0].def: no such key on 3 WECs (w2, w4, w6)",
        "StatusCollector sc: spec.select[1].def: division by zero on 1 WEC (w3)",
        "StatusCollector sc: spec.select[1].def: no such key on 3 WECs (w2, w4, w6)",
    ]
    assert all(p.severity == "warning" for p in problems)


def test_warnings_name_at_most_three_wecs() -> None:
    rows = [binding(f"w{i}") for i in range(5, 0, -1)]
    _, problems = compiled({"select": [{"name": "x", "def": "returned.status.x"}]}).evaluate_with_problems(rows)
    assert [p.message for p in problems] == [
        "StatusCollector sc: spec.select[0].def: no such key on 5 WECs (w1, w2, w3, ...)"]


def test_group_by_errors_group_under_null() -> None:
    spec = {"groupBy": [{"name": "r", "def": "returned.status.zone"}], "combinedFields": [aggregator("COUNT", "n")]}
    rows = [binding("w1", {"zone": "z1"}), binding("w2", {}), binding("w3", {})]
    result, problems = compiled(spec).evaluate_with_problems(rows)
    assert [row["columns"] for row in result["rows"]] == [[{"type": "Null"}, num("2")], [string("z1"), num("1")]]
    assert [p.message for p in problems] == ["StatusCollector sc: spec.groupBy[0].def: no such key on 2 WECs (w2, w3)"]


def test_error_messages_never_quote_object_data() -> None:
    secret = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"password": "hunter2-s3cret"}}
    spec = {"select": [{"name": "a", "def": "int(obj.data.password)"},
                       {"name": "b", "def": "obj.data[obj.data.password]"},
                       {"name": "c", "def": "obj.data.password + 1"}]}
    result, problems = compiled(spec).evaluate_with_problems([binding("w", obj=secret)])
    assert column(result, "a") == ["Null"] and column(result, "b") == ["Null"] and column(result, "c") == ["Null"]
    assert len(problems) == 3
    assert not any("hunter2" in str(p) for p in problems)


def test_unconvertible_bindings_are_skipped_and_reported() -> None:
    rows = [binding("good"), {"inventory": {"name": "bad"}, "obj": DEPLOYMENT, "returned": {"status": {"x": object()}}},
            "not a binding", binding("good2")]
    spec = {"select": [SELECT[0], {"name": "r", "def": "has(returned.status)"}]}
    result, problems = compiled(spec).evaluate_with_problems(rows)  # type: ignore[arg-type]
    assert column(result, "wec") == ["good", "good2"]
    assert [p.message for p in problems] == [
        "StatusCollector sc: binding: cannot be converted to CEL values on 2 WECs ((no name), bad)"]


def test_a_binding_without_a_variable_does_not_see_the_previous_rows_value() -> None:
    rows = [binding("w1", {"n": 1}), {"inventory": {"name": "w2"}, "obj": DEPLOYMENT}, binding("w3", {"n": 3})]
    result, problems = compiled({"select": [{"name": "n", "def": "returned.status.n"}]}).evaluate_with_problems(rows)
    assert column(result, "n") == ["1", "Null", "3"]
    assert [p.message for p in problems] == [
        "StatusCollector sc: spec.select[0].def: undeclared reference to 'returned' on 1 WEC (w2)"]


def test_each_row_sees_its_own_object_when_objects_alternate() -> None:
    a = {"metadata": {"name": "a"}}
    b = {"metadata": {"name": "b"}}
    rows = [binding("w1", obj=a), binding("w2", obj=a), binding("w3", obj=b), binding("w4", obj=a),
            binding("w5", obj=copy.deepcopy(a)), binding("w6", obj=b)]
    spec = {"select": [{"name": "o", "def": "obj.metadata.name + inventory.name"}]}
    assert column(compiled(spec).evaluate(rows), "o") == ["aw1", "aw2", "bw3", "aw4", "aw5", "bw6"]


def test_an_object_mutated_between_evaluations_is_read_afresh() -> None:
    obj = {"metadata": {"name": "before"}}
    collector = compiled({"select": [{"name": "o", "def": "obj.metadata.name"}]})
    assert column(collector.evaluate([binding("w", obj=obj)]), "o") == ["before"]
    obj["metadata"]["name"] = "after"
    assert column(collector.evaluate([binding("w", obj=obj)]), "o") == ["after"]


# --- row-order independence ----------------------------------------------------------------------------

def _mixed_rows() -> list[dict[str, Any]]:
    rng = random.Random(7)
    shared = {"metadata": {"name": "web"}, "spec": {"replicas": 4}}
    rows = []
    for i in range(40):
        status: dict[str, Any] = {"region": rng.choice(["east", "west", "north"])}
        if rng.random() < 0.8:
            status["available"] = rng.choice([0, 1, 2.5, 4, "3", None, "x", 1e-3])
        obj = shared if rng.random() < 0.7 else {"metadata": {"name": f"web-{i}"}, "spec": {"replicas": i}}
        rows.append(binding(f"wec-{rng.randint(0, 30):02d}", status, obj))
    return rows


ORDER_SPECS = [
    {"filter": "obj.spec.replicas > 1",
     "groupBy": [{"name": "region", "def": "returned.status.region"}],
     "combinedFields": [aggregator(k, subject="returned.status.available") for k in ZERO]},
    {"combinedFields": [aggregator(k, subject="returned.status.available") for k in ZERO]},
    {"select": [{"name": "w", "def": "inventory.name"}, {"name": "a", "def": "returned.status.available"},
                {"name": "o", "def": "obj.metadata.name"}], "limit": 7},
]


@pytest.mark.parametrize("spec", ORDER_SPECS, ids=["groupBy", "combined", "select"])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_same_rows_in_any_order_give_the_same_result(spec: dict[str, Any], seed: int) -> None:
    rows = _mixed_rows()
    collector = compiled(spec)
    expected, expected_problems = collector.evaluate_with_problems(rows)
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    result, problems = collector.evaluate_with_problems(shuffled)
    assert json.dumps(result) == json.dumps(expected)
    assert problems == expected_problems


def test_order_independence_is_not_vacuous() -> None:
    results = [compiled(spec).evaluate(_mixed_rows()) for spec in ORDER_SPECS]
    assert len(results[0]["rows"]) == 3 and len(results[2]["rows"]) == 7
    assert results[1]["rows"][0]["columns"][0]["float"] == "40"


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
