"""What the tests of StatusCollectors (tests/test_collect*.py, ksgitops.core.status.collectors)
share: a collector object compiled (or its problems), WEC bindings of a Deployment, a five-WEC
fleet, aggregator clauses, and a result's columns."""
from __future__ import annotations

from typing import Any

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


SELECT = [{"name": "wec", "def": "inventory.name"},
          {"name": "available", "def": "returned.status.availableReplicas"}]
