"""Polynomial exponents of bounds, with logarithms counted as 0.

Definition
----------
The exponent of a positive expression ``f`` in the variable ``x`` is the limit of its elasticity

    e_x(f) = lim d log f / d log x          (every other variable held fixed, positive)

taken in the variable's natural limit (``vocabulary.Variable.limit``):

* sizes and counts (S, A, H, K, T, d, N, C*, ...): ``x -> oo``;
* small parameters (delta, eps, tau, alpha, w_min): ``x -> 0+``, so ``eps^-2`` has exponent -2;
* the discount factor: ``gamma -> 1-`` with the elasticity taken in ``1 - gamma``, so
  ``(1 - gamma)^-5`` has exponent -5.

Logarithms count 0 automatically: ``d log(log x) / d log x = 1/log x -> 0``, so
``sqrt(x) * log(x)^2`` has exponent 1/2. The same holds for ``log(1/delta)`` as ``delta -> 0``.

For a monomial the direction of the limit does not matter. For a sum the limit picks the dominant
term (``x^2 + x`` -> 2 as ``x -> oo``); for ``min``/``max`` it picks the branch that is active in
the limit (``min(1/(1-gamma), sqrt(S/((1-gamma)^5 N)))`` has exponent -1/2 in N but -1 in gamma,
because the trivial branch ``1/(1-gamma)`` wins as ``gamma -> 1``). Exponential growth gives
``oo`` (``2^H`` in H); where its direction depends on another variable (``alpha^(1-H)`` in H, which
grows only if alpha < 1) ``ExponentError`` is raised. An exponent may itself be symbolic:
``alpha^(-(H-1)/2)`` has exponent ``-(H-1)/2`` in alpha.

Computation
-----------
The limit is computed structurally (fast, exact): with ``u -> oo`` the substituted variable,
``lead(u) = 1``, ``lead(const) = 0``, ``lead(f*g) = lead(f) + lead(g)``, ``lead(f^p) = p*lead(f)``
for ``p`` free of ``u``, ``lead(f + g) = max``, ``lead(min(f, g)) = min``, ``lead(max) = max``,
``lead(log f) = 0`` when ``f`` tends to ``0``, ``oo`` or a constant other than 1, and
``lead(exp g) = lim g / log u``. Anything else falls back to ``sympy.limit`` of the elasticity.
The rule for sums assumes the leading terms do not cancel, which holds for bounds (sums of
non-negative terms). ``tests/test_bounds.py`` checks the structural result against
``sympy.limit`` on real bounds.
"""

from __future__ import annotations

import sympy as sp

from theorylab.errors import TheorylabError

from .vocabulary import VOCABULARY


class ExponentError(TheorylabError, ValueError):
    """The exponent of a bound in a variable could not be determined (names the reason)."""


def _elasticity_limit(e: sp.Expr, u: sp.Symbol) -> sp.Expr:
    try:
        result = sp.limit(sp.simplify(u * sp.diff(sp.log(e), u)), u, sp.oo)
    except Exception as exc:  # sympy raises many kinds of errors on hard limits
        raise ExponentError(f"sympy could not compute the limit for {e}: {exc}") from exc
    return result


def _exp_lead(g: sp.Expr, u: sp.Symbol) -> sp.Expr:
    """Exponent of exp(g) as u -> oo: lim g / log u."""
    if not g.has(u):
        return sp.Integer(0)
    try:
        result = sp.limit(g / sp.log(u), u, sp.oo)
    except Exception as exc:
        raise ExponentError(f"could not compute the growth of exp({g}): {exc}") from exc
    if not (result.is_number or result in (sp.oo, -sp.oo)):
        raise ExponentError(
            f"the growth of exp({g}) depends on the values of other variables ({result})"
        )
    return result


def lead(e: sp.Expr, u: sp.Symbol) -> sp.Expr:
    """Exponent of ``e`` as ``u -> oo`` (the limit of d log e / d log u), logs counting 0."""
    if not e.has(u):
        return sp.Integer(0)
    if e == u:
        return sp.Integer(1)
    if e.is_Add:
        return sp.Max(*(lead(t, u) for t in e.args))
    if e.is_Mul:
        parts = [lead(f, u) for f in e.args]
        if sp.oo in parts and -sp.oo in parts:
            return _elasticity_limit(e, u)
        return sp.Add(*parts)
    if e.is_Pow:
        base, p = e.args
        if not p.has(u):
            inner = lead(base, u)
            if inner in (sp.oo, -sp.oo) and p.is_number:
                return inner * sp.sign(p)
            return p * inner
        return _exp_lead(p * sp.log(base), u)
    if isinstance(e, sp.exp):
        return _exp_lead(e.args[0], u)
    if isinstance(e, sp.log):
        g = e.args[0]
        if lead(g, u) != 0:
            return sp.Integer(0)
        limit = sp.limit(g, u, sp.oo)
        if limit.is_number and limit.is_finite and limit.is_positive and limit != 1:
            return sp.Integer(0)
        return _elasticity_limit(e, u)
    if isinstance(e, sp.Min):
        return sp.Min(*(lead(a, u) for a in e.args))
    if isinstance(e, sp.Max):
        return sp.Max(*(lead(a, u) for a in e.args))
    if isinstance(e, sp.Abs):
        return lead(e.args[0], u)
    return _elasticity_limit(e, u)


def _positive(expr: sp.Expr) -> tuple[sp.Expr, dict]:
    """``expr`` with every free symbol replaced by a positive symbol of the same name."""
    mapping = {s: sp.Symbol(s.name, positive=True) for s in expr.free_symbols}
    return expr.xreplace(mapping), mapping


def exponent(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """Exponent of ``expr`` in ``var`` in the variable's natural limit (see the module doc).

    Every symbol is taken positive. The result may contain the symbols of other variables when
    the exponent depends on them (``alpha^(1-H)`` has exponent ``1 - H`` in alpha).
    """
    limit = VOCABULARY[var.name].limit if var.name in VOCABULARY else "oo"
    if not expr.has(var):
        return sp.Integer(0)
    expr, mapping = _positive(expr)
    back = {p: s for s, p in mapping.items()}
    var = mapping[var]
    u = sp.Dummy("u", positive=True)
    if limit == "oo":
        result = lead(expr.xreplace({var: u}), u)
    elif limit == "0":  # x = 1/u: d log f / d log x = - d log f / d log u
        result = -lead(expr.xreplace({var: 1 / u}), u)
    elif limit == "1":  # 1 - x = 1/u
        result = -lead(expr.xreplace({var: 1 - 1 / u}), u)
    else:
        raise ValueError(f"unknown limit {limit!r} for {var}")
    return result.xreplace(back)


def leading_terms(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """The terms of ``expr`` (products distributed over sums) that dominate in ``var``'s limit.

    ``leading_terms(20*H**(3/2)*L*sqrt(S*A*K) + 250*H**2*S**2*A*L**2, K)`` keeps the first term.
    Logs are slowly varying, so terms whose exponents tie are all kept.
    """
    terms = sp.Add.make_args(sp.expand_mul(expr, deep=False))
    exps = [exponent(t, var) for t in terms]
    if not all(x.is_number or x in (sp.oo, -sp.oo) for x in exps):
        raise ExponentError(
            f"cannot rank the terms of {expr} in {var}: their exponents {exps} depend on other "
            "variables"
        )
    # as the variable goes to its limit, the dominant term has the largest growth in the
    # direction of growth: for x -> oo the largest exponent, for x -> 0 the smallest.
    limit = VOCABULARY[var.name].limit if var.name in VOCABULARY else "oo"
    best = max(exps) if limit == "oo" else min(exps)
    return sp.Add(*(t for t, x in zip(terms, exps, strict=True) if x == best))
