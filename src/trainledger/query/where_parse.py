"""The ``--where`` grammar: comparisons joined by ``and``, ``or``, ``not`` and parentheses.

Why a tokenizer and a small recursive-descent parser: a regular expression per comparison
read ``optimizer = Adam or learning_rate < 0.01`` as one string value and matched nothing,
silently. Here every token has one reading, and a word where none fits is an error that says
what was expected.

Grammar (keywords in any case; precedence ``not`` > ``and`` > ``or``)::

    expr       := and_expr ("or" and_expr)*
    and_expr   := unary ("and" unary)*
    unary      := "not" unary | "(" expr ")" | comparison
    comparison := FIELD OP VALUE | FIELD ("in" | "notin" | "not_in" | "not in") LIST

``OP`` is one of ``= == != < <= > >=``. A ``VALUE`` is a number, ``null``, a quoted string
(``'a b'`` or ``"a b"``) or one bare word; a ``LIST`` is ``[v, v, ...]``. A ``FIELD`` is a
bare name (``metric/Accuracy``, ``max(eval/acc)``: a series statistic's parentheses belong to
it) or any name in backquotes (`` `user_defined/my key` ``, `` `max(top-1 (val))` ``): the
quoting rule for names holding spaces, parentheses, quotes or operator characters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainledger.errors import LineageSearchConditionParamError
from trainledger.query.conditions import MAX_NESTING, nesting_error
from trainledger.query.series_fields import STATS

__all__ = ["Comparison", "Node", "parse_tree", "parse_value", "parse_list"]

HINT = (
    "expected FIELD OP VALUE (OP one of = != < <= > >= in notin), joined by and, or, not "
    "and parentheses"
)
_OPS = {"=": "eq", "==": "eq", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "!=": "ne"}
_LIST_OPS = {"in": "in", "notin": "not_in", "not_in": "not_in"}
_KEYWORDS = {"and", "or", "not"}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_OPERATOR = re.compile(r"!=|<=|>=|==|=|<|>|!")
_SPECIAL = set("()[]=!<>'\"`") | {" ", "\t", "\n"}


@dataclass(frozen=True)
class Comparison:
    field: str
    op: str  # eq lt gt le ge ne in not_in
    value: Any


#: a parsed expression: a Comparison, or ("and" | "or", [nodes]), or ("not", node)
Node = Any


def error(message: str) -> LineageSearchConditionParamError:
    return LineageSearchConditionParamError(f"Search_condition param error: {message}")


def parse_value(text: str) -> Any:
    """A scalar: int, float, quoted or bare string, or None for ``null``."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if _NUMBER.match(text):
        if re.fullmatch(r"[+-]?\d+", text):
            try:
                return int(text)
            except ValueError:  # beyond Python's digit limit: compares as float64 anyway
                return float(text)
        return float(text)
    if text.lower() in ("null", "none"):
        return None
    if not text:
        raise error(f"missing value; {HINT}")
    return text


def parse_list(text: str) -> list[Any]:
    """``[a, 'b, c', 3]`` -> its values (commas inside quotes are text)."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        raise error(f"in/notin expect a list like [a, b], received: {text!r}")
    items: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text[1:-1]:
        if quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current.append(ch)
        elif ch == ",":
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quote:
        raise error(f"unterminated quote in list {text}")
    items.append("".join(current))
    if len(items) == 1 and not items[0].strip():
        return []
    return [parse_value(item) for item in items]


def _closing(text: str, start: int, opening: str, closing: str, quotes: str) -> int:
    """The index after the ``closing`` that balances the ``opening`` at ``start``."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in quotes:
            quote = ch
        elif ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise error(f"unbalanced {opening!r} in {text!r}; {HINT}")


def tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ( ) op list string name word."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            tokens.append((ch, ch))
            i += 1
        elif ch == "[":
            end = _closing(text, i, "[", "]", "'\"")
            tokens.append(("list", text[i:end]))
            i = end
        elif ch in "'\"`":
            end = text.find(ch, i + 1)
            if end < 0:
                raise error(f"unterminated quote {ch} in {text!r}")
            tokens.append(("name" if ch == "`" else "string", text[i : end + 1]))
            i = end + 1
        elif ch in "=!<>":
            match = _OPERATOR.match(text, i)
            assert match is not None  # (every one of these characters starts an operator)
            tokens.append(("op", match.group(0)))
            i = match.end()
        else:
            j = i
            while j < len(text) and text[j] not in _SPECIAL:
                j += 1
            if j == i:  # a character no token starts with (a stray "]")
                raise error(f"unexpected {ch!r} in {text!r}; {HINT}")
            if text[i:j] in STATS and j < len(text) and text[j] == "(":
                j = _closing(text, j, "(", ")", "")  # a series statistic: max(eval/acc)
            tokens.append(("word", text[i:j]))
            i = j
    return tokens


def check_depth(tokens: list[tuple[str, str]]) -> None:
    """Refuse tokens nesting deeper than ``MAX_NESTING`` (parentheses and ``not`` together),
    before the parser recurses: 10,000 parentheses were a ``RecursionError``.

    A ``not`` opens a level that lasts as long as its operand: to the ``)`` of the
    parenthesis it precedes, or to the end of the comparison it precedes.
    """
    open_nots: list[int] = []  # per open parenthesis: the nots that stand before it
    depth = pending = 0  # levels open; nots waiting for their operand
    for at, (kind, text) in enumerate(tokens):
        if kind == "word" and text.lower() == "not":
            following = tokens[at + 1] if at + 1 < len(tokens) else None
            if following is None or following[1].lower() != "in":  # (not "a not in [..]")
                pending += 1
        elif kind == "(":
            open_nots.append(pending)
            depth += pending + 1
            pending = 0
        elif kind == ")" and open_nots:
            depth -= open_nots.pop() + 1
        elif kind in ("op", "list"):  # a comparison: the nots before it end with it
            pending = 0
        if depth + pending > MAX_NESTING:
            raise nesting_error(depth + pending)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.pos = 0

    def peek(self, ahead: int = 0) -> tuple[str, str] | None:
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else None

    def keyword(self, *words: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "word" and token[1].lower() in words

    def fail(self, expected: str) -> LineageSearchConditionParamError:
        token = self.peek()
        got = "the end" if token is None else repr(token[1])
        return error(f"cannot parse {self.text!r}: expected {expected}, received {got}; {HINT}")

    def expr(self) -> Node:
        return self._joined("or", self.and_expr)

    def and_expr(self) -> Node:
        return self._joined("and", self.unary)

    def _joined(self, word: str, operand: Callable[[], Node]) -> Node:
        """``operand (word operand)*``: one operand as it is, several as (word, [...])."""
        items = [operand()]
        while self.keyword(word):
            self.pos += 1
            items.append(operand())
        return items[0] if len(items) == 1 else (word, items)

    def unary(self) -> Node:
        if self.keyword("not"):
            self.pos += 1
            return ("not", self.unary())
        token = self.peek()
        if token is not None and token[0] == "(":
            self.pos += 1
            inner = self.expr()
            if self.peek() is None or self.peek()[0] != ")":  # type: ignore[index]
                raise self.fail("')'")
            self.pos += 1
            return inner
        return self.comparison()

    def comparison(self) -> Comparison:
        token = self.peek()
        if token is None or token[0] not in ("word", "name") or self.keyword(*_KEYWORDS):
            raise self.fail("a field name")
        field = token[1][1:-1] if token[0] == "name" else token[1]
        self.pos += 1
        if self.keyword("not") and (nxt := self.peek(1)) and nxt[1].lower() == "in":
            self.pos += 2
            return Comparison(field, "not_in", self._list())
        if self.keyword(*_LIST_OPS):
            op = _LIST_OPS[self.peek()[1].lower()]  # type: ignore[index]
            self.pos += 1
            return Comparison(field, op, self._list())
        op_token = self.peek()
        if op_token is None or op_token[0] != "op" or op_token[1] not in _OPS:
            raise self.fail(f"an operator after {field!r}")
        self.pos += 1
        following = self.peek()
        if following is not None and following[0] == "op":  # "lr >> 0.1", "lr =< 3"
            raise error(f"unknown operator {op_token[1] + following[1]!r} in {self.text!r}; {HINT}")
        return Comparison(field, _OPS[op_token[1]], self._value())

    def _value(self) -> Any:
        token = self.peek()
        if token is None or token[0] not in ("word", "string") or self.keyword(*_KEYWORDS):
            raise self.fail("a value (quote a value that is a keyword: 'or')")
        self.pos += 1
        value = parse_value(token[1])
        after = self.peek()
        if after is not None and after[0] != ")" and not self.keyword("and", "or"):
            raise error(
                f"cannot parse {self.text!r}: after the value {token[1]!r}, expected and, or, "
                f"')' or the end, received {after[1]!r} (quote a value holding spaces: "
                f"'{token[1]} {after[1]}')"
            )
        return value

    def _list(self) -> list[Any]:
        token = self.peek()
        if token is None or token[0] != "list":
            raise self.fail("a list like [a, b]")
        self.pos += 1
        return parse_list(token[1])


def parse_tree(text: str) -> Node:
    """One ``--where`` text as a tree of Comparison, ("and"|"or", [...]) and ("not", x)."""
    if not isinstance(text, str):
        raise error(f"a --where expression must be a str, received: {text!r}")
    parser = _Parser(text)
    if not parser.tokens:
        raise error(f"empty expression; {HINT}")
    check_depth(parser.tokens)
    tree = parser.expr()
    if parser.peek() is not None:
        raise parser.fail("and, or or the end")
    return tree
