"""Turning the ``problem`` argument of ``tl.run`` into a model (a family spec or a model), and a
model into the discounted problem that a discounted-only algorithm solves."""

from __future__ import annotations


def resolve_mdp(problem):
    """A family spec string (``"riverswim:S=6,H=20"``) or a model -> the model."""
    if isinstance(problem, str):
        from theorylab.mdps import make

        return make(problem)
    return problem


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
