"""The memoryless language model with an additive reward (``memoryless-lm``)."""

from __future__ import annotations

import numpy as np

from theorylab.mdps.memoryless_lm import MemorylessLM
from theorylab.mdps.registry import register


@register("memoryless-lm")
def memoryless_lm(V: int = 3, n: int = 20, m: int = 2, seed: int = 0) -> MemorylessLM:
    """n i.i.d. tokens over V symbols, p ~ Dirichlet(1), token rewards w_v uniform on {0..m}
    (with at least two distinct values)."""
    if V < 2 or n < 1 or m < 1:
        raise ValueError(f"need V >= 2, n >= 1, m >= 1; got V={V}, n={n}, m={m}")
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(V))
    w = rng.integers(0, m + 1, size=V)
    w[0], w[1] = 0, m  # two distinct values: the reward is not constant
    return MemorylessLM(p, w, n, name=f"memoryless-lm:V={V},n={n},m={m},seed={seed}")
