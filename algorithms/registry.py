"""The algorithm registry: online agents registered by name (``ALGORITHMS.get("ucbvi-hoeffding")``).

Each entry is a class with the constructor ``(env: EnvSpec, n_seeds, rngs, **params)`` following
``theorylab.agent``'s protocol. ``make_agent("ucbvi-hoeffding:delta=0.05", env, n_seeds, rngs)``
builds one with typed parameters.
"""

from __future__ import annotations

from theorylab.registry import Registry

ALGORITHMS = Registry("algorithm")
register = ALGORITHMS.register
CONSTRUCTOR_ARGS = ("env", "n_seeds", "rngs")


def load_algorithms() -> None:
    import theorylab.algorithms.online  # noqa: F401  (registers the online agents)


def make_agent(spec: str, env, n_seeds: int, rngs, **params):
    load_algorithms()
    return ALGORITHMS.make(spec, env=env, n_seeds=n_seeds, rngs=rngs, **params)


def algorithm_parameters(name: str) -> dict:
    """User-settable parameters of an algorithm (constructor arguments less env/n_seeds/rngs)."""
    load_algorithms()
    return {k: v for k, v in ALGORITHMS.parameters(name).items() if k not in CONSTRUCTOR_ARGS}


def list_algorithms() -> list[str]:
    load_algorithms()
    return ALGORITHMS.names()
