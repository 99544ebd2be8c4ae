"""Turning the ``problem`` argument of ``tl.run`` into a model (a family spec or a model)."""

from __future__ import annotations


def resolve_mdp(problem):
    """A family spec string (``"riverswim:S=6,H=20"``) or a model -> the model."""
    if isinstance(problem, str):
        from theorylab.mdps import make

        return make(problem)
    return problem
