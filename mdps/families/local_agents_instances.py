"""``local-agents``: a global agent and n binary local agents
(:class:`theorylab.mdps.local_agents.LocalAgentsProblem`; seed row 001#3).

``local-agents:n=64,instance=demand,gamma=0.9``: the demand-response instance (this project's,
in the spirit of the paper's demand-response simulation, which was not read): G = 2 tariffs
(off-peak, peak), A = 2 actions (the tariff to set: it takes effect with probability 0.9, else
the tariff stays), local state 1 = "active" (demanding). Active agents stay active with
probability 0.95 / 0.85 and inactive ones switch on with probability 0.1 / 0.05 under the
off-peak / peak tariff; an active agent earns 0.5 / 0 and an inactive one 0.1 / 0.4 (paid for
curtailment at peak). Off-peak is right when many agents are active, peak when few are: the
optimal tariff switches at a fraction of active agents inside (0, 1).

``local-agents:n=16,instance=random,G=3,A=2,seed=0``: ``P_g`` rows Dirichlet(1), ``p_on``
uniform on [0.05, 0.95], ``r_g`` and ``r_l`` uniform on [0, 1/2], drawn from seed.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.local_agents import LocalAgentsProblem
from theorylab.mdps.registry import register

INSTANCES = ("demand", "random")


def _demand() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    G, A = 2, 2  # tariff 0 = off-peak, 1 = peak; action = the tariff to set
    P_g = np.zeros((G, A, G))
    for g in range(G):
        for a in range(A):
            P_g[g, a, a] += 0.9
            P_g[g, a, g] += 0.1
    p_on = np.array([[0.02, 0.98], [0.02, 0.98]])  # (G, 2): Pr(active next | inactive, active)
    r_g = np.array([[0.0, 0.0], [0.0, 0.0]])
    r_l = np.array([[0.1, 0.5], [0.4, 0.0]])  # (G, 2): [inactive, active]
    return P_g, p_on, r_g, r_l


def _random(G: int, A: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 2024, 3])
    P_g = rng.dirichlet(np.ones(G), size=(G, A))
    p_on = rng.uniform(0.05, 0.95, size=(G, 2))
    r_g = rng.uniform(0.0, 0.5, size=(G, A))
    r_l = rng.uniform(0.0, 0.5, size=(G, 2))
    return P_g, p_on, r_g, r_l


def _int(value, key: str, lo: int, hi: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < lo
        or (hi is not None and value > hi)
    ):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InvalidMDPError(f"local-agents: {key} must be an integer {rng}, got {value!r}")
    return value


@register("local-agents")
def local_agents(
    n: int = 64,
    instance: str = "demand",
    gamma: float = 0.9,
    G: int = 3,
    A: int = 2,
    seed: int = 0,
    start_on: float = 0.5,
):
    """The instance (module docstring)."""
    _int(n, "n", 1, 100_000)
    if instance not in INSTANCES:
        raise InvalidMDPError(
            f"local-agents: instance must be one of {', '.join(INSTANCES)}, got {instance!r}"
        )
    if not (isinstance(gamma, (int, float)) and 0.0 <= gamma < 1.0):
        raise InvalidMDPError(f"local-agents: gamma must be a number in [0, 1), got {gamma!r}")
    if not (isinstance(start_on, (int, float)) and 0.0 <= start_on <= 1.0):
        raise InvalidMDPError(
            f"local-agents: start_on must be a probability in [0, 1], got {start_on!r}"
        )
    if instance == "demand":
        arrays = _demand()
        name = f"local-agents:n={n},instance=demand,gamma={gamma}"
    else:
        arrays = _random(_int(G, "G", 1, 50), _int(A, "A", 1, 20), _int(seed, "seed", 0))
        name = f"local-agents:n={n},instance=random,G={G},A={A},seed={seed},gamma={gamma}"
    P_g, p_on, r_g, r_l = arrays
    return LocalAgentsProblem(n=n, P_g=P_g, p_on=p_on, r_g=r_g, r_l=r_l, gamma=float(gamma),
                              start_on=float(start_on), name=name)  # fmt: skip
