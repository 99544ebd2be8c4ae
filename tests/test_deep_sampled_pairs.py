"""DPO / IPO on a fixed dataset of sampled pairs: the exact empirical optimum and its invariants
(theorylab.algorithms.deep.sampled_pairs; the claim dpo-sampled-pairs-coverage)."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")

from theorylab.algorithms.deep.fixed_points import ipo_optimum  # noqa: E402
from theorylab.algorithms.deep.sampled_pairs import (  # noqa: E402
    PairData,
    coverage_term,
    covered,
    empirical_optimum,
    sample_pairs,
    train_on_pairs,
)
from theorylab.mdps import make  # noqa: E402

TASK = "tokentree:V=8,L=1,prompts=6,reward=graded,ref=random"


@pytest.mark.parametrize("loss", ["dpo", "ipo"])
def test_unsampled_responses_keep_the_reference_relative_mass(loss):
    """Independent of the prediction: off the data pi/ref is one constant, and the logit sum of
    each comparison component is the reference's (checked from the trained table itself)."""
    task = make(TASK)
    data = sample_pairs(task, 3, np.random.default_rng(1))
    trained = train_on_pairs(task, data, loss, 0.5, max_iter=40)
    ratio = trained - task.ref_logprobs  # log pi/ref
    cov = covered(data, task.n_responses)
    for x in range(task.n_prompts):
        off = ratio[x, ~cov[x]]
        assert off.size > 0 and np.ptp(off) < 1e-12


def test_ipo_matches_the_laplacian_prediction_and_the_population_limit():
    task = make(TASK)
    rng = np.random.default_rng(2)
    for n in (4, 1000):
        data = sample_pairs(task, n, rng)
        trained = train_on_pairs(task, data, "ipo", 0.5)
        pred, finite = empirical_optimum(task, data, "ipo", 0.5)
        assert finite.all()
        assert task.tv(trained, pred).max() < 1e-7
    # large n: every response covered and the empirical optimum near the population one
    assert task.tv(pred, ipo_optimum(task, 0.5)).mean() < 0.08


def test_dpo_on_a_hand_built_dataset():
    """Two responses compared both ways (2 wins to 1): the BT MLE gives beta h = log 2; the third
    response never appears and keeps its reference mass ratio to the rest's normaliser."""
    task = make("tokentree:V=3,L=1,prompts=1,reward=graded,ref=random")
    data = PairData(np.array([[0, 0, 1]]), np.array([[1, 1, 0]]))
    pred, finite = empirical_optimum(task, data, "dpo", 0.5)
    assert finite.all()
    h = (pred[0, 0] - task.ref_logprobs[0, 0]) - (pred[0, 1] - task.ref_logprobs[0, 1])
    assert h == pytest.approx(np.log(2.0) / 0.5, abs=1e-10)
    trained = train_on_pairs(task, data, "dpo", 0.5)
    assert task.tv(trained, pred).max() < 1e-8


def test_dpo_without_a_finite_minimiser_is_flagged():
    """All wins one way: inf L_DPO is approached only as h -> infinity."""
    task = make("tokentree:V=3,L=1,prompts=1,reward=graded")
    data = PairData(np.array([[0, 0]]), np.array([[1, 1]]))
    pred, finite = empirical_optimum(task, data, "dpo", 0.5)
    assert not finite[0] and np.isnan(pred).all()
    ipo, ok = empirical_optimum(task, data, "ipo", 0.5)  # IPO stays finite: h* = 1/(2 tau)
    h = (ipo[0, 0] - task.ref_logprobs[0, 0]) - (ipo[0, 1] - task.ref_logprobs[0, 1])
    assert ok[0] and h == pytest.approx(1.0, abs=1e-12)


def test_coverage_term_is_a_lower_bound_and_vanishes_with_full_coverage():
    task = make(TASK)
    target = ipo_optimum(task, 0.5)
    data = sample_pairs(task, 2, np.random.default_rng(3))
    c = coverage_term(task, data, target)
    pred, _ = empirical_optimum(task, data, "ipo", 0.5)
    assert (c > 0).any() and (task.tv(pred, target) >= c - 1e-12).all()
    # brute force over kappa: c is the minimum
    ref, tgt, cov = np.exp(task.ref_logprobs), np.exp(target), covered(data, task.n_responses)
    grid = np.linspace(0.0, 5.0, 20001)
    for x in range(task.n_prompts):
        u = ~cov[x]
        brute = 0.5 * np.abs(grid[:, None] * ref[x, u] - tgt[x, u]).sum(1).min()
        assert c[x] <= brute + 1e-12 and c[x] >= brute - 1e-3
    full = PairData(np.tile(np.arange(8), (6, 1)), np.tile(np.roll(np.arange(8), 1), (6, 1)))
    assert (coverage_term(task, full, target) == 0).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="one-token responses"):
        empirical_optimum(make("tokentree:V=2,L=2"), PairData(np.zeros((4, 1), int),
                          np.zeros((4, 1), int)), "dpo", 0.5)  # fmt: skip
    with pytest.raises(ValueError, match="pairs per prompt"):
        sample_pairs(make(TASK), 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="loss must be one of"):
        empirical_optimum(make(TASK), sample_pairs(make(TASK), 2, np.random.default_rng(0)),
                          "kto", 0.5)  # fmt: skip


def test_the_claim_fails_with_a_wrong_prediction(monkeypatch):
    """Known-bug mutation: predict that unsampled responses move to pi*'s shape (no coverage
    limit): the population optimum as the prediction fails the exact check."""
    import theorylab.algorithms.deep.sampled_pairs as sp
    from theorylab.validations.claims import deep

    def population(task, data, loss, beta):
        return ipo_optimum(task, beta), np.ones(task.n_prompts, dtype=bool)

    monkeypatch.setattr(sp, "empirical_optimum", population)
    claim = dataclasses.replace(
        deep.SampledPairsCoverage(),
        losses=("ipo",),
        scales={"quick": deep.PairsScale(TASK, (2, 8), 1e-6, 512)},
    )
    rep = claim.run("quick")
    assert not rep.passed
    assert not rep.checks[0].passed and rep.checks[0].values["max_tv_predicted"] > 1e-3
