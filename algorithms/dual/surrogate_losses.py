r"""The practical surrogate losses of the Dual RL code, written once for numpy and torch.

These are *not* the exact conjugates of :mod:`~theorylab.algorithms.dual.f_divergences` (the
reference explains why they differ: theory-preference-dual-llm.md 6.3-6.4) and are tested only
against their own formulas. Each function takes the array namespace ``xp`` (``numpy`` or
``torch``) and uses only what both provide (arithmetic, ``xp.exp``, ``xp.clip(a, lo, hi)`` with
``None`` for an open side, ``.max()``), so the tabular path
(:mod:`~theorylab.algorithms.dual.f_dvl`) runs on numpy without importing torch and the deep path
(:mod:`theorylab.algorithms.deep.offline_losses`) differentiates the same expressions with
autograd. A stop-gradient is ``.detach()`` where the array has it (torch) and the identity
otherwise.

**f-DVL's value loss** (Sikchi, Zheng, Zhang, Niekum, ICLR 2024, arXiv 2302.08560, eq. (14),
"dual-V with a temperature"; official code ``hari-sikchi/DVL`` @4b7cf11 ``offline/critic.py``,
[V] in the reference, section 6.3). With ``x = Q(s, a) - V(s)`` on dataset pairs and
``lam = loss_temp``:

* ``chi-square``:       ``lam max(x + x^2/4, 0) - (1 - lam) x``
* ``total-variation``:  ``lam max(x, 0) - (1 - lam) x``
* ``reverse-kl`` (XQL's Gumbel loss): ``z = min(x / lam, max_clip)``,
  ``m = stopgrad(max(max_batch z, -1))``, loss ``e^{z - m} - z e^{-m} - e^{-m}``
  ``= e^{-m} (e^z - z - 1)`` (the Gumbel loss rescaled by the batch maximum).

**ReCOIL's surrogate losses** (the same paper, the ReCOIL section; code: the fork
``chufanchen/ReCOIL`` ``offline/critic_imitate.py``, [S] in the reference, section 6.4; the
official repository was not readable). A batch is ``[mixture half; expert half]``, rewards
unused:

* value loss: the reverse-KL loss above with ``m`` taken over the *whole* batch, averaged over
  the mixture half only;
* Q-loss ("fixed target", the LS-IQ stability trick): pairing row i of each half,
  ``0.5 (Q_E - target_q_gap)^2 + 0.5 (Q_mix - y)^2`` with
  ``y = -reward_gap + gamma mask V(s') + gamma (1 - mask) (-target_q_gap)`` and the code's
  constants ``reward_gap = 2``, ``target_q_gap = 200``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

DVL_LOSSES = ("chi-square", "total-variation", "reverse-kl")
MAX_CLIP = 7.0  # the DVL code's default max_clip [M: default value]
RECOIL_REWARD_GAP = 2.0
RECOIL_TARGET_Q_GAP = 200.0


class UnknownSurrogateError(ValueError):
    """A surrogate loss name that is not one of :data:`DVL_LOSSES`."""


def stop_gradient(a):
    """``a.detach()`` for a torch tensor, ``a`` itself for numpy."""
    return a.detach() if hasattr(a, "detach") else a


def gumbel_loss(z, xp: Any = np):
    """``e^{-m} (e^z - z - 1)`` per sample with ``m = stopgrad(max(max_batch z, -1))``; z ``(n,)``
    already scaled and clipped."""
    m = stop_gradient(xp.clip(z.max(), -1.0, None))
    return xp.exp(z - m) - z * xp.exp(-m) - xp.exp(-m)


def dvl_value_loss(x, loss: str, lam: float, max_clip: float = MAX_CLIP, xp: Any = np):
    """f-DVL's value loss per sample (module docstring): ``x = Q - V`` ``(n,)`` -> ``(n,)``; for
    reverse-KL the batch maximum is taken over the whole ``x``. No range checks on ``lam``: each
    caller checks what its use needs."""
    if loss == "chi-square":
        return lam * xp.clip(x + 0.25 * x * x, 0.0, None) - (1.0 - lam) * x
    if loss == "total-variation":
        return lam * xp.clip(x, 0.0, None) - (1.0 - lam) * x
    if loss == "reverse-kl":
        return gumbel_loss(xp.clip(x / lam, None, max_clip), xp)
    raise UnknownSurrogateError(f"unknown f-DVL loss {loss!r}; choose from {DVL_LOSSES}")


def recoil_value_loss(x, lam: float, max_clip: float = MAX_CLIP, xp: Any = np):
    """ReCOIL's value loss: the mean of the reverse-KL loss over the first (mixture) half of
    ``x = Q - V`` ``(2n,)``, its batch maximum over all 2n rows."""
    half = x.shape[0] // 2
    return gumbel_loss(xp.clip(x / lam, None, max_clip), xp)[:half].mean()


def recoil_q_loss(
    q,
    v_next,
    mask,
    gamma: float,
    *,
    reward_gap: float = RECOIL_REWARD_GAP,
    target_q_gap: float = RECOIL_TARGET_Q_GAP,
):
    """ReCOIL's fixed-target Q-loss (module docstring): q, v_next, mask ``(2n,)`` over the batch
    ``[mixture; expert]`` (v_next and mask only matter on the mixture half) -> a scalar."""
    half = q.shape[0] // 2
    target = -reward_gap + gamma * mask * v_next + gamma * (1.0 - mask) * (-target_q_gap)
    target = stop_gradient(target)  # the code's target network: a constant
    per = 0.5 * (q[half:] - target_q_gap) ** 2 + 0.5 * (q[:half] - target[:half]) ** 2
    return per.mean()
