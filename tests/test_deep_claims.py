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
