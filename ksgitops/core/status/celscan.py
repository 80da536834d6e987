"""A StatusCollector expression read token by token, as CEL's lexer reads it (string literals and
comments skipped), for what ksgitops checks before and after the CEL library parses it: characters
no CEL token starts with, how deep cel-go's parser would recurse, how deep comprehensions nest and
how many elements list and map literals hold. Pure."""
from __future__ import annotations

import re
from typing import NamedTuple

MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})  # CEL's comprehension macros
# CEL's lexical grammar. A string left open ends with its line (a triple-quoted one with the text),
# where CEL's lexer gives up on it; "bad" is a character no token starts with.
_TOKEN = re.compile("|".join((
    r"(?P<skip>[ \t\n\r\f]+|//[^\n]*)",
    r"(?P<raw>(?:[rR][bB]?|[bB][rR])(?:'''[\s\S]*?(?:'''|\Z)|\"\"\"[\s\S]*?(?:\"\"\"|\Z)|'[^'\n]*'?|\"[^\"\n]*\"?))",
    r"(?P<string>[bB]?(?:'''(?:\\[\s\S]|[^\\])*?(?:'''|\Z)|\"\"\"(?:\\[\s\S]|[^\\])*?(?:\"\"\"|\Z)"
    r"|'(?:\\.|[^\\'\n])*'?|\"(?:\\.|[^\\\"\n])*\"?))",
    r"(?P<number>0[xX][0-9a-fA-F]+[uU]?|(?:[0-9]+\.[0-9]+|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
    r"|[0-9]+[uU]?)",
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*|`[^`\n]*`)",
    r"(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])",
    r"(?P<bad>[\s\S])",
)))
_OPENERS, _CLOSERS = frozenset("([{"), frozenset(")]}")
_RELATIONS = frozenset({"<", "<=", ">=", ">", "==", "!=", "in"})
_SEPARATORS = frozenset({"&&", "||", "?", ":", ","})
# Operators the scan of nesting_depth counts, per bracket level: relations, additive, multiplicative
# (since the last additive one), selections and indexes.
_RELATION, _ADDITIVE, _MULTIPLICATIVE, _MEMBER = range(4)


class Token(NamedTuple):
    kind: str  # "name", "literal", "op", or "bad": a character no CEL token starts with
    text: str
    pos: int


def tokens(text: str) -> list[Token]:
    out = []
    for match in _TOKEN.finditer(text):
        kind, value = match.lastgroup or "bad", match.group()
        if kind == "skip":
            continue
        if kind in ("raw", "string", "number"):
            kind = "literal"
        elif kind == "name" and value == "in":
            kind = "op"
        out.append(Token(kind, value, match.start()))
    return out


def nesting_depth(toks: list[Token]) -> int:
    """How deep cel-go's parser recurses on the expression, at least: the larger of its nesting of
    expressions (one per bracket around a token, plus the whole) and of operator nodes above a
    token. A chain of left-associative operators (`a + b + c`, `a < b`) or of selections and
    indexes (`a.b[0].c`) is a tree that leans left, so a token is under every operator of its
    chain that follows it, and under those of the brackets around it. The scan runs backwards,
    counting for each bracket level the operators after the current token."""
    index_closers = _index_closers(toks)
    levels = [[0, 0, 0, 0]]
    total = deepest = 0

    def reset(*counters: int) -> None:
        nonlocal total
        for counter in counters:
            total -= levels[-1][counter]
            levels[-1][counter] = 0

    def count(counter: int) -> None:
        nonlocal total
        levels[-1][counter] += 1
        total += 1

    for i in range(len(toks) - 1, -1, -1):
        kind, text, _ = toks[i]
        if kind in ("name", "literal"):
            deepest = max(deepest, total, len(levels))
        elif kind != "op":
            continue
        elif text in _CLOSERS:
            if i in index_closers:
                count(_MEMBER)
            levels.append([0, 0, 0, 0])
        elif text in _OPENERS:
            if len(levels) > 1:
                total -= sum(levels.pop())
        elif text in _SEPARATORS:
            reset(_RELATION, _ADDITIVE, _MULTIPLICATIVE, _MEMBER)
        elif text in _RELATIONS:
            reset(_ADDITIVE, _MULTIPLICATIVE, _MEMBER)
            count(_RELATION)
        elif not _ends_operand(toks, i - 1):  # unary - and !, or a leading dot
            reset(_MEMBER)
        elif text in ("+", "-"):
            reset(_MULTIPLICATIVE, _MEMBER)
            count(_ADDITIVE)
        elif text in ("*", "/", "%"):
            reset(_MEMBER)
            count(_MULTIPLICATIVE)
        elif text == ".":
            count(_MEMBER)
    return deepest


def comprehension_depth(toks: list[Token]) -> int:
    """How deep comprehension macros (`.all(`, `.exists(`, ...) nest: the parentheses of other calls
    do not count."""
    deepest, stack = 0, []
    for i, (kind, text, _) in enumerate(toks):
        if kind != "op":
            continue
        if text in _OPENERS:
            stack.append(text == "(" and i >= 2 and toks[i - 1].kind == "name" and toks[i - 1].text in MACROS
                         and toks[i - 2].text == ".")
            deepest = max(deepest, sum(stack))
        elif text in _CLOSERS and stack:
            stack.pop()
    return deepest


def literal_elements(toks: list[Token]) -> int:
    """How many elements the list and map literals of the expression hold, all together (those of
    a nested literal count as well)."""
    elements, literal = 0, []  # per open bracket: whether it is a list or map literal
    for i, (kind, text, _) in enumerate(toks):
        if kind != "op":
            continue
        if text in _OPENERS:
            literal.append(text == "{" or (text == "[" and not _ends_operand(toks, i - 1)))
            if literal[-1] and i + 1 < len(toks) and toks[i + 1].text not in _CLOSERS:
                elements += 1
        elif text in _CLOSERS and literal:
            literal.pop()
        elif text == "," and literal and literal[-1]:
            elements += 1
    return elements


def _index_closers(toks: list[Token]) -> set[int]:
    """The positions of the `]` that close an index (`a[0]`), not a list literal."""
    closers, open_brackets = set(), []
    for i, (kind, text, _) in enumerate(toks):
        if kind != "op":
            continue
        if text in _OPENERS:
            open_brackets.append(text == "[" and _ends_operand(toks, i - 1))
        elif text in _CLOSERS and open_brackets and open_brackets.pop() and text == "]":
            closers.add(i)
    return closers


def _ends_operand(toks: list[Token], i: int) -> bool:
    """Whether the token at `i` ends an operand, so that what follows is a binary operator, a
    selection or an index (and a `-` a subtraction)."""
    return i >= 0 and (toks[i].kind in ("name", "literal") or toks[i].text in _CLOSERS)
