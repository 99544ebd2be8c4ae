"""The deep losses against their papers' objectives written independently of the loss code
(theorylab.algorithms.deep.reference_objectives), the variable-length token tree, and the loss
mutations of issue 26 (each must break the agreement it targets)."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep import reference_objectives as reference  # noqa: E402
from theorylab.algorithms.deep.loss_expectations import (  # noqa: E402
    REFERENCE_CASES,
    case_data,
    reference_objective,
    registered_objective,
)
from theorylab.algorithms.deep.twins import LogitTable  # noqa: E402
from theorylab.mdps import make  # noqa: E402
from theorylab.mdps.eos_tree import eos_tree_structure  # noqa: E402

TREE = "tokentree:V=2,L=2,prompts=2,ref=random,seed=3"
EOS = "tokentree-eos"


def test_reference_module_does_not_import_the_loss_code():
    """The objectives are independent: the module imports none of the loss modules."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(reference.__file__).read_text(encoding="utf-8"))
    imported = {
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    } | {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert not any("theorylab" in name for name in imported), imported


def test_eos_tree_structure_and_probabilities():
    prefixes, responses = eos_tree_structure(3, 3)
    assert len(prefixes) == 1 + 2 + 4  # EOS-free prefixes of length 0, 1, 2
    assert len(responses) == len(prefixes) + 2**3  # one EOS ending per node, 8 full responses
    assert all(r[-1] == 0 or len(r) == 3 for r in responses)
    assert all(0 not in r[:-1] for r in responses)
    task = make(EOS)
    lengths = task.lengths
    assert sorted(set(lengths.tolist())) == [1, 2, 3]
    assert (task.token_mask.sum(1) == lengths).all() and not task.token_mask.all()
    np.testing.assert_allclose(np.exp(task.ref_logprobs).sum(1), 1.0, atol=1e-12)
    rng = np.random.default_rng(0)
    cond = rng.standard_normal((task.n_prompts, task.n_nodes, task.V))
    cond -= np.log(np.exp(cond).sum(-1, keepdims=True))
    np.testing.assert_allclose(np.exp(task.sequence_logprobs(cond)).sum(1), 1.0, atol=1e-12)


def test_pair_objectives_pinned_to_the_printed_formulas():
    """One prompt, two one-token responses (tokentree:V=2,L=1): DPO (Rafailov et al. eq. (7)),
    RPO (Liu et al. eq. (4.8)), VPO (Cen et al.) and XPO (Xie et al., Alg. 1) by hand."""
    task = make("tokentree:V=2,L=1,prompts=1,reward=graded,ref=random,seed=4")
    pol = LogitTable(task, np.array([[[0.3, -0.4]]]))
    t = reference.Tables(
        pol.cond_logp()[:, pol.nodes, pol.tokens],
        torch.as_tensor(np.log(task.ref_cond))[:, pol.nodes, pol.tokens],
        pol.mask,
        torch.as_tensor(task.mean_reward),
    )
    pi = np.exp([0.3, -0.4]) / np.exp([0.3, -0.4]).sum()
    ref, r = task.ref_cond[0, 0], task.mean_reward[0]
    beta, eta, alpha = 0.5, 0.7, 0.3

    def sig(z):
        return 1.0 / (1.0 + math.exp(-z))

    lr = np.log(pi / ref)
    dpo = 0.0
    for a in range(2):
        for b in range(2):  # (a, b) ~ ref x ref; a wins w.p. sigma(r_a - r_b)
            p_a = sig(r[a] - r[b])
            dpo += (
                ref[a]
                * ref[b]
                * (
                    -p_a * math.log(sig(beta * (lr[a] - lr[b])))
                    - (1 - p_a) * math.log(sig(beta * (lr[b] - lr[a])))
                )
            )
    e_ref_logpi = float((ref * np.log(pi)).sum())
    assert reference.dpo(t, beta).item() == pytest.approx(dpo, rel=1e-12)
    assert reference.rpo(t, beta, eta).item() == pytest.approx(
        dpo - eta * beta * e_ref_logpi, rel=1e-12
    )
    assert reference.xpo(t, beta, alpha).item() == pytest.approx(
        dpo + alpha * e_ref_logpi, rel=1e-12
    )
    for sign in (1, -1):
        assert reference.vpo(t, beta, alpha, sign).item() == pytest.approx(
            dpo + sign * alpha * beta * e_ref_logpi, rel=1e-12
        )


def test_group_objectives_pinned_on_one_group_by_hand():
    """GRPO / Dr. GRPO / token-mean / RLOO on a tree with a single response per prompt is
    degenerate; instead, G = 2 on one prompt with two responses of lengths 1 and 2
    (tokentree-eos:V=2,L=2: responses (EOS), (1, EOS), (1, 1)): the value at pi = ref with rho = 1
    is beta x mean k3 = 0 plus the advantage terms, which sum to -sum_i A_i N_i |o_i| / G."""
    task = make("tokentree-eos:V=2,L=2,prompts=1,reward=graded,ref=uniform")
    assert task.lengths.tolist() == [1, 2, 2]
    pol = LogitTable(task, np.log(task.ref_cond))
    t = reference.Tables(
        pol.cond_logp()[:, pol.nodes, pol.tokens],
        torch.as_tensor(np.log(task.ref_cond))[:, pol.nodes, pol.tokens],
        pol.mask,
        torch.as_tensor(task.mean_reward),
    )
    p = np.exp(task.ref_logprobs[0])
    r = task.mean_reward[0]
    lengths = task.lengths
    expected = {"seq": 0.0, "const": 0.0, "token": 0.0}
    for i in range(3):
        for j in range(3):
            w = p[i] * p[j]
            dev = np.array([r[i] - (r[i] + r[j]) / 2, r[j] - (r[i] + r[j]) / 2])
            lens = np.array([lengths[i], lengths[j]])
            # at rho = 1 the surrogate is A_i per token; the loss is its negative
            expected["seq"] += w * -(dev * lens / lens).mean()
            expected["const"] += w * -(dev * lens / 2).mean()
            expected["token"] += w * -(dev * lens).sum() / lens.sum()
    for norm, value in expected.items():
        got = reference.group_policy_gradient(t, 2, advantage="mean", norm=norm, beta=0.5)
        assert got.item() == pytest.approx(value, abs=1e-14), norm
    assert expected["token"] != pytest.approx(expected["seq"], abs=1e-6)


@pytest.mark.parametrize("spec,G", [(TREE, 4), (EOS, 3)])
def test_registered_expectations_equal_the_papers_objectives(spec, G):
    task = make(spec)
    data = case_data(task, 5)
    theta = 0.7 * np.random.default_rng(11).standard_normal((task.n_prompts, task.n_nodes, task.V))
    for case in REFERENCE_CASES:
        pol = LogitTable(task, theta)
        a = registered_objective(task, case, pol, data, G)
        (ga,) = torch.autograd.grad(a, pol.theta)
        b = reference_objective(task, case, pol, data, G)
        (gb,) = torch.autograd.grad(b, pol.theta)
        assert float(a.detach()) == pytest.approx(float(b.detach()), rel=1e-10, abs=1e-12), case
        assert float((ga - gb).abs().max()) <= 1e-10 * max(float(gb.abs().max()), 1.0), case


@pytest.mark.parametrize(
    "mutation,cases",
    [
        ("rpo-sft-sign-flipped", ("rpo",)),
        ("xpo-bonus-sign-flipped", ("xpo",)),
        ("ppo-clip-kl-sign-flipped", ("ppo-clip",)),
        ("grpo-advantage-not-std-normalised", ("grpo",)),
        ("k3-computed-as-k1", ("kl-k3", "grpo", "dr-grpo", "ppo-clip")),
        ("rloo-baseline-includes-own-sample", ("rloo",)),
        ("grpo-dr-grpo-length-normalisations-swapped", ("grpo", "dr-grpo")),
    ],
)
def test_each_loss_mutation_breaks_the_agreement(mutation, cases):
    """Under each registered loss mutation the registered expectation of the cases it touches
    departs from the paper's objective (gradient gap > 1e-3 relative) on the EOS tree."""
    import theorylab.validations.mutations  # noqa: F401  (registers the mutations)
    from theorylab.validations.controls import get_control

    task = make(EOS)
    data = case_data(task, 5)
    theta = 0.7 * np.random.default_rng(11).standard_normal((task.n_prompts, task.n_nodes, task.V))
    for case in cases:
        pol = LogitTable(task, theta)
        (gb,) = torch.autograd.grad(reference_objective(task, case, pol, data, 3), pol.theta)
        with get_control(mutation).applied(None):
            (ga,) = torch.autograd.grad(registered_objective(task, case, pol, data, 3), pol.theta)
        gap = float((ga - gb).abs().max() / gb.abs().max())
        assert gap > 1e-3, (mutation, case, gap)
