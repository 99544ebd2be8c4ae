"""``Bound``: a theorem's bound as a symbolic object.

A ``Bound`` keeps a paper's bound in three forms, all sympy expressions in the names of
``vocabulary.py``:

* ``printed`` -- as the paper prints it, constants included, with the paper's abbreviations
  (``L``, ``iota``, ...) and, where the paper states it in ``T``, with ``T``;
* ``expr`` -- the full expression that is evaluated: every abbreviation substituted by its
  definition and ``T = K*H`` substituted where the bound is episodic and stated in steps. Its
  free symbols are ``variables``;
* ``order`` -- the rate the paper's abstract states (O-tilde / Omega-tilde): constants, log factors
  and lower-order (burn-in) terms dropped, with the same substitutions (``order_printed`` keeps
  ``T``).

Exponents (``Bound.exponent``) follow ``exponent.py``: the limit of d log f / d log x in the
variable's natural limit, logs counting 0, other variables fixed. Note that with ``T = K*H``
substituted, an exponent in ``H`` is at fixed ``K``; ``form="order_printed"`` gives it at fixed
``T``.

Every bound carries its provenance tag from docs/reference ``theory.md`` (V: checked against the
full primary text; A: from an abstract or landing page; S: secondary source; M: from memory, to be
checked against the paper before a test hard-codes it) and says which version of the paper's bound
it implements (``version``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp

from theorylab.errors import TheorylabError

from .exponent import ExponentError, leading_terms
from .exponent import exponent as _exponent
from .parse import parse_bound_expression
from .vocabulary import LATEX_NAMES, VOCABULARY, sort_names, symbol

KINDS = ("upper", "lower")
QUANTITIES = ("regret", "suboptimality", "sample_complexity")
PROVENANCE = {
    "V": "checked against a text read in full (paper, formalised statement, monograph, code)",
    "A": "from an abstract or landing page; constants, logs and assumptions not checked",
    "S": "secondary: a third-party restatement",
    "M": "from memory; check against the paper before a test hard-codes it",
}
FORMS = ("order", "full", "printed", "order_printed")


class BoundEvaluationError(TheorylabError, ValueError):
    """A bound could not be evaluated with the values given (missing, unknown or out-of-domain)."""


@dataclass(frozen=True)
class Source:
    """Where a bound is stated: paper, arXiv id, theorem and page."""

    authors: str
    title: str
    venue: str
    year: int
    arxiv: str | None = None
    theorem: str | None = None
    page: str | None = None
    url: str | None = None

    def cite(self) -> str:
        """``'Azar, Osband, Munos (ICML 2017, arXiv:1703.05449), Theorem 1, p. 5'``."""
        where = f"{self.venue} {self.year}" if self.venue else str(self.year)
        if self.arxiv:
            where += f", arXiv:{self.arxiv}"
        text = f"{self.authors} ({where})"
        if self.theorem:
            text += f", {self.theorem}"
        if self.page:
            text += f", {self.page}"
        return text

    def short(self) -> str:
        first = self.authors.split(",")[0].strip()
        lead = first if "," not in self.authors else f"{first} et al."
        text = f"{lead} {self.year}"
        return f"{text}, {self.theorem}" if self.theorem else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "authors": self.authors,
            "title": self.title,
            "venue": self.venue,
            "year": self.year,
            "arxiv": self.arxiv,
            "theorem": self.theorem,
            "page": self.page,
            "url": self.url,
        }


def _substitute(expr: sp.Expr, definitions) -> sp.Expr:
    """Apply ``definitions`` (abbreviation -> expression) until none is left."""
    mapping = dict(definitions)
    for _ in range(len(mapping) + 1):
        new = expr.xreplace(mapping)
        if new == expr:
            return new
        expr = new
    raise ValueError(f"the definitions {mapping} are circular")


def _as_expr(value: Any, label: str) -> sp.Expr:
    """A sympy expression from an expression, a number, or text (parsed safely, never eval'd)."""
    if isinstance(value, str):
        return parse_bound_expression(value)
    if isinstance(value, sp.Basic):
        return _canonical(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return sp.nsimplify(value)
    raise TypeError(f"{label} must be a sympy expression or text, got {type(value).__name__}")


def _canonical(expr: sp.Expr) -> sp.Expr:
    """``expr`` with each free symbol replaced by the vocabulary's symbol of the same name.

    (A caller may build an expression with ``Symbol("S", positive=True)``; the bound must use
    the vocabulary's own symbols so that evaluation and exponents find them.)
    """
    mapping = {s: symbol(s.name) for s in expr.free_symbols if s.name in VOCABULARY}
    return expr.xreplace(mapping)


def _latex(expr: sp.Expr) -> str:
    return sp.latex(expr, symbol_names=LATEX_NAMES, ln_notation=True)


@dataclass(frozen=True, eq=False)
class Bound:
    """A bound from a theorem, with its constants as printed.

    Build one with ``Bound.from_text`` (expressions as text, parsed safely) or directly with sympy
    expressions in the vocabulary's symbols. See the module docstring for the three forms.
    """

    name: str
    printed: sp.Expr
    order_printed: sp.Expr
    kind: str
    quantity: str
    probability: str
    setting: str
    source: Source
    provenance: str
    version: str
    definitions: tuple[tuple[sp.Symbol, sp.Expr], ...] = ()
    notes: tuple[str, ...] = ()
    regime: str = ""
    expr: sp.Expr = field(init=False, repr=False)
    order: sp.Expr = field(init=False, repr=False)

    # -- construction ----------------------------------------------------------------------
    def __post_init__(self) -> None:
        def bad(msg: str) -> ValueError:
            return ValueError(f"bound {self.name!r}: {msg}")

        if not self.name or self.name != self.name.strip().lower() or " " in self.name:
            raise bad("the name must be non-empty, lower case and without spaces")
        if self.kind not in KINDS:
            raise bad(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.quantity not in QUANTITIES:
            raise bad(f"quantity must be one of {QUANTITIES}, got {self.quantity!r}")
        if self.provenance not in PROVENANCE:
            raise bad(f"provenance must be one of {tuple(PROVENANCE)}, got {self.provenance!r}")
        for attr in ("probability", "setting", "version"):
            if not getattr(self, attr).strip():
                raise bad(f"{attr} is empty")
        if not isinstance(self.source, Source) or not self.source.authors:
            raise bad("source must be a Source with authors")
        if isinstance(self.notes, str):
            object.__setattr__(self, "notes", (self.notes,))
        pairs = (
            self.definitions.items() if isinstance(self.definitions, Mapping) else self.definitions
        )
        defs = tuple(
            (symbol(s.name if isinstance(s, sp.Symbol) else s), _as_expr(e, f"definition of {s}"))
            for s, e in pairs
        )
        object.__setattr__(self, "definitions", defs)
        for label in ("printed", "order_printed"):
            object.__setattr__(self, label, _as_expr(getattr(self, label), label))
        for s, _ in defs:
            if VOCABULARY[s.name].role == "constant":
                raise bad(f"{s.name} is an unspecified constant and cannot be defined")
        for label in ("printed", "order_printed"):
            e = getattr(self, label)
            unknown = {s.name for s in e.free_symbols} - set(VOCABULARY)
            if unknown:
                raise bad(f"{label} uses names outside the vocabulary: {sorted(unknown)}")
        expr = _substitute(self.printed, defs)
        order = _substitute(self.order_printed, defs)
        for label, e in (("the full expression", expr), ("the order", order)):
            undefined = [
                s.name for s in e.free_symbols if VOCABULARY[s.name].role == "abbreviation"
            ]
            if undefined:
                raise bad(f"{label} uses {sorted(undefined)} without a definition")
        constants = [s.name for s in order.free_symbols if VOCABULARY[s.name].role == "constant"]
        if constants:
            raise bad(f"the order must drop constants, found {constants}")
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "_fns", {})

    @classmethod
    def from_text(
        cls,
        *,
        printed: str,
        order: str,
        definitions: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> Bound:
        """Build a bound from text expressions, parsed with ``parse_bound_expression``.

        ``definitions`` maps abbreviations to their text, e.g. ``{"L": "log(5*H*S*A*T/delta)",
        "T": "K*H"}``; ``order`` is the rate in the printed variables (e.g. ``"H*sqrt(S*A*T)"``).
        """
        defs = tuple((symbol(k), parse_bound_expression(v)) for k, v in (definitions or {}).items())
        return cls(
            printed=parse_bound_expression(printed),
            order_printed=parse_bound_expression(order),
            definitions=defs,
            **fields,
        )

    # -- names ------------------------------------------------------------------------------
    @property
    def variables(self) -> tuple[str, ...]:
        """Names ``evaluate`` needs (free symbols of the full expression), vocabulary order."""
        return sort_names(s.name for s in self.expr.free_symbols)

    @property
    def printed_variables(self) -> tuple[str, ...]:
        return sort_names(s.name for s in self.printed.free_symbols)

    @property
    def constants(self) -> tuple[str, ...]:
        """Unspecified absolute constants the bound uses (``c``, ``C``, ``c_prime``)."""
        return tuple(n for n in self.variables if VOCABULARY[n].role == "constant")

    @property
    def substituted(self) -> tuple[str, ...]:
        """Names the paper uses that were substituted by their definitions (``L``, ``T``)."""
        return sort_names(s.name for s, _ in self.definitions)

    @property
    def rate_variable(self) -> str | None:
        """The variable the rate is stated in: K or T (regret), N or K (offline), eps.

        A bound that does not depend on it (MaxWP's regret is constant in K; a data-dependent
        offline bound whose K enters only through its data term) is stated in the quantity's
        usual variable, in which its exponent is 0."""
        for name in ("eps", "K", "N", "T"):
            if name in self.variables:
                return name
        return {"regret": "K", "suboptimality": "K", "sample_complexity": "eps"}.get(self.quantity)

    # -- evaluation --------------------------------------------------------------------------
    def _form(self, form: str) -> sp.Expr:
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        return {
            "order": self.order,
            "full": self.expr,
            "printed": self.printed,
            "order_printed": self.order_printed,
        }[form]

    def _function(self, form: str):
        fns = self.__dict__["_fns"]
        if form not in fns:
            e = self._form(form)
            names = sort_names(s.name for s in e.free_symbols)
            fns[form] = (names, sp.lambdify([symbol(n) for n in names], e, modules="numpy"))
        return fns[form]

    def _evaluate(self, form: str, values: Mapping[str, Any]):
        names, fn = self._function(form)
        unknown = sorted(k for k in values if k not in VOCABULARY)
        if unknown:
            raise BoundEvaluationError(
                f"bound {self.name!r}: unknown variable(s) {unknown}; it needs {list(names)}"
            )
        substituted = {s.name: e for s, e in self.definitions}
        given_defined = sorted(k for k in values if k in substituted)
        if given_defined:
            details = "; ".join(f"{k} = {substituted[k]}" for k in given_defined)
            raise BoundEvaluationError(
                f"bound {self.name!r}: {', '.join(given_defined)} cannot be given: the bound "
                f"defines {details}; pass {list(names)}"
            )
        missing = [n for n in names if n not in values]
        if missing:
            hint = ""
            consts = [n for n in missing if VOCABULARY[n].role == "constant"]
            if consts:
                hint = (
                    f" ({', '.join(consts)}: unspecified absolute constant(s) of the theorem; "
                    "pass e.g. c=1 to draw the shape)"
                )
            raise BoundEvaluationError(
                f"bound {self.name!r}: missing value(s) for {missing}{hint}; it needs {list(names)}"
            )
        arrays = []
        for n in names:
            arr = np.asarray(values[n], dtype=float)
            var = VOCABULARY[n]
            ok = np.isfinite(arr)
            ok &= (arr >= var.low) if var.low_closed else (arr > var.low)
            ok &= (arr <= var.high) if var.high_closed else (arr < var.high)
            if not np.all(ok):
                bad = arr[~ok].flat[0] if arr.ndim else float(arr)
                raise BoundEvaluationError(
                    f"bound {self.name!r}: {n}={bad!r} is outside the domain {var.domain_text()} "
                    f"of {n} ({var.description})"
                )
            arrays.append(arr)
        arrays = np.broadcast_arrays(*arrays) if arrays else []
        shape = arrays[0].shape if arrays else ()
        with np.errstate(over="ignore"):
            out = np.broadcast_to(np.asarray(fn(*arrays), dtype=float), shape)
        if out.ndim == 0:
            return float(out)
        return np.array(out)

    def evaluate(self, **values: Any):
        """Evaluate the full expression; scalars give a float, arrays broadcast (numpy).

        ``evaluate(S=6, A=2, H=20, K=np.arange(1, 1001), delta=0.1)`` returns an array of 1000
        values. Values for vocabulary names the bound does not use are ignored; a missing,
        unknown, substituted (e.g. ``T`` where ``T = K*H`` was substituted) or out-of-domain value
        raises ``BoundEvaluationError`` naming it. Unspecified constants (``c``) must be given.
        """
        return self._evaluate("full", values)

    def evaluate_order(self, **values: Any):
        """Evaluate ``order`` (the rate without constants and logs), like ``evaluate``."""
        return self._evaluate("order", values)

    # -- rates -------------------------------------------------------------------------------
    def exponent(self, var: str, form: str = "order", leading_in: str | None = None) -> sp.Expr:
        """The polynomial exponent of the bound in ``var`` (a sympy number), logs counting 0.

        ``form``: ``"order"`` (default, the stated rate), ``"full"`` (the full expression),
        ``"order_printed"`` / ``"printed"`` (the paper's own variables, e.g. at fixed ``T``).
        ``leading_in``: first keep only the terms of the expression that dominate as that
        variable goes to its limit, e.g. ``exponent("S", form="full", leading_in="K")`` is the
        S-exponent of the term that dominates for many episodes (1/2 for Azar et al. Theorem 1,
        whose full expression has exponent 2 in S through its burn-in term).

        Definition (exponent.py): lim d log f / d log x with every other variable fixed, taken as
        x -> oo for sizes, x -> 0+ for delta, eps, tau, alpha, w_min, and in (1 - gamma) as
        gamma -> 1. Constants such as ``c`` never change it. Returns ``oo`` for exponential
        growth; raises ``ExponentError`` when the answer depends on other variables' values.
        """
        e = self._form(form)
        sym = symbol(var) if isinstance(var, str) else var
        if leading_in is not None:
            e = leading_terms(e, symbol(leading_in))
        if not e.has(sym):
            if var in self.substituted and form in ("order", "full"):
                definition = dict((s.name, d) for s, d in self.definitions)[var]
                raise ExponentError(
                    f"bound {self.name!r}: {var} was substituted ({var} = {definition}); use "
                    f"form='order_printed' or 'printed' for the exponent at fixed {var}"
                )
            return sp.Integer(0)
        return _exponent(e, sym)

    # -- rendering ---------------------------------------------------------------------------
    def latex(self, form: str = "printed", definitions: bool = False) -> str:
        """LaTeX of the bound; ``definitions=True`` appends the abbreviations' definitions."""
        text = _latex(self._form(form))
        if definitions and self.definitions and form in ("printed", "order_printed"):
            defs = ", ".join(f"{_latex(s)} = {_latex(e)}" for s, e in self.definitions)
            text += r", \quad " + defs
        return text

    def definitions_text(self) -> str:
        return ", ".join(f"{s} = {e}" for s, e in self.definitions)

    def __str__(self) -> str:
        rel = "<=" if self.kind == "upper" else ">="
        text = f"{self.name}: {self.quantity} {rel} {self.printed}"
        if self.definitions:
            text += f", where {self.definitions_text()}"
        return f"{text} ({self.probability}) [{self.provenance}]"

    def __repr__(self) -> str:
        return f"Bound({self.name!r})"

    def source_short(self) -> str:
        """``'Azar et al. 2017, Theorem 1 (UCBVI-CH)'`` (for legends and tables)."""
        return self.source.short()

    def summary(self) -> str:
        """One line: kind, quantity, rate, probability, source, provenance tag."""
        rate = "O~" if self.kind == "upper" else "Omega~"
        probability = self.probability.split(": ")[0].split(" (")[0].strip()
        return (
            f"{self.kind} bound on {self.quantity.replace('_', ' ')}: "
            f"{rate}({self.order_printed}), {probability}; {self.source_short()} "
            f"[{self.provenance}]"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description; ``Bound.from_dict`` rebuilds it (safe parsing)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "quantity": self.quantity,
            "probability": self.probability,
            "setting": self.setting,
            "regime": self.regime,
            "source": self.source.to_dict(),
            "provenance": self.provenance,
            "provenance_meaning": PROVENANCE[self.provenance],
            "version": self.version,
            "notes": list(self.notes),
            "printed": str(self.printed),
            "definitions": {s.name: str(e) for s, e in self.definitions},
            "order_printed": str(self.order_printed),
            "expr": str(self.expr),
            "order": str(self.order),
            "variables": list(self.variables),
            "constants": list(self.constants),
            "latex": self.latex(definitions=True),
            "summary": self.summary(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bound:
        """Rebuild a bound from ``to_dict`` output (expressions parsed without ``eval``)."""
        return cls.from_text(
            name=data["name"],
            printed=data["printed"],
            order=data["order_printed"],
            definitions=data.get("definitions") or {},
            kind=data["kind"],
            quantity=data["quantity"],
            probability=data["probability"],
            setting=data["setting"],
            regime=data.get("regime", ""),
            source=Source(**data["source"]),
            provenance=data["provenance"],
            version=data["version"],
            notes=tuple(data.get("notes") or ()),
        )


__all__ = [
    "Bound",
    "BoundEvaluationError",
    "ExponentError",
    "Source",
    "KINDS",
    "QUANTITIES",
    "PROVENANCE",
]
