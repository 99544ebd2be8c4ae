"""Group statistics for the group-relative losses (GRPO, Dr. GRPO, RLOO, CVaR-GRPO).

A batch holds several groups of responses to one prompt each; ``group`` (B,) holds each
response's group id, which must run over 0..n_groups-1 with every group non-empty. The advantages
are computed without gradient (they are constants of the loss, as in every paper).
"""

from __future__ import annotations

import torch

from theorylab.algorithms.deep.masking import InvalidBatchError, check_vector

ADVANTAGES = ("std", "mean", "loo", "cvar")


def group_index(group: torch.Tensor, n: int, min_size: int = 1) -> tuple[torch.Tensor, int]:
    """Validate group ids (B,) and return (ids as int64, n_groups)."""
    check_vector("group", group, n)
    if group.dtype.is_floating_point or group.dtype == torch.bool:
        raise InvalidBatchError(f"group must hold integer ids, got dtype {group.dtype}")
    g = group.to(torch.int64)
    if bool((g < 0).any()):
        i = int((g < 0).nonzero()[0, 0])
        raise InvalidBatchError(f"group[{i}] = {int(g[i])} is negative; ids run over 0..n-1")
    n_groups = int(g.max()) + 1
    sizes = torch.bincount(g, minlength=n_groups)
    empty = (sizes == 0).nonzero()
    if empty.numel():
        raise InvalidBatchError(
            f"group {int(empty[0, 0])} is empty: ids must run over 0..{n_groups - 1} and every "
            f"group needs at least {max(min_size, 1)} response(s)"
        )
    small = (sizes < min_size).nonzero()
    if small.numel():
        k = int(small[0, 0])
        raise InvalidBatchError(
            f"group {k} has {int(sizes[k])} response(s); this advantage needs at least {min_size}"
        )
    return g, n_groups


def group_advantages(
    rewards: torch.Tensor,
    group: torch.Tensor,
    kind: str = "std",
    *,
    eps: float = 1e-4,
    alpha: float = 0.25,
) -> torch.Tensor:
    """Advantages (B,) of sequence rewards (B,) within their groups, without gradient.

    * ``"std"``: (r - mean_g) / (std_g + eps), std with Bessel's n-1 (GRPO, Shao et al. 2024,
      Sec. 4.1.2 outcome supervision; TRL and Dr. GRPO's code use n-1); groups of >= 2.
    * ``"mean"``: r - mean_g (Dr. GRPO, Liu et al. 2025, Sec. 3.2: no std division).
    * ``"loo"``: r - mean of the *other* responses of the group (RLOO, Ahmadian et al. 2024,
      after Kool et al. 2019); groups of >= 2.
    * ``"cvar"``: min(r - q_g, 0) / alpha with q_g the group's lower empirical alpha-quantile
      (the ceil(alpha n_g)-th smallest reward): the sampled CVaR_alpha gradient weight of Tamar,
      Glassner and Mannor (AAAI 2015, Prop. 1 / eq. (7)) with the VaR estimated per group.
    """
    n = check_vector("rewards", rewards)
    min_size = 2 if kind in ("std", "loo") else 1
    g, n_groups = group_index(group, n, min_size)
    r = rewards.detach()
    with torch.no_grad():
        sizes = torch.bincount(g, minlength=n_groups).to(r.dtype)
        sums = torch.zeros(n_groups, dtype=r.dtype, device=r.device).index_add_(0, g, r)
        mean = (sums / sizes)[g]
        if kind == "mean":
            return r - mean
        if kind == "loo":
            k = sizes[g]
            return r - (sums[g] - r) / (k - 1)
        if kind == "std":
            dev = r - mean
            ss = torch.zeros(n_groups, dtype=r.dtype, device=r.device).index_add_(0, g, dev * dev)
            std = torch.sqrt(ss / (sizes - 1))[g]
            return dev / (std + eps)
        if kind == "cvar":
            if not 0 < alpha <= 1:
                raise InvalidBatchError(f"alpha must be in (0, 1], got {alpha!r}")
            order = torch.argsort(r, stable=True)
            order = order[torch.argsort(g[order], stable=True)]  # by group, then by reward
            starts = torch.cumsum(sizes, 0) - sizes
            rank = torch.clamp(torch.ceil(alpha * sizes - 1e-9), min=1) - 1
            q = r[order][(starts + rank).to(torch.int64)]  # (n_groups,)
            return torch.clamp(r - q[g], max=0.0) / alpha
    raise InvalidBatchError(f"unknown advantage {kind!r}; expected one of {ADVANTAGES}")
