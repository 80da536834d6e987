"""A StatusCollector expression as a tree, read from celscan's tokens by CEL's grammar, for what
celcost.py bounds: which comprehensions, selections, calls and operators it evaluates, and how
they nest. Only expressions the CEL library compiled are read here. Nodes are tuples, the first
item their kind:

    ("lit", weight, scalar)            a literal (weight as celcost.weight counts it)
    ("id", name)                       a variable, a comprehension's or a type name
    ("sel", operand, field)            operand.field
    ("has", operand, field)            has(operand.field)
    ("idx", operand, index)            operand[index]
    ("call", name, args)               a function; a receiver call's receiver is its first argument
    ("op", name, args)                 a binary operator: * / % + - < <= > >= == != in, or && and ||
                                       with any number of operands
    ("op", "unary", (operand,), count)  count ! and - before an operand
    ("cond", test, then, else)         test ? then : else
    ("list", items), ("map", items)    literals: a map's items are its keys and values in turn
    ("comp", macro, range, variables, args)   range.macro(variables..., args...)
Pure."""
from __future__ import annotations

from typing import Any

from .celscan import MACROS, Token, tokens

Node = tuple[Any, ...]
_PRECEDENCE = {op: level for level, ops in enumerate((("||",), ("&&",), ("<", "<=", ">", ">=", "==", "!=", "in"),
                                                       ("+", "-"), ("*", "/", "%"))) for op in ops}
_SCALAR_NAMES = frozenset({"true", "false", "null"})


class Unreadable(ValueError):
    """The expression does not read as CEL's grammar says (where the library read it, a gap here)."""


def parse(text: str) -> Node:
    reader = _Reader(tokens(text))
    node = reader.expression()
    if reader.at < len(reader.toks):
        raise Unreadable(f"unexpected {reader.toks[reader.at].text!r}")
    return node


def literal_weight(text: str) -> int:
    """The weight of a literal token's value, at most: a string's value is no longer than its text."""
    return 1 + len(text) // 10


class _Reader:
    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.at = 0

    def peek(self) -> str:
        return self.toks[self.at].text if self.at < len(self.toks) and self.toks[self.at].kind == "op" else ""

    def take(self, text: str) -> None:
        if self.peek() != text:
            found = self.toks[self.at].text if self.at < len(self.toks) else "the end"
            raise Unreadable(f"expected {text!r}, found {found!r}")
        self.at += 1

    def expression(self) -> Node:
        test = self.binary()
        if self.peek() != "?":
            return test
        self.take("?")
        then = self.binary()
        self.take(":")
        return ("cond", test, then, self.expression())

    def binary(self) -> Node:
        """A chain of binary operators, by precedence, each left-associative (in a loop, so that
        long chains do not recurse)."""
        operands, ops = [self.unary()], list[str]()
        while self.peek() in _PRECEDENCE:
            op = self.toks[self.at].text
            self.at += 1
            while ops and _PRECEDENCE[ops[-1]] >= _PRECEDENCE[op]:
                _reduce(operands, ops.pop())
            ops.append(op)
            operands.append(self.unary())
        while ops:
            _reduce(operands, ops.pop())
        return operands[0]

    def unary(self) -> Node:
        count = 0
        while self.peek() in ("!", "-"):
            count += 1
            self.at += 1
        node = self.member()
        return ("op", "unary", (node,), count) if count else node

    def member(self) -> Node:
        node = self.primary()
        while True:
            if self.peek() == ".":
                self.at += 1
                name = self.name()
                if self.peek() == "(":
                    node = self.method(node, name, self.arguments("(", ")"))
                elif self.peek() == "{" and _qualified(node):
                    node = self.struct()
                else:
                    node = ("sel", node, name)
            elif self.peek() == "[":
                self.at += 1
                index = self.expression()
                self.take("]")
                node = ("idx", node, index)
            else:
                return node

    def primary(self) -> Node:
        if self.at >= len(self.toks):
            raise Unreadable("unexpected end")
        kind, text, _ = self.toks[self.at]
        if kind == "literal":
            self.at += 1
            return ("lit", literal_weight(text), "'" not in text and '"' not in text)
        if text == ".":
            self.at += 1
            return self.primary()
        if kind == "name":
            self.at += 1
            if text in _SCALAR_NAMES:
                return ("lit", 1, True)
            if self.peek() == "(":
                args = self.arguments("(", ")")
                if text == "has" and len(args) == 1 and args[0][0] == "sel":
                    return ("has", args[0][1], args[0][2])
                return ("call", text, tuple(args))
            if self.peek() == "{":
                return self.struct()
            return ("id", text)
        if text == "(":
            self.at += 1
            node = self.expression()
            self.take(")")
            return node
        if text == "[":
            return ("list", tuple(self.arguments("[", "]")))
        if text == "{":
            return ("map", tuple(self.entries()))
        raise Unreadable(f"unexpected {text!r}")

    def name(self) -> str:
        if self.at >= len(self.toks) or self.toks[self.at].kind != "name":
            raise Unreadable("expected a name")
        self.at += 1
        return self.toks[self.at - 1].text

    def arguments(self, opener: str, closer: str) -> list[Node]:
        self.take(opener)
        args: list[Node] = []
        while self.peek() != closer:
            args.append(self.expression())
            if self.peek() != closer:
                self.take(",")
        self.take(closer)
        return args

    def entries(self) -> list[Node]:
        self.take("{")
        items: list[Node] = []
        while self.peek() != "}":
            items.append(self.expression())
            self.take(":")
            items.append(self.expression())
            if self.peek() != "}":
                self.take(",")
        self.take("}")
        return items

    def struct(self) -> Node:
        """`Name{field: value, ...}`: the library refuses to build messages; their values count."""
        self.take("{")
        values: list[Node] = []
        while self.peek() != "}":
            self.name()
            self.take(":")
            values.append(self.expression())
            if self.peek() != "}":
                self.take(",")
        self.take("}")
        return ("list", tuple(values))

    @staticmethod
    def method(target: Node, name: str, args: list[Node]) -> Node:
        if name in MACROS and len(args) >= 2 and all(a[0] == "id" for a in args[:-1 if name != "map" else 1]):
            bound = 1 if name == "map" else len(args) - 1
            return ("comp", name, target, tuple(a[1] for a in args[:bound]), tuple(args[bound:]))
        return ("call", name, (target, *args))


def _reduce(operands: list[Node], op: str) -> None:
    """The last two operands joined by `op`; `&&` and `||` chains as one node (they may be long:
    cel-go balances them, so they do not count towards the nesting limit)."""
    right, left = operands.pop(), operands.pop()
    if op in ("&&", "||") and left[0] == "op" and left[1] == op:
        operands.append(("op", op, (*left[2], right)))
    else:
        operands.append(("op", op, (left, right)))


def _qualified(node: Node) -> bool:
    """Whether `node` is a dotted name (`google.protobuf.Value`), which a `{` makes a message."""
    while node[0] == "sel":
        node = node[1]
    return node[0] == "id"
