"""BroRL (seed row 002-004#G2): the one-step update against the paper's printed mass-balance
equation written out here, the exact distribution of the sampled set against brute-force
enumeration of every sequence of draws, the growth probability against that enumeration, the
large-N limit, the unweighted-mood mutation failing the claim, the registered run, input errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from theorylab.algorithms.deep import brorl

P5 = np.array([0.05, 0.5, 0.05, 0.3, 0.1])  # (V,) a fixed policy, mostly correct
C5 = np.array([False, True, False, True, True])  # (V,) correct tokens


def _softmax_mass(z, c):
    e = np.exp(z - z.max())
    return (e / e.sum())[c].sum()


def _rate_written_out(p, c, s, n, r_c, r_w):
    """The paper's three-term equation (Hu et al. 2025, Section 3), eta = 1."""
    q_pos, q_neg = p[c].sum(), p[~c].sum()
    s_r = r_c * p[c & s].sum() + r_w * p[~c & s].sum()
    a2, b2 = (p[c & s] ** 2).sum(), (p[~c & s] ** 2).sum()
    u_pos2, u_neg2 = (p[c & ~s] ** 2).sum(), (p[~c & ~s] ** 2).sum()
    return ((r_c - s_r) * q_neg * a2 + (s_r - r_w) * q_pos * b2
            + s_r * (q_pos * u_neg2 - q_neg * u_pos2)) / n  # fmt: skip


@pytest.mark.parametrize("r_c, r_w", [(1.0, -1.0), (1.0, 0.0), (2.0, -0.5)])
def test_update_gives_the_mass_balance_equation_and_its_finite_difference(r_c, r_w):
    for bits in itertools.product([False, True], repeat=5):
        s = np.array(bits)
        dz = brorl.logit_update(P5, C5, s, 3, r_c=r_c, r_w=r_w)
        rate = brorl.correct_mass_rate(P5, C5, dz)
        assert rate == pytest.approx(_rate_written_out(P5, C5, s, 3, r_c, r_w), abs=1e-15)
        h, z = 1e-4, np.log(P5)
        fd = (_softmax_mass(z + h * dz, C5) - _softmax_mass(z - h * dz, C5)) / (2 * h)
        assert fd == pytest.approx(rate, rel=1e-6, abs=1e-11)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_set_probabilities_against_every_sequence_of_draws(n):
    want = np.zeros(2**5)
    for seq in itertools.product(range(5), repeat=n):
        want[sum(1 << i for i in set(seq))] += np.prod(P5[list(seq)])
    assert np.abs(brorl.set_probabilities(P5, n) - want).max() < 1e-15


@pytest.mark.parametrize("n", [1, 2, 4])
def test_growth_probability_against_every_sequence_of_draws(n):
    want = 0.0
    for seq in itertools.product(range(5), repeat=n):
        s = np.zeros(5, bool)
        s[list(seq)] = True
        if _rate_written_out(P5, C5, s, n, 1.0, -1.0) > 0:
            want += np.prod(P5[list(seq)])
    assert brorl.growth_probability(P5, C5, n) == pytest.approx(want, abs=1e-14)


def test_growth_probability_tends_to_one_and_small_n_loses_mass():
    ps = [brorl.growth_probability(P5, C5, n) for n in (1, 4, 16, 64, 256)]
    assert ps[0] == pytest.approx(0.6, abs=1e-14) and ps[-1] > 1 - 1e-9  # tokens 0, 1, 2
    assert all(b >= a - 1e-12 for a, b in zip(ps, ps[1:], strict=False))
    # a rare correct token sampled alone (3 or 4) shrinks the correct mass: token 1 unsampled
    lose, unsampled_correct_lose = brorl.small_n_losses(P5, C5, 1)
    assert lose == pytest.approx(0.4, abs=1e-14)
    assert lose > 0 and unsampled_correct_lose > 0
    # every token sampled (the N -> oo set): the correct mass grows
    full = np.ones(5, bool)
    assert brorl.correct_mass_rate(P5, C5, brorl.logit_update(P5, C5, full, 1)) > 0


def test_the_control_fails_the_claim():
    from theorylab.validations.claims.rlvr_twins import BrorlCorrectMassGrowth
    from theorylab.validations.rlvr_mutations import brorl_unweighted_mood

    claim = BrorlCorrectMassGrowth(scales={"quick": (6, 10)})
    assert claim.run("quick").passed
    with brorl_unweighted_mood():
        report = claim.run("quick")
    failed = {c.name for c in report.checks if not c.passed}
    assert "P(correct mass grows) rises with N towards 1" in failed
    assert "the first-order correct-mass change is the paper's mass-balance equation" in failed


def test_registered_run_approaches_its_large_n_limit():
    pytest.importorskip("torch")
    import theorylab as tl
    from theorylab.algorithms.registry import get_algorithm

    entry = get_algorithm("brorl-twin")
    assert (entry.kind, entry.problem, entry.papers) == ("deep", "token-tree", ("002-004#G2",))
    spec = "tokentree-eos:V=3,L=3,prompts=2,reward=binary"
    exact = tl.run("brorl-twin:eta=2", spec, steps=30)
    assert exact.summary()["tv_predicted"] < 1e-12
    assert exact.accuracy[0, -1] > exact.accuracy[0, 0] + 0.5
    tv = [tl.run("brorl-twin:eta=2", spec, steps=30, mode="sampled", batch=b).summary()[
        "tv_predicted"] for b in (4, 256)]  # fmt: skip
    assert tv[1] < tv[0] and tv[1] < 0.05


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: brorl.growth_probability(np.array([0.5, 0.6]), C5[:2], 2), "distribution"),
        (lambda: brorl.growth_probability(P5, C5[:3], 2), "one shape"),
        (lambda: brorl.growth_probability(P5, C5, 2, r_c=-1.0), "R_c >= 0 >= R_w"),
        (lambda: brorl.set_probabilities(P5, 0), "N must be >= 1"),
        (lambda: brorl.all_sets(17), "V <= 16"),
    ],
)
def test_input_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_run_rejects_a_bad_step_size_before_any_work():
    pytest.importorskip("torch")
    import theorylab as tl

    with pytest.raises(ValueError, match=r"eta must be > 0, got 0"):
        tl.run("brorl-twin:eta=0", "tokentree-eos:V=3,L=3,prompts=2,reward=binary", steps=3)
