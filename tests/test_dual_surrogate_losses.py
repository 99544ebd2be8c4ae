"""The Dual RL code's surrogate losses (algorithms/dual/surrogate_losses.py) are defined once:
the numpy (tabular f-DVL) and torch (deep ``fdvl-value``) paths evaluate the same expressions, the
tabular path never imports torch, and the ReCOIL surrogates match their own formulas (the code's,
not the exact conjugates: theory-preference-dual-llm.md 6.3-6.4)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from theorylab.algorithms.dual.surrogate_losses import (
    DVL_LOSSES,
    UnknownSurrogateError,
    dvl_value_loss,
    recoil_q_loss,
    recoil_value_loss,
)

X = np.array([-6.0, -2.5, -0.3, 0.0, 0.4, 1.7, 30.0])


def test_tabular_path_does_not_import_torch():
    code = (
        "import sys; import theorylab.algorithms.dual.f_dvl, theorylab.algorithms.dual.recoil; "
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("loss", DVL_LOSSES)
@pytest.mark.parametrize("lam", [0.6, 0.9])
def test_numpy_and_torch_are_one_formula(loss, lam):
    torch = pytest.importorskip("torch")
    from theorylab.algorithms.deep.offline_losses import fdvl_value

    v = torch.tensor(-X, dtype=torch.float64, requires_grad=True)  # x = q - v with q = 0
    q = torch.zeros(X.size, dtype=torch.float64)
    per = dvl_value_loss(torch.tensor(X), loss, lam, xp=torch)
    np.testing.assert_allclose(per.numpy(), dvl_value_loss(X, loss, lam), rtol=0, atol=1e-15)
    mean = fdvl_value(q, v, divergence=loss, lam=lam)
    np.testing.assert_allclose(
        float(mean.detach()), dvl_value_loss(X, loss, lam).mean(), atol=1e-15
    )
    mean.backward()  # the batch max is a stop-gradient: d/dv of e^{-m}(e^z - z - 1) at fixed m
    if loss == "reverse-kl":
        z = np.minimum(X / lam, 7.0)
        m = max(z.max(), -1.0)
        dz_dx = np.where(X / lam < 7.0, 1.0 / lam, 0.0)
        expected = -np.exp(-m) * (np.exp(z) - 1.0) * dz_dx / X.size
        np.testing.assert_allclose(v.grad.numpy(), expected, atol=1e-12)


def test_unknown_loss():
    with pytest.raises(UnknownSurrogateError, match="hellinger"):
        dvl_value_loss(X, "hellinger", 0.5)


def test_recoil_value_loss_is_the_gumbel_loss_on_the_mixture_half():
    x = np.array([0.2, -1.0, 3.0, 0.5])  # [mixture; expert]
    lam = 2.0
    z = x / lam
    m = max(z.max(), -1.0)  # over the whole batch (expert half included)
    expected = np.mean((np.exp(z - m) - z * np.exp(-m) - np.exp(-m))[:2])
    np.testing.assert_allclose(recoil_value_loss(x, lam), expected, atol=1e-15)
    clipped = recoil_value_loss(np.array([0.0, 0.0, 100.0, 0.0]), 1.0, max_clip=7.0)
    np.testing.assert_allclose(clipped, np.exp(-7.0) * (np.exp(0.0) - 0.0 - 1.0), atol=1e-15)


def test_recoil_q_loss_fixed_targets():
    q = np.array([1.0, -3.0, 150.0, 210.0])  # [mixture; expert]
    v_next = np.array([2.0, 5.0, 0.0, 0.0])
    mask = np.array([1.0, 0.0, 1.0, 1.0])
    g = 0.9
    target = np.array([-2 + g * 2.0, -2 + g * (-200.0)])
    expected = np.mean(0.5 * (q[2:] - 200.0) ** 2 + 0.5 * (q[:2] - target) ** 2)
    np.testing.assert_allclose(recoil_q_loss(q, v_next, mask, g), expected, atol=1e-12)


def test_recoil_q_loss_target_is_a_constant():
    torch = pytest.importorskip("torch")
    q = torch.tensor([1.0, -3.0, 150.0, 210.0], dtype=torch.float64, requires_grad=True)
    v_next = torch.tensor([2.0, 5.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=torch.float64)
    recoil_q_loss(q, v_next, mask, 0.9).backward()
    assert v_next.grad is None
    assert q.grad is not None
