"""The torch whole-run loop agrees with the episode-by-episode Python loop.

* Same uniforms (``uniforms="numpy"``: each episode's draws taken from the seeds' numpy streams,
  as the Python loop takes them): every curve equals the Python loop's to 1e-12, and the counts
  at the end equal the compiled kernel's exactly (the same trajectories), for UCBVI-CH/BF/AJKS,
  greedy and optimistic Q-learning on sparse and dense, stationary and stage-dependent models
  (transitions, and reward means), Bernoulli rewards, known and estimated rewards, both tie
  rules (15 configurations). Negative controls: the agent's stream in place of the
  environment's, and a 1% change of the bonus scale, both fail the comparison.
* Its own random stream (a torch generator): the mean cumulative regret over 256 seeds agrees
  with the numpy loop's at several K within 4 standard errors of the difference; a biased
  sampler (uniforms u^1.5) fails the same check.
* Segments and a resumed checkpoint change nothing; a compiled loop's checkpoint is refused.
* ``tl.run(loop="torch")``, ``--loop torch``, and the error for CUDA without CUDA.
* The episode code holds no host round trip (no ``.item()``, ``.cpu()``, ``.numpy()``).
* ``@pytest.mark.gpu``: the same on a CUDA device (skipped without one).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.objectives import RISK_NEUTRAL  # noqa: E402
from theorylab.algorithms.online.whole_run import CompiledLoop, run_whole  # noqa: E402
from theorylab.algorithms.online.whole_run_torch import (  # noqa: E402
    TorchLoop,
    ell_model,
    torch_seed,
)
from theorylab.algorithms.registry import make_agent  # noqa: E402
from theorylab.backends import BackendUnavailableError, transition_model  # noqa: E402
from theorylab.experiment import env_spec, run  # noqa: E402
from theorylab.mdps import TabularMDP, make  # noqa: E402
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators, seed_indices  # noqa: E402

SEED = 5
NO_CUDA = "no CUDA on this machine"
has_cuda = torch.cuda.is_available()


def _spread_mdp(stage_dependent: bool, bernoulli: bool) -> TabularMDP:
    """S = 6, A = 3, H = 4, mu0 spread over 4 states."""
    rng = np.random.default_rng(17)
    S, A, H = 6, 3, 4
    shape = (H, S, A, S) if stage_dependent else (S, A, S)
    P = rng.dirichlet(np.full(S, 0.5), size=shape[:-1])
    R = rng.random((S, A))
    mu0 = np.array([0.1, 0.2, 0.3, 0.4, 0.0, 0.0])
    return TabularMDP(
        P, R, mu0, horizon=H, reward_model="bernoulli" if bernoulli else "deterministic"
    )


def _stage_rewards_mdp() -> TabularMDP:
    """S = 5, A = 2, H = 4: transitions and Bernoulli reward means both depend on the step."""
    rng = np.random.default_rng(3)
    S, A, H = 5, 2, 4
    P = rng.dirichlet(np.full(S, 0.4), size=(H, S, A))
    R = rng.random((H, S, A))
    return TabularMDP(P, R, np.full(S, 1 / S), horizon=H, reward_model="bernoulli")


def _mdp(name: str) -> TabularMDP:
    if name == "stage-rewards":
        return _stage_rewards_mdp()
    if name == "spread-stage-bernoulli":
        return _spread_mdp(True, True)
    if name == "spread":
        return _spread_mdp(False, False)
    if name == "spread-stage":
        return _spread_mdp(True, False)
    if name == "spread-bernoulli":
        return _spread_mdp(False, True)
    return make(name)


def _loop(
    cls, algorithm, mdp, episodes, seeds, known=True, seed=SEED, stream=ENV_STREAM,
    uniforms="torch", **p,
):  # fmt: skip
    idx = seed_indices(seeds)
    env = env_spec(mdp, known_rewards=known)
    agent = make_agent(
        algorithm, env, len(idx), generators(seed, idx, AGENT_STREAM), episodes=episodes, **p
    )
    env_rngs = generators(seed, idx, stream)
    v_star = RISK_NEUTRAL.optimal_value(mdp)
    if cls is CompiledLoop:
        return CompiledLoop(agent, mdp, v_star, env_rngs)
    seed_t = torch_seed(seed, idx)
    return cls(agent, mdp, v_star, env_rngs, generator_seed=seed_t, uniforms=uniforms)


def _same_uniforms(algorithm, mdp, episodes, seeds, known=True, stream=ENV_STREAM, **p):
    """The torch loop drawing each episode's uniforms from the seeds' numpy streams."""
    return _loop(TorchLoop, algorithm, mdp, episodes, seeds, known, stream=stream,
                 uniforms="numpy", **p)  # fmt: skip


CASES = [  # (algorithm, MDP, params, known rewards)
    ("ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", {}, True),
    ("ucbvi-hoeffding", "riverswim:S=6,H=12", {"tie_break": "least-visited"}, True),
    ("ucbvi-bernstein", "random:S=5,A=3,H=5,seed=11", {"storage": "sparse"}, True),
    ("ucbvi-bernstein", "spread", {}, False),
    ("ucbvi-ajks", "spread-stage", {}, True),
    ("ucbvi-ajks", "spread-bernoulli", {"tie_break": "least-visited"}, False),
    ("ucbvi-hoeffding", "random-sparse:S=70,A=2,H=6,seed=3", {}, True),
    ("greedy", "random-sparse:S=70,A=2,H=6,seed=3", {"unvisited_value": 6.0}, True),
    ("greedy", "spread-bernoulli", {}, False),
    ("greedy", "spread-stage-bernoulli", {"stage_dependent": True}, False),
    ("ucbvi-ajks", "stage-rewards", {}, False),
    ("optimistic-q-hoeffding", "stage-rewards", {}, True),
    ("optimistic-q-hoeffding", "spread-bernoulli", {"c": 0.5}, True),
    ("optimistic-q-bernstein", "riverswim:S=6,H=12", {}, True),
    ("optimistic-q-bernstein", "spread", {"c1": 0.2, "c2": 1.0}, True),
]


def _close(a, b) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= 1e-12))


@pytest.mark.parametrize(("algorithm", "mdp", "params", "known"), CASES)
def test_same_uniforms_give_the_python_loops_curves(algorithm, mdp, params, known):
    mdp = _mdp(mdp)
    episodes, seeds = 200, 3
    ref = run(
        algorithm, mdp, episodes, seeds, seed=SEED, known_rewards=known, loop="python", **params
    )
    loop = _same_uniforms(algorithm, mdp, episodes, seeds, known, **params)
    out = run_whole(loop, episodes, segment=70)
    assert _close(out["regret"], ref.regret)
    assert _close(out["returns"], ref.returns)
    assert _close(out["estimates"], ref.value_estimates)
    # the same trajectories: every count equals the compiled kernel's (bit-identical to the
    # Python loop, tests/test_whole_run.py)
    compiled = _loop(CompiledLoop, algorithm, mdp, episodes, seeds, known, **params)
    run_whole(compiled, episodes)
    nsa = np.moveaxis(loop.state["nsa"].numpy(), -1, 0)  # seeds first, as the kernel's
    assert np.array_equal(nsa, compiled.state["nsa"].reshape(nsa.shape))
    assert ref.regret.max() > 0  # the run did something to compare


def test_negative_controls_fail_the_same_uniforms_comparison():
    mdp = make("random:S=5,A=3,H=5,seed=11")
    kw = {"bonus_scale": 0.05}  # small bonuses: Q below the cap H
    ref = run("ucbvi-bernstein", mdp, 200, 2, seed=SEED, loop="python", **kw)
    same = run_whole(_same_uniforms("ucbvi-bernstein", mdp, 200, 2, **kw), 200)
    assert _close(same["estimates"], ref.value_estimates)
    wrong = run_whole(_same_uniforms("ucbvi-bernstein", mdp, 200, 2, bonus_scale=0.0505), 200)
    assert not _close(wrong["estimates"], ref.value_estimates)
    other = _same_uniforms("ucbvi-bernstein", mdp, 200, 2, stream=AGENT_STREAM, **kw)
    assert not _close(run_whole(other, 200)["returns"], ref.returns)


class _BiasedSampler(TorchLoop):
    """A known-bug mutation: the uniforms raised to the power 1.5 (no longer uniform)."""

    def _uniforms(self):
        return super()._uniforms() ** 1.5


STAT_CASES = [
    ("ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", {"bonus_scale": 0.05}),
    ("ucbvi-bernstein", "riverswim:S=6,H=12", {"bonus_scale": 0.02}),
]


def _mean_curves_agree(numpy_cum, torch_cum, checkpoints=(24, 49, 99, 149), z=4.0) -> bool:
    """Mean cumulative regret at each checkpoint K within z standard errors of the difference
    (two independent samples of seeds)."""
    B1, B2 = numpy_cum.shape[0], torch_cum.shape[0]
    for k in checkpoints:
        a, b = numpy_cum[:, k], torch_cum[:, k]
        se = np.sqrt(a.var(ddof=1) / B1 + b.var(ddof=1) / B2)
        if not abs(a.mean() - b.mean()) <= z * se:
            return False
    return True


@pytest.mark.parametrize(("algorithm", "mdp", "params"), STAT_CASES)
def test_own_stream_agrees_in_distribution_and_a_biased_sampler_does_not(algorithm, mdp, params):
    mdp, B, K = make(mdp), 256, 150
    ref = run_whole(_loop(CompiledLoop, algorithm, mdp, K, B, seed=7, **params), K)
    own = run_whole(_loop(TorchLoop, algorithm, mdp, K, B, seed=7, **params), K)
    assert not np.array_equal(own["returns"], ref["returns"])  # another stream indeed
    assert ref["regret"].std() > 0 and own["regret"].std() > 0
    assert _mean_curves_agree(ref["regret"].cumsum(1), own["regret"].cumsum(1))
    biased = run_whole(_loop(_BiasedSampler, algorithm, mdp, K, B, seed=7, **params), K)
    assert not _mean_curves_agree(ref["regret"].cumsum(1), biased["regret"].cumsum(1))


def test_ell_model_holds_every_positive_entry_and_the_sampling_rule():
    mdp = _spread_mdp(True, False)
    model = transition_model(mdp)
    ell = ell_model(model)
    S, A, H = mdp.S, mdp.A, mdp.horizon
    P = np.zeros((ell["idx"].shape[0], S))
    np.add.at(P, (np.arange(P.shape[0])[:, None], ell["idx"]), ell["data"])
    assert np.array_equal(P, np.asarray(mdp.P).reshape(H * S * A, S))
    # the support of a pair holds its successors at every stage, at the stored positions
    pair = np.arange(P.shape[0]) % (S * A)
    positive = ell["data"] > 0
    assert np.array_equal(ell["supp"][pair[:, None], ell["upos"]][positive], ell["idx"][positive])
    # the first entry whose cumulative sum exceeds u is numpy's rollout rule
    u = np.random.default_rng(0).random(P.shape[0])
    pos = np.minimum((ell["cum"] <= u[:, None]).sum(1), ell["last"])
    want = np.minimum((np.cumsum(P, 1) <= u[:, None]).sum(1), S - 1 - np.argmax(P[:, ::-1] > 0, 1))
    assert np.array_equal(ell["idx"][np.arange(P.shape[0]), pos], want)


def test_segments_and_a_resumed_checkpoint_change_nothing(tmp_path):
    mdp = make("riverswim:S=6,H=12")
    whole = run_whole(_loop(TorchLoop, "ucbvi-bernstein", mdp, 150, 2), 150, segment=150)
    ident = {"algorithm": "ucbvi-bernstein", "episodes": 150, "loop": "torch"}
    first = _loop(TorchLoop, "ucbvi-bernstein", mdp, 150, 2)
    part = run_whole(first, 90, segment=40, checkpoint=tmp_path, run_id=ident)
    assert part["regret"].shape == (2, 90)
    resumed = _loop(TorchLoop, "ucbvi-bernstein", mdp, 150, 2)
    seen = []
    out = run_whole(
        resumed, 150, segment=40, checkpoint=tmp_path, run_id=ident,
        progress=lambda done, total, rate: seen.append(done),
    )  # fmt: skip
    assert seen == [90, 130, 150]
    for name in ("regret", "returns", "estimates"):
        assert np.array_equal(out[name], whole[name])


def test_tl_run_torch_loop_and_its_errors(tmp_path):
    import theorylab as tl

    mdp = make("random:S=5,A=3,H=5,seed=11")
    a = tl.run("ucbvi-hoeffding", mdp, 120, 3, loop="torch", segment=50, seed=SEED)
    b = tl.run("ucbvi-hoeffding", mdp, 120, 3, loop="torch", seed=SEED)
    assert (a.config["loop"], a.config["device"]) == ("torch", "cpu")
    assert a.regret.shape == (3, 120) and np.array_equal(a.regret, b.regret)
    assert not np.array_equal(
        a.returns, tl.run("ucbvi-hoeffding", mdp, 120, 3, loop="torch", seed=SEED + 1).returns
    )
    ckpt = tmp_path / "ck"
    tl.run("ucbvi-hoeffding", mdp, 60, 2, loop="torch", checkpoint=str(ckpt), seed=SEED)
    with pytest.raises(ValueError, match="holds a different run"):  # not a compiled checkpoint
        tl.run("ucbvi-hoeffding", mdp, 60, 2, loop="compiled", checkpoint=str(ckpt), seed=SEED)
    with pytest.raises(ValueError, match="has no whole-run kernel"):
        tl.run("psrl", mdp, 10, 1, loop="torch")
    with pytest.raises(ValueError, match="has no torch whole-run loop"):  # compiled only
        tl.run("epsilon-greedy", mdp, 10, 1, loop="torch")
    with pytest.raises(ValueError, match="has no torch whole-run loop"):
        _loop(TorchLoop, "epsilon-greedy", mdp, 10, 1)
    with pytest.raises(ValueError, match="uniforms must be 'torch' or 'numpy', got 'pcg64'"):
        _loop(TorchLoop, "greedy", mdp, 10, 1, uniforms="pcg64")
    if not has_cuda:
        with pytest.raises(BackendUnavailableError, match="no CUDA device.*device='cpu'"):
            tl.run("ucbvi-hoeffding", mdp, 10, 1, loop="torch", device="cuda")


def test_cli_loop_torch(tmp_path):
    import json

    from theorylab.cli import main

    out = tmp_path / "run.json"
    argv = ["run", "ucbvi-hoeffding", "random:S=5,A=3,H=5,seed=11", "--episodes", "200"]
    argv += ["--seeds", "2", "--loop", "torch", "--json", str(out), "--no-progress"]
    assert main(argv) == 0
    d = json.loads(out.read_text())
    assert d["config"]["loop"] == "torch" and d["config"]["device"] == "cpu"


def test_the_episode_code_has_no_host_round_trip():
    source = "".join(
        inspect.getsource(f) for f in (TorchLoop._episode, TorchLoop._plan, TorchLoop._q_step)
    )
    for call in (".item(", ".cpu(", ".numpy(", ".tolist(", "np."):
        assert call not in source, call
    # the check can fail: the segment's single host copy is outside the episode
    assert ".cpu(" in inspect.getsource(TorchLoop.advance)


# ------------------------------------------------------------------ CUDA (skipped without one)
@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda, reason=NO_CUDA)
@pytest.mark.parametrize(("algorithm", "mdp", "params", "known"), CASES)
def test_cuda_same_uniforms_give_the_python_loops_curves(algorithm, mdp, params, known):
    mdp = _mdp(mdp)
    ref = run(algorithm, mdp, 150, 3, seed=SEED, known_rewards=known, loop="python", **params)
    idx = seed_indices(3)
    agent = make_agent(
        algorithm, env_spec(mdp, known_rewards=known), 3, generators(SEED, idx, AGENT_STREAM),
        episodes=150, **params,
    )  # fmt: skip
    loop = TorchLoop(
        agent, mdp, RISK_NEUTRAL.optimal_value(mdp), generators(SEED, idx, ENV_STREAM),
        device="cuda", uniforms="numpy",
    )  # fmt: skip
    out = run_whole(loop, 150)
    assert _close(out["regret"], ref.regret) and _close(out["estimates"], ref.value_estimates)


@pytest.mark.gpu
@pytest.mark.skipif(not has_cuda, reason=NO_CUDA)
def test_cuda_own_stream_agrees_in_distribution():
    import theorylab as tl

    mdp = make("random:S=5,A=3,H=5,seed=11")
    kw = {"bonus_scale": 0.05, "seed": 7}
    ref = tl.run("ucbvi-hoeffding", mdp, 150, 256, loop="compiled", **kw)
    gpu = tl.run("ucbvi-hoeffding", mdp, 150, 256, loop="torch", device="cuda", **kw)
    assert gpu.config["device"].startswith("cuda")
    assert _mean_curves_agree(ref.regret.cumsum(1), gpu.regret.cumsum(1))


def test_bench_long_torch_rows(monkeypatch):
    from theorylab.bench import long
    from theorylab.bench.long import bench_long_torch, format_table

    # in this process: the fresh child process of each row costs ~10 s of imports here
    monkeypatch.setattr(long, "_row_in_child", long.time_run)
    rows = bench_long_torch(quick=True)
    cpu = rows[0]
    assert cpu["method"] == "torch cpu 1 thread" and cpu["seed_episodes_per_s"] > 0
    assert cpu["seeds"] * cpu["episodes"] / cpu["seconds"] == cpu["seed_episodes_per_s"]
    table = format_table(rows)
    if not has_cuda:  # recorded as not measured, with no figures
        assert rows[1]["skipped"] == NO_CUDA and "seconds" not in rows[1]
        assert NO_CUDA in table
    else:
        assert rows[1]["method"] == "torch cuda" and rows[1]["seed_episodes_per_s"] > 0
