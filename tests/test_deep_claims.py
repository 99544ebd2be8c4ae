"""The deep-training claims can fail: with the learning rate set to 0 (a model that does not
learn) each one fails at its own thresholds. (That they pass at quick scale is checked with every
other claim in tests/test_validations.py.) One or two seeds suffice to fail an every-seed claim."""

import dataclasses

import pytest

pytest.importorskip("torch")

from theorylab.validations.claims.deep_training import (  # noqa: E402
    DeepScale,
    ExactDPOReducesKL,
    GRPORaisesAccuracy,
    TinyMatchesHF,
)


def test_grpo_claim_fails_without_learning():
    claim = dataclasses.replace(GRPORaisesAccuracy(), lr=0.0, scales={"quick": DeepScale(1, 150)})
    rep = claim.run("quick")
    assert not rep.passed, rep.format()
    assert rep.checks[0].values["final_accuracy"] == rep.checks[0].values["initial_accuracy"]


def test_dpo_claim_fails_without_learning():
    claim = dataclasses.replace(ExactDPOReducesKL(), lr=0.0, scales={"quick": DeepScale(1, 125)})
    rep = claim.run("quick")
    assert not rep.passed, rep.format()


def test_same_metrics_claim_fails_when_one_model_does_not_learn():
    pytest.importorskip("transformers")
    claim = dataclasses.replace(TinyMatchesHF(), other_lr=0.0, scales={"quick": DeepScale(2, 100)})
    rep = claim.run("quick")
    assert not rep.passed, rep.format()
    assert not any(c.passed for c in rep.checks)


@pytest.mark.parametrize(
    ("model", "control", "frozen"),
    [
        ("tiny", "trainer-no-optimiser-step", True),
        ("tiny", "hf-model-not-optimised", False),
        ("gpt2-config:n_layer=1,n_embd=16,n_head=2", "hf-model-not-optimised", True),
    ],
)
def test_no_step_mutations_match_a_run_that_does_not_learn(model, control, frozen):
    """The registered controls of these claims (theorylab.validations.mutations) leave out the
    optimiser step and repeat the initial evaluation instead of running the steps: the metrics
    must be those of real training at lr = 0 (the model they freeze) or at the given lr (the one
    they leave alone)."""
    import numpy as np

    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.algorithms.deep.trainer import train
    from theorylab.validations.controls import get_control

    if model.startswith("gpt2"):
        pytest.importorskip("transformers")
    kw = dict(steps=6, eval_every=3, seeds=2, seed=1)
    with get_control(control).applied(None):
        mutated = train(model, "tokentree:V=4,L=3", "dpo:beta=0.1", lr=1e-2, **kw)
    real = train(model, "tokentree:V=4,L=3", "dpo:beta=0.1", lr=0.0 if frozen else 1e-2, **kw)
    for metric in ("accuracy", "expected_reward", "kl_optimum", "kl_ref", "pass_at_k"):
        np.testing.assert_array_equal(getattr(mutated, metric), getattr(real, metric), metric)
    assert mutated.loss.shape == real.loss.shape
    assert np.isnan(mutated.loss).all() == frozen
