"""LSVI-UCB and LSVI (Jin et al. 2020, Algorithm 1) against a plain reference and the theory.

* ``PlainLSVIUCB``: one seed, written from the paper's pseudocode (loops over past samples tau and
  actions a, a fresh matrix inverse per step, max_a Q_{h+1} evaluated at each past next state);
  the batched agent must reproduce its Q at every episode, for every seed, in both target modes.
* Sherman-Morrison inverses equal ``np.linalg.inv`` of the Gram matrix rebuilt from the history.
* One-hot identities: Gram inverse diag 1/(N + lambda), bonus beta / sqrt(N + lambda), tabular Q.
* Seed i alone == seed i in a batch (theorylab.run), bit for bit, for every linear agent.
* Optimism (Lemma B.5): Q^k_h >= Q*_h entrywise and V^k_1(mu0) >= V*_1(mu0), c = 0.1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.linear.features import FeatureError, resolve_features
from theorylab.algorithms.linear.gram import sherman_morrison
from theorylab.algorithms.online.lsvi_ucb import LSVIUCB, jin_beta
from theorylab.algorithms.planning import backward_induction
from theorylab.algorithms.registry import list_algorithms
from theorylab.experiment import env_spec
from theorylab.mdps import make
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators
from theorylab.validations import validate
from theorylab.validations.claims.linear import (
    LSVI_UCB_C,
    LSVI_UCB_MDP,
    LSVI_UCB_OPTIMISM_C,
    _recording,
)

SMALL = "linear-simplex:S=6,A=3,d=4,H=4,seed=1,rewards=cube"


class PlainLSVIUCB:
    """Jin et al. 2020, Algorithm 1, as printed; one seed; O(k^2) per episode on purpose."""

    def __init__(self, phi, H, beta, lam=1.0):
        self.phi, self.H, self.beta, self.lam = phi, H, beta, lam
        self.S, self.A, self.d = phi.shape
        self.data = []  # per episode: [(x_h, a_h, r_h, x_{h+1}) for h]

    def plan(self) -> np.ndarray:
        S, A, d, H = self.S, self.A, self.d, self.H
        w = np.zeros((H, d))
        Linv = np.zeros((H, d, d))

        def Q(h, x, a):
            if h == H:
                return 0.0
            f = self.phi[x, a]
            return min(w[h] @ f + self.beta * math.sqrt(f @ Linv[h] @ f), H)

        for h in range(H - 1, -1, -1):
            Lam = self.lam * np.eye(d)
            b = np.zeros(d)
            for episode in self.data:
                x, a, r, x_next = episode[h]
                f = self.phi[x, a]
                Lam += np.outer(f, f)
                b += f * (r + max(Q(h + 1, x_next, a2) for a2 in range(A)))
            Linv[h] = np.linalg.inv(Lam)
            w[h] = Linv[h] @ b
        return np.array([[[Q(h, x, a) for a in range(A)] for x in range(S)] for h in range(H)])


def make_agent(cls, mdp, B, *, seed=0, **params):
    return cls(env_spec(mdp), B, generators(seed, range(B), AGENT_STREAM), **params)


@pytest.mark.parametrize("targets", ["history", "statistics"])
def test_matches_the_paper_pseudocode(targets):
    mdp = make(SMALL)
    B, K = 3, 25
    agent = make_agent(LSVIUCB, mdp, B, episodes=K, features=mdp.phi, c=0.02, targets=targets)
    assert agent.targets == targets
    refs = [PlainLSVIUCB(mdp.phi, mdp.horizon, agent.beta) for _ in range(B)]
    env_rngs = generators(0, range(B), ENV_STREAM)
    worst = 0.0
    for _ in range(K):
        for b, ref in enumerate(refs):
            worst = max(worst, float(np.abs(ref.plan() - agent.Q[b]).max()))
        traj = mdp.rollout(agent.policy(), rng=env_rngs)
        agent.update(traj)
        for b, ref in enumerate(refs):
            ref.data.append(
                [
                    (
                        traj.states[b, h],
                        traj.actions[b, h],
                        traj.rewards[b, h],
                        traj.next_states[b, h],
                    )
                    for h in range(mdp.horizon)
                ]
            )
    assert worst < 1e-12


def test_target_modes_agree():
    mdp = make(SMALL)
    r1 = tl.run("lsvi-ucb", mdp, 80, 2, features=mdp.phi, c=0.05, targets="history")
    r2 = tl.run("lsvi-ucb", mdp, 80, 2, features=mdp.phi, c=0.05, targets="statistics")
    np.testing.assert_allclose(r1.value_estimates, r2.value_estimates, rtol=0, atol=1e-10)


def test_sherman_morrison_equals_inverse():
    mdp = make(SMALL)
    agent = make_agent(LSVIUCB, mdp, 2, episodes=10, features=mdp.phi)
    env_rngs = generators(0, range(2), ENV_STREAM)
    for _ in range(40):  # beyond the capacity of 10 episodes: the history grows
        agent.update(mdp.rollout(agent.policy(), rng=env_rngs))
    k = agent.k
    x = agent.phi_flat[agent._sa[:, :, :k]]  # (B, H, k, d)
    Lam = np.matmul(np.swapaxes(x, -1, -2), x) + agent.lam * np.eye(agent.d)
    np.testing.assert_allclose(agent.gram(), Lam, atol=1e-10)
    np.testing.assert_allclose(agent.Lambda_inv, np.linalg.inv(Lam), rtol=0, atol=1e-10)
    # the kernel on random SPD matrices, several leading axes
    rng = np.random.default_rng(0)
    M = rng.normal(size=(2, 3, 5, 5))
    A = M @ np.swapaxes(M, -1, -2) + np.eye(5)
    inv = np.linalg.inv(A)
    v = rng.normal(size=(2, 3, 5))
    denom = sherman_morrison(inv, v)
    np.testing.assert_allclose(
        inv, np.linalg.inv(A + v[..., :, None] * v[..., None, :]), atol=1e-12
    )
    np.testing.assert_allclose(
        denom, np.linalg.det(A + v[..., :, None] * v[..., None, :]) / np.linalg.det(A)
    )


def test_one_hot_identities_claim():
    # the claim's power (its negative controls) is tested in tests/test_validations.py
    report = validate("lsvi-ucb-onehot-count-bonus", "quick", controls=False)
    assert report.verdict in ("PASS", "VACUOUS", "SMOKE"), report.format()


def test_lsvi_is_lsvi_ucb_without_bonus():
    mdp = make(SMALL)
    a = tl.run("lsvi", mdp, 30, 2, features=mdp.phi)
    b = tl.run("lsvi-ucb", mdp, 30, 2, features=mdp.phi, beta=0.0)
    np.testing.assert_array_equal(a.regret, b.regret)
    np.testing.assert_array_equal(a.value_estimates, b.value_estimates)


def test_beta_is_jins():
    mdp = make(SMALL)
    agent = make_agent(LSVIUCB, mdp, 1, episodes=100, features=mdp.phi, c=0.5, delta=0.05)
    T = 100 * mdp.horizon
    assert agent.beta == pytest.approx(
        0.5 * 4 * mdp.horizon * math.sqrt(math.log(2 * 4 * T / 0.05))
    )
    assert agent.beta == jin_beta(0.5, 4, mdp.horizon, 100, 0.05)
    # before any data Q is the bonus beta ||phi|| / sqrt(lambda), capped at H
    small = make_agent(LSVIUCB, mdp, 1, episodes=100, features=mdp.phi, c=0.01, lam=2.0)
    want = np.minimum(small.beta * np.linalg.norm(small.phi_flat, axis=1) / math.sqrt(2.0), 4.0)
    assert want.max() < 4.0
    np.testing.assert_allclose(small.Q[0].reshape(mdp.horizon, -1), np.broadcast_to(want, (4, 18)))


@pytest.mark.parametrize(
    "algorithm, spec, params",
    [
        ("lsvi-ucb", SMALL, {"c": 0.05}),
        ("lsvi", SMALL, {}),
        ("lmc-lsvi", SMALL, {"c": 0.3}),
        ("linucb", "linear-bandit:d=4,A=8", {}),
        ("rep-ucb", "lowrank-simplex:S=5,A=2,d=2,H=3,n_random=2,n_perturbed=1", {"c": 0.1}),
    ],
)
def test_seed_alone_equals_seed_in_batch(algorithm, spec, params):
    mdp = make(spec)
    extra = (
        {"feature_class": mdp.candidates} if algorithm == "rep-ucb" else {"features": mdp.features}
    )
    batch = tl.run(algorithm, mdp, 40, 4, **params, **extra)
    alone = tl.run(algorithm, mdp, 40, [2], **params, **extra)
    # the agent is bit-identical: same value estimates, same trajectories
    np.testing.assert_array_equal(batch.value_estimates[2], alone.value_estimates[0])
    np.testing.assert_array_equal(batch.returns[2], alone.returns[0])
    # theorylab.run's exact regret evaluates the B policies with one dense product over B
    # columns (evaluate_policies), which is invariant in B only up to 1 ulp
    np.testing.assert_allclose(batch.regret[2], alone.regret[0], rtol=0, atol=1e-12)


def test_optimism_lemma_b5():
    """Lemma B.5: Q^k_h >= Q*_h entrywise, every episode, at the documented c = 0.2; and the
    regret claims' c = 0.1 keeps V^k_1(mu0) >= V*_1(mu0) (but not the entrywise statement)."""
    mdp = make(LSVI_UCB_MDP)
    Q_star = backward_induction(mdp).Q  # (H, S, A)
    cls = _recording(LSVIUCB)
    gaps = []

    class Checked(cls):
        def update(self, traj):
            super().update(traj)
            gaps.append(float((self.Q - Q_star[None]).min()))

    Checked.__signature__ = cls.__signature__
    res = tl.run(Checked, mdp, 300, 8, features=mdp.phi, c=LSVI_UCB_OPTIMISM_C)
    assert min(gaps) >= -1e-9
    assert np.all(res.value_estimates >= res.optimal_value - 1e-9)
    gaps.clear()
    res = tl.run(Checked, mdp, 300, 8, features=mdp.phi, c=LSVI_UCB_C)
    assert np.all(res.value_estimates >= res.optimal_value - 1e-9)
    assert min(gaps) < 0  # the entrywise statement fails at c = 0.1 (documented)


def test_too_small_c_loses_optimism():
    """The contrast that fixes the documented c: at c = 0.003 optimism fails on this MDP."""
    mdp = make(LSVI_UCB_MDP)
    res = tl.run("lsvi-ucb", mdp, 300, 4, features=mdp.phi, c=0.003)
    assert np.any(res.value_estimates < res.optimal_value - 1e-6)


def test_features_resolution():
    mdp = make(SMALL)
    env = env_spec(mdp)
    # a linear MDP's own features reach the learner through EnvSpec.features ...
    np.testing.assert_array_equal(resolve_features(env, None), mdp.phi)
    # ... and an MDP without features gets the one-hot map (d = S*A)
    plain = make("riverswim:S=3,H=2")
    np.testing.assert_array_equal(
        resolve_features(env_spec(plain), None).reshape(-1, plain.S * plain.A),
        np.eye(plain.S * plain.A),
    )
    np.testing.assert_array_equal(resolve_features(env, SMALL), mdp.phi)
    with pytest.raises(FeatureError, match=r"must have shape \(S, A, d\) = \(6, 3, d\)"):
        resolve_features(env, np.zeros((5, 3, 2)))
    with pytest.raises(FeatureError, match=r"\|\|phi\(s=0, a=0\)\|\|_2 = 2 > 1"):
        resolve_features(env, np.full((6, 3, 4), 1.0))
    with pytest.raises(FeatureError, match="exposes no features"):
        resolve_features(env_spec(make("lowrank-simplex")), "lowrank-simplex")
    # a family spec in an algorithm name string, with ';' for ','
    r = tl.run("lsvi-ucb:features=" + SMALL.replace(":", ";").replace(",", ";"), mdp, 3, 1)
    assert r.regret.shape == (1, 3)


def test_registered_and_parameter_errors():
    for name in ("lsvi-ucb", "lsvi", "lmc-lsvi", "linucb", "rep-ucb"):
        assert name in list_algorithms()
    mdp = make(SMALL)
    with pytest.raises(ValueError, match="delta"):
        tl.run("lsvi-ucb", mdp, 2, 1, delta=1.5)
    with pytest.raises(ValueError, match="targets must be one of"):
        tl.run("lsvi-ucb", mdp, 2, 1, targets="fast")
    with pytest.raises(ValueError, match="lam"):
        tl.run("lsvi", mdp, 2, 1, lam=0.0)


def test_memory_is_linear_in_k():
    mdp = make(SMALL)
    sizes = [
        make_agent(LSVIUCB, mdp, 4, episodes=K, features=mdp.phi, targets="history").memory_bytes
        for K in (1000, 2000, 4000)
    ]
    per_episode = (sizes[2] - sizes[1]) / 2000
    assert (sizes[1] - sizes[0]) / 1000 == per_episode
    assert per_episode == 4 * mdp.horizon * 16  # B * H * (4 + 4 + 8) bytes: indices and reward


@pytest.mark.parametrize(
    "name", ["lsvi-covering-converges-to-vi", "lsvi-ucb-sqrt-k-tuned-c", "lsvi-ucb-regret-vs-d"]
)
def test_claims_quick(name):
    # the claim's power (its negative controls) is tested in tests/test_validations.py
    report = validate(name, "quick", controls=False)
    assert report.verdict in ("PASS", "VACUOUS", "SMOKE"), report.format()


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        "lsvi-ucb-onehot-count-bonus",
        "lsvi-covering-converges-to-vi",
        "lsvi-ucb-sqrt-k-tuned-c",
        "lsvi-ucb-regret-vs-d",
        "rep-ucb-recovers-features",
        "linucb-sqrt-t",
    ],
)
def test_claims_full(name):
    # the claim's power (its negative controls) is tested in tests/test_validations.py
    report = validate(name, "full", controls=False)
    assert report.verdict in ("PASS", "VACUOUS", "SMOKE"), report.format()
