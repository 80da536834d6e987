"""An upper bound of what evaluating a StatusCollector expression costs over one binding's data,
computed before the CEL library runs it: Kubernetes aborts an evaluation past 1,000,000 units of
cost (its per-call limit), and the library has no limit of its own, so ksgitops refuses to evaluate
an expression whose bound passes that. The bound follows the expression's tree (celparse.py)
with the sizes of the values the binding actually holds: a comprehension costs its body's cost
once per element of the list or map it iterates over, as many as there are in the data.

The unit is one step of evaluation, or one unit of weight (below) the library copies (measured
with common-expression-language 0.10, 2026-11: at most about 0.3 µs a unit, over the evaluations
tests/test_cel_cost.py times at the limit): besides a step per node and per comprehension iteration,

- reading a field or an element copies it whole, after looking through the keys of what it is read
  from, and reading a comprehension's variable copies the element (a step reading a field of a
  10,000-entry map costs 10,000 entries there);
- `map` and `filter` copy their list so far at every step (the library builds it by `+`), so over
  n elements they cost n²/2 elements' weights: over 1,000 elements about 500,000;
- `+` of strings or lists copies both; comparisons, `in` and looking through a map's keys read
  their operands at READ a unit of weight (the library reads tens of times faster than it copies);
  string functions and conversions read theirs whole (a string weighs a tenth of a unit per
  character, as Kubernetes counts reading one); `matches` reads the string once per unit of the
  pattern's weight.

The weight of a value is 1 for a null, bool or number, 1 + length/10 for a string, and 1 plus its
elements' (a map's keys' and values') for a list or map: every element of a list is at most its
weight, and so is every value computed from a part of it. Pure.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Iterable, NamedTuple

from .celcompile import MAX_WORK as LIMIT  # Kubernetes' cost limit for one evaluation of a CEL expression
from .celparse import Node, Unreadable, parse
READ = 0.1  # a value read without being copied (compared, searched, looked through), per unit of weight
MAX_MEMBER_VISITS = 200_000  # the analysis' own bound: past it, values are known by weight only
_SCALARS = (bool, int, float, type(None))
_STRING_FUNCTIONS = frozenset({"contains", "startsWith", "endsWith"})
_CONVERSIONS = frozenset({"int", "uint", "double", "bool", "timestamp", "duration", "type", "getFullYear",
                          "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours",
                          "getMinutes", "getSeconds", "getMilliseconds"})


class Model(NamedTuple):
    """What bounding an expression's cost needs: its tree, the binding's variables it reads, and
    the weight they may all have without the bound passing LIMIT (most_weight)."""

    tree: Node
    reads: tuple[str, ...]
    most_weight: float


@functools.lru_cache(maxsize=4096)
def model(text: str, names: tuple[str, ...]) -> tuple[Model | None, str]:
    """(the model of a compiled expression whose binding has `names`, "") or (None, why it is
    refused): its cost exceeds LIMIT whatever the data."""
    try:
        tree = parse(text)
    except (Unreadable, RecursionError) as exc:
        return None, f"ksgitops cannot read it to bound its cost ({exc})"
    most = most_weight(tree)
    if most < 0:
        return None, f"its estimated cost exceeds Kubernetes' limit of {LIMIT:,}, whatever the data"
    used = variables(tree)
    return Model(tree, tuple(n for n in names if n in used), most), ""


class Weights:
    """Weights of concrete values, each computed once (by identity; the values are kept alive)."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, float]] = {}
        self.visits = 0  # members looked through (MAX_MEMBER_VISITS)

    def of(self, value: Any) -> float:
        kind = _kind(value)
        if kind is not list:
            return 1 + len(value) // 10 if kind is str else 1
        found = self.memo.get(id(value))
        if found is not None:
            return found[1]
        memo = self.memo
        stack: list[Any] = [value]  # without recursion: data may nest deep
        open_ids: set[int] = set()  # being weighed: met again below itself, a value holds itself
        while stack:
            item = stack[-1]
            if id(item) in memo:
                stack.pop()
                continue
            total, waiting = 1.0, False
            for child in (_chain(item) if isinstance(item, dict) else item):
                kind = _kind(child)
                if kind is str:
                    total += 1 + len(child) // 10
                elif kind is list:
                    weighed = memo.get(id(child))
                    if weighed is not None:
                        total += weighed[1]
                    elif id(child) in open_ids:
                        return math.inf
                    else:
                        stack.append(child)
                        waiting = True
                else:
                    total += 1
            if waiting:
                open_ids.add(id(item))
            else:
                memo[id(item)] = (item, total)
                open_ids.discard(id(item))
                stack.pop()
        return memo[id(value)][1]


def _kind(value: Any) -> type:
    """str for a string or bytes, list for a list or map, else (a scalar) object."""
    kind = type(value)
    if kind is str or kind is bytes:
        return str
    if kind is dict or kind is list or kind is tuple:
        return list
    if isinstance(value, (str, bytes)):
        return str
    return list if isinstance(value, (dict, list, tuple)) else object


def _chain(mapping: dict[Any, Any]) -> Iterable[Any]:
    yield from mapping.keys()
    yield from mapping.values()


class Val:
    """What a node may evaluate to: one of some concrete values of the binding (`members`), or,
    for a value the expression computes, only bounds: its weight `w`, how many elements it has
    (`n`), what its elements may be (`elem`) and whether it is a null, bool or number."""

    __slots__ = ("members", "_w", "n", "scalar", "elem", "weights", "_fields")

    def __init__(self, weights: Weights, members: tuple[Any, ...] | None = None, w: float = 1, n: float = 0,
                 scalar: bool = False, elem: Val | None = None) -> None:
        self.weights, self.members, self.elem = weights, members, elem
        self._fields: dict[str, Val] = {}
        if members is None:
            self._w, self.n, self.scalar = w, n, scalar
        else:
            self._w = -1
            self.n = max((len(m) for m in members if isinstance(m, (list, tuple, dict))), default=0)
            self.scalar = all(isinstance(m, _SCALARS) for m in members)

    @property
    def w(self) -> float:
        if self._w < 0:
            self._w = max((self.weights.of(m) for m in self.members or ()), default=0)
        return self._w

    def field(self, name: str) -> Val:
        """The value of `operand.name`."""
        if name not in self._fields:
            self._fields[name] = self._known(m[name] for m in self._each() if isinstance(m, dict) and name in m)
        return self._fields[name]

    def items(self) -> Val:
        """What a comprehension's variable may be: an element of a list or a key of a map."""
        if " items" not in self._fields:
            self._fields[" items"] = self._known(e for m in self._each() if isinstance(m, (list, tuple, dict))
                                                 for e in m)
        return self._fields[" items"]

    def values(self) -> Val:
        """What `operand[index]` may be: an element of a list or a value of a map."""
        if " values" not in self._fields:
            self._fields[" values"] = self._known(
                e for m in self._each() if isinstance(m, (list, tuple, dict))
                for e in (m.values() if isinstance(m, dict) else m))
        return self._fields[" values"]

    def _each(self) -> Iterable[Any]:
        for m in self.members or ():
            self.weights.visits += 1 + (len(m) if isinstance(m, (list, tuple, dict)) else 0)
            yield m

    def _known(self, parts: Iterable[Any]) -> Val:
        if self.members is None or self.weights.visits > MAX_MEMBER_VISITS:
            return self.elem if self.elem is not None else unknown(self.weights, self.w)
        unique = {id(p): p for p in parts}
        return Val(self.weights, tuple(unique.values()))


def unknown(weights: Weights, w: float) -> Val:
    """Any value of weight at most `w` (and so at most `w` elements, each of weight at most `w`)."""
    return Val(weights, w=w, n=w)


def scalar(weights: Weights) -> Val:
    return Val(weights, w=1, scalar=True)


def join(weights: Weights, vals: list[Val]) -> Val:
    """A value that may be any of `vals`."""
    if all(v.members is not None for v in vals):
        weights.visits += sum(len(v.members or ()) for v in vals)
        if weights.visits <= MAX_MEMBER_VISITS:
            return Val(weights, tuple({id(m): m for v in vals for m in v.members or ()}.values()))
    return Val(weights, w=max((v.w for v in vals), default=0), n=max((v.n for v in vals), default=0),
               scalar=all(v.scalar for v in vals))


def bound(tree: Node, binding: dict[str, Any], weights: Weights) -> float:
    """An upper bound of the cost of evaluating `tree` over `binding` (the module's units)."""
    weights.visits = 0
    return _Bound(weights, lambda name: Val(weights, (binding[name],)) if name in binding else None).cost(tree, {})[0]


def most_weight(tree: Node) -> float:
    """A weight the variables of a binding may all have for `tree` to stay within LIMIT, whatever
    their values (the bound grows with it), within a sixteenth of the largest such weight; -1 if
    not even the lightest would."""
    weights = Weights()

    def over(w: float) -> float:
        return _Bound(weights, lambda name: unknown(weights, w)).cost(tree, {})[0]

    if over(1) > LIMIT:
        return -1
    low, high = 1, 2
    while over(high) <= LIMIT:  # reading a variable of weight w costs READ * w: at most 2^24
        if high > 2 ** 30:
            return math.inf  # it reads none
        low, high = high, high * 2
    while high - low > low // 16 + 1:  # over(low) <= LIMIT < over(high)
        middle = (low + high) // 2
        low, high = (middle, high) if over(middle) <= LIMIT else (low, middle)
    return low


def variables(tree: Node) -> frozenset[str]:
    """The names an expression reads that a comprehension does not bind (a superset: enough to
    know which of a binding's values its cost depends on)."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if node[0] == "id":
            found.add(node[1])
        stack.extend(part for part in node[1:] if isinstance(part, tuple) and part and isinstance(part[0], str))
        stack.extend(item for part in node[1:] if isinstance(part, tuple) and part and isinstance(part[0], tuple)
                     for item in part)
    return frozenset(found)


class _Bound:
    def __init__(self, weights: Weights, root: Callable[[str], Val | None]) -> None:
        self.weights, self.root = weights, root

    def cost(self, node: Node, env: dict[str, Val]) -> tuple[float, Val]:
        kind = node[0]
        weights = self.weights
        if kind == "lit":
            return 1, Val(weights, w=node[1], scalar=node[2])
        if kind == "id":
            if node[1] in env:
                var = env[node[1]]
                return 1 + var.w, var
            val = self.root(node[1])
            if val is not None:
                return 1 + READ * val.n, val
            return 1, scalar(weights)  # a type name (`int`), or no such variable: an error
        if kind in ("sel", "has", "idx"):
            cost, operand = self.cost(node[1], env)
            if kind == "idx":
                index_cost, _ = self.cost(node[2], env)
                cost, part = cost + index_cost, operand.values()
            else:
                part = operand.field(node[2])
            return cost + 1 + READ * operand.n + part.w, (scalar(weights) if kind == "has" else part)
        if kind == "comp":
            return self.comprehension(node, env)
        parts = [self.cost(arg, env) for arg in self.operands(node)]
        cost = sum(c for c, _ in parts)
        vals = [v for _, v in parts]
        if kind == "cond":
            return parts[0][0] + max(parts[1][0], parts[2][0]) + 1, join(weights, vals[1:])
        if kind in ("list", "map"):
            w = 1 + sum(v.w for v in vals)
            elem = join(weights, vals) if vals else None
            return cost + w, Val(weights, w=w, n=len(vals) // (2 if kind == "map" else 1), elem=elem)
        if kind == "op":
            return self.operator(node, cost, vals)
        return self.call(node[1], cost, vals)

    @staticmethod
    def operands(node: Node) -> tuple[Node, ...]:
        kind = node[0]
        if kind == "cond":
            return node[1:4]
        if kind in ("list", "map"):
            return tuple(node[1])
        return tuple(node[2])

    def operator(self, node: Node, cost: float, vals: list[Val]) -> tuple[float, Val]:
        op, weights = node[1], self.weights
        if op == "unary":
            return cost + node[3], scalar(weights)
        if op in ("&&", "||", "*", "/", "%", "-"):
            return cost + len(vals), scalar(weights)
        a, b = vals
        if op == "+":
            if a.scalar and b.scalar:
                return cost + 1, scalar(weights)
            elem = join(weights, [a.values(), b.values()])
            return cost + 1 + a.w + b.w, Val(weights, w=a.w + b.w, n=a.n + b.n, elem=elem)
        if op == "in":
            return cost + 1 + READ * (a.w + b.w), scalar(weights)
        return cost + 1 + READ * min(a.w, b.w), scalar(weights)  # a comparison reads the smaller operand

    def call(self, name: str, cost: float, vals: list[Val]) -> tuple[float, Val]:
        weights = self.weights
        read = sum(v.w for v in vals)
        if name == "size":
            return cost + 1, scalar(weights)
        if name in _STRING_FUNCTIONS or name in _CONVERSIONS:
            return cost + 1 + read, scalar(weights)
        if name == "matches" and len(vals) == 2:
            return cost + 1 + read + vals[0].w * vals[1].w, scalar(weights)
        if name == "dyn" and len(vals) == 1:
            return cost + 1, vals[0]
        if name == "string":
            return cost + 1 + read, Val(weights, w=read + 3)
        if name == "bytes":
            return cost + 1 + read, Val(weights, w=4 * read + 1)
        return cost + 1 + read, unknown(weights, 1 + read)  # no other function compiles

    def comprehension(self, node: Node, env: dict[str, Val]) -> tuple[float, Val]:
        _, macro, range_node, variables, args = node
        range_cost, over = self.cost(range_node, env)
        n, var = over.n, over.items()
        inner = {**env, **{v: var for v in variables}}
        parts = [self.cost(arg, inner) for arg in args]
        step = 2 + var.w + sum(c for c, _ in parts)  # the step, its variable, its body
        cost = range_cost + 1 + n * step
        if macro in ("all", "exists", "exists_one"):
            return cost, scalar(self.weights)
        kept = parts[-1][1] if macro == "map" else var
        # each step copies the list so far (at most i elements) and adds one
        cost += n * (1 + kept.w) + kept.w * n * (n - 1) / 2
        return cost, Val(self.weights, w=1 + n * kept.w, n=n, elem=kept)
