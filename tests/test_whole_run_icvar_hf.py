"""ICVaR-HF's whole-run compiled loop (``algorithms/online/whole_run_icvar_hf.py``) reproduces the
Python loop: the exact regret, the returns and every comparison and label (hence the reward MLE)
bit for bit, the planned values to round-off (the Python agent's ``einsum`` / ``matmul`` sum in an
order of numpy's build), on several linear mixture MDPs, seeds, radii and a Bernoulli reward;
segments and refit boundaries change nothing; each mutation of a constant or of the agent's
random stream fails the comparison; a mutation of the Python agent sends ``loop="auto"`` to the
Python loop. Resumption after an interrupt: tests/test_resume_exact.py (its CASES)."""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.objectives import objective_of
from theorylab.algorithms.online.icvar_l import REFIT_ALWAYS, REFIT_GROWTH
from theorylab.algorithms.online.whole_run import make_compiled_loop, run_whole
from theorylab.algorithms.online.whole_run_icvar_hf import ICVaRHFLoop, next_refit
from theorylab.algorithms.registry import get_algorithm, make_agent
from theorylab.mdps import make
from theorylab.mdps.linear_mixture import LinearMixtureMDP
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices

SEED = 5
ROUND_OFF = 1e-12

CASES = [  # (MDP spec, params): paper-form radii, tuned radii, another alpha, Bernoulli rewards
    ("linear-mixture:S=2,A=2,d=2,H=2,seed=0,concentration=1.0", {}),
    ("linear-mixture:S=5,A=2,d=3,H=3,seed=0,concentration=0.5", {}),
    (
        "linear-mixture:S=3,A=2,d=2,H=3,seed=4,concentration=0.5",
        {"bonus_scale": 0.05, "reward_bonus_scale": 0.01},
    ),  # fmt: skip
    (
        "linear-mixture:S=4,A=3,d=2,H=2,seed=1,concentration=0.5",
        {"alpha": 0.6, "bonus_scale": 0.2, "reward_bonus_scale": 0.05},
    ),  # fmt: skip
    (
        "bernoulli linear-mixture:S=3,A=2,d=2,H=3,seed=2,concentration=0.5",
        {"bonus_scale": 0.1, "reward_bonus_scale": 0.02},
    ),  # fmt: skip
]


def _make(spec: str):
    """The MDP of a case; "bernoulli <spec>": the same model with Bernoulli rewards and mu0
    spread over the states."""
    if not spec.startswith("bernoulli "):
        return make(spec)
    m = make(spec.split(" ", 1)[1])
    mu0 = np.arange(1.0, m.S + 1) / np.arange(1.0, m.S + 1).sum()
    return LinearMixtureMDP(m.basis, m.theta, m.reward(0), mu0, horizon=m.horizon,
                            reward_model="bernoulli", name="bernoulli-mixture")  # fmt: skip


def _params(spec: str, params: dict) -> dict:
    return {"alpha": 0.25, "basis": _make(spec).basis, **params}


def _agent(spec: str, params: dict, episodes: int, seeds: int = 3):
    params = {"episodes": episodes, **_params(spec, params)}
    return make_agent("icvar-hf", env_spec(_make(spec), known_rewards=True), seeds,
                      generators(SEED, seed_indices(seeds), AGENT_STREAM), **params)  # fmt: skip


def _loop(spec: str, params: dict, episodes: int, seeds: int = 3) -> ICVaRHFLoop:
    mdp = _make(spec)
    idx = seed_indices(seeds)
    agent = _agent(spec, params, episodes, seeds)
    params = {"episodes": episodes, **_params(spec, params)}
    v_star = objective_of(get_algorithm("icvar-hf"), params).optimal_value(mdp)
    return make_compiled_loop(agent, mdp, v_star, generators(SEED, idx, ENV_STREAM))


def _python(spec: str, params: dict, episodes: int, seeds: int = 3):
    return tl.run("icvar-hf", _make(spec), episodes=episodes, seeds=seeds, seed=SEED, loop="python",
                  **_params(spec, params))  # fmt: skip


def _agree(ref, out) -> bool:
    return (
        np.array_equal(ref.regret, out["regret"])
        and np.array_equal(ref.returns, out["returns"])
        and np.allclose(ref.value_estimates, out["estimates"], rtol=ROUND_OFF, atol=ROUND_OFF)
    )


@pytest.mark.parametrize(("spec", "params"), CASES)
def test_agrees_with_the_python_loop(spec, params):
    episodes = 160
    ref = _python(spec, params, episodes)
    loop = _loop(spec, params, episodes)
    out = run_whole(loop, episodes, segment=37)  # segments cut across the refit schedule
    assert isinstance(loop, ICVaRHFLoop)
    assert np.unique(ref.regret).size > 1  # the played policy changed during the run
    assert np.array_equal(ref.regret, out["regret"])
    assert np.array_equal(ref.returns, out["returns"])
    np.testing.assert_allclose(out["estimates"], ref.value_estimates, rtol=ROUND_OFF,
                               atol=ROUND_OFF)  # fmt: skip


def test_learner_state_agrees_with_the_python_agent():
    # the comparisons, labels and hence the BTL MLE bit for bit; Sigma^-1, sum X y and M^-1 to
    # round-off; the counts exactly (the Python agent run step by step on the same streams)
    spec, params = CASES[1]
    episodes, seeds = 90, 3
    mdp = make(spec)
    idx = seed_indices(seeds)
    agent = make_agent("icvar-hf", env_spec(mdp, known_rewards=False), seeds,
                       generators(SEED, idx, AGENT_STREAM), episodes=episodes,
                       **_params(spec, params))  # fmt: skip
    env_rngs = generators(SEED, idx, ENV_STREAM)
    for _ in range(episodes):
        agent.update(mdp.rollout(agent.policy(), rng=env_rngs))
    loop = _loop(spec, params, episodes)
    loop.advance(episodes)
    st = loop.state
    n = episodes - 1
    assert np.array_equal(np.stack(agent.diffs, axis=1), loop.diffs[:, :n].astype(float))
    assert np.array_equal(np.stack(agent.labels, axis=1), loop.labels[:, :n].astype(float))
    assert np.array_equal(agent.theta_r, st["theta_r"]) and agent._fitted_n == loop.fitted_n
    assert np.array_equal(agent.n, st["nsa"])
    for name, mine in (("inv", "inv"), ("xy", "xy"), ("M_inv", "M_inv")):
        np.testing.assert_allclose(st[mine], getattr(agent, name), rtol=1e-10, atol=1e-13)
    assert [g.bit_generator.state for g in agent.rngs] == [
        g.bit_generator.state for g in loop.agent_rngs
    ]


def test_refit_schedule_is_the_agents():
    # every episode index after which ICVaRHF.update refits (n >= 1 comparisons)
    fitted, want = 0, []
    for n in range(1, 3000):
        if n <= REFIT_ALWAYS or n >= REFIT_GROWTH * fitted:
            want.append(n)
            fitted = n
    got, k, fitted = [], 0, 0
    while True:
        k = next_refit(k, fitted)
        if k >= 3000:
            break
        got.append(k)
        fitted, k = k, k + 1
    assert got == want


@pytest.mark.parametrize(
    "mutation", ["gamma x 1.01", "beta x 1.01", "alpha + 1e-3", "agent stream = env stream"]
)
def test_negative_controls_fail_the_comparison(mutation):
    spec, params = CASES[2]
    episodes = 160
    ref = _python(spec, params, episodes)
    loop = _loop(spec, params, episodes)
    assert _agree(ref, run_whole(_loop(spec, params, episodes), episodes))
    if mutation == "gamma x 1.01":
        loop.gamma *= 1.01
    elif mutation == "beta x 1.01":
        loop.agent.bonus_scale *= 1.01
    elif mutation == "alpha + 1e-3":
        loop.alpha += 1e-3
    else:
        loop.agent_rngs = generators(SEED, seed_indices(3), ENV_STREAM)
    assert not _agree(ref, run_whole(loop, episodes))


def test_tl_run_auto_compiles_long_runs_and_a_mutated_agent_is_not_compiled():
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.algorithms.online.whole_run import compiled_variant
    from theorylab.validations.controls import get_control

    spec, params = CASES[0]
    kw = {"seed": SEED, **_params(spec, params)}
    long = tl.run("icvar-hf", spec, episodes=5_000, seeds=4, **kw)
    assert long.config["loop"] == "compiled"
    assert compiled_variant(_agent(spec, params, 10)) is not None
    for name in ("icvar-hf-labels-ignored", "icvar-l-risk-neutral-backup"):
        with get_control(name).applied(None):  # the kernel cannot see the patch
            assert compiled_variant(_agent(spec, params, 10)) is None
            with pytest.raises(ValueError, match="no whole-run kernel"):
                tl.run("icvar-hf", spec, episodes=10, seeds=1, loop="compiled", **kw)
        assert compiled_variant(_agent(spec, params, 10)) is not None


def test_bench_long_icvar_hf_rows(monkeypatch):
    from theorylab.bench import long
    from theorylab.bench.long import bench_long_icvar_hf, format_table

    monkeypatch.setattr(long, "_row_in_child", long.time_run)  # in this process (no imports)
    python, compiled = bench_long_icvar_hf(quick=True)
    assert python["method"] == "icvar-hf python/numpy" and python["per_cpu_s"] > 0
    assert compiled["method"] == "icvar-hf compiled 1 thread"
    assert compiled["ratio"] == compiled["per_cpu_s"] / python["per_cpu_s"]
    assert "icvar-hf compiled 1 thread" in format_table([python, compiled])
