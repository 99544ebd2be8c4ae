"""Safe parsing of bound expressions written as text, without ``eval``.

``sympy.sympify`` and ``sympy.parse_expr`` evaluate Python code, so a string from a JSON report,
a command line or a config file must never reach them. ``parse_bound_expression`` is a small
recursive-descent parser that builds sympy objects directly from this grammar::

    expr    := term (("+" | "-") term)*
    term    := unary (("*" | "/") unary)*
    unary   := ("-" | "+") unary | power
    power   := atom (("^" | "**") unary)?          # right-associative: 2^3^2 = 2^9
    atom    := NUMBER | NAME | FUNC "(" expr ("," expr)* ")" | "(" expr ")"
    NUMBER  := 12 | 1.5 | .5 | 2e-3                 # converted exactly (1.5 -> 3/2)
    FUNC    := sqrt | log | ln | exp | min | max | abs   (and sympy's Min, Max, Abs)
    NAME    := an allowed symbol, or the constants pi and E (also e, unless e is a symbol)

There is no implicit multiplication (``2 H`` is an error; write ``2*H``). Anything else -- attribute
access, indexing, strings, keywords such as ``lambda``, names with a leading or double underscore,
unknown names -- raises ``BoundParseError`` (a ``ValueError``) naming the offending token and its
0-based position. Nothing is ever executed. Numeric powers are bounded so that ``10^10^10`` cannot
exhaust memory, and the input length and nesting depth are bounded.

``str(expr)`` of any registered bound parses back to the same expression.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import sympy as sp

from theorylab.errors import TheorylabError

from .vocabulary import SYMBOLS

MAX_LENGTH = 4000
MAX_DEPTH = 200
MAX_NUMBER_DIGITS = 60
MAX_NUMERIC_EXPONENT = 1000
MAX_RESULT_DIGITS = 5000


class BoundParseError(TheorylabError, ValueError):
    """A bound expression could not be parsed; names the offending token and its position."""

    def __init__(self, message: str, token: str | None = None, position: int | None = None):
        super().__init__(message)
        self.token = token
        self.position = position


_FUNCTIONS = {
    "sqrt": (sp.sqrt, 1, 1),
    "log": (sp.log, 1, 1),
    "ln": (sp.log, 1, 1),
    "exp": (sp.exp, 1, 1),
    "abs": (sp.Abs, 1, 1),
    "Abs": (sp.Abs, 1, 1),
    "min": (sp.Min, 1, None),
    "Min": (sp.Min, 1, None),
    "max": (sp.Max, 1, None),
    "Max": (sp.Max, 1, None),
}
_CONSTANTS = {"pi": sp.pi, "E": sp.E, "e": sp.E}

_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = ("**", "+", "-", "*", "/", "^", "(", ")", ",")
_VALID_SYMBOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


@dataclass(frozen=True)
class _Token:
    kind: str  # "number", "name", "op", "end"
    text: str
    position: int


def _next_token(text: str, i: int) -> _Token:
    """The token starting at or after position ``i`` (tokens are read lazily, in order)."""
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    if i >= n:
        return _Token("end", "", n)
    m = _NUMBER.match(text, i)
    if m:
        return _Token("number", m.group(), i)
    m = _NAME.match(text, i)
    if m:
        name = m.group()
        if name.startswith("_") or "__" in name:
            raise BoundParseError(
                f"names with a leading or double underscore are not allowed, got {name!r} at "
                f"position {i} in {text!r}",
                name,
                i,
            )
        return _Token("name", name, i)
    for op in _OPERATORS:
        if text.startswith(op, i):
            return _Token("op", op, i)
    raise BoundParseError(
        f"unexpected character {text[i]!r} at position {i} in {text!r}", text[i], i
    )


def _number(tok: _Token) -> sp.Expr:
    text = tok.text
    mantissa, _, exp = text.lower().partition("e")
    if len(mantissa.replace(".", "")) > MAX_NUMBER_DIGITS or (exp and abs(int(exp)) > 300):
        raise BoundParseError(
            f"number {text!r} at position {tok.position} is too long", text, tok.position
        )
    if "." not in text and "e" not in text.lower():
        return sp.Integer(int(text))
    return sp.Rational(text)  # exact: "1.5" -> 3/2, "2e-3" -> 1/500


def _digits(x: sp.Expr) -> float:
    """Roughly the number of decimal digits of a rational number's numerator/denominator."""
    p, q = sp.fraction(x)
    digits_p = len(str(abs(int(p)))) if p.is_Integer else 1
    digits_q = len(str(int(q))) if q.is_Integer else 1
    return max(digits_p, digits_q)


def _safe_pow(base: sp.Expr, exponent: sp.Expr, tok: _Token) -> sp.Expr:
    if base.is_Number and exponent.is_Number:
        if abs(exponent) > MAX_NUMERIC_EXPONENT or _digits(base) * abs(float(exponent)) > (
            MAX_RESULT_DIGITS
        ):
            raise BoundParseError(
                f"numeric power at position {tok.position} is too large ({base}^{exponent})",
                tok.text,
                tok.position,
            )
    elif exponent.is_Number and abs(exponent) > MAX_NUMERIC_EXPONENT:
        raise BoundParseError(
            f"exponent {exponent} at position {tok.position} is too large", tok.text, tok.position
        )
    return sp.Pow(base, exponent)


class _Parser:
    def __init__(self, text: str, symbols: Mapping[str, sp.Symbol]):
        self.text = text
        self.symbols = symbols
        self.depth = 0
        self.tok = _next_token(text, 0)

    # -- helpers ---------------------------------------------------------------------------
    def advance(self) -> _Token:
        tok = self.tok
        self.tok = _next_token(self.text, tok.position + len(tok.text))
        return tok

    def error(self, message: str, tok: _Token | None = None) -> BoundParseError:
        tok = tok or self.tok
        shown = repr(tok.text) if tok.kind != "end" else "end of input"
        return BoundParseError(
            f"{message}, got {shown} at position {tok.position} in {self.text!r}",
            tok.text,
            tok.position,
        )

    def accept(self, *ops: str) -> _Token | None:
        if self.tok.kind == "op" and self.tok.text in ops:
            return self.advance()
        return None

    def expect(self, op: str) -> _Token:
        tok = self.accept(op)
        if tok is None:
            raise self.error(f"expected {op!r}")
        return tok

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"expression nested deeper than {MAX_DEPTH} levels")

    # -- grammar ---------------------------------------------------------------------------
    def parse(self) -> sp.Expr:
        if self.tok.kind == "end":
            raise self.error("empty expression")
        result = self.expr()
        if self.tok.kind != "end":
            if self.tok.kind in ("name", "number", "op") and self.tok.text == "(":
                raise self.error("unexpected '(' (implicit multiplication is not allowed)")
            raise self.error("expected an operator or the end of the expression")
        return result

    def expr(self) -> sp.Expr:
        self.enter()
        result = self.term()
        while True:
            if self.accept("+"):
                result = result + self.term()
            elif self.accept("-"):
                result = result - self.term()
            else:
                break
        self.depth -= 1
        return result

    def term(self) -> sp.Expr:
        result = self.unary()
        while True:
            if self.accept("*"):
                result = result * self.unary()
            elif tok := self.accept("/"):
                divisor = self.unary()
                if divisor == 0:
                    raise BoundParseError(
                        f"division by zero at position {tok.position} in {self.text!r}",
                        tok.text,
                        tok.position,
                    )
                result = result / divisor
            else:
                break
        return result

    def unary(self) -> sp.Expr:
        self.enter()
        if self.accept("-"):
            result = -self.unary()
        elif self.accept("+"):
            result = self.unary()
        else:
            result = self.power()
        self.depth -= 1
        return result

    def power(self) -> sp.Expr:
        base = self.atom()
        tok = self.accept("^", "**")
        if tok is not None:
            return _safe_pow(base, self.unary(), tok)
        return base

    def atom(self) -> sp.Expr:
        tok = self.tok
        if tok.kind == "number":
            self.advance()
            return _number(tok)
        if tok.kind == "name":
            return self.name()
        if self.accept("("):
            result = self.expr()
            self.expect(")")
            return result
        raise self.error("expected a number, a name, a function call or '('")

    def name(self) -> sp.Expr:
        tok = self.tok
        name = tok.text
        if name not in _FUNCTIONS and name not in self.symbols and name not in _CONSTANTS:
            allowed = ", ".join(sorted(self.symbols)) or "(none)"
            raise BoundParseError(
                f"unknown name {name!r} at position {tok.position} in {self.text!r}; "
                f"allowed names: {allowed}; functions: {', '.join(sorted(_FUNCTIONS))}",
                name,
                tok.position,
            )
        self.advance()
        if name in _FUNCTIONS:
            fn, lo, hi = _FUNCTIONS[name]
            if not self.accept("("):
                raise self.error(f"function {name!r} must be called, expected '('")
            args = [self.expr()]
            while self.accept(","):
                args.append(self.expr())
            self.expect(")")
            if len(args) < lo or (hi is not None and len(args) > hi):
                want = f"{lo}" if hi == lo else f"at least {lo}"
                raise BoundParseError(
                    f"function {name!r} at position {tok.position} takes {want} argument(s), "
                    f"got {len(args)}",
                    name,
                    tok.position,
                )
            return fn(*args)
        sym = self.symbols[name] if name in self.symbols else _CONSTANTS[name]
        if self.tok.kind == "op" and self.tok.text == "(":
            raise self.error(f"{name!r} is not a function")
        return sym


def _symbol_table(allowed_symbols) -> dict[str, sp.Symbol]:
    if allowed_symbols is None:
        table = dict(SYMBOLS)
    elif isinstance(allowed_symbols, Mapping):
        table = {}
        for name, sym in allowed_symbols.items():
            if not isinstance(sym, sp.Symbol):
                raise TypeError(f"allowed_symbols[{name!r}] must be a sympy Symbol, got {sym!r}")
            table[name] = sym
    elif isinstance(allowed_symbols, Iterable) and not isinstance(allowed_symbols, str):
        table = {}
        for item in allowed_symbols:
            if isinstance(item, sp.Symbol):
                table[item.name] = item
            elif isinstance(item, str):
                table[item] = SYMBOLS.get(item) or sp.Symbol(item)
            else:
                raise TypeError(f"allowed symbol {item!r} is neither a name nor a sympy Symbol")
    else:
        raise TypeError(
            "allowed_symbols must be None (the bound vocabulary), a mapping name -> Symbol, "
            f"or an iterable of names; got {allowed_symbols!r}"
        )
    for name in table:
        if not _VALID_SYMBOL_NAME.fullmatch(name) or "__" in name:
            raise ValueError(f"allowed symbol name {name!r} is not a plain identifier")
        if name in _FUNCTIONS:
            raise ValueError(f"allowed symbol name {name!r} is the name of a function")
    return table


def parse_bound_expression(text: str, allowed_symbols=None) -> sp.Expr:
    """Parse ``text`` into a sympy expression, safely (no ``eval``).

    ``allowed_symbols`` is ``None`` (the whole bound vocabulary, see ``vocabulary.py``), a mapping
    ``name -> sympy.Symbol``, or an iterable of names (vocabulary names map to the vocabulary's
    symbols, other names to ``Symbol(name)``). Any other name is rejected. Raises
    ``BoundParseError`` (a ``ValueError``) naming the offending token and position.

    Examples:
        >>> parse_bound_expression("20*H^(3/2)*L*sqrt(S*A*K)", ["H", "L", "S", "A", "K"])
        20*H**(3/2)*L*sqrt(A*K*S)
    """
    if not isinstance(text, str):
        raise TypeError(f"expected the expression as a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise BoundParseError(
            f"expression is {len(text)} characters long; the limit is {MAX_LENGTH}", None, None
        )
    result = _Parser(text, _symbol_table(allowed_symbols)).parse()
    if result.has(sp.zoo, sp.nan, sp.oo, -sp.oo) or (
        result.is_Number and not math.isfinite(float(result))
    ):
        raise BoundParseError(f"expression {text!r} is not finite ({result})", None, None)
    return result
