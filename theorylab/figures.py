"""The scripts that compute the documentation's figures from the code (top floor).

They run algorithms on MDP families and draw with :mod:`theorylab.plotting`:
``make_tutorial_figures`` (docs/tutorials/why-pessimism.md), ``safe_risky_figure``
(docs/tutorials/risk-sensitive.md), ``dual_alpha_figure``
(docs/tutorials/one-lp-many-algorithms.md) and ``pr_lsvi_tradeoff_figure``
(docs/algorithms/pr-lsvi.md).
"""

from __future__ import annotations

import numpy as np

from theorylab.plotting import (
    plot_return_distribution,
    plot_suboptimality_lines,
    plot_suboptimality_vs_cstar,
    plot_suboptimality_vs_n,
)


def make_tutorial_figures(outdir: str = "docs/figures", *, quick: bool = False, seed: int = 0):
    """The three figures of docs/tutorials/why-pessimism.md (returns their paths and the data).

    1. partial coverage (``tempting-arms``): naive VI, pessimistic VI and behaviour cloning
       against N;
    2. rates (``multiscale-bandit``): LCB on generic (C* = 4) and near-expert (C* = 1.05) data, and
       naive VI on generic data, log-log against N;
    3. concentrability: LCB's sub-optimality against C* at fixed N, with C* varied by covariate
       shift and by the behaviour's action mixture.
    """
    from pathlib import Path

    from theorylab.algorithms.offline import dataset_concentrability, fit, make_dataset
    from theorylab.algorithms.offline.coverage import optimal_solution
    from theorylab.algorithms.offline.scoring import suboptimality
    from theorylab.mdps import make
    from theorylab.mdps.families.offline_instances import (
        covariate_shift_distribution,
        naive_failure_limit,
        tempting_arms_coverage,
    )
    from theorylab.plotting import save_figure

    out = Path(outdir)
    B = 8 if quick else 32
    data: dict = {}
    # 1. partial coverage
    mdp = make("tempting-arms")
    Ns = [3000, 10_000, 30_000, 100_000] + ([] if quick else [300_000, 1_000_000])
    algos = (
        "naive-vi",
        "pessimistic-vi-hoeffding",
        "pessimistic-vi-bernstein",
        "behaviour-cloning",
    )
    v_star = optimal_solution(mdp).value
    curves = {a: np.empty((B, len(Ns))) for a in algos}
    for k, N in enumerate(Ns):
        ds = make_dataset(mdp, N, coverage=tempting_arms_coverage(N), seeds=B, seed=seed)
        for a in algos:
            curves[a][:, k] = suboptimality(mdp, fit(a, ds).policy, v_star)
    ax = plot_suboptimality_lines(
        Ns,
        curves,
        reference=naive_failure_limit() * 0.6,
        reference_label="naive VI, predicted limit (1 - (1 - q_m)^K) x gap",
        title="tempting-arms: each of 20 tempting arms tried twice (C* -> 1)",
    )
    p1 = save_figure(ax, out / "why-pessimism-1-partial-coverage.png")[0]
    data["partial_coverage"] = {a: c.mean(axis=0).tolist() for a, c in curves.items()}
    # 2. rates in N
    mdp = make("multiscale-bandit")
    Ns = [1000, 3000, 10_000, 30_000, 100_000] + ([] if quick else [300_000, 1_000_000])
    v_star = optimal_solution(mdp).value
    curves = {}
    for label, algo, cov, other in (
        ("LCB, generic data (C* = 4)", "pessimistic-vi-hoeffding", 0.25, "adversarial"),
        ("LCB, near-expert data (C* = 1.05)", "pessimistic-vi-hoeffding", 0.9, "uniform"),
        ("naive VI, generic data (C* = 4)", "naive-vi", 0.25, "adversarial"),
    ):
        ds = make_dataset(
            mdp, max(Ns), coverage=cov, other=other, seeds=B, seed=seed, kind="samples"
        )
        curves[label] = np.stack(
            [suboptimality(mdp, fit(algo, ds.head(n)).policy, v_star) for n in Ns], axis=1
        )
    ax = plot_suboptimality_vs_n(
        Ns, curves, bound_exponent=-0.5, title="multiscale-bandit: rates in N"
    )
    p2 = save_figure(ax, out / "why-pessimism-2-rates.png")[0]
    data["rates"] = {k: c.mean(axis=0).tolist() for k, c in curves.items()}
    # 3. growth in C*
    mdp = make("multiscale-bandit:n_gap=20,gap_ratio=0.7,n_mass=0,junk=true")
    N = 100_000 if quick else 1_000_000
    Cs = [2, 4, 8, 16, 32, 64] + ([] if quick else [128, 256])
    v_star = optimal_solution(mdp).value
    shift = np.empty((B, len(Cs)))
    mix = np.empty((B, len(Cs)))
    for k, C in enumerate(Cs):
        ds = make_dataset(
            mdp,
            N,
            data_distribution=covariate_shift_distribution(mdp, C),
            seeds=B,
            seed=seed,
            kind="samples",
        )
        shift[:, k] = suboptimality(mdp, fit("pessimistic-vi-hoeffding", ds).policy, v_star)
        ds = make_dataset(
            mdp, N, coverage=1.0 / C, other="adversarial", seeds=B, seed=seed, kind="samples"
        )
        assert abs(dataset_concentrability(mdp, ds)["C_star"] - C) < 1e-9 * C
        mix[:, k] = suboptimality(mdp, fit("pessimistic-vi-hoeffding", ds).policy, v_star)
    ax = plot_suboptimality_vs_cstar(
        Cs,
        {"LCB, C* by covariate shift": shift, "LCB, C* by action mixture": mix},
        N=N,
        title="multiscale-bandit: growth in C* at fixed N",
    )
    p3 = save_figure(ax, out / "why-pessimism-3-cstar.png")[0]
    data["cstar"] = {
        "C_star": Cs,
        "covariate_shift": shift.mean(axis=0).tolist(),
        "action_mixture": mix.mean(axis=0).tolist(),
    }
    return [p1, p2, p3], data


def safe_risky_figure(path, *, tau: float = 0.25, H: int = 3):
    """The tutorial figure: risk-neutral vs CVaR_tau-optimal return laws on ``cvar-safe-risky``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from theorylab.algorithms.planning import backward_induction
    from theorylab.algorithms.risk import return_distribution, static_cvar_planning
    from theorylab.mdps import make
    from theorylab.plotting import save_figure

    mdp = make(f"cvar-safe-risky:H={H}")
    neutral = backward_induction(mdp)
    sol = static_cvar_planning(mdp, tau)
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2, sharey=True)
    plot_return_distribution(
        return_distribution(mdp, neutral.policy),
        tau,
        ax=left,
        title=f"risk-neutral optimum (V* = {float(neutral.value):.3g}): RISKY",
    )
    plot_return_distribution(
        return_distribution(mdp, sol.policy),
        tau,
        ax=right,
        title=f"CVaR_{tau:g}-optimal (CVaR* = {sol.value:.3g}): SAFE",
    )
    fig.suptitle(f"{mdp.name}: exact return distributions")
    return save_figure(fig, path)


def grpo_kl_figures(outdir: str = "docs/figures", *, steps: int = 1500) -> dict:
    """The two figures of docs/tutorials/grpo-kl-term.md (returns their paths and the numbers).

    1. ``grpo-kl-curves.png``: RLOO (KL in the reward), GRPO and Dr. GRPO (k3 in the loss) and
       Dr. GRPO with k2, trained exactly on tokentree:V=4,L=3 (beta = 0.5, G = 4): the TV to each
       one's predicted fixed point and the KL to pi*_beta, against the step;
    2. ``grpo-kl-accuracy-vs-beta.png``: the exact accuracy of each predicted fixed point against
       beta (no training: the fixed points of theorylab.algorithms.deep.fixed_points).
    """
    from pathlib import Path

    from theorylab.algorithms.deep.twins import predicted_point
    from theorylab.experiment import run
    from theorylab.mdps import make
    from theorylab.plotting import plot_lines, plot_twin_curves

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    spec = "tokentree:V=4,L=3"
    task = make(spec)
    twins = ("rloo-twin", "grpo-twin", "dr-grpo-twin", "dr-grpo-k2-twin")
    results = {name: run(name, task, steps=steps) for name in twins}
    curves = {n: (r.steps, r.tv_predicted, r.kl_optimum) for n, r in results.items()}
    p1 = out / "grpo-kl-curves.png"
    plot_twin_curves(curves, path=str(p1), title=f"exact training on {spec}, beta = 0.5, G = 4")
    betas = np.geomspace(0.05, 5.0, 13)
    labels = {
        "rloo": "pi*_beta (RLOO, DPO)",
        "grpo": "GRPO, k3 in the loss",
        "dr-grpo": "Dr. GRPO, k3 in the loss",
        "dr-grpo-k2": "Dr. GRPO, k2 in the loss",
    }
    acc = {
        label: np.array([task.accuracy(predicted_point(task, t, b, 4, 0.25)).mean() for b in betas])
        for t, label in labels.items()
    }
    p2 = out / "grpo-kl-accuracy-vs-beta.png"
    plot_lines(
        betas, acc, xlabel="beta", ylabel="exact accuracy at the fixed point", logx=True,
        title=f"where each KL term leads ({spec}, G = 4)", path=str(p2),
    )  # fmt: skip
    summary = {n: r.summary() for n, r in results.items()}
    return {"paths": [str(p1), str(p2)], "summary": summary, "betas": betas, "accuracy": acc}


def transformer_figures(outdir: str = "docs/figures", *, seeds: int = 3) -> dict:
    """The figures of docs/tutorials/from-tabular-twin-to-transformer.md (paths and numbers).

    1. ``transformer-grpo-accuracy.png``: GRPO (beta 0.04) on tokentree:V=4,L=3 through the tiny
       transformer and a same-size HF GPT-2 (random init): exact accuracy against the step, with
       pi*_beta's accuracy;
    2. ``transformer-dpo-kl.png``: exact DPO (beta 0.1) through both models: exact
       KL(pi || pi*_beta) against the step.
    """
    from pathlib import Path

    from theorylab.algorithms.deep.trainer import train
    from theorylab.plotting import plot_regret, save_figure

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    spec = "tokentree:V=4,L=3"
    models = {"tiny transformer": "tiny", "HF GPT-2 (same size)": "gpt2-config:n_layer=2,n_embd=64"}
    runs = {
        "grpo": {k: train(m, spec, "grpo", steps=150, eval_every=10, seeds=seeds)
                 for k, m in models.items()},
        "dpo": {k: train(m, spec, "dpo:beta=0.1", steps=125, eval_every=5, seeds=seeds)
                for k, m in models.items()},
    }  # fmt: skip
    grpo, dpo = runs["grpo"], runs["dpo"]
    first = next(iter(grpo.values()))
    opt = float(first.optimum_accuracy.mean())
    ax = plot_regret(
        {k: r.accuracy for k, r in grpo.items()},
        {f"pi*_0.04 (exact accuracy {opt:.3f})": np.full(first.steps.shape, opt)},
        x=first.steps, xlabel="training step", ylabel="exact accuracy P(correct)",
        title=f"GRPO on {spec} (beta 0.04, G = 8), {seeds} seeds",
    )  # fmt: skip
    p1 = out / "transformer-grpo-accuracy.png"
    save_figure(ax, p1)
    d0 = next(iter(dpo.values()))
    ax = plot_regret(
        {k: r.kl_optimum for k, r in dpo.items()},
        x=d0.steps, xlabel="training step", ylabel="exact KL(pi || pi*_0.1)",
        title=f"exact DPO on {spec} (beta 0.1), {seeds} seeds",
    )  # fmt: skip
    ax.set_yscale("log")
    p2 = out / "transformer-dpo-kl.png"
    save_figure(ax, p2)
    summary = {f"{loss} / {k}": r.summary() for loss, rs in runs.items() for k, r in rs.items()}
    return {"paths": [str(p1), str(p2)], "summary": summary}


def dual_alpha_figure(
    path="docs/figures/dual-alpha-to-zero.png", *, mdp: str = "riverswim:S=6,gamma=0.9"
):
    """The tutorial figure: ``J_LP - J(alpha)`` against alpha for KL, chi^2, half chi^2 and TV
    (``tl.run("dual-v", ...)`` at 13 alphas each), with the slope-1 guides."""
    from theorylab.experiment import run
    from theorylab.plotting import new_axes, plot_regularised_values, save_figure

    ax = new_axes()
    alphas = list(np.logspace(-5, 0, 11))
    out = {}
    for f in ("kl", "chi2", "half-chi2", "tv"):
        res = run("dual-v", mdp, alpha=alphas, f=f)
        plot_regularised_values(res.alphas, res.primal, res.lp_value, ax=ax)
        ax.lines[-2].set_label(f"J_LP - J(alpha), f = {f}")
        ax.lines[-1].set_label(None)
        out[f] = res
    ax.legend(fontsize="small")
    ax.set_title(f"{mdp}: J_LP - J(alpha) = O(alpha)")
    save_figure(ax, path)
    return path, out


PR_LSVI_MDP = "linear-simplex:S=6,A=3,d=4,H=4,stationary=true,rewards=cube"


def pr_lsvi_tradeoff_figure(
    path="docs/figures/pr-lsvi-tradeoff.png",
    *,
    mdp: str = PR_LSVI_MDP,
    episodes: int = 3000,
    seeds: int = 8,
    thresholds=(0.05, 0.1, 0.2, 0.4, 0.8),
):
    """PR-LSVI's regret / query trade-off (docs/algorithms/pr-lsvi.md): ``tl.run("pr-lsvi",
    ...)`` at each query threshold, final regret against final queries."""
    from theorylab.experiment import run
    from theorylab.plotting import plot_regret_query_tradeoff, save_figure

    runs = {t: run("pr-lsvi", mdp, episodes=episodes, seeds=seeds, threshold=t) for t in thresholds}
    ax = plot_regret_query_tradeoff(
        list(thresholds),
        np.stack([runs[t].curve[:, -1] for t in thresholds]),
        np.stack([runs[t].queries[:, -1] for t in thresholds]),
        title=f"PR-LSVI, K = {episodes}, {seeds} seeds: regret against queries",
    )
    save_figure(ax, path)
    return path, runs
