"""Exact expected objectives of the per-example losses (theorylab.algorithms.deep.
loss_expectations), checked against independent closed forms; the Monte Carlo claim built on them
(deep-loss-gradients-mc) fails on a known-bug mutation."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep.loss_expectations import (  # noqa: E402
    CASES,
    CaseObjective,
    case_data,
)
from theorylab.algorithms.deep.twins import LogitTable  # noqa: E402
from theorylab.mdps import make  # noqa: E402

TASK = "tokentree:V=2,L=2,prompts=2,ref=random,seed=3"


def _setup(seed=0):
    task = make(TASK)
    theta = 0.7 * np.random.default_rng(seed).standard_normal((2, task.n_nodes, task.V))
    return task, LogitTable(task, theta), case_data(task, 5)


def _grad(value, pol):
    (g,) = torch.autograd.grad(value, pol.theta)
    return g


def test_k1_in_the_loss_has_zero_expected_gradient_and_k2_is_the_visit_weighted_kl():
    """E_pi[grad log(pi/ref)] = E_pi[grad log pi] = 0; E_pi[grad sum_t k2] = grad of
    sum_h d_pi(h) KL(pi_h || ref_h) with d held fixed (docs/algorithms/deep-losses.md)."""
    task, pol, data = _setup()
    assert _grad(CaseObjective(task, "kl-k1", pol, data).exact(), pol).abs().max() < 1e-14
    cond = pol.cond_logp()
    d = pol.visits(cond)
    ref = torch.as_tensor(np.log(task.ref_cond))
    node_kl = (cond.exp() * (cond - ref)).sum(-1)
    closed = _grad((d * node_kl).sum(1).mean(), pol)
    k2 = _grad(CaseObjective(task, "kl-k2", pol, data).exact(), pol)
    assert torch.allclose(k2, closed, atol=1e-13)


def test_rpo_equals_offline_vpo_and_cql_matches_its_numpy_form():
    task, pol, data = _setup(1)
    rpo = CaseObjective(task, "rpo", pol, data).exact()
    vpo = CaseObjective(task, "vpo-1", pol, data).exact()
    assert rpo.item() == pytest.approx(vpo.item(), abs=1e-14)  # eta beta = alpha beta
    # CQL: sum over (x, node, a) of d_ref(x, node) ref(a|node) [lse Q - Q + (Q - y)^2/2] / (P L)
    theta = pol.theta.detach().numpy()
    ref_pol = LogitTable(task, np.log(task.ref_cond))
    d = ref_pol.visits(ref_pol.cond_logp()).numpy()
    lse = np.log(np.exp(theta).sum(-1, keepdims=True))
    per = (lse - theta) + 0.5 * (theta - data.td_targets) ** 2
    expected = (d[..., None] * task.ref_cond * per).sum() / (task.n_prompts * task.L)
    assert CaseObjective(task, "cql", pol, data).exact().item() == pytest.approx(expected, 1e-12)


@pytest.mark.parametrize("case", CASES)
def test_sampled_objective_is_a_scalar_with_a_gradient(case):
    task, pol, data = _setup(2)
    value = CaseObjective(task, case, pol, data, batch=4, seed=1).sampled()
    assert value.ndim == 0 and torch.isfinite(_grad(value, pol)).all()


def test_unknown_case():
    task, pol, data = _setup()
    with pytest.raises(ValueError, match="unknown case 'kto'"):
        CaseObjective(task, "kto", pol, data)


def test_the_reference_claim_fails_when_ppo_samples_come_from_the_wrong_policy(monkeypatch):
    """Known-bug mutation: the exact PPO objective weighted by ref instead of the old policy:
    the registered expectation departs from the paper's objective (reference_objectives)."""
    import theorylab.algorithms.deep.loss_expectations as le
    from theorylab.validations.claims.deep import LossReferenceObjectives

    real = le.CaseObjective.exact

    def buggy(self):
        if self.case != "ppo-clip":
            return real(self)
        P = self.task.n_prompts
        w = self.ref_seq.exp()[self.all_x, self.all_y] / P
        return self._responses(self.pol.cond_logp(), self.all_x, self.all_y, w)

    monkeypatch.setattr(le.CaseObjective, "exact", buggy)
    rep = LossReferenceObjectives().run("quick")
    failed = [c.name for c in rep.checks if not c.passed]
    assert not rep.passed and failed and all(n.startswith("ppo-clip on") for n in failed), failed
