"""``pointer-chase``: the hidden-chain policy-evaluation instance of the multi-batch query model
(:class:`theorylab.mdps.pointer_chase.PointerChaseProblem`; seed row 001#25).

``pointer-chase:d=16,H=8,noise=0.5,seed=0``: ``2^d`` states per stage (d <= 40), a chain of H
states drawn from ``seed`` (states with reward bit ``b_0`` equal to the instance's sign, drawn
with them); the start state ``chain[0]`` is the learner's.
"""

from __future__ import annotations

import numpy as np

from theorylab.errors import InvalidMDPError
from theorylab.mdps.pointer_chase import PointerChaseProblem
from theorylab.mdps.registry import register

MAX_D = 40  # states are int64 indices


@register("pointer-chase")
def pointer_chase(d: int = 16, H: int = 8, noise: float = 0.5, seed: int = 0):
    """The instance (module docstring)."""
    if isinstance(d, bool) or not isinstance(d, int) or not 2 <= d <= MAX_D:
        raise InvalidMDPError(f"pointer-chase: d must be an integer in [2, {MAX_D}], got {d!r}")
    if isinstance(H, bool) or not isinstance(H, int) or H < 1:
        raise InvalidMDPError(f"pointer-chase: H must be an integer >= 1, got {H!r}")
    if not (isinstance(noise, (int, float)) and np.isfinite(noise) and noise >= 0):
        raise InvalidMDPError(f"pointer-chase: noise must be a finite number >= 0, got {noise!r}")
    rng = np.random.default_rng([seed, 2023])
    sign = int(rng.choice((-1, 1)))
    chain = rng.integers(0, 1 << d, size=H, dtype=np.int64)
    chain = (chain & ~np.int64(1)) | np.int64(sign > 0)  # bit 0 = the reward's sign
    name = f"pointer-chase:d={d},H={H},noise={noise},seed={seed}"
    return PointerChaseProblem(d=d, H=H, noise=float(noise), chain=chain, sign=sign,
                               seed=int(seed), name=name)  # fmt: skip
