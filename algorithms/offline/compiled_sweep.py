r"""The compiled path of the offline runner's N-sweep: which runs can take it, and the driver.

``theorylab.runners.offline.run(..., loop="compiled")`` calls :func:`compiled_sweep` instead of
``make_dataset`` + ``fit`` per N. The kernel (:mod:`theorylab.algorithms.offline.sweep_kernel`)
draws every seed's data from the same numpy PCG64 streams as ``make_dataset`` and fits the
algorithm on every nested prefix; this module prepares its inputs with the reference's own numpy
calls (behaviour policy, occupancy, sampler keys, L, T, beta) and turns its Q and V tables into the
reference's outputs with the reference's functions (``result.greedy``, ``value_at_start``).
What the runner does next (exact evaluation, C*, PEVI's coverage term) is shared by both paths.

Algorithms with a compiled sweep (:data:`COMPILED`): ``pessimistic-vi-hoeffding``,
``pessimistic-vi-bernstein`` (``subsample=False``; both Bernstein forms), ``pevi-tabular`` and
``vi-lcb``. Data: i.i.d. ``"samples"`` (finite horizon and discounted) and finite-horizon
``"trajectories"``, from a behaviour mixture or a given ``data_distribution``, on a tabular model
whose rewards are ``"deterministic"`` or ``"bernoulli"``. Anything else runs the Python loop
(:func:`compiled_unavailable` says why), as does an algorithm whose module a known-bug mutation
has patched (the bug lives in the Python code only) or whose registry entry a control replaced
by anything but a transform of the fit's result (the null controls of
``validations.controls.null_fit`` are such transforms: the compiled path applies them).
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from theorylab.algorithms.offline.dataset import (
    InvalidDatasetError,
    InvalidDatasetSizeError,
    behaviour_policy,
    compiled_draw_inputs,
    make_dataset,
)

COMPILED = ("pessimistic-vi-hoeffding", "pessimistic-vi-bernstein", "pevi-tabular", "vi-lcb")
AUTO_MIN_SEED_SAMPLES = 1_000_000
"""Seed-samples (B x largest N) from which ``loop="auto"`` takes the compiled sweep."""


def _registered_functions() -> dict:
    """The registry's fit functions of the compiled algorithms (a control replaces them)."""
    from theorylab.algorithms.offline import registrations

    return {
        "pessimistic-vi-hoeffding": registrations.fit_pessimistic_vi_hoeffding,
        "pessimistic-vi-bernstein": registrations.fit_pessimistic_vi_bernstein,
        "pevi-tabular": registrations.fit_pevi_tabular,
        "vi-lcb": registrations.fit_vi_lcb,
    }


def compiled_unavailable(entry, mdp, params: dict, kind: str | None) -> str | None:
    """Why ``entry`` on ``mdp`` with ``params`` and dataset ``kind`` cannot take the compiled
    sweep (a sentence), or None when it can."""
    from theorylab.algorithms.offline import pevi

    name = entry.name
    if name not in COMPILED:
        return f"{name} has no compiled sweep (compiled: {', '.join(COMPILED)})"
    if _result_transform(entry) is False:
        return f"{name}'s registry entry is replaced (a control is active): the Python loop runs"
    if pevi.pessimistic_q is not pevi._pessimistic_q_reference:
        return "pevi.pessimistic_q is patched (a known-bug mutation): the Python loop runs"
    if params.get("subsample"):
        return "two-fold subsampling (subsample=True) runs in the Python loop only"
    finite = mdp.horizon is not None
    kind = kind or ("trajectories" if finite else "samples")
    if not finite and kind == "trajectories":
        return "discounted trajectory data (the restart chain) runs in the Python loop only"
    if getattr(mdp, "reward_model", None) not in ("deterministic", "bernoulli"):
        return f"reward model {getattr(mdp, 'reward_model', None)!r} is not compiled"
    if not hasattr(mdp, "P_flat") or not hasattr(mdp, "R"):
        return f"{type(mdp).__name__} is not a tabular model"
    if finite and mdp.horizon * mdp.S * mdp.A >= 2**31:
        return "H S A >= 2^31 pairs"
    return None


def _result_transform(entry):
    """None when the registry entry is the registered fit; the control's
    ``result_transform(result, A)`` when a control wraps the registered fit with a transform
    of its result alone (``validations.controls.null_fit``); False otherwise."""
    registered = _registered_functions()[entry.name]
    if entry.factory is registered:
        return None
    transform = getattr(entry.factory, "result_transform", None)
    if getattr(entry.factory, "wrapped_fit", None) is registered and callable(transform):
        return transform
    return False


def _defaults(name: str) -> dict:
    fn = _registered_functions()[name]
    return {
        k: p.default
        for k, p in inspect.signature(fn).parameters.items()
        if k != "dataset" and p.default is not p.empty
    }


def compiled_sweep(
    entry,
    mdp,
    sizes: list[int],
    seeds: list[int],
    seed: int,
    params: dict,
    *,
    coverage: float | None,
    other: str,
    kind: str | None,
    data_distribution: np.ndarray | None = None,
) -> dict:
    """Draw, fit and return the policies of ``entry`` at every N of ``sizes`` for every seed
    (module docstring). Returns ``policy`` (a list over N of ``(B, ...)`` arrays, as ``fit``
    returns them), ``value_estimate (B, M)``, ``counts (B, M, H, S, A)`` (finite horizon; else
    None), ``sizes`` (rows used per N), ``data_distribution``, ``kind``, ``params``, ``info`` and
    ``pessimistic`` (what the Python path reads off its last fit)."""
    import numba

    from theorylab.algorithms.offline import fit as fit_algorithm
    from theorylab.algorithms.offline.coverage import occupancy, optimal_solution
    from theorylab.algorithms.offline.pevi import _resolve_beta
    from theorylab.algorithms.offline.result import (
        GREEDY_ATOL,
        OfflineResult,
        greedy,
        value_at_start,
    )
    from theorylab.algorithms.offline.sweep_kernel import (
        FIT_PEVI_TABULAR,
        FIT_PVI_BERNSTEIN_MAX,
        FIT_PVI_BERNSTEIN_SUM,
        FIT_PVI_HOEFFDING,
        FIT_VI_LCB,
        sweep,
    )
    from theorylab.algorithms.offline.vi_lcb import vi_lcb_iterations
    from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

    name = entry.name
    p = {**_defaults(name), **params}
    finite = mdp.horizon is not None
    kind = kind or ("trajectories" if finite else "samples")
    H = mdp.horizon if finite else 1
    S, A = mdp.S, mdp.A
    B, M = len(seeds), len(sizes)
    # The algorithm's own checks and recorded parameters: one fit on a one-episode dataset
    # (bad parameters raise the Python path's errors; pevi-tabular's beta is redone per N).
    probe_kw = (
        {"data_distribution": data_distribution}
        if data_distribution is not None
        else {"coverage": coverage, "other": other}
    )
    probe = fit_algorithm(name, make_dataset(mdp, H, kind=kind, seeds=[0], **probe_kw), **params)
    # the data: what make_dataset derives from the model, with its own calls
    if data_distribution is not None:
        if kind != "samples":
            raise InvalidDatasetError(
                "data_distribution= draws independent samples: kind='samples'"
            )
        mu = np.asarray(data_distribution, dtype=np.float64)  # validated by the probe above
        pol = None
    else:
        sol = optimal_solution(mdp)
        pol = behaviour_policy(mdp, coverage, other, solution=sol)
        mu = occupancy(mdp, pol)
    n_max = sizes[-1]
    if n_max >= 2**31:
        raise ValueError(f"the compiled sweep holds N < 2^31 rows per seed, got N = {n_max}")
    used = list(sizes)
    if kind == "trajectories":
        for n in sizes[:-1]:  # OfflineDataset.head's rule for nested trajectory data
            if n % H:
                raise InvalidDatasetSizeError(
                    f"trajectory data is cut at whole episodes: n must be a multiple of H = "
                    f"{H}, got {n}"
                )
        n_max = (n_max // H) * H
        used[-1] = n_max
    data_args = compiled_draw_inputs(mdp, kind, n_max, mu, pol, generators(seed, seeds, ENV_STREAM))
    # the algorithm's constants, computed as its module computes them
    sizes_arr = np.asarray(used, dtype=np.int64)
    L = np.zeros((B, M))
    beta = np.zeros(M)
    T = np.zeros(M, np.int64)
    Lc = np.zeros(M)
    chH = c_b = cbH = two_cbH = lam = vmax = gam = 0.0
    behaviour_start = False
    pi0 = np.zeros((B, S), np.int64)
    if name.startswith("pessimistic-vi"):
        delta = p["delta"]
        for j, n in enumerate(used):
            N = np.full(B, float(n))  # total_weight
            L[:, j] = np.log(np.maximum(N, 1.0) * H / delta)
        if name == "pessimistic-vi-hoeffding":
            variant = FIT_PVI_HOEFFDING
            chH = p["c_h"] * H
        else:
            form = p["bernstein_form"]
            variant = FIT_PVI_BERNSTEIN_SUM if form == "sum" else FIT_PVI_BERNSTEIN_MAX
            c_b = p["c_b"]
            cbH = c_b * H
            two_cbH = 2.0 * c_b * H
    elif name == "pevi-tabular":
        variant = FIT_PEVI_TABULAR
        lam = p["lam"]
        b_given = None if p["beta"] < 0 else p["beta"]
        for j, n in enumerate(used):
            K = float(n // H) if kind == "trajectories" else float(n) / H  # episodes_per_stage
            beta[j] = _resolve_beta(b_given, p["c_beta"], S * A, H, K, p["xi"])
    else:
        variant = FIT_VI_LCB
        gam = float(mdp.gamma)
        vmax = 1.0 / (1.0 - gam)
        for j, n in enumerate(used):
            T[j] = vi_lcb_iterations(float(n), gam)
            Lc[j] = p["c_L"] * math.log(2 * (T[j] + 1) * S * A / p["delta"])
        start = p["initial_policy"]
        behaviour_start = start == "behaviour"
        if start == "random":
            agent = generators(seed, seeds, AGENT_STREAM)
            pi0 = np.stack([r.integers(0, A, size=S) for r in agent]).astype(np.int64)
        elif start == "uniform":
            pi0 = np.full((B, S), -1, dtype=np.int64)
    if finite:
        Q = np.zeros((B, M, H, S, A))
        V = np.zeros((B, M, H + 1, S))
        counts = np.zeros((B, M, H, S, A))
        pol_out = np.zeros((B, M, 1), np.int64)
    else:
        Q = np.zeros((B, M, 1, S, A))
        V = np.zeros((B, M, 1, S))
        counts = np.zeros((B, M, 1, 1, 1))
        pol_out = np.zeros((B, M, S), np.int64)
    sweep(
        *data_args, variant, sizes_arr, L, chH, c_b, cbH, two_cbH, beta, lam, T, Lc, vmax, gam,
        behaviour_start, pi0, GREEDY_ATOL, Q, V, pol_out, counts, min(B, numba.get_num_threads()),
    )  # fmt: skip
    mu0 = np.asarray(mdp.mu0)
    policies, estimates = [], np.empty((B, M))
    for j in range(M):
        if finite:
            policies.append(greedy(Q[:, j]))
            estimates[:, j] = value_at_start(V[:, j, 0], mu0)
        else:
            det = pol_out[:, j]
            if p["initial_policy"] == "uniform":
                det_pos = np.maximum(det, 0)
                policies.append(np.where((det >= 0)[..., None], np.eye(A)[det_pos], 1.0 / A))
            else:
                policies.append(det)
            estimates[:, j] = value_at_start(V[:, j, 0], mu0)
    pessimistic = bool(probe.pessimistic)
    transform = _result_transform(entry)
    if transform:  # a control that replaces the result (e.g. the null policies)
        for j in range(M):
            res = OfflineResult(
                algorithm=name,
                policy=policies[j],
                value_estimate=estimates[:, j],
                V=None,
                Q=None,
                pessimistic=pessimistic,
            )
            res = transform(res, A)
            policies[j] = res.policy
            estimates[:, j] = res.value_estimate
    fitted_params = dict(probe.params)
    if name == "pevi-tabular":
        fitted_params["beta"] = float(beta[-1])
    return {
        "policy": policies,
        "value_estimate": estimates,
        "counts": counts if finite else None,
        "sizes": used,
        "data_distribution": mu,
        "kind": kind,
        "params": fitted_params,
        "info": {"loop": "compiled"},
        "pessimistic": pessimistic,
    }
