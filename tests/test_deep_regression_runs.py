"""Q#, RTO, REFUEL and EXO through ``tl.run`` (kind ``deep``, issue 28): each run's final policy
equals an answer computed here independently (sequence-level closed forms written out, the DPO
twin trained separately, the per-node NPG step from Q by enumerating roll-outs)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import theorylab as tl  # noqa: E402
from theorylab.algorithms.deep import exo  # noqa: E402
from theorylab.algorithms.deep import regression_twins as rt  # noqa: E402
from theorylab.algorithms.deep.twins import train_twin  # noqa: E402
from theorylab.algorithms.registry import get_algorithm  # noqa: E402
from theorylab.mdps import make  # noqa: E402
from theorylab.results import DeepResult  # noqa: E402

EOS = "tokentree-eos:V=3,L=3,prompts=2"


def tilted(task, log_base: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """(P, Y) log of base(y) exp(weight(y)) / Z, written out over the responses."""
    z = log_base + weight
    return z - np.log(np.exp(z).sum(1, keepdims=True))


def pi_star(task, beta: float) -> np.ndarray:
    """pi*_beta(y) = ref(y) exp(r(y)/beta) / Z by enumerating the responses."""
    return tilted(task, task.ref_logprobs, task.mean_reward / beta)


def test_the_four_runs_are_registered_with_their_rows():
    rows = {"qsharp-twin": ("000#18",), "rto-twin": ("002-004#E6",),
            "refuel-twin": ("002-004#E5",), "exo-twin": ("000#11",)}  # fmt: skip
    for name, papers in rows.items():
        entry = get_algorithm(name)
        assert (entry.kind, entry.problem, entry.papers) == ("deep", "token-tree", papers)


def test_qsharp_run_is_pi_star_and_its_sampled_estimate_converges():
    task = make(EOS)
    res = tl.run("qsharp-twin:beta=0.5", EOS, steps=1)
    assert isinstance(res, DeepResult) and res.steps.tolist() == [0, 1]
    assert task.tv(res.final_seq_logp[0], pi_star(task, 0.5)).max() <= 1e-12
    assert res.tv_predicted[0, 0] > 1e-2  # the reference itself is far from pi*
    sampled = tl.run("qsharp-twin", EOS, steps=40, mode="sampled", batch=16, record_every=39)
    tv = sampled.tv_predicted[0]  # roll-outs per (h, a): 0 (ref), 16 x 39, 16 x 40
    assert tv[-1] < 1e-2 < tv[0]


def test_rto_run_is_the_tilt_of_the_trained_dpo_policy():
    """RTO's token-level optimum at beta2 over DPO's policy is, at the sequence level,
    ref(y) (pi_DPO(y)/ref(y))^(beta/beta2) / Z; with DPO converged, pi*_beta2."""
    task = make(EOS)
    beta, beta2, steps = 0.5, 0.25, 300
    res = tl.run(f"rto-twin:beta={beta},beta2={beta2}", EOS, steps=steps)
    dpo = train_twin(task, "dpo", steps=steps, lr=25.0, beta=beta).final_seq_logp
    want = tilted(task, task.ref_logprobs, beta / beta2 * (dpo - task.ref_logprobs))
    assert np.abs(res.final_seq_logp[0] - want).max() <= 1e-10
    long = tl.run(f"rto-twin:beta={beta},beta2={beta2}", EOS, steps=1500)
    assert task.tv(long.final_seq_logp[0], pi_star(task, beta2)).max() <= 1e-6
    assert long.tv_predicted[0, -1] < res.tv_predicted[0, -1]


def test_refuel_run_follows_the_npg_iterates():
    task = make(EOS)
    eta = 1.0
    res = tl.run(f"refuel-twin:eta={eta}", EOS, steps=2)
    cond = np.log(task.ref_cond)
    for _ in range(2):  # Q^pi(h, a) by enumerating the roll-outs after (h, a)
        q = np.nan_to_num(rt.rollout_q(task, cond))
        cond = rt.log_softmax(cond + eta * q)
    want = task.sequence_logprobs(cond)
    assert task.tv(res.final_seq_logp[0], want).max() <= 1e-7
    assert res.tv_predicted[0, -1] <= 1e-7 and res.steps.tolist() == [0, 1, 2]


def test_exo_run_descends_to_pi_star_a_zero_of_its_loss():
    task = make(EOS)
    res = tl.run("exo-twin:beta=0.5,group_size=3", EOS, steps=200)
    target = pi_star(task, 0.5)
    assert task.tv(res.final_seq_logp[0], target).mean() <= 0.02
    assert np.all(np.diff(res.kl_optimum[0]) < 0)
    at_opt = exo.exo_expectation(task, torch.as_tensor(target), 3, 0.5)
    assert abs(float(at_opt)) <= 1e-14


def test_bad_runs_say_what_is_wrong():
    with pytest.raises(ValueError, match="exo-twin runs in mode 'exact' only"):
        tl.run("exo-twin", EOS, steps=2, mode="sampled")
    with pytest.raises(ValueError, match="group_size"):
        tl.run("exo-twin:group_size=1", EOS, steps=2)
    with pytest.raises(ValueError, match="beta2 must be > 0"):
        tl.run("rto-twin:beta2=0", EOS, steps=2)
    with pytest.raises(ValueError, match="runs on a token-tree task"):
        tl.run("qsharp-twin", "riverswim:S=3,H=4", steps=1)
