"""CVaR-ELA's whole-run compiled loop (``algorithms/online/whole_run_cvar_ela.py``) reproduces the
Python loop: the exact regret and the returns bit for bit, the value estimates to round-off (the
Python agent's EM, Sigma^{-1} and widths go through BLAS / LAPACK, whose order belongs to numpy's
build), the counts and the selected candidate exactly and mu to round-off, on several instances,
seeds, tau and bonus scales; segments change nothing; each mutation of a constant or of the
environment stream fails the comparison; a mutation of the Python agent sends ``loop="auto"`` to
the Python loop. Resumption after an interrupt: tests/test_resume_exact.py (its CASES)."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.objectives import objective_of
from theorylab.algorithms.online.whole_run import make_compiled_loop, run_whole
from theorylab.algorithms.online.whole_run_cvar_ela import CVaRELALoop
from theorylab.algorithms.registry import get_algorithm, make_agent
from theorylab.algorithms.risk.augmented_policy import budget_rollout
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices

SEED = 5
ROUND_OFF = 1e-12

CASES = [  # (MDP spec, params): the claims' instances, a larger bonus, tau = 1, H = 3
    ("cvar-safe-risky:H=2", {"tau": 0.25, "c": 0.1}),
    ("cvar-safe-risky:p_bad=0.1,safe_reward=0.5,H=2", {"tau": 0.05, "c": 0.1}),
    ("cvar-safe-risky:H=2", {"tau": 1.0, "c": 0.1, "em_iters": 3}),
    ("cvar-safe-risky:H=3", {"tau": 0.3, "c": 0.05, "lam": 2.0}),
]


def _class(spec: str) -> np.ndarray:
    """The 2-map class of ``cvar-ela-lowrank``, written out: phi* = P and a map whose RISKY row
    swaps the good and the bad outcome."""
    P = make(spec).dense_P()  # (S, A, S)
    wrong = P.copy()
    wrong[0, 0] = P[0, 0][[0, 1, 3, 2]]
    return np.stack([P, wrong])  # (2, S, A, d = S)


def _params(spec: str, params: dict) -> dict:
    return {"feature_class": _class(spec), **params}


def _agent(spec: str, params: dict, episodes: int, seeds: int = 3):
    mdp = make(spec)
    return make_agent("cvar-ela", env_spec(mdp, known_rewards=True), seeds,
                      generators(SEED, seed_indices(seeds), AGENT_STREAM), episodes=episodes,
                      **_params(spec, params))  # fmt: skip


def _loop(spec: str, params: dict, episodes: int, seeds: int = 3) -> CVaRELALoop:
    mdp = make(spec)
    agent = _agent(spec, params, episodes, seeds)
    full = {"episodes": episodes, **_params(spec, params)}
    v_star = objective_of(get_algorithm("cvar-ela"), full).optimal_value(mdp)
    return make_compiled_loop(agent, mdp, v_star, generators(SEED, seed_indices(seeds), ENV_STREAM))


def _python(spec: str, params: dict, episodes: int, seeds: int = 3):
    return tl.run("cvar-ela", spec, episodes=episodes, seeds=seeds, seed=SEED, loop="python",
                  **_params(spec, params))  # fmt: skip


def _agree(ref, out) -> bool:
    return (
        np.array_equal(ref.regret, out["regret"])
        and np.array_equal(ref.returns, out["returns"])
        and np.allclose(ref.value_estimates, out["estimates"], rtol=ROUND_OFF, atol=ROUND_OFF)
    )


@pytest.mark.parametrize(("spec", "params"), CASES)
def test_agrees_with_the_python_loop(spec, params):
    episodes = 200
    ref = _python(spec, params, episodes)
    loop = _loop(spec, params, episodes)
    assert isinstance(loop, CVaRELALoop)
    out = run_whole(loop, episodes, segment=37)
    assert np.unique(ref.regret).size > 1  # the played policy changed during the run
    assert np.array_equal(ref.regret, out["regret"])
    assert np.array_equal(ref.returns, out["returns"])
    np.testing.assert_allclose(out["estimates"], ref.value_estimates, rtol=ROUND_OFF,
                               atol=ROUND_OFF)  # fmt: skip


def test_learner_state_and_plan_agree_with_the_python_agent():
    # counts and the selected candidate exactly, mu to round-off; the kernel's plan from the
    # agent's state gives the agent's actions and budget, and its estimate to round-off
    spec, params = CASES[0]
    episodes, seeds = 120, 3
    mdp = make(spec)
    agent = _agent(spec, params, episodes, seeds)
    env_rngs = generators(SEED, seed_indices(seeds), ENV_STREAM)
    for _ in range(episodes):
        agent.update(budget_rollout(mdp, agent.policy().as_batch(), env_rngs))
    loop = _loop(spec, params, episodes, seeds)
    loop.advance(episodes)
    st = loop.state
    assert np.array_equal(agent.counts, st["counts"])
    assert np.array_equal(agent.selected, st["selected"])
    np.testing.assert_allclose(st["mu"], agent.mu, rtol=1e-10, atol=1e-13)
    pol = agent.policy()
    for b in range(seeds):
        act, j1, est = loop.plan(b)
        assert np.array_equal(act, pol.actions[b]) and j1 == int(pol.initial_budget[b])
        assert est == pytest.approx(float(agent.value_estimate()[b]), rel=ROUND_OFF, abs=ROUND_OFF)
    assert [g.bit_generator.state for g in env_rngs] == [
        g.bit_generator.state for g in loop.env_rngs
    ]


@pytest.mark.parametrize("n_iter", [1, 4])
def test_em_seed_is_em_steps(n_iter):
    # the kernel's EM against the library's (theorylab.algorithms.linear.mle.em_steps) on a
    # random simplex class with mixed rows (on the claims' classes EM is exact in one step, so
    # em_iters is not observable there); one iteration fewer is the negative control
    from theorylab.algorithms.linear.mle import em_steps
    from theorylab.algorithms.online.whole_run_cvar_ela import em_seed

    rng = np.random.default_rng(3)
    M, SA, d, S, H = 3, 6, 3, 4, 2
    Phi = rng.dirichlet(np.ones(d), size=(M, SA))  # (M, SA, d)
    mu0 = rng.dirichlet(np.ones(S), size=(1, H, M, d))  # (1, H, M, d, S)
    counts = rng.integers(0, 4, size=(1, H, SA, S)).astype(float)  # (1, H, SA, S)
    want_mu, want_ll = em_steps(Phi, mu0, counts, n_iter)
    for k, ok in ((n_iter, True), (n_iter - 1, False)):
        mu = mu0[0].copy()
        ll = np.empty((H, M))
        em_seed(Phi, mu, counts[0], k, np.empty((SA, S)), np.empty((SA, S)), ll)
        close = np.allclose(mu, want_mu[0], rtol=1e-12, atol=1e-15)
        close = close and np.allclose(ll, want_ll[0], rtol=1e-12)
        assert close is ok


@pytest.mark.parametrize(
    "mutation", ["alpha x 1.01", "lam + 1e-3", "tau x 1.01", "other env stream"]
)
def test_negative_controls_fail_the_comparison(mutation):
    spec, params = CASES[0]
    episodes = 200
    ref = _python(spec, params, episodes)
    assert _agree(ref, run_whole(_loop(spec, params, episodes), episodes))
    loop = _loop(spec, params, episodes)
    args = list(loop.agent_args)  # (Phi, alpha, lam, tau, em_iters, ...)
    if mutation == "alpha x 1.01":
        args[1] *= 1.01
    elif mutation == "lam + 1e-3":
        args[2] += 1e-3
    elif mutation == "tau x 1.01":
        args[3] *= 1.01
    else:
        loop.env_rngs = generators(SEED + 1, seed_indices(3), ENV_STREAM)
    loop.agent_args = tuple(args)
    assert not _agree(ref, run_whole(loop, episodes))


def test_tl_run_auto_compiles_long_runs_and_a_mutated_agent_is_not_compiled():
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.algorithms.online.whole_run import compiled_variant
    from theorylab.validations.controls import get_control

    spec, params = CASES[0]
    kw = {"seed": SEED, **_params(spec, params)}
    long = tl.run("cvar-ela", spec, episodes=2_000, seeds=10, **kw)
    assert long.config["loop"] == "compiled"
    assert compiled_variant(_agent(spec, params, 10)) is not None
    for name in ("cvar-ela-plans-risk-neutral", "cvar-ela-bonus-without-inverse-tau"):
        with get_control(name).applied(None):  # the kernel cannot see the patch
            assert compiled_variant(_agent(spec, params, 10)) is None
            assert tl.run("cvar-ela", spec, episodes=2_000, seeds=10, **kw).config["loop"] == (
                "python"
            )
            with pytest.raises(ValueError, match="no whole-run kernel"):
                tl.run("cvar-ela", spec, episodes=10, seeds=1, loop="compiled", **kw)
        assert compiled_variant(_agent(spec, params, 10)) is not None


def test_loop_refuses_another_agent_and_a_used_agent():
    spec, params = CASES[0]
    mdp = make(spec)
    agent = _agent(spec, params, 10)
    rngs = generators(SEED, seed_indices(3), ENV_STREAM)
    agent.update(budget_rollout(mdp, agent.policy().as_batch(), rngs))
    with pytest.raises(ValueError, match="freshly built agent"):
        CVaRELALoop(agent, mdp, 0.5, generators(SEED, seed_indices(3), ENV_STREAM))
    with pytest.raises(ValueError, match="2 environment generators for 3 seeds"):
        CVaRELALoop(_agent(spec, params, 10), mdp, 0.5,
                    generators(SEED, seed_indices(2), ENV_STREAM))  # fmt: skip


def test_bench_long_cvar_ela_rows(monkeypatch):
    from theorylab.bench import long
    from theorylab.bench.long import bench_long_cvar_ela, format_table

    monkeypatch.setattr(long, "_row_in_child", long.time_run)  # in this process (no imports)
    python, compiled = bench_long_cvar_ela(quick=True)
    assert python["method"] == "cvar-ela python/numpy" and python["per_cpu_s"] > 0
    assert compiled["method"] == "cvar-ela compiled 1 thread"
    assert compiled["ratio"] == compiled["per_cpu_s"] / python["per_cpu_s"]
    assert "cvar-ela compiled 1 thread" in format_table([python, compiled])


@pytest.mark.parametrize("forget", [None, "mu", "counts", "carried_cvar_pi"])
def test_restore_continues_exactly_and_a_forgotten_array_departs(forget):
    # snapshot after 60 episodes, restore into a fresh loop, run 60 more: the uninterrupted
    # run's episodes bit for bit; a checkpoint that forgot an array (left at its initial value)
    # departs from it (the negative control of tests/test_resume_exact.py's cvar-ela case).
    # Forgetting `selected` or `carried_act` is invisible here: their initial values (candidate
    # 0 = phi*, and a plan recomputed in full every episode) are what the run holds
    spec, params = CASES[0]
    whole = _loop(spec, params, 120)
    first, rest = whole.advance(60), whole.advance(60)
    part = _loop(spec, params, 120)
    part.advance(60)
    snap = part.snapshot()
    fresh = _loop(spec, params, 120)
    if forget is not None:
        snap[forget] = fresh.snapshot()[forget].copy()
    fresh.restore(snap)
    out = fresh.advance(60)
    same = all(np.array_equal(rest[name], out[name]) for name in rest)
    assert same is (forget is None)
    assert np.unique(first["regret"]).size > 1
