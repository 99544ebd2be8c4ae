"""Turning the ``problem`` argument of ``tl.run`` into a model (a family spec or a model), and a
model into the discounted problem that a discounted-only algorithm solves, or the finite-horizon
problem of a finite-horizon algorithm (which refuses a discount it cannot use), and the one-line
refusal of a problem of the wrong class (``require_problem``)."""

from __future__ import annotations


def resolve_mdp(problem):
    """A family spec string (``"riverswim:S=6,H=20"``) or a model -> the model."""
    if isinstance(problem, str):
        from theorylab.mdps import make

        return make(problem)
    return problem


def require_problem(
    mdp, cls: type | tuple[type, ...], who: str, needs: str, example: str, family: str = ""
):
    """``mdp`` itself when it is an instance of ``cls``, else a one-line ``ValueError``:
    ``"{who} needs {needs} ({family}, e.g. {example}); got {name!r}"`` (no ``family, `` when
    empty). who: the algorithm and its kind ("pessimistic-nash is an offline Markov-game
    algorithm"); needs: the problem class in words ("a zero-sum Markov game"); example: a spec
    that works; name: the model's ``name``, or its type's name when it has none.
    """
    if isinstance(mdp, cls):
        return mdp
    name = getattr(mdp, "name", type(mdp).__name__)
    where = f"{family}, e.g. {example}" if family else f"e.g. {example}"
    raise ValueError(f"{who} needs {needs} ({where}); got {name!r}")


def discounted_problem(mdp, who: str):
    """The discounted problem of a model, for an algorithm stated for discounted MDPs only.

    A model without a horizon is returned as it is; one with both a horizon and a discount
    (``random:S=5,A=2,gamma=0.9``) as the discounted problem (horizon dropped); one with a horizon
    and no discount is refused. who: the algorithm(s), for the error message.
    """
    if mdp.horizon is None:
        return mdp
    if mdp.gamma is None:
        raise ValueError(
            f"{who} is stated for discounted MDPs; {mdp.name} has horizon H = {mdp.horizon} and "
            "no discount (give gamma=..., e.g. riverswim:S=6,gamma=0.9)"
        )
    return mdp.with_objective(gamma=mdp.gamma, horizon=None)


def finite_horizon_problem(mdp, who: str):
    """The model itself, for an algorithm stated for the undiscounted H-step return.

    A model that also carries a discount (``riverswim:S=6,gamma=0.9``: the family's default H
    and the spec's gamma) is refused: the algorithm would ignore gamma and silently solve
    another problem than the one asked for. who: the algorithm, for the error message.
    """
    gamma = getattr(mdp, "gamma", None)
    horizon = getattr(mdp, "horizon", None)
    if gamma is not None and horizon is not None:
        raise ValueError(
            f"{who} is stated for the undiscounted return over H steps and cannot use a "
            f"discount: {getattr(mdp, 'name', 'the model')} has gamma={gamma} (with H={horizon});"
            " drop gamma= from the spec, or run an algorithm stated for discounted MDPs"
        )
    return mdp
