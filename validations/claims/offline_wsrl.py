"""WSRL's warm-up and no-retention claims, tabular (issue 31, tier B, 002-004#C8).

``wsrl-warmup-dip-no-retention`` runs the ``wsrl`` agent (pessimistic offline Q, W warm-up
rollouts, epsilon-greedy fine-tuning; ``algorithms/online/wsrl.py``) on one random MDP with
partial-coverage offline data and tracks the exact value of its greedy policy after every online
episode (policy evaluation on the true model). Instance: random S = 6, A = 3, H = 8 (seed 1);
300 offline episodes of ``0.1 pi* + 0.9 adversarial`` (the optimal actions rarely in the data, so
pessimism holds pi_off back); c_h = 0.05 (at the baseline's c_h = 1 every Q_off of this size is
floored at 0 and pi_off is "action 0 everywhere"); epsilon = 0.1. Measured, not claimed: with
coverage 0.5 pi_off is within 0.01 of V* and (iii) fails at 56 episodes (-0.030 +- 0.005), the
retained learner keeping pi_off while epsilon-greedy is still exploring.

It checks, against answers computed here:

1. The pieces are what they claim to be: before any online data WSRL's Q equals
   ``pessimistic-vi-hoeffding`` on the offline data (both modes); after the run, the retained
   learner's Q equals pessimistic VI refit on the union of the offline and the online episodes
   (a second path through ``pessimistic_vi``), and the non-retaining learner's Q equals a dense
   backward induction written here (online counts where visited, Q_off elsewhere); to 1e-10.
2. (i) The dip without warm-up: the drop ``max_k (V^{pi_off} - V^{pi_k})_+`` over the first 20
   training episodes has a 95% interval above 0, and every warm-up W > 0 has a smaller mean dip.
3. (ii) The dip shrinks monotonically in W: for each consecutive pair of the grid, the paired
   difference dip(W_i) - dip(W_{i+1}) has a 95% lower bound above 0 (common random numbers: the
   same data and environment streams for every W).
4. (iii) No retention is at least as good at the end: the final value without the offline data
   (W = the grid's largest) minus the retained-pessimism learner's has a 95% lower bound >= 0.
   The retained learner's dip is reported beside it (the catalogue's "preventing a sudden
   divergence").

The control ``wsrl-uniform-warmup`` (the warm-up rollouts drawn from the uniform policy instead of
pi_off) fails 2 and 3: a few uniform rollouts deepen the dip instead of removing it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report, finished_report
from theorylab.validations.registry import register_validation

MDP = "random:S=6,A=3,H=8,seed=1"
DIP_WINDOW = 20  # training episodes over which the dip is measured


def _ci(x: np.ndarray) -> tuple[float, float]:
    """(mean, 95% half-width) of per-seed values ``(B,)``."""
    return float(x.mean()), float(1.96 * x.std(ddof=1) / np.sqrt(x.size))


def run_wsrl(mdp, dataset, episodes: int, seed: int, **params):
    """The agent after ``W + episodes`` online episodes and the exact values of its greedy
    policy ``(B, W + episodes + 1)`` (column 0: before any online episode), plus the episodes."""
    from theorylab.agent import env_spec
    from theorylab.algorithms.offline.scoring import policy_values
    from theorylab.algorithms.online.wsrl import WSRL
    from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

    B = dataset.n_seeds
    idx = list(range(B))
    env_rngs = generators(seed, idx, ENV_STREAM)
    agent = WSRL(env_spec(mdp), B, generators(seed, idx, AGENT_STREAM), dataset=dataset, **params)
    values = [policy_values(mdp, agent.greedy_policy())]
    trajs = []
    for _ in range(params.get("warmup", 0) + episodes):
        traj = mdp.rollout(agent.policy(), rng=env_rngs)
        trajs.append(traj)
        agent.update(traj)
        values.append(policy_values(mdp, agent.greedy_policy()))
    return agent, np.stack(values, axis=1), trajs


def dip(values: np.ndarray, warmup: int) -> np.ndarray:
    """Per seed: ``max (V_0 - V_k)_+`` over the warm-up and the first DIP_WINDOW training
    episodes; values ``(B, K + 1)``."""
    return np.maximum(values[:, :1] - values[:, 1 : warmup + DIP_WINDOW + 1], 0.0).max(axis=1)


def union_dataset(dataset, trajs):
    """The offline dataset with the online episodes appended (trajectory rows, stage-major
    within an episode, as ``make_dataset`` lays them out)."""
    H = dataset.horizon
    cat = {
        name: np.concatenate([getattr(dataset, name)] + [getattr(t, name) for t in trajs], axis=1)
        for name in ("states", "actions", "rewards", "next_states")
    }
    B = dataset.n_seeds
    stages = np.concatenate([dataset.stages] + [np.tile(np.arange(H), (B, 1))] * len(trajs), 1)
    return dataclasses.replace(
        dataset, **cat, stages=stages, weights=None, behaviour=None, data_distribution=None,
        n_episodes=(dataset.n_episodes or 0) + len(trajs),
    )  # fmt: skip


def refit_online(mdp, dataset, trajs, Q_off: np.ndarray) -> np.ndarray:
    """Second implementation of the non-retaining refit: dense per-stage counts of the online
    episodes, backward induction with known rewards, Q_off on unvisited pairs. ``(B, H, S, A)``."""
    B, S, A, H = dataset.n_seeds, mdp.S, mdp.A, mdp.horizon
    N = np.zeros((B, H, S, A, S))
    for t in trajs:
        for b in range(B):
            for h in range(H):
                N[b, h, t.states[b, h], t.actions[b, h], t.next_states[b, h]] += 1.0
    Q = np.zeros((B, H, S, A))
    V = np.zeros((B, S))
    for h in range(H - 1, -1, -1):
        n = N[:, h].sum(axis=-1)  # (B, S, A)
        PV = np.einsum("bsat,bt->bsa", N[:, h], V) / np.maximum(n, 1.0)
        r = np.asarray(mdp.reward(h), dtype=float)[None]  # (1, S, A)
        Q[:, h] = np.where(n > 0, r + PV, Q_off[:, h])
        V = Q[:, h].max(axis=-1)
    return Q


@dataclass
class WsrlWarmupDip:
    name: str = "wsrl-warmup-dip-no-retention"
    statement: str = (
        "WSRL (Zhou et al. 2025), tabular: pessimistic (Hoeffding LCB) offline Q, W warm-up "
        "rollouts of the offline policy, then epsilon-greedy fine-tuning on the online buffer. "
        "Its Q equals pessimistic VI / an independent refit to 1e-10; without warm-up the greedy "
        "policy's exact value dips below the offline policy's at the onset (95% CI above 0); the "
        "dip shrinks monotonically in W (every consecutive paired difference's 95% lower bound "
        "> 0); the final value without the offline data is at least that of the learner that "
        "retains it with pessimism (95% lower bound of the difference >= 0)"
    )
    scales: dict[str, dict] = field(
        default_factory=lambda: {
            "quick": {
                "seeds": 384,
                "warmups": [0, 4, 16],
                "episodes": 40,
                "offline_episodes": 300,
                "coverage": 0.1,
                "epsilon": 0.1,
                "c_h": 0.05,
            },
            "full": {
                "seeds": 1024,
                "warmups": [0, 4, 8, 16],
                "episodes": 100,
                "offline_episodes": 300,
                "coverage": 0.1,
                "epsilon": 0.1,
                "c_h": 0.05,
            },
        }  # fmt: skip
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.offline.dataset import make_dataset
        from theorylab.algorithms.offline.pessimistic_vi import pessimistic_vi
        from theorylab.mdps import make

        t0 = time.perf_counter()
        cfg = self.scales[scale]
        mdp = make(MDP)
        H = mdp.horizon
        ds = make_dataset(mdp, cfg["offline_episodes"] * H, coverage=cfg["coverage"],
                          other="adversarial", seeds=cfg["seeds"], seed=seed)  # fmt: skip
        eps, K, c_h = cfg["epsilon"], cfg["episodes"], cfg["c_h"]
        checks: list[Check] = []

        # 1: identities, on the first 8 seeds
        small = dataclasses.replace(
            ds, **{n: getattr(ds, n)[:8] for n in ("states", "actions", "rewards",
                                                    "next_states", "stages")},
            seed_indices=ds.seed_indices[:8], weights=None,
        )  # fmt: skip
        q_pvi = pessimistic_vi(small, penalty="hoeffding", c_h=c_h).Q
        err = {}
        for retain in (False, True):
            kw = {"retain": retain, "epsilon": eps, "c_h": c_h}
            agent, _, trajs = run_wsrl(mdp, small, 0, seed + 1, **kw)
            err[f"start, retain={retain}"] = float(np.abs(agent.Q - q_pvi).max())
            agent, _, trajs = run_wsrl(mdp, small, 25, seed + 1, **kw)
            if retain:
                want = pessimistic_vi(union_dataset(small, trajs), penalty="hoeffding", c_h=c_h).Q
            else:
                want = refit_online(mdp, small, trajs, q_pvi)
            err[f"after 25 episodes, retain={retain}"] = float(np.abs(agent.Q - want).max())
        worst = max(err.values())
        checks.append(Check(
            "Q = pessimistic VI (start, retained union) / the dense refit", worst <= 1e-10,
            "; ".join(f"{k}: {v:.1e}" for k, v in err.items()) + " (<= 1e-10)",
            {"errors": err}))  # fmt: skip

        # 2-3: the dip against W (common random numbers across W)
        Ws = list(cfg["warmups"])
        dips, finals, curves = {}, {}, {}
        for W in Ws:
            _, v, _ = run_wsrl(mdp, ds, K, seed + 2, warmup=W, epsilon=eps, c_h=c_h)
            dips[W], finals[W] = dip(v, W), v[:, -1]
            curves[f"W = {W}"] = v[:, W:].mean(axis=0)
        m0, h0 = _ci(dips[0])
        ok = m0 - h0 > 0 and all(dips[W].mean() < m0 for W in Ws[1:])
        checks.append(Check(
            "(i) without warm-up the value dips, more than with any warm-up", ok,
            f"dip(W=0) = {m0:.4f} +- {h0:.4f} (95% CI above 0); mean dips "
            + ", ".join(f"W={W}: {dips[W].mean():.4f}" for W in Ws),
            {"dips": {W: float(dips[W].mean()) for W in Ws}}))  # fmt: skip
        steps = []
        for a, b in zip(Ws[:-1], Ws[1:], strict=True):
            m, h = _ci(dips[a] - dips[b])
            steps.append((a, b, m, m - h))
        ok = all(lo > 0 for *_, lo in steps)
        checks.append(Check(
            "(ii) the dip shrinks monotonically in W", ok,
            "; ".join(f"dip({a}) - dip({b}) = {m:.4f} (95% lower {lo:.4f})"
                      for a, b, m, lo in steps) + " (each > 0)",
            {"steps": steps}))  # fmt: skip

        # 4: no retention vs retained pessimistic data
        _, v_ret, _ = run_wsrl(mdp, ds, Ws[-1] + K, seed + 2, retain=True, epsilon=eps, c_h=c_h)
        diff = finals[Ws[-1]] - v_ret[:, -1]
        m, h = _ci(diff)
        ok = m - h >= 0
        checks.append(Check(
            "(iii) final value without retained data >= with retained pessimistic data", ok,
            f"after {Ws[-1] + K} online episodes: V(no retention, W={Ws[-1]}) = "
            f"{finals[Ws[-1]].mean():.4f}, V(retained) = {v_ret[:, -1].mean():.4f}; difference "
            f"{m:.4f}, 95% lower {m - h:.4f} (>= 0); the retained learner's dip "
            f"{dip(v_ret, 0).mean():.4f}, V^pi_off = {v_ret[:, 0].mean():.4f}",
            {"difference": m, "lower": m - h}))  # fmt: skip
        curves["retained (W = 0)"] = v_ret[:, : K + 1].mean(axis=0)

        if plot:
            from theorylab.plotting import plot_lines

            x = np.arange(K + 1)
            plot_lines(x, {k: c[: K + 1] for k, c in curves.items()},
                       xlabel="training episodes after the warm-up",
                       ylabel="exact value of the greedy policy (mean over seeds)",
                       title="WSRL: warm-up shrinks the dip; retention caps the value",
                       path=plot)  # fmt: skip
        config = {**cfg, "mdp": MDP, "dip_window": DIP_WINDOW, "seed": seed}
        return finished_report(self.name, self.statement, scale, checks, t0, config, figure=plot)


register_validation(
    WsrlWarmupDip(),
    controls=("wsrl-uniform-warmup",),
    targets={"online": ("wsrl",)},
    papers=("002-004#C8",),
)
