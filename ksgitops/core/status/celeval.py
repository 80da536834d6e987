"""Evaluating compiled StatusCollector expressions row by row: one CEL context per row, reused
while the rows hold the same object; failures as data (a reason that never quotes object data),
collected per (field, reason) with the WECs they happened on."""
from __future__ import annotations

import re
from typing import Any

from msgspec import Struct

from ...model import Origin, Problem, counted
from .celcompile import VARIABLES, cel_library, is_panic
from .celcost import LIMIT, Model, Weights, bound

SAMPLE_WECS = 3
TOO_COSTLY = f"not evaluated: its estimated cost over this object's data exceeds Kubernetes' limit of {LIMIT:,}"
UNSENT = "not evaluated: the object sent to the WEC does not read (its base copy or patch in the mailbox)"
_UNDEFINED = re.compile(r"Undefined variable or function: '([A-Za-z_][\w.]*)'")
_FUNCTION_ERROR = re.compile(r"Function '([A-Za-z_]\w*)' error")


class Expr(Struct, frozen=True, eq=False):
    """One compiled CEL expression and the field it came from (`spec.select[0].def`)."""

    path: str
    source: str
    program: Any  # cel.Program
    model: Model | None = None  # what bounds its cost over a binding's data (celcost.py)


class RowContexts:
    """The CEL context of the current row: one context, updated row by row, where `obj` is
    converted again only when the row holds a different object (one workload object's bindings
    share it, and converting it is most of the cost). Valid until the next call."""

    def __init__(self, variables: tuple[str, ...]) -> None:
        self.variables = variables
        self.ctx: Any = None
        self.obj: Any = None

    def context(self, row: Any) -> Any:
        """A context holding the row's variables, or None if the library cannot convert them."""
        if not isinstance(row, dict):
            return None
        try:
            if any(v not in row for v in self.variables):  # a one-off, never reused
                return cel_library().Context(variables={v: row[v] for v in self.variables if v in row})
            if self.ctx is None:
                self.ctx = cel_library().Context(variables={v: row[v] for v in self.variables})
            else:
                for v in self.variables:
                    if v != "obj" or row["obj"] is not self.obj:
                        self.ctx.add_variable(v, row[v])
            self.obj = row.get("obj")
            return self.ctx
        except BaseException as exc:  # noqa: BLE001 - a value the library cannot convert (or panics on)
            if not isinstance(exc, Exception) and not is_panic(exc):
                raise
            self.ctx = None
            return None


class Evaluation:
    """One evaluation of a collector over the rows of one workload object: the errors, and which
    expressions cost too much over which row's data (celcost.py), each found once per expression
    and the values it reads (one object's rows share its `obj`)."""

    def __init__(self) -> None:
        self.errors = EvaluationErrors()
        self.weights = Weights()
        self.too_costly: dict[tuple[int, ...], bool] = {}

    def run(self, expr: Expr, ctx: Any, row: Any, wec: str) -> tuple[bool, Any]:
        """(True, value), or (False, None) with the error noted."""
        if row.get("obj", {}) is None and "obj" in (expr.model.reads if expr.model is not None else VARIABLES):
            self.errors.add(expr.path, UNSENT, wec)
            return False, None
        if expr.model is not None and self._too_costly(expr, row):
            self.errors.add(expr.path, TOO_COSTLY, wec)
            return False, None
        ok, value = run_expression(expr, ctx)
        if not ok:
            self.errors.add(expr.path, value, wec)
            return False, None
        return True, value

    def _too_costly(self, expr: Expr, row: dict[str, Any]) -> bool:
        model = expr.model
        assert model is not None
        values = [row[name] for name in model.reads if name in row]
        key = (id(expr), *(id(v) for v in values))  # the values live as long as this evaluation
        if key not in self.too_costly:
            heaviest = max((self.weights.of(v) for v in values), default=0)
            self.too_costly[key] = heaviest > model.most_weight and bound(model.tree, row, self.weights) > LIMIT
        return self.too_costly[key]


def run_expression(expr: Expr, ctx: Any) -> tuple[bool, Any]:
    """(True, value) or (False, reason): the reason never quotes object data."""
    try:
        return True, expr.program.execute(ctx)
    except BaseException as exc:  # noqa: BLE001 - every evaluation failure is data, not a crash
        if not isinstance(exc, Exception) and not is_panic(exc):
            raise
        return False, failure_reason(exc)


def failure_reason(exc: BaseException) -> str:
    if is_panic(exc):
        return "evaluation error (the CEL library panicked)"
    text = str(exc)
    if isinstance(exc, KeyError):
        return "no such key"
    if isinstance(exc, IndexError):
        return "index out of range"
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, OverflowError):
        return "arithmetic overflow"
    if isinstance(exc, TypeError):
        return "no matching overload for the operand types"
    match = _UNDEFINED.search(text)
    if match:
        return f"undeclared reference to {match.group(1)!r}"
    match = _FUNCTION_ERROR.search(text)
    if match:
        return f"function {match.group(1)!r} failed"
    return f"evaluation error ({type(exc).__name__})"


class EvaluationErrors:
    """Evaluation errors, collected per (field, reason) with the WECs they happened on."""

    def __init__(self) -> None:
        self.wecs: dict[tuple[str, str], set[str]] = {}

    def add(self, path: str, reason: str, wec: str) -> None:
        self.wecs.setdefault((path, reason), set()).add(wec)

    def problems(self, origin: Origin, label: str) -> list[Problem]:
        out = []
        for (path, reason), wecs in sorted(self.wecs.items()):
            names = sorted(wecs)
            sample = ", ".join(n or "(no name)" for n in names[:SAMPLE_WECS]) + (", ..." if len(names) > SAMPLE_WECS else "")
            where = f"on {counted(len(names), 'WEC')} ({sample})"
            out.append(Problem(origin, f"{label}: {path}: {reason} {where}", severity="warning"))
        return out


def wec_name(row: Any) -> str:
    inventory = row.get("inventory") if isinstance(row, dict) else None
    name = inventory.get("name") if isinstance(inventory, dict) else None
    return name if isinstance(name, str) else ""
