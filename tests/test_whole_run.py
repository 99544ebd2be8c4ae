"""The whole-run compiled loop reproduces the episode-by-episode Python loop.

* bit for bit (``np.array_equal`` on exact regret, returns and value estimates) wherever the
  reference's products are left-to-right sums: the true model stored sparse (scipy CSR) and the
  empirical model on its CSR path (``storage="sparse"``, or S >= 64), for UCBVI-CH/BF/AJKS,
  greedy, epsilon-greedy (constant and inv-sqrt schedules, epsilon = 0) and optimistic
  Q-learning (Hoeffding, Bernstein), known and estimated rewards,
  Bernoulli rewards, a spread initial distribution, stage-dependent transitions and both
  tie-breaking rules;
* to round-off on dense models (the reference's BLAS products sum in a CPU-dependent order);
* CVaR-UCBVI (its own kernel, ``whole_run_cvar.py``): bit for bit on sparse true models
  (Bernstein and Hoeffding bonuses, several tau, deterministic and Bernoulli rewards,
  stage-dependent transitions, a coarser budget grid eta than the rewards'), to round-off in the
  exact regret on dense ones; each configuration with its own negative control;
* segments, checkpoints and resumption change nothing;
* negative controls: a one-ulp change of a constant (the bonus scale) or the wrong random
  stream makes the comparison fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from theorylab.algorithms.objectives import objective_of
from theorylab.algorithms.online.whole_run import (
    CompiledLoop,
    compiled_variant,
    make_compiled_loop,
    run_whole,
)
from theorylab.algorithms.online.whole_run_kernel import pairwise_sum
from theorylab.algorithms.registry import get_algorithm, make_agent
from theorylab.experiment import env_spec, run
from theorylab.mdps import TabularMDP, make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices

SEED = 5
LEAST = "least-visited"


def _spread_mdp(stage_dependent: bool, bernoulli: bool) -> TabularMDP:
    """S = 6, A = 3, H = 4, mu0 spread over 4 states (so the mu0 sums are not trivial)."""
    rng = np.random.default_rng(17)
    S, A, H = 6, 3, 4
    shape = (H, S, A, S) if stage_dependent else (S, A, S)
    P = rng.dirichlet(np.full(S, 0.5), size=shape[:-1])
    R = rng.random((S, A))
    mu0 = np.array([0.1, 0.2, 0.3, 0.4, 0.0, 0.0])
    return TabularMDP(
        P, R, mu0, horizon=H, reward_model="bernoulli" if bernoulli else "deterministic"
    )


def _compiled(algorithm, mdp, episodes, seeds, segment, known_rewards=True, **params):
    idx = seed_indices(seeds)
    env = env_spec(mdp, known_rewards=known_rewards)
    entry = get_algorithm(algorithm)
    if "episodes" in entry.parameters():  # as the runner does: K enters the confidence widths
        params = {"episodes": episodes, **params}
    agent = make_agent(algorithm, env, len(idx), generators(SEED, idx, AGENT_STREAM), **params)
    env_rngs = generators(SEED, idx, ENV_STREAM)
    v_star = objective_of(entry, params).optimal_value(mdp)  # the algorithm's yardstick
    return make_compiled_loop(agent, mdp, v_star, env_rngs)


def _both(algorithm, mdp, episodes=240, seeds=3, segment=70, known_rewards=True, **params):
    ref = run(
        algorithm, mdp, episodes, seeds, seed=SEED, known_rewards=known_rewards, loop="python",
        **params,
    )  # fmt: skip
    loop = _compiled(algorithm, mdp, episodes, seeds, segment, known_rewards, **params)
    return ref, run_whole(loop, episodes, segment=segment)


ORDERED_CASES = [  # (algorithm, MDP, params, known rewards)
    ("ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", {"storage": "sparse"}, True),
    (
        "ucbvi-hoeffding",
        "riverswim:S=6,H=12",
        {"storage": "sparse", "tie_break": "least-visited"},
        True,
    ),  # fmt: skip
    ("ucbvi-bernstein", "random:S=5,A=3,H=5,seed=11", {"storage": "sparse"}, True),
    ("ucbvi-bernstein", "spread", {"storage": "sparse"}, False),
    ("ucbvi-ajks", "spread-stage", {"storage": "sparse"}, True),
    (
        "ucbvi-ajks",
        "spread-bernoulli",
        {"storage": "sparse", "tie_break": "least-visited"},
        False,
    ),  # fmt: skip
    ("ucbvi-hoeffding", "random-sparse:S=70,A=2,H=6,seed=3", {}, True),
    ("greedy", "random-sparse:S=70,A=2,H=6,seed=3", {"unvisited_value": 6.0}, True),
    ("greedy", "random-sparse:S=64,A=3,H=5,seed=1", {}, False),
    ("optimistic-q-hoeffding", "spread-bernoulli", {"c": 0.5}, True),
    ("optimistic-q-bernstein", "riverswim:S=6,H=12", {}, True),
    ("optimistic-q-bernstein", "spread", {"c1": 0.2, "c2": 1.0}, True),
    ("epsilon-greedy", "random-sparse:S=70,A=2,H=6,seed=3", {"epsilon": 0.2}, True),
    (
        "epsilon-greedy",
        "random-sparse:S=64,A=3,H=5,seed=1",
        {"epsilon": 2.0, "schedule": "inv-sqrt", "unvisited_value": 5.0},
        False,
    ),  # fmt: skip
    ("epsilon-greedy", "random-sparse:S=64,A=3,H=5,seed=1", {"epsilon": 0.0}, True),
    ("maxwp", "riverswim:S=6,H=12", {}, True),
    ("maxwp", "spread-bernoulli", {}, False),
    ("icvar-rm", "riverswim:S=6,H=12", {"alpha": 0.3, "bonus_scale": 0.02}, True),
    ("icvar-rm", "spread", {"alpha": 0.5, "bonus_scale": 0.05}, False),
    ("icvar-rm", "random-sparse:S=12,A=2,H=4,seed=2", {"alpha": 0.2, "bonus_scale": 0.1}, True),
]


def _cvar_stage_mdp() -> TabularMDP:
    """S = 5, A = 3, H = 4: stage-dependent P, rewards on the grid 1/4 (several budget
    increments per action), mu0 spread over 4 states."""
    rng = np.random.default_rng(3)
    S, A, H = 5, 3, 4
    P = rng.dirichlet(np.full(S, 0.5), size=(H, S, A))
    R = rng.integers(0, 5, (H, S, A)) / 4
    return TabularMDP(P, R, np.array([0.1, 0.2, 0.3, 0.4, 0.0]), horizon=H)


def _random_bernoulli_mdp() -> TabularMDP:
    """``random:S=5,A=3,H=4,seed=11`` paying Bernoulli rewards (exact on the lattice eta = 1)."""
    base = make("random:S=5,A=3,H=4,seed=11")
    return TabularMDP(base.P, base.R, base.mu0, horizon=4, reward_model="bernoulli")


def _mdp(name: str) -> TabularMDP:
    if name == "cvar-stage":
        return _cvar_stage_mdp().to_sparse()
    if name == "random-bernoulli":
        return _random_bernoulli_mdp().to_sparse()
    if name == "spread":
        return _spread_mdp(False, False).to_sparse()
    if name == "spread-stage":
        return _spread_mdp(True, False).to_sparse()
    if name == "spread-bernoulli":
        return _spread_mdp(False, True).to_sparse()
    return make(name).to_sparse()


@pytest.mark.parametrize(("algorithm", "mdp", "params", "known"), ORDERED_CASES)
def test_bit_identical_to_the_python_loop(algorithm, mdp, params, known):
    ref, out = _both(algorithm, _mdp(mdp), known_rewards=known, **params)
    assert np.array_equal(ref.regret, out["regret"])
    assert np.array_equal(ref.returns, out["returns"])
    assert np.array_equal(ref.value_estimates, out["estimates"])
    assert ref.regret[:, -40:].std() > 0 or ref.regret.max() > 0  # the run did something


def test_dense_models_agree_to_round_off():
    # dense true model and S < 64 dense empirical model: the reference multiplies with BLAS
    ref, out = _both("ucbvi-bernstein", make("random:S=5,A=3,H=5,seed=11"), episodes=200)
    np.testing.assert_allclose(out["regret"], ref.regret, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["estimates"], ref.value_estimates, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(out["returns"], ref.returns)


LINEAR_SPEC = "linear-simplex:S=5,A=3,d=3,H=5,seed=0,rewards=cube"  # the LSVI-UCB claims' MDP


def _resume_case(algorithm):
    if algorithm == "lsvi-ucb":
        mdp = make(LINEAR_SPEC)
        return mdp.to_sparse(), {"features": mdp.features, "c": 0.05}
    if algorithm == "cvar-ucbvi":
        return make("cvar-safe-risky:H=3").to_sparse(), {"tau": 0.25, "bonus_scale": 0.05}
    return make("riverswim:S=6,H=12").to_sparse(), {}


@pytest.mark.parametrize("algorithm", ["ucbvi-bernstein", "lsvi-ucb", "cvar-ucbvi"])
def test_segments_and_a_resumed_checkpoint_change_nothing(tmp_path, algorithm):
    mdp, kw = _resume_case(algorithm)
    whole = run_whole(_compiled(algorithm, mdp, 150, 2, 150, **kw), 150, segment=150)
    ident = {"algorithm": algorithm, "episodes": 150}
    first = _compiled(algorithm, mdp, 150, 2, 40, **kw)
    part = run_whole(first, 90, segment=40, checkpoint=tmp_path, run_id=ident)  # "interrupted"
    assert part["regret"].shape == (2, 90)
    assert sorted(p.name for p in (tmp_path / "segments").iterdir()) == [
        "000000.npz",
        "000001.npz",
        "000002.npz",
    ]
    resumed = _compiled(algorithm, mdp, 150, 2, 40, **kw)  # a fresh process would do this
    seen = []
    out = run_whole(
        resumed, 150, segment=40, checkpoint=tmp_path, run_id=ident,
        progress=lambda done, total, rate: seen.append(done),
    )  # fmt: skip
    assert seen == [90, 130, 150]  # the resumed start, then only the missing episodes ran
    for name in ("regret", "returns", "estimates"):
        assert np.array_equal(out[name], whole[name])
    assert np.unique(whole["regret"]).size > 1  # the policy changed during the run
    with pytest.raises(ValueError, match="holds a different run"):
        run_whole(
            _compiled(algorithm, mdp, 150, 2, 40, **kw), 150, segment=40,
            checkpoint=tmp_path, run_id={**ident, "episodes": 151},
        )  # fmt: skip


def test_negative_controls_fail_the_comparison():
    mdp = make("random:S=5,A=3,H=5,seed=11").to_sparse()
    kw = {"storage": "sparse", "bonus_scale": 0.05}  # small bonuses: Q below the cap H
    ref = run("ucbvi-bernstein", mdp, 200, 2, seed=SEED, loop="python", **kw)
    same = run_whole(_compiled("ucbvi-bernstein", mdp, 200, 2, 200, **kw), 200)
    assert np.array_equal(same["estimates"], ref.value_estimates)
    # a one-ulp change of a constant (the bonus scale) is detected
    ulp = {**kw, "bonus_scale": float(np.nextafter(0.05, 1.0))}
    wrong = run_whole(_compiled("ucbvi-bernstein", mdp, 200, 2, 200, **ulp), 200)
    assert not np.array_equal(wrong["estimates"], ref.value_estimates)
    # the agent's stream in place of the environment's is detected
    loop = _compiled("ucbvi-bernstein", mdp, 200, 2, 200, **kw)
    loop.env_rngs = generators(SEED, [0, 1], AGENT_STREAM)
    assert not np.array_equal(run_whole(loop, 200)["returns"], ref.returns)


def test_epsilon_greedy_negative_control_a_wrong_schedule_is_caught():
    mdp = make("random-sparse:S=64,A=3,H=5,seed=1").to_sparse()
    kw = {"epsilon": 2.0, "schedule": "inv-sqrt"}
    ref = run("epsilon-greedy", mdp, 120, 2, seed=SEED, loop="python", **kw)
    same = _compiled("epsilon-greedy", mdp, 120, 2, 120, **kw)
    assert np.array_equal(run_whole(same, 120)["regret"], ref.regret)
    wrong = _compiled("epsilon-greedy", mdp, 120, 2, 120, **kw)
    wrong.episodes_done = 1  # eps_{k+1} played in episode k: the schedule one episode late
    assert not np.array_equal(run_whole(wrong, 121)["regret"][:, :120], ref.regret)


def test_maxwp_on_a_dense_model_and_its_negative_control():
    # every MaxWP quantity is a min or one addition, so dense models agree bit for bit too
    mdp = _spread_mdp(False, False)
    ref, out = _both("maxwp", mdp, episodes=150, seeds=2)
    for name, got in (("regret", ref.regret), ("returns", ref.returns)):
        assert np.array_equal(got, out[name]), name
    assert np.array_equal(ref.value_estimates, out["estimates"])
    assert ref.regret[:, 0].max() > 0 and ref.regret[:, -1].max() == 0  # it learns (Thm. 4)
    # a one-ulp change of the known rewards is detected
    wrong = _compiled("maxwp", mdp, 150, 2, 150)
    r_known = np.nextafter(wrong.params[4], 2.0)
    wrong.params = (*wrong.params[:4], r_known, *wrong.params[5:])
    assert not np.array_equal(run_whole(wrong, 150)["estimates"], ref.value_estimates)


def test_icvar_rm_negative_control_one_ulp_of_alpha_is_caught():
    mdp = make("riverswim:S=6,H=12").to_sparse()
    kw = {"alpha": 0.3, "bonus_scale": 0.02}
    ref = run("icvar-rm", mdp, 150, 2, seed=SEED, loop="python", **kw)
    same = _compiled("icvar-rm", mdp, 150, 2, 150, **kw)
    assert np.array_equal(run_whole(same, 150)["estimates"], ref.value_estimates)
    wrong = _compiled("icvar-rm", mdp, 150, 2, 150, **kw)
    c_g = float(np.nextafter(wrong.params[8], 1.0))  # alpha of the empirical CVaR, one ulp up
    wrong.params = (*wrong.params[:8], c_g, *wrong.params[9:])
    assert not np.array_equal(run_whole(wrong, 150)["estimates"], ref.value_estimates)


# ------------------------------------------------------------------ CVaR-UCBVI
SAFE_RISKY = "cvar-safe-risky:H=3"
CVAR_CASES = [  # (MDP, params, negative control: what is mutated, the curve that must differ)
    (SAFE_RISKY, {"tau": 0.25}, "stream", "returns"),  # the paper's bonus: linear regret
    (SAFE_RISKY, {"tau": 0.25, "bonus_scale": 0.05}, "tau", "regret"),
    (SAFE_RISKY, {"tau": 0.6, "bonus": "hoeffding", "bonus_scale": 0.1}, "tau", "estimates"),
    ("cvar-stage", {"tau": 0.3, "bonus_scale": 0.05}, "range_constant", "estimates"),
    ("cvar-stage", {"tau": 0.3, "bonus_scale": 0.01, "eta": 0.5}, "bonus_scale", "estimates"),
    ("cvar-stage", {"tau": 0.7, "bonus": "hoeffding", "bonus_scale": 0.02, "eta": 0.75},
     "bonus_scale", "estimates"),
    ("random-bernoulli", {"tau": 0.25, "bonus_scale": 0.05}, "bonus_scale", "estimates"),
    ("random-bernoulli", {"tau": 0.4, "bonus_scale": 0.05, "eta": 0.5}, "stream", "returns"),
    (SAFE_RISKY + ",reward_model=bernoulli", {"tau": 0.5, "bonus_scale": 0.1}, "tau", "regret"),
]  # fmt: skip
CVAR_ARG = {"tau": 0, "bonus_scale": 2, "range_constant": 3}  # CVaRUCBVILoop.agent_args


def _mutated(loop, what: str, seeds: int):
    """The compiled loop with one negative-control mutation: a constant of the plan one ulp up
    (tau, also used by the exact CVaR, the bonus scale, the range constant) or the agent's
    random streams in place of the environment's."""
    if what == "stream":
        loop.env_rngs = generators(SEED, seed_indices(seeds), AGENT_STREAM)
        return loop
    args = list(loop.agent_args)
    args[CVAR_ARG[what]] = float(np.nextafter(args[CVAR_ARG[what]], np.inf))
    loop.agent_args = tuple(args)
    return loop


@pytest.mark.parametrize(("mdp", "params", "mutation", "curve"), CVAR_CASES)
def test_cvar_ucbvi_bit_identical_to_the_python_loop(mdp, params, mutation, curve):
    # 300 episodes x 3 seeds; the exact static CVaR of every played budget-augmented policy is
    # the regret; segments of 110 episodes
    model = _mdp(mdp)
    ref, out = _both("cvar-ucbvi", model, episodes=300, seeds=3, segment=110, **params)
    assert np.array_equal(ref.regret, out["regret"])
    assert np.array_equal(ref.returns, out["returns"])
    assert np.array_equal(ref.value_estimates, out["estimates"])
    assert np.unique(ref.regret).size > 1 or ref.regret.min() > 0  # the run did something
    # negative control: one ulp of a constant, or the wrong stream, is caught
    wrong = _mutated(_compiled("cvar-ucbvi", model, 300, 3, 110, **params), mutation, 3)
    got = run_whole(wrong, 300, segment=110)[curve]
    want = {"regret": ref.regret, "returns": ref.returns, "estimates": ref.value_estimates}
    assert not np.array_equal(got, want[curve])


@pytest.mark.parametrize(
    ("mdp", "params"),
    [
        ("icvar-lower-bound:n=2,alpha=0.25,eta=0.1,A=2,H=4", {"tau": 0.3}),  # J = 21
        ("cvar-stage", {"tau": 0.3, "eta": 0.5, "bonus_scale": 0.01}),  # coarser budget grid
        ("cvar-stage", {"tau": 0.7, "bonus": "hoeffding"}),
        ("random-bernoulli", {"tau": 0.25, "bonus_scale": 0.05}),  # two reward outcomes
    ],
)
def test_cvar_ucbvi_kernel_plan_and_exact_cvar_on_random_inputs(mdp, params):
    # beyond the states a run visits: the kernel's plan on random counts equals the agent's
    # (actions, initial budget and estimate, bit for bit), and its exact CVaR of random
    # budget-augmented policies equals StaticCVaR.policy_values (return_distribution + cvar)
    from theorylab.algorithms.risk import AugmentedPolicy, StaticCVaR

    model = _mdp(mdp)
    loop = _compiled("cvar-ucbvi", model, 300, 1, 300, **params)
    env = env_spec(model)
    rng = np.random.default_rng(0)
    objective = StaticCVaR(params["tau"])
    wrong = StaticCVaR(float(np.nextafter(params["tau"], 1.0)))
    caught = 0
    for _ in range(15):
        agent = make_agent("cvar-ucbvi", env, 1, None, episodes=300, **params)  # plans lazily
        counts = rng.integers(0, 4, agent.n_next.shape) * (rng.random(agent.n_next.shape) < 0.5)
        agent.n_next[...] = counts
        agent.n[...] = counts.sum(-1)
        loop.state["n"][...], loop.state["n_next"][...] = agent.n, agent.n_next
        act, j1, est = loop.plan(0)
        pol = agent.policy()
        assert np.array_equal(act, pol.actions[0]) and j1 == pol.initial_budget[0]
        assert est == agent.value_estimate()[0]
        J = agent.lattice.n_levels
        actions = rng.integers(0, model.A, (model.horizon, model.S, J))
        budget = int(rng.integers(0, J))
        ref = objective.policy_values(model, AugmentedPolicy(actions, budget, agent.lattice))[0]
        assert loop.static_cvar(actions, budget) == ref
        caught += loop.static_cvar(actions, budget) != wrong.policy_values(
            model, AugmentedPolicy(actions, budget, agent.lattice)
        )[0]  # fmt: skip
    assert caught > 0  # negative control: tau one ulp off changes the exact CVaR


def test_the_cvar_upper_tail_mutation_still_reaches_long_runs():
    # the mutation patches the Python CVaR, which the compiled kernel does not call: under it a
    # run that loop="auto" would compile (20,000 seed-episodes) takes the Python loop instead
    import theorylab as tl
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.controls import get_control

    kw = {"seed": SEED, "tau": 0.25, "bonus_scale": 0.05}
    plain = tl.run("cvar-ucbvi", SAFE_RISKY, 2_500, 8, **kw)
    with get_control("cvar-upper-tail").applied(None):
        mutated = tl.run("cvar-ucbvi", SAFE_RISKY, 2_500, 8, **kw)
    assert (plain.config["loop"], mutated.config["loop"]) == ("compiled", "python")
    assert not np.allclose(plain.regret, mutated.regret)  # the wrong tail is scored


@pytest.mark.parametrize("name", ["cvar-safe-risky:H=3", "random-bernoulli"])
def test_cvar_ucbvi_on_dense_models_agrees_to_round_off(name):
    # a dense true model: the reference pushes the return law through Psel.T @ flat, a BLAS
    # product whose summation order is the CPU's, so the exact regret agrees to round-off; the
    # plan (left-to-right sums), hence the value estimates, and the trajectories stay bit for bit
    model = make(name) if name != "random-bernoulli" else _random_bernoulli_mdp()
    assert not model.sparse
    kw = {"tau": 0.25, "bonus_scale": 0.05}
    ref, out = _both("cvar-ucbvi", model, episodes=300, seeds=3, segment=110, **kw)
    np.testing.assert_allclose(out["regret"], ref.regret, rtol=1e-12, atol=1e-12)
    assert np.array_equal(ref.returns, out["returns"])
    assert np.array_equal(ref.value_estimates, out["estimates"])
    # negative control: the wrong stream changes the trajectories, and the regret beyond 1e-12
    wrong = _mutated(_compiled("cvar-ucbvi", model, 300, 3, 110, **kw), "stream", 3)
    bad = run_whole(wrong, 300, segment=110)
    assert not np.array_equal(bad["returns"], ref.returns)
    assert not np.allclose(bad["regret"], ref.regret, rtol=1e-12, atol=1e-12)


def test_cvar_ucbvi_tl_run_compiled_and_auto():
    import theorylab as tl

    mdp = make(SAFE_RISKY).to_sparse()
    kw = {"seed": SEED, "tau": 0.25, "bonus_scale": 0.05}
    py = tl.run("cvar-ucbvi", mdp, 200, 2, loop="python", **kw)
    cc = tl.run("cvar-ucbvi", mdp, 200, 2, loop="compiled", segment=64, **kw)
    assert (py.config["loop"], cc.config["loop"]) == ("python", "compiled")
    assert cc.config["objective"] == py.config["objective"] == "static CVaR (tau=0.25)"
    for name in ("regret", "returns", "value_estimates"):
        assert np.array_equal(getattr(py, name), getattr(cc, name)), name
    assert tl.run("cvar-ucbvi", mdp, 7_000, 3, **kw).config["loop"] == "compiled"  # 21,000
    with pytest.raises(ValueError, match="has no torch whole-run loop"):
        tl.run("cvar-ucbvi", mdp, 10, 1, loop="torch", **kw)
    with pytest.raises(tl.InvalidPolicyError, match="reward_model"):  # as the Python loop
        tl.run(
            "cvar-ucbvi", "cvar-safe-risky:reward_model=bernoulli", 10, 1, loop="compiled",
            tau=0.5, reward_model="deterministic",
        )  # fmt: skip


def test_agents_without_a_kernel_are_refused():
    mdp = make("riverswim:S=6,H=12")
    env = env_spec(mdp)
    agent = make_agent("psrl", env, 1, generators(0, [0], AGENT_STREAM), episodes=5)
    assert compiled_variant(agent) is None
    with pytest.raises(ValueError, match="has no whole-run kernel"):
        CompiledLoop(agent, mdp, 1.0, generators(0, [0], ENV_STREAM))


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 700), lo=st.integers(0, 3), scale=st.floats(1e-3, 1e3))
def test_pairwise_sum_is_numpys_sum(n, lo, scale):
    x = np.random.default_rng(n).random(n + lo + 2) * scale
    assert pairwise_sum(x, lo, n) == x[lo : lo + n].sum()


# ------------------------------------------------------------------ tl.run and the CLI
def test_tl_run_loops_agree_and_auto_picks_the_kernel_for_long_runs():
    import theorylab as tl

    mdp = make("random:S=5,A=3,H=5,seed=11").to_sparse()
    kw = {"seed": SEED, "storage": "sparse"}
    py = tl.run("ucbvi-hoeffding", mdp, 300, 2, loop="python", **kw)
    cc = tl.run("ucbvi-hoeffding", mdp, 300, 2, loop="compiled", segment=128, **kw)
    assert (py.config["loop"], cc.config["loop"]) == ("python", "compiled")
    assert np.array_equal(py.regret, cc.regret) and np.array_equal(py.returns, cc.returns)
    assert np.array_equal(py.value_estimates, cc.value_estimates)
    assert tl.run("ucbvi-hoeffding", mdp, 300, 2, **kw).config["loop"] == "python"  # short
    long = tl.run("ucbvi-hoeffding", mdp, 10_000, 2, **kw)  # 20,000 seed-episodes
    assert long.config["loop"] == "compiled"
    assert np.array_equal(long.regret[:, :300], py.regret)  # K enters L: same K, same numbers
    with pytest.raises(ValueError, match="has no whole-run kernel"):
        tl.run("psrl", mdp, 10, 1, loop="compiled")
    with pytest.raises(ValueError, match="loop must be one of"):
        tl.run("ucbvi-hoeffding", mdp, 10, 1, loop="fast")


def test_cli_long_run_summaries_stay_small(tmp_path, capsys):
    import csv
    import json

    from theorylab.cli import main
    from theorylab.results import load_result

    out_json, out_csv = tmp_path / "run.json", tmp_path / "run.csv"
    argv = ["run", "ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", "--episodes", "30000"]
    argv += ["--seeds", "2", "--json", str(out_json), "--csv", str(out_csv), "--no-progress"]
    assert main([*argv, "--save", str(tmp_path / "stored")]) == 0
    err = capsys.readouterr().err  # the thinning is said, with where the full curves are
    assert "log-spaced episodes of 30,000 per seed" in err and "--resolution full" in err
    full = load_result(tmp_path / "stored").to_frame(resolution="full")
    assert len(full["episode"]) == 2 * 30_000
    d = json.loads(out_json.read_text())
    assert d["config"]["loop"] == "compiled"
    assert d["K_grid"][0] == 1 and d["K_grid"][-1] == 30_000 and len(d["K_grid"]) < 100
    assert len(d["cumulative_regret"]) == 2 and len(d["cumulative_regret"][0]) == len(d["K_grid"])
    assert d["null_regret_per_episode"] > 0 and "burn_in_end" in d
    with open(out_csv) as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 1 + 2 * len(d["K_grid"])


# ------------------------------------------------------------------ the incremental plan
@pytest.mark.parametrize(
    ("algorithm", "mdp", "params"),
    [
        ("ucbvi-hoeffding", "riverswim:S=12,H=10", {"bonus_scale": 0.02}),  # V changes
        ("ucbvi-hoeffding", "riverswim:S=12,H=10", {"tie_break": LEAST}),  # Q at the cap H
        ("ucbvi-ajks", "spread-stage", {"bonus_scale": 0.1}),
        ("greedy", "random-sparse:S=70,A=2,H=6,seed=3", {"unvisited_value": 6.0}),
        ("optimistic-q-hoeffding", "riverswim:S=12,H=10", {"c": 0.1}),
    ],
)
def test_incremental_plan_and_evaluation_equal_full_ones(algorithm, mdp, params):
    # the plan kept up to date pair by pair, and the evaluation redone only from the last step
    # whose action changed, equal the full plan and evaluation every episode: same curves, same
    # state, and the stored V^pi is the exact value of the current policy
    from theorylab.algorithms.planning import evaluate_policies

    model = _mdp(mdp)
    fast = _compiled(algorithm, model, 150, 3, 150, **params)
    full = _compiled(algorithm, model, 150, 3, 150, **params)
    full.incremental = False
    a, b = run_whole(fast, 150, segment=50), run_whole(full, 150, segment=50)
    for name in ("regret", "returns", "estimates"):
        assert np.array_equal(a[name], b[name]), name
    for name in ("Q", "V", "pol"):
        assert np.array_equal(fast.state[name], full.state[name]), name
    played = fast.state["pol"].copy()  # the policy of episode 151
    fast.advance(1)
    assert np.array_equal(fast._vpi, evaluate_policies(model, played, batched=True))
    assert np.unique(a["regret"]).size > 1  # the policy changed during the run


# ------------------------------------------------------------------ LinUCB
def test_linucb_agrees_to_round_off_with_identical_rounds():
    # the Python agent multiplies through numpy's matmul (order set by the build and CPU): the
    # UCBs agree to 1e-12, the arms played, rewards and exact regret exactly
    import theorylab as tl
    from theorylab.algorithms.online.whole_run_linucb import LinUCBLoop

    for spec in ("linear-bandit:d=4,A=12,seed=1", "linear-bandit:d=3,A=5,seed=4"):
        mdp = make(spec)
        ref = run("linucb", mdp, 300, 3, seed=SEED, loop="python")
        out = tl.run("linucb", mdp, 300, 3, seed=SEED, loop="compiled", segment=110)
        assert out.config["loop"] == "compiled"
        assert np.array_equal(ref.returns, out.returns)
        assert np.array_equal(ref.regret, out.regret)
        np.testing.assert_allclose(out.value_estimates, ref.value_estimates, rtol=1e-12, atol=0)
        assert ref.regret[:, :50].mean() > ref.regret[:, -50:].mean()  # it learns
    # negative control: a 1% larger confidence radius changes the arms played
    idx = seed_indices(3)
    env = env_spec(mdp)
    agent = make_agent("linucb", env, 3, generators(SEED, idx, AGENT_STREAM), scale=1.01)
    loop = LinUCBLoop(agent, mdp, ref.optimal_value, generators(SEED, idx, ENV_STREAM))
    assert not np.array_equal(run_whole(loop, 300)["regret"], ref.regret)


# ------------------------------------------------------------------ LSVI-UCB
LSVI_CASES = [  # (MDP, params, explicit features): Q below the cap H, so the values move
    (LINEAR_SPEC, {"c": 0.1}, True),  # the claims' held-out linear MDP, d = 3
    (LINEAR_SPEC, {"c": 0.02}, True),
    ("random:S=3,A=2,H=3,seed=11", {"c": 0.05}, False),  # one-hot features, d = 6
    ("riverswim:S=4,H=6", {"beta": 0.5}, False),  # one-hot, d = 8: numpy's pairwise sums
]


def _lsvi_python(mdp, episodes, seeds, targets, **params):
    """The runner's episode loop, written out to record each episode's policy and keep the
    agent (its statistics after the run)."""
    from theorylab.algorithms.objectives import BackendRiskNeutral
    from theorylab.backends import get_backend

    idx = seed_indices(seeds)
    agent = make_agent(
        "lsvi-ucb", env_spec(mdp), len(idx), generators(SEED, idx, AGENT_STREAM),
        episodes=episodes, targets=targets, **params,
    )  # fmt: skip
    env_rngs = generators(SEED, idx, ENV_STREAM)
    objective = BackendRiskNeutral(get_backend("numpy"))
    v_star = objective.optimal_value(mdp)
    curves = {name: np.empty((len(idx), episodes)) for name in ("regret", "returns", "estimates")}
    policies = []
    for k in range(episodes):
        pi = agent.policy()
        policies.append(pi)
        curves["estimates"][:, k] = agent.value_estimate()
        curves["regret"][:, k] = v_star - objective.policy_values(mdp, pi)
        traj = objective.rollout(mdp, pi, env_rngs)
        curves["returns"][:, k] = traj.returns()
        agent.update(traj)
    return agent, curves, np.stack(policies, axis=1)  # (B, K, H, S)


def _lsvi_agree(ref: dict, out: dict) -> bool:
    """The agreement the kernel promises: identical regret and returns (the actions, hence the
    trajectories, are identical), value estimates to 1e-12."""
    return (
        np.array_equal(ref["regret"], out["regret"])
        and np.array_equal(ref["returns"], out["returns"])
        and np.allclose(out["estimates"], ref["estimates"], rtol=1e-12, atol=1e-12)
    )


@pytest.mark.parametrize(("spec", "params", "explicit"), LSVI_CASES)
@pytest.mark.parametrize("targets", ["statistics", "history"])
def test_lsvi_ucb_agrees_with_the_python_loop(spec, params, explicit, targets):
    # the Python agent multiplies through numpy's matmul (order and FMA set by the build and the
    # CPU): values agree to round-off, the policy of every episode, the trajectories, the
    # returns and the exact regret exactly (whole_run_lsvi's docstring)
    base = make(spec)
    mdp = base.to_sparse()  # scipy's CSR products: the exact regret sums as the kernel does
    if explicit:
        params = {**params, "features": base.features}
    K, B = 300, 3
    agent, ref, policies = _lsvi_python(mdp, K, B, targets, **params)
    loop = _compiled("lsvi-ucb", mdp, K, B, 1, **params)
    assert type(loop).__name__ == "LSVIUCBLoop"
    played = np.empty_like(policies)
    parts = []
    for k in range(K):  # one episode a call: the policy played in each episode
        played[:, k] = loop.state["pol"]
        parts.append(loop.advance(1))
    out = {name: np.concatenate([p[name] for p in parts], axis=1) for name in ref}
    assert np.array_equal(played, policies)
    assert _lsvi_agree(ref, out)
    assert np.unique(policies.reshape(B, K, -1), axis=1).shape[1] > 1  # the policy changed
    assert ref["estimates"].min() < float(mdp.horizon)  # not every value at the cap
    # the data each seed saw: the target statistics are sums in the same order (bit for bit)
    if targets == "statistics":
        assert np.array_equal(loop.state["M"], agent.M)
        assert np.array_equal(loop.state["b_r"], agent.b_r)
    np.testing.assert_allclose(loop.state["Linv"], agent.Lambda_inv, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(loop.state["Q"], agent.Q, rtol=1e-12, atol=1e-12)
    # one segment gives the same numbers as one episode a call
    whole = run_whole(_compiled("lsvi-ucb", mdp, K, B, K, **params), K, segment=K)
    for name in ref:
        assert np.array_equal(whole[name], out[name]), name


def test_lsvi_ucb_negative_controls_fail_the_comparison():
    base = make(LINEAR_SPEC)
    mdp = base.to_sparse()
    kw = {"features": base.features, "c": 0.02}
    _, ref, _ = _lsvi_python(mdp, 300, 3, "statistics", **kw)
    same = run_whole(_compiled("lsvi-ucb", mdp, 300, 3, 300, **kw), 300)
    assert _lsvi_agree(ref, same)
    # beta 1% off
    wrong = _compiled("lsvi-ucb", mdp, 300, 3, 300, **kw)
    wrong.beta *= 1.01
    assert not _lsvi_agree(ref, run_whole(wrong, 300))
    # the agent's stream in place of the environment's
    loop = _compiled("lsvi-ucb", mdp, 300, 3, 300, **kw)
    loop.env_rngs = generators(SEED, seed_indices(3), AGENT_STREAM)
    assert not _lsvi_agree(ref, run_whole(loop, 300))


def test_tl_run_picks_the_lsvi_ucb_kernel_for_long_runs():
    import theorylab as tl

    base = make(LINEAR_SPEC)
    kw = {"seed": SEED, "features": base.features, "c": 0.1}
    py = tl.run("lsvi-ucb", base, 400, 2, loop="python", **kw)
    cc = tl.run("lsvi-ucb", base, 400, 2, loop="compiled", segment=150, **kw)
    assert (py.config["loop"], cc.config["loop"]) == ("python", "compiled")
    assert np.array_equal(py.returns, cc.returns)  # the same actions and trajectories
    # a dense true model: the reference evaluates the policy with BLAS (round-off)
    np.testing.assert_allclose(cc.regret, py.regret, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cc.value_estimates, py.value_estimates, rtol=1e-12, atol=1e-12)
    assert tl.run("lsvi-ucb", base, 400, 2, **kw).config["loop"] == "python"  # short
    assert tl.run("lsvi-ucb", base, 10_000, 2, **kw).config["loop"] == "compiled"
