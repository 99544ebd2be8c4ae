"""Tabular twins: the closed-form expected updates equal the registered losses' expectations over
every group (1e-12), sampled gradients match them within a confidence interval, and exact
training ends on each twin's predicted fixed point (and not on the wrong one)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep.twins import (  # noqa: E402
    ExactObjective,
    LogitTable,
    train_twin,
)
from theorylab.mdps import make  # noqa: E402
from theorylab.validations import validate  # noqa: E402

GROUP_TWINS = ("rloo", "grpo", "dr-grpo", "dr-grpo-k2")


def random_theta(task, seed, scale=0.7):
    return scale * np.random.default_rng(seed).standard_normal(
        (task.n_prompts, task.n_nodes, task.V)
    )


def grad(objective, policy):
    (g,) = torch.autograd.grad(objective(), policy.theta)
    return g


SMALL_TREES = [
    ("tokentree:V=2,L=2,prompts=2,ref=random,seed=3", 4),
    ("tokentree:V=3,L=2,prompts=1,ref=random,seed=5", 3),
]


@pytest.mark.parametrize("twin", GROUP_TWINS)
@pytest.mark.parametrize(("spec", "G"), SMALL_TREES)
def test_closed_form_expected_update_equals_enumeration_of_the_registered_loss(twin, spec, G):
    task = make(spec)
    pol = LogitTable(task, random_theta(task, 1))
    beta = 0.3
    closed = grad(ExactObjective(task, twin, beta, G, 0.25, pol), pol)
    enumerated = grad(ExactObjective(task, twin, beta, G, 0.25, pol, enumerate=True), pol)
    assert torch.allclose(closed, enumerated, atol=1e-13, rtol=0)
    assert float(closed.abs().max()) > 1e-3  # not trivially zero


def test_the_wrong_kl_direction_fails_the_enumeration_identity():
    """Negative control: the k3 loss's expectation is not the reverse-KL (k2) update."""
    task = make("tokentree:V=2,L=2,prompts=2,ref=random,seed=3")
    pol = LogitTable(task, random_theta(task, 1))
    k3 = grad(ExactObjective(task, "dr-grpo", 0.3, 4, 0.25, pol, enumerate=True), pol)
    k2_closed = grad(ExactObjective(task, "dr-grpo-k2", 0.3, 4, 0.25, pol), pol)
    assert float((k3 - k2_closed).abs().max()) > 1e-3


DEEP_CLAIMS = (
    "preference-twins-closed-form",
    "rloo-twin-kl-optimum",
    "grpo-k3-twin-fixed-point",
    "dr-grpo-k2-effective-beta",
    "cvar-grpo-twin-cvar-optimum",
    "deep-loss-gradients-mc",
    "dpo-sampled-pairs-coverage",
)


def test_deep_claims_are_registered_with_a_control_per_check():
    """They run at quick scale in tests/test_validations.py (and full with -m slow); here: one
    control per positive check, and the controls are what fails when the theory is wrong."""
    from theorylab.validations import list_validations

    assert set(DEEP_CLAIMS) <= set(list_validations())
    rep = validate("dr-grpo-k2-effective-beta", "quick", controls=False)  # under a second
    assert rep.passed, rep.format()
    assert [("control" in c.name) for c in rep.checks] == [False, True]


def test_a_wrong_theory_fails_the_grpo_claim(monkeypatch):
    """Known-bug mutation: predict GRPO-k3's fixed point with the reverse KL (k2) recursion."""
    import theorylab.algorithms.deep.twins as twins

    real = twins.node_recursion
    monkeypatch.setattr(
        twins, "node_recursion", lambda task, kappa, beta, kl: real(task, kappa, beta, "k2")
    )
    rep = validate("grpo-k3-twin-fixed-point", "quick", controls=False)
    assert not rep.passed
    dr = next(c for c in rep.checks if c.name.startswith("dr-grpo: ends"))
    assert not dr.passed and dr.values["tv_predicted"] > 1e-2


def test_the_exact_training_curve_is_recorded():
    task = make("tokentree:V=2,L=2")
    tr = train_twin(task, "rloo", steps=30, lr=1.25, record_every=10)
    assert tr.steps.tolist() == [0, 10, 20, 30]
    assert np.all(np.diff(tr.kl_optimum) < 0)  # gradient descent on a concave objective
    assert tr.final_seq_logp.shape == tr.predicted_seq_logp.shape == (4, 4)


def test_bad_twin_arguments():
    task = make("tokentree:V=2,L=2")
    with pytest.raises(ValueError, match="unknown twin 'ppo'"):
        train_twin(task, "ppo", steps=1)
    with pytest.raises(ValueError, match="beta must be > 0"):
        train_twin(task, "dpo", steps=1, beta=0.0)
    with pytest.raises(ValueError, match="needs 0/1 rewards"):
        train_twin(make("tokentree:V=2,L=2,reward=graded"), "grpo", steps=1)


def test_sampled_rloo_reaches_the_kl_optimum_where_its_gradient_noise_vanishes():
    """At pi*_beta the KL-shaped reward r - beta log(pi*/ref) = beta log Z is the same for every
    response, so every leave-one-out advantage is 0: pi*_beta is a fixed point of the *sampled*
    dynamics too, and SGD on the registered loss reaches it to round-off."""
    task = make("tokentree:V=2,L=2")
    tr = train_twin(task, "rloo", steps=1200, lr=0.25, mode="sampled", batch=16, seed=1)
    assert tr.tv_predicted[-1] <= 1e-7
    assert task.tv(tr.final_seq_logp, task.soft_optimum(1.0).seq_logp).mean() > 0.05  # 2 beta
