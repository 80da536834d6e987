"""ksgitops.core.status.collectors, StatusCollector evaluation (CEL) row by row: select (one row per
WEC, sorted, limited, value types), filter, evaluation errors (null columns, warnings that name at
most three WECs and never quote object data, each row its own object), and results that do not
depend on the rows' order."""
from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collector_rows import DEPLOYMENT, FLEET, SELECT, ZERO, aggregator, binding, column, compiled, num, string


# --- select ------------------------------------------------------------------------------------------

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
