"""Known-bug mutations: negative controls that patch one realistic bug into the library.

Each mutation is a context manager that patches the bug in for the duration of a ``with`` block
and is registered in ``theorylab.validations.controls.CONTROLS``. A claim that lists a mutation
among its controls must FAIL under it (``theorylab.validations.validate`` checks this). Registered:

* ``ucbvi-ch-bonus-sqrt-l``: UCBVI-CH's bonus 7 H L sqrt(1/N) (Azar et al. 2017, Alg. 3) written
  as 7 H sqrt(L/N) -- smaller by sqrt(L), about 4 on the quick instances;
* ``score-next-policy``: the online runner scores episode k with the policy of episode k + 1
  (``theorylab.runners.online.run(score_policy="next")``);
* ``cvar-upper-tail``: ``ReturnDistribution.cvar`` averages the best tau-fraction of returns
  instead of the worst (the wrong tail); online runs take the Python loop under it (CVaR-UCBVI's
  compiled loop computes its exact CVaR in the kernel, out of the patch's reach);
* ``lsvi-bonus-no-sqrt``: LSVI-UCB's elliptical width phi^T Lambda^-1 phi without its square
  root;
* ``lsvi-no-bootstrap``: LSVI regresses on r alone, forgetting V_(h+1)(s') in the target;
* ``pevi-gram-without-ridge``: linear PEVI's Gram matrix without lambda I;
* ``pevi-penalty-sign``: PEVI adds its penalty Gamma_h instead of subtracting it (an optimistic
  algorithm under a pessimistic name; ``theorylab.algorithms.offline.pevi.pessimistic_q``);
* ``pessimistic-mle-bonus-sign``: Zhu-Jordan-Jiao's pessimistic MLE maximises
  <theta_hat, u_pi> + f ||u_pi||_(M^-1) instead of - f ||u_pi|| (an optimistic policy under a
  pessimistic name; ``theorylab.algorithms.preference.pessimistic.pessimistic_policy``);
* ``plackett-luce-top-choice-only``: the Plackett-Luce likelihood keeps only its first factor
  (the top choice of each ranking; ``theorylab.algorithms.preference.mle.plackett_luce_loss``);
* ``p2r-no-cache``: P2R forgets its label cache and its confidence shortcut, asking the oracle
  at every visit (``P2RUCBVI(cache=False)``);
* ``dueling-rl-random-duels``: Dueling RL plays a uniformly random pair of deterministic policies
  each round, ignoring its elimination (``DuelingRL.policy_pair``): it never learns;
* ``regime-no-exploration``: REGIME designs and plans on the uninformed model (uniform rows),
  its exploration data discarded (``REGIME.design_model``);
* ``pr-lsvi-mle-frozen``: PR-LSVI's reward MLE left at 0, so the preference labels never reach
  the reward (``theorylab.algorithms.preference.pr_lsvi.btl_ridge_mle``);
* ``inpo-no-kl-pull``: INPO's loss written without its KL pull toward pi_ref (eta tau dropped
  from h, so its minimiser is Hedge's step; the gap still measured in the tau-regularised game;
  ``theorylab.algorithms.preference.nash.inpo_step``);
* ``sampled-pairs-no-coverage-limit``: the DPO / IPO optimum on a finite dataset of pairs taken to
  be the population minimiser (``theorylab.algorithms.deep.sampled_pairs.empirical_optimum``);
* ``ppo-exact-objective-under-ref``: PPO-clip's exact expected loss taken over ref's responses
  instead of the old policy's (``theorylab.algorithms.deep.loss_expectations``);
* ``dual-v-plain-conjugate``: dual-V minimised with the plain conjugate f* in place of f*_p (the
  eq. (9) typo of Sikchi et al. 2024 carried into the solver) and d recovered as
  d^O (f*)'(delta_V / alpha), without the max(0, .) (``theorylab.algorithms.dual.dual_v``);
* ``dual-v-sqrt-alpha``: ``solve_dual_v`` regularises with sqrt(alpha) where alpha belongs;
* ``reps-eta-fixed``: REPS' temperature eta left at its starting value 1 (V solved, eta not
  minimised), so the KL bound no longer binds (``theorylab.algorithms.dual.reps``);
* ``dualdice-behaviour-policy``: DualDICE's correction solved for the behaviour policy instead of
  the target, so it returns the behaviour value (a non-learning estimate whose error does not
  vanish with N);
* ``kl-pg-reward-only-gradient``: ``kl-pg``'s exact gradient computed with beta = 0 (the KL term
  dropped from the gradient, kept in the score;
  ``theorylab.algorithms.policy_optimization.kl_bayesian_inference``);
* ``soft-optimum-hardmax``: pi*_tau taken as the argmax of Q*_tau instead of its softmax
  (``theorylab.algorithms.policy_optimization.policy_cliff.soft_optimum_of_reward``);
* ``trpo-penalty-zero``: TRPO's penalty constant C = 4 eps gamma / (1 - gamma)^2 replaced by 0
  (``theorylab.algorithms.policy_optimization.trpo.penalty_constant``);
* ``md-vi-last-q-only``: MD-VI's policy built from the last q alone, pi_{k+1} ∝ exp(q_k / lambda)
  (no sum of the past q's: no averaging;
  ``theorylab.algorithms.policy_optimization.leverage_average.md_vi_policy``);
* ``mo-vr-pg-no-importance-weight``: MO-VR-PG's recursive increment est(theta; tau) - w
  est(theta_prev; tau) with w = 1 (``...policy_optimization.mo_vr_pg.importance_weights``);
* ``staq-weights-without-decay``: StaQ's weights alpha beta^i on the last M Q-functions written
  without the decay beta^i (``theorylab.algorithms.policy_optimization.staq.memory_weights``);
* ``bc-ignores-demonstrations``: behaviour cloning returns the uniform policy whatever the
  demonstrations (``theorylab.algorithms.policy_optimization.demonstration_regularised``);
* ``mdpo-gradient-without-kl``: MDPO's m-step approximation ascends <p, Q> alone (the proximity
  term's gradient dropped; ``theorylab.algorithms.policy_optimization.mdpo.proximal_gradient``);
* ``tilted-frontier-reverse-kl``: the tilted frontier's KL budget measured in the reverse
  direction (``theorylab.algorithms.policy_optimization.alignment_asymptotics.tilted_kl``);
* ``on-policy-data-offline-samples``: ``on-policy-data``'s reverse-KL policy gradient with its
  expectation over the offline preferred data D instead of the current policy (on-policy
  sampling replaced by the offline data;
  ``theorylab.algorithms.policy_optimization.on_policy_data``);
* ``cmdp-ogda-no-optimism``: ``lagrangian_gda(optimistic=True)`` runs plain GDA (the optimistic
  half-step dropped);
* ``recoil-reference-without-expert``: ReCOIL's reference mixture ``beta d^E + (1 - beta) d^S``
  written without its expert term (``m = d^S``), so the mixture matching pulls d to the other
  data (``theorylab.algorithms.dual.recoil``);
* ``f-dvl-unweighted-value-step``: tabular f-DVL's V-step with its data weights dropped (every
  action with data weighted equally; ``theorylab.algorithms.dual.f_dvl.value_step``);
* ``rloo-kl-beta-halved``: the RLOO twin's exact expected update with the KL penalty in its reward
  at beta / 2 (``theorylab.algorithms.deep.twins.ExactObjective``);
* ``k3-point-from-k2-recursion``: the fixed point of GRPO / Dr. GRPO with k3 in the loss predicted
  by the k2 (reverse-KL) node recursion (``theorylab.algorithms.deep.twins.predicted_point``);
* ``dr-grpo-k2-inverted-factor``: Dr. GRPO-with-k2's effective temperature beta (G - 1) / G
  instead of beta G / (G - 1) (the same ``predicted_point``);
* ``ipo-target-one-over-tau``: the IPO twin's loss (h - 1/tau)^2 instead of (h - 1/(2 tau))^2
  (``theorylab.algorithms.deep.twins.pair_loss``);
* ``cvar-grpo-mean-advantage``: CVaR-GRPO's lower-tail advantage replaced by Dr. GRPO's
  group-mean (risk-neutral) advantage (``theorylab.algorithms.deep.policy_gradient_losses``);
* ``trainer-no-optimiser-step``: the transformer trainer never takes its optimiser step, so the
  model stays at its initialisation (``theorylab.algorithms.deep.trainer``);
* ``hf-model-not-optimised``: the same bug for Hugging Face models only (their parameters never
  reach the optimiser), the project's tiny transformer training as before.

Deep losses against independent objectives (issue 26; the claims ``deep-loss-reference-objectives``,
``deep-length-normalisations``, ``deep-loss-gradients-mc`` and the group twins):

* ``rpo-sft-sign-flipped``: RPO's SFT term added with the wrong sign (+eta beta E log pi);
* ``xpo-bonus-sign-flipped``: XPO's exploration bonus subtracted (-alpha E_ref log pi);
* ``ppo-clip-kl-sign-flipped``: PPO-clip's KL penalty subtracted from the clipped loss;
* ``grpo-advantage-not-std-normalised``: GRPO's advantage r - mean without the division by std;
* ``k3-computed-as-k1``: the k3 estimator returns k1 = log(pi/ref) (in the loss and in kl-k3);
* ``rloo-baseline-includes-own-sample``: RLOO's baseline the group mean including the sample
  itself (advantage (G-1)/G of the leave-one-out one);
* ``grpo-dr-grpo-length-normalisations-swapped``: GRPO aggregates with Dr. GRPO's constant
  1/L_max and Dr. GRPO with GRPO's 1/|o_i|;
* ``token-mean-as-sequence-mean``: the token-mean aggregation computed as the mean of per-response
  token means.

``python -m theorylab.validations.mutants`` reports which claims catch each of them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def ucbvi_ch_bonus_sqrt_l(claim=None) -> Iterator[None]:
    from theorylab.algorithms.online.ucbvi import UCBVI, UCBVIHoeffding

    # UCBVI-CH reads L only in its bonus 7 H L sqrt(1/N); sqrt(L) there gives 7 H sqrt(L/N)
    with _patched(UCBVIHoeffding, "L", property(lambda self: math.sqrt(UCBVI.L.fget(self)))):
        yield


@contextlib.contextmanager
def score_next_policy(claim=None) -> Iterator[None]:
    import functools

    import theorylab.runners.online as online

    with _patched(online, "run", functools.partial(online.run, score_policy="next")):
        yield


@contextlib.contextmanager
def pevi_penalty_sign(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.offline import pevi

    def flipped(fit, gamma, cap):
        return np.clip(fit + gamma, 0.0, cap)

    with _patched(pevi, "pessimistic_q", flipped):
        yield


@contextlib.contextmanager
def cvar_upper_tail(claim=None) -> Iterator[None]:
    import functools

    import theorylab.runners.online as online
    from theorylab.algorithms.risk.return_distribution import ReturnDistribution

    lower = ReturnDistribution.cvar

    def upper(self, tau: float):
        # the mean of the best tau-fraction of returns: E Z = tau U_tau + (1 - tau) L_(1 - tau)
        if tau >= 1.0:
            return lower(self, 1.0)
        return (self.mean() - (1.0 - tau) * lower(self, 1.0 - tau)) / tau

    run = online.run

    @functools.wraps(run)
    def python_loop(*args, **kwargs):
        # CVaR-UCBVI's compiled loop (algorithms/online/whole_run_cvar.py) computes the exact
        # CVaR in its kernel, which this patch cannot reach: mutated runs take the Python loop
        kwargs["loop"] = "python"
        return run(*args, **kwargs)

    with _patched(ReturnDistribution, "cvar", upper), _patched(online, "run", python_loop):
        yield


@contextlib.contextmanager
def lsvi_width_squared(claim=None) -> Iterator[None]:
    from theorylab.algorithms.linear.lsvi import LeastSquaresValueIteration

    def squared(self, h: int):
        return self.width_sq[:, h]  # phi^T Lambda^-1 phi, the square root forgotten

    with _patched(LeastSquaresValueIteration, "bonus_width", squared):
        yield


@contextlib.contextmanager
def lsvi_no_bootstrap(claim=None) -> Iterator[None]:
    from theorylab.algorithms.linear.lsvi import LeastSquaresValueIteration

    original = LeastSquaresValueIteration.ridge_weights

    def rewards_only(self, h: int, V_next):
        return original(self, h, 0.0 * V_next)  # the regression target r, the V_(h+1) forgotten

    with _patched(LeastSquaresValueIteration, "ridge_weights", rewards_only):
        yield


@contextlib.contextmanager
def pevi_gram_without_ridge(claim=None) -> Iterator[None]:
    from theorylab.algorithms.offline import pevi

    original = pevi.gram_matrices

    def no_ridge(n, phi, lam):
        return original(n, phi, 0.0)  # Lambda_h = sum phi phi^T, the + lambda I forgotten

    with _patched(pevi, "gram_matrices", no_ridge):
        yield


@contextlib.contextmanager
def pessimistic_mle_bonus_sign(claim=None) -> Iterator[None]:
    import itertools

    import numpy as np

    from theorylab.algorithms.preference import pessimistic

    def optimistic(bandit, theta_hat, M, radius, v=None):
        # the bug: + f ||u||_(M^-1). The objective is convex in pi, so its maximum over the
        # policies is attained at a deterministic one: enumerate them (A^S, small instances)
        S, A, d = bandit.phi.shape
        v0 = np.zeros(d) if v is None else np.asarray(v, float)
        best, best_val = None, -np.inf
        for acts in itertools.product(range(A), repeat=S):
            p = np.zeros((S, A))
            p[np.arange(S), acts] = 1.0
            u = bandit.feature_expectation(p) - v0
            val = float(theta_hat @ u + radius * np.sqrt(u @ np.linalg.solve(M, u)))
            if val > best_val:
                best, best_val = p, val
        return best, best_val

    with _patched(pessimistic, "pessimistic_policy", optimistic):
        yield


@contextlib.contextmanager
def plackett_luce_top_choice_only(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import mle

    original = mle.plackett_luce_loss

    def top_choice(F, stages=None):
        return original(F, 1)  # the bug: the likelihood's first factor only, whatever is asked

    with _patched(mle, "plackett_luce_loss", top_choice):
        yield


@contextlib.contextmanager
def p2r_no_cache(claim=None) -> Iterator[None]:
    import functools

    from theorylab.algorithms.preference.p2r import P2RUCBVI

    original = P2RUCBVI.__init__

    @functools.wraps(original)  # the runner reads the constructor's signature
    def no_cache(self, *args, **kwargs):
        original(self, *args, **{**kwargs, "cache": False})  # the bug: every visit re-queried

    with _patched(P2RUCBVI, "__init__", no_cache):
        yield


@contextlib.contextmanager
def dueling_rl_random_duels(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.agent import read_only_copy
    from theorylab.algorithms.preference.dueling import DuelingRL

    def random_pair(self):
        # the bug: the duel ignores the candidate set (a fixed generator: the control is exact)
        rng = self.__dict__.setdefault("_mutation_rng", np.random.default_rng(20261124))
        i1, i2 = rng.integers(len(self.policies), size=(2, self.n_seeds))
        return read_only_copy(self.policies[i1]), read_only_copy(self.policies[i2])

    with _patched(DuelingRL, "policy_pair", random_pair):
        yield


@contextlib.contextmanager
def regime_no_exploration(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.preference.policy_features import empirical_model
    from theorylab.algorithms.preference.regime import REGIME

    def uninformed(self):
        return empirical_model(np.zeros_like(self.counts_sas))  # the bug: exploration dropped

    with _patched(REGIME, "design_model", uninformed):
        yield


@contextlib.contextmanager
def inpo_no_kl_pull(claim=None) -> Iterator[None]:
    from theorylab.algorithms.preference import nash

    original = nash.inpo_step

    def no_pull(pi_t, wins, logref, eta, tau):
        # the bug: INPO's loss with h = log pi(y)/pi(y') - log pi_t(y)/pi_t(y') (its pi_ref term
        # dropped): the step becomes Hedge's; the gaps are still the tau-regularised game's
        return original(pi_t, wins, logref, eta, 0.0)

    with _patched(nash, "inpo_step", no_pull):
        yield


@contextlib.contextmanager
def pr_lsvi_mle_frozen(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.preference import pr_lsvi

    def frozen(X, y, mask, nu, theta0):
        return np.zeros_like(theta0)  # the bug: the labels never reach the reward estimate

    with _patched(pr_lsvi, "btl_ridge_mle", frozen):
        yield


@contextlib.contextmanager
def sampled_pairs_no_coverage_limit(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import fixed_points, sampled_pairs

    def population(task, data, loss, beta):
        # the bug: the finite dataset's optimum taken to be the population minimiser
        pop = (
            task.soft_optimum(beta).seq_logp
            if loss == "dpo"
            else fixed_points.ipo_optimum(task, beta)
        )
        return pop, np.ones(task.n_prompts, dtype=bool)

    with _patched(sampled_pairs, "empirical_optimum", population):
        yield


@contextlib.contextmanager
def ppo_exact_objective_under_ref(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep.loss_expectations import CaseObjective

    original = CaseObjective.exact

    def under_ref(self):
        if self.case != "ppo-clip":
            return original(self)
        # the bug: PPO's expectation taken over ref's responses, not the old policy's
        w = self.ref_seq.exp()[self.all_x, self.all_y] / self.task.n_prompts
        return self._responses(self.pol.cond_logp(), self.all_x, self.all_y, w)

    with _patched(CaseObjective, "exact", under_ref):
        yield


@contextlib.contextmanager
def dual_v_plain_conjugate(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.dual import dual_v
    from theorylab.algorithms.dual.smooth_dual_solver import Conjugate

    def plain(f):  # the bug: f* where f*_p = sup over w >= 0 belongs
        return Conjugate(f.conjugate, f.conjugate_derivative, f.conjugate_second_derivative)

    def unclipped(flow, x, d_ref, alpha, f):  # d^O (f*)'(delta / alpha): no max(0, .)
        delta = flow.r - flow.M @ x
        w = np.asarray(d_ref, dtype=np.float64).ravel()
        d = np.zeros_like(delta)
        on = w > 0
        d[on] = w[on] * f.conjugate_derivative(delta[on] / alpha)
        return d.reshape(flow.d_shape)

    with (
        _patched(dual_v, "nonneg_conjugate", plain),
        _patched(dual_v, "flow_recover_occupancy", unclipped),
    ):
        yield


@contextlib.contextmanager
def dual_v_sqrt_alpha(claim=None) -> Iterator[None]:
    import theorylab.algorithms.dual as dual

    original = dual.solve_dual_v

    def sqrt_alpha(mdp, d_ref, alpha, f="kl", **kwargs):
        return original(mdp, d_ref, math.sqrt(alpha), f, **kwargs)  # the bug: sqrt(alpha)

    with _patched(dual, "solve_dual_v", sqrt_alpha):
        yield


@contextlib.contextmanager
def reps_eta_fixed(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.dual import reps

    original = reps._newton_reps

    def fixed(mdp, q, epsilon, max_iter):
        # the bug: V minimised, eta left at its starting value 1 (the tilt not tuned to epsilon)
        _, V, _, _, it = original(mdp, q, epsilon, max_iter)
        on = np.flatnonzero(q.ravel() > 0)
        B = reps._stationarity_matrix(mdp)[on].tocsr()
        r = np.asarray(mdp.reward(0), float).ravel()[on]
        _, mu, logZ = reps._tilt(1.0, V, r, B, np.log(q.ravel()[on]))
        return 1.0, V, mu, float(epsilon + logZ), it

    with _patched(reps, "_newton_reps", fixed):
        yield


@contextlib.contextmanager
def kl_pg_reward_only_gradient(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import kl_bayesian_inference as kb

    original = kb.regularised_gradient

    def reward_only(task, logits, beta):
        return original(task, logits, 0.0)  # the bug: the KL term left out of the gradient

    with _patched(kb, "regularised_gradient", reward_only):
        yield


@contextlib.contextmanager
def on_policy_data_offline_samples(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import on_policy_data as opd

    original = opd.step_direction

    def offline(theta, objective, **kw):
        if objective != "reverse-kl":
            return original(theta, objective, **kw)
        logp = opd.log_softmax(theta)
        g = kw["reward"] - kw["beta"] * (logp - kw["ref_logp"])
        d = kw["data"]  # the bug: E_{y ~ D} A(y) grad log pi(y), D the offline data, not pi
        return d * (g - d @ g)  # minus pi E_D A, which is 0 with the baseline E_D g

    with _patched(opd, "step_direction", offline):
        yield


@contextlib.contextmanager
def soft_optimum_hardmax(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.planning.soft_value_iteration import soft_value_iteration
    from theorylab.algorithms.policy_optimization import policy_cliff as pc

    def hardmax(mdp, reward, tau):
        Q = soft_value_iteration(mdp._replace(R=reward), tau, tol=1e-13).Q
        return np.eye(mdp.A)[np.argmax(Q, axis=1)]  # the bug: argmax of Q_tau, not softmax

    with _patched(pc, "soft_optimum_of_reward", hardmax):
        yield


@contextlib.contextmanager
def trpo_penalty_zero(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import trpo

    with _patched(trpo, "penalty_constant", lambda A, gamma: 0.0):  # the bug: no KL penalty
        yield


@contextlib.contextmanager
def md_vi_last_q_only(claim=None) -> Iterator[None]:
    from scipy.special import logsumexp

    from theorylab.algorithms.policy_optimization import leverage_average as la

    original = la.md_vi_policy

    def last_only(log_pi, q, lam, tau):  # the bug: pi_k's logits dropped, only q_k kept
        if lam + tau == 0:
            return original(log_pi, q, lam, tau)
        logits = q / (lam + tau)
        return logits - logsumexp(logits, axis=1, keepdims=True)

    with _patched(la, "md_vi_policy", last_only):
        yield


@contextlib.contextmanager
def staq_weights_without_decay(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import staq

    def flat(eta, tau, n):  # the bug: alpha for every table, beta^i forgotten
        return np.full(n, eta / (1.0 + eta * tau))

    with _patched(staq, "memory_weights", flat):
        yield


@contextlib.contextmanager
def mo_vr_pg_no_importance_weight(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import mo_vr_pg

    def ones(logp_prev, logp_cur):  # the bug: the old-policy estimate reused unweighted
        return np.ones_like(logp_cur)

    with _patched(mo_vr_pg, "importance_weights", ones):
        yield


@contextlib.contextmanager
def bc_ignores_demonstrations(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.policy_optimization import demonstration_regularised as dr

    def uniform(states, actions, S, A, H, smoothing):  # the bug: the counts never added
        return np.full((H, S, A), 1.0 / A)

    with _patched(dr, "behaviour_cloning", uniform):
        yield


@contextlib.contextmanager
def mdpo_gradient_without_kl(claim=None) -> Iterator[None]:
    import numpy as np
    from scipy.special import logsumexp

    from theorylab.algorithms.policy_optimization import mdpo

    def linear_only(z, log_pi, Q, eta):  # the bug: the KL term's gradient dropped
        p = np.exp(z - logsumexp(z, axis=1, keepdims=True))
        return p * (Q - (p * Q).sum(axis=1, keepdims=True))

    with _patched(mdpo, "proximal_gradient", linear_only):
        yield


@contextlib.contextmanager
def tilted_frontier_reverse_kl(claim=None) -> Iterator[None]:
    from theorylab.algorithms.policy_optimization import alignment_asymptotics as aa

    def reverse(lm, lam):  # the bug: KL(p || q_lambda) where KL(q_lambda || p) belongs
        return aa.kl_levels(lm.level_distribution(), aa.tilted_levels(lm, lam))

    with _patched(aa, "tilted_kl", reverse):
        yield


@contextlib.contextmanager
def dualdice_behaviour_policy(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import dualdice

    original = dualdice.dualdice

    def behaviour(dataset, policy):
        return original(dataset, dataset.behaviour)  # the bug: the target policy ignored

    with _patched(dualdice, "dualdice", behaviour):
        yield


@contextlib.contextmanager
def cmdp_ogda_no_optimism(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import cmdp

    original = cmdp.lagrangian_gda

    def no_optimism(*args, optimistic: bool = False, **kwargs):
        return original(*args, optimistic=False, **kwargs)  # the bug: the extrapolation dropped

    with _patched(cmdp, "lagrangian_gda", no_optimism):
        yield


@contextlib.contextmanager
def rloo_kl_beta_halved(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import twins

    original = twins.ExactObjective.__init__

    def halved(self, task, twin, beta, *args, **kwargs):
        original(self, task, twin, beta, *args, **kwargs)
        if twin == "rloo":
            self.beta = beta / 2.0  # the bug: r - (beta / 2) log(pi / ref) in the reward
            if self.enumerate:  # the registered loss over enumerated groups, built at beta / 2
                self.loss = twins.group_loss("rloo", beta / 2.0, self.alpha)

    with _patched(twins.ExactObjective, "__init__", halved):
        yield


@contextlib.contextmanager
def k3_point_from_k2_recursion(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import twins

    original = twins.predicted_point

    def k2_point(task, twin, beta, G, alpha):
        if twin not in ("grpo", "dr-grpo"):
            return original(task, twin, beta, G, alpha)
        # the bug: k3's expected gradient taken to be the reverse KL's (k2's node recursion)
        kappa = np.full(task.n_prompts, (G - 1) / G)
        return task.sequence_logprobs(twins.node_recursion(task, kappa, beta, "k2"))

    with _patched(twins, "predicted_point", k2_point):
        yield


@contextlib.contextmanager
def dr_grpo_k2_inverted_factor(claim=None) -> Iterator[None]:
    import numpy as np

    from theorylab.algorithms.deep import twins

    original = twins.predicted_point

    def inverted(task, twin, beta, G, alpha):
        if twin != "dr-grpo-k2":
            return original(task, twin, beta, G, alpha)
        # the bug: kappa = G / (G - 1), an effective temperature beta (G - 1) / G
        kappa = np.full(task.n_prompts, G / (G - 1))
        return task.sequence_logprobs(twins.node_recursion(task, kappa, beta, "k2"))

    with _patched(twins, "predicted_point", inverted):
        yield


@contextlib.contextmanager
def ipo_target_one_over_tau(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import twins

    original = twins.pair_loss

    def one_over_tau(twin: str, beta: float):
        # the bug: IPO's target 1/tau instead of 1/(2 tau), i.e. the loss at tau / 2
        return original(twin, beta / 2.0 if twin == "ipo" else beta)

    with _patched(twins, "pair_loss", one_over_tau):
        yield


@contextlib.contextmanager
def cvar_grpo_mean_advantage(claim=None) -> Iterator[None]:
    # the bug: the lower-tail CVaR advantage computed as the group-mean (risk-neutral) one
    with _advantage_replaced("cvar", "mean"):  # (defined with the issue-26 deep mutations)
        yield


def _is_hf_model(spec) -> bool:
    from theorylab.algorithms.deep import models

    if isinstance(spec, str):
        return spec.split(":", 1)[0] in (*models.HF_CONFIGS, "hf")
    return isinstance(spec, models.HFCausalLM)


@contextlib.contextmanager
def _trainer_without_step(applies) -> Iterator[None]:
    """The transformer trainer with its optimiser step left out for the models ``applies``
    selects. Without the step the parameters never move, so the metrics at every evaluation are
    those at step 0: the mutation evaluates the initial model once and repeats it (the same
    result as running the steps, in a fraction of the time); the per-step losses are NaN."""
    import numpy as np

    from theorylab.algorithms.deep import trainer

    original = trainer._train_one_seed

    def frozen(model_spec, *args, steps, eval_steps, **kwargs):
        if not applies(model_spec):
            return original(model_spec, *args, steps=steps, eval_steps=eval_steps, **kwargs)
        out = original(model_spec, *args, steps=0, eval_steps=eval_steps[:1], **kwargs)
        for k in ("acc", "rew", "klo", "klr", "pk"):
            out[k] = np.repeat(out[k][:1], len(eval_steps))
        out["loss"] = np.full(steps, np.nan)
        return out

    with _patched(trainer, "_train_one_seed", frozen):
        yield


def trainer_no_optimiser_step(claim=None):
    return _trainer_without_step(lambda spec: True)


def hf_model_not_optimised(claim=None):
    return _trainer_without_step(_is_hf_model)


MUTATIONS = (
    register_control(
        Control(
            "ucbvi-ch-bonus-sqrt-l",
            "mutation",
            "UCBVI-CH bonus 7 H sqrt(L/N) instead of 7 H L / sqrt(N)",
            ucbvi_ch_bonus_sqrt_l,
        )
    ),
    register_control(
        Control(
            "score-next-policy",
            "mutation",
            "episode k scored with the policy of episode k + 1",
            score_next_policy,
        )
    ),
    register_control(
        Control(
            "cvar-upper-tail",
            "mutation",
            "CVaR_tau of a return distribution taken over the upper tail (the best tau-fraction)",
            cvar_upper_tail,
        )
    ),
    register_control(
        Control(
            "lsvi-bonus-no-sqrt",
            "mutation",
            "LSVI-UCB's bonus beta phi^T Lambda^-1 phi instead of beta ||phi||_(Lambda^-1)",
            lsvi_width_squared,
        )
    ),
    register_control(
        Control(
            "lsvi-no-bootstrap",
            "mutation",
            "LSVI's regression target r instead of r + V_(h+1)(s')",
            lsvi_no_bootstrap,
        )
    ),
    register_control(
        Control(
            "pevi-gram-without-ridge",
            "mutation",
            "linear PEVI's Gram matrix without its ridge term lambda I",
            pevi_gram_without_ridge,
        )
    ),
    register_control(
        Control(
            "pevi-penalty-sign",
            "mutation",
            "PEVI's penalty added instead of subtracted",
            pevi_penalty_sign,
        )
    ),
    register_control(
        Control(
            "pessimistic-mle-bonus-sign",
            "mutation",
            "the pessimistic MLE's penalty f ||u||_(M^-1) added instead of subtracted",
            pessimistic_mle_bonus_sign,
        )
    ),
    register_control(
        Control(
            "plackett-luce-top-choice-only",
            "mutation",
            "the Plackett-Luce likelihood reduced to its first factor (each ranking's top choice)",
            plackett_luce_top_choice_only,
        )
    ),
    register_control(
        Control(
            "p2r-no-cache",
            "mutation",
            "P2R without its label cache: the oracle asked at every visit",
            p2r_no_cache,
        )
    ),
    register_control(
        Control(
            "dueling-rl-random-duels",
            "mutation",
            "Dueling RL's duel drawn uniformly from all policies (the elimination ignored)",
            dueling_rl_random_duels,
        )
    ),
    register_control(
        Control(
            "regime-no-exploration",
            "mutation",
            "REGIME designs and plans on the uninformed model (exploration data discarded)",
            regime_no_exploration,
        )
    ),
    register_control(
        Control(
            "inpo-no-kl-pull",
            "mutation",
            "the OMD / INPO step without its KL pull toward pi_ref (eta tau dropped)",
            inpo_no_kl_pull,
        )
    ),
    register_control(
        Control(
            "pr-lsvi-mle-frozen",
            "mutation",
            "PR-LSVI's reward MLE left at 0 (the preference labels never used)",
            pr_lsvi_mle_frozen,
        )
    ),
    register_control(
        Control(
            "dual-v-plain-conjugate",
            "mutation",
            "dual-V with the plain conjugate f* in place of f*_p, d recovered without max(0, .)",
            dual_v_plain_conjugate,
        )
    ),
    register_control(
        Control(
            "dual-v-sqrt-alpha",
            "mutation",
            "solve_dual_v regularised with sqrt(alpha) instead of alpha",
            dual_v_sqrt_alpha,
        )
    ),
    register_control(
        Control(
            "reps-eta-fixed",
            "mutation",
            "REPS' temperature eta fixed at 1 instead of minimised (the KL bound not enforced)",
            reps_eta_fixed,
        )
    ),
    register_control(
        Control(
            "dualdice-behaviour-policy",
            "mutation",
            "DualDICE's correction solved for the behaviour policy instead of the target",
            dualdice_behaviour_policy,
        )
    ),
    register_control(
        Control(
            "kl-pg-reward-only-gradient",
            "mutation",
            "kl-pg's gradient without its KL term (plain policy gradient under a KL name)",
            kl_pg_reward_only_gradient,
        )
    ),
    register_control(
        Control(
            "soft-optimum-hardmax",
            "mutation",
            "the entropy-regularised optimum taken as the argmax of Q*_tau (a hardmax)",
            soft_optimum_hardmax,
        )
    ),
    register_control(
        Control(
            "trpo-penalty-zero",
            "mutation",
            "TRPO's Algorithm 1 with C = 0 (the surrogate maximised without its KL penalty)",
            trpo_penalty_zero,
        )
    ),
    register_control(
        Control(
            "tilted-frontier-reverse-kl",
            "mutation",
            "the tilted frontier's budget measured as KL(p || q_lambda), the reverse direction",
            tilted_frontier_reverse_kl,
        )
    ),
    register_control(
        Control(
            "md-vi-last-q-only",
            "mutation",
            "MD-VI's policy from the last q alone (no sum of past q's: no averaging)",
            md_vi_last_q_only,
        )
    ),
    register_control(
        Control(
            "staq-weights-without-decay",
            "mutation",
            "StaQ's weights on the last M Q-functions without their decay beta^i",
            staq_weights_without_decay,
        )
    ),
    register_control(
        Control(
            "mo-vr-pg-no-importance-weight",
            "mutation",
            "MO-VR-PG's recursive increment without the importance weight pi_prev / pi_cur",
            mo_vr_pg_no_importance_weight,
        )
    ),
    register_control(
        Control(
            "bc-ignores-demonstrations",
            "mutation",
            "behaviour cloning returns the uniform policy (the demonstrations never counted)",
            bc_ignores_demonstrations,
        )
    ),
    register_control(
        Control(
            "mdpo-gradient-without-kl",
            "mutation",
            "MDPO's m gradient steps on <p, Q> alone (the KL proximity term dropped)",
            mdpo_gradient_without_kl,
        )
    ),
    register_control(
        Control(
            "on-policy-data-offline-samples",
            "mutation",
            "on-policy-data's reverse-KL gradient taken over the offline data, not the policy",
            on_policy_data_offline_samples,
        )
    ),
    register_control(
        Control(
            "cmdp-ogda-no-optimism",
            "mutation",
            "OGDA on the CMDP Lagrangian without its optimistic half-step (plain GDA)",
            cmdp_ogda_no_optimism,
        )
    ),
)

# the deep claims register only with torch (the [torch] extra): so do their mutations
if importlib.util.find_spec("torch") is not None:
    MUTATIONS = (
        *MUTATIONS,
        register_control(
            Control(
                "sampled-pairs-no-coverage-limit",
                "mutation",
                "DPO/IPO's optimum on a finite pair dataset taken to be the population minimiser",
                sampled_pairs_no_coverage_limit,
            )
        ),
        register_control(
            Control(
                "ppo-exact-objective-under-ref",
                "mutation",
                "PPO-clip's exact expected loss taken over ref's responses, not the old policy's",
                ppo_exact_objective_under_ref,
            )
        ),
        *(
            register_control(Control(name, "mutation", description, mutation))
            for name, description, mutation in (
                (
                    "rloo-kl-beta-halved",
                    "RLOO's exact expected update with the KL in its reward at beta / 2",
                    rloo_kl_beta_halved,
                ),
                (
                    "k3-point-from-k2-recursion",
                    "GRPO / Dr. GRPO (k3)'s fixed point predicted by the k2 node recursion",
                    k3_point_from_k2_recursion,
                ),
                (
                    "dr-grpo-k2-inverted-factor",
                    "Dr. GRPO (k2)'s effective beta taken as beta (G - 1)/G, not beta G/(G - 1)",
                    dr_grpo_k2_inverted_factor,
                ),
                (
                    "ipo-target-one-over-tau",
                    "IPO's loss (h - 1/tau)^2 instead of (h - 1/(2 tau))^2",
                    ipo_target_one_over_tau,
                ),
                (
                    "cvar-grpo-mean-advantage",
                    "CVaR-GRPO's lower-tail advantage replaced by the group-mean advantage",
                    cvar_grpo_mean_advantage,
                ),
                (
                    "trainer-no-optimiser-step",
                    "the transformer trainer never steps its optimiser (the model stays at init)",
                    trainer_no_optimiser_step,
                ),
                (
                    "hf-model-not-optimised",
                    "Hugging Face models never stepped by the trainer (the tiny model trains)",
                    hf_model_not_optimised,
                ),
            )
        ),
    )


# ----------------------------------------------------------------------------- dual RL on data
@contextlib.contextmanager
def recoil_reference_without_expert(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import recoil

    original = recoil.solve_recoil

    def without_expert(mdp, d_expert, d_supp, beta=0.5, f="kl", **kwargs):
        return original(mdp, d_supp, d_supp, beta, f, **kwargs)  # the bug: m = d^S

    with _patched(recoil, "solve_recoil", without_expert):
        yield


@contextlib.contextmanager
def f_dvl_unweighted_value_step(claim=None) -> Iterator[None]:
    from theorylab.algorithms.dual import f_dvl

    original = f_dvl.value_step

    def unweighted(Q, weights, loss, loss_temp):
        # the bug: the data weights d_hat(s, a) replaced by the indicator of data
        return original(Q, (weights > 0).astype(float), loss, loss_temp)

    with _patched(f_dvl, "value_step", unweighted):
        yield


MUTATIONS = (
    *MUTATIONS,
    register_control(
        Control(
            "recoil-reference-without-expert",
            "mutation",
            "ReCOIL's reference mixture without its expert term (m = d^S)",
            recoil_reference_without_expert,
        )
    ),
    register_control(
        Control(
            "f-dvl-unweighted-value-step",
            "mutation",
            "f-DVL's V-step with the data weights replaced by the indicator of data",
            f_dvl_unweighted_value_step,
        )
    ),
)


# -------------------------------------------------------------------------- deep losses (issue 26)
# Bugs in the registered losses themselves, which the claims comparing them with the papers'
# objectives written independently (theorylab.algorithms.deep.reference_objectives) must catch.
@contextlib.contextmanager
def _sft_term_sign_flipped(argument: str) -> Iterator[None]:
    """The preference losses' extra term (``_sft_term``) negated for one loss's argument."""
    from theorylab.algorithms.deep import preference_losses as pl

    original = pl._sft_term

    def flipped(name, logp, weights):
        value = original(name, logp, weights)
        return -value if name == argument else value  # the bug: the term's sign flipped

    with _patched(pl, "_sft_term", flipped):
        yield


@contextlib.contextmanager
def rpo_sft_sign_flipped(claim=None) -> Iterator[None]:
    with _sft_term_sign_flipped("baseline_logp"):
        yield


@contextlib.contextmanager
def xpo_bonus_sign_flipped(claim=None) -> Iterator[None]:
    with _sft_term_sign_flipped("ref_sample_logp"):
        yield


@contextlib.contextmanager
def _loss_replaced(name: str, build) -> Iterator[None]:
    """The registry's loss ``name`` replaced by ``build(original)`` (same signature)."""
    from theorylab.algorithms.deep.registry import LOSSES, load_losses

    load_losses()
    original = LOSSES.get(name)
    LOSSES._entries[name] = build(original)
    try:
        yield
    finally:
        LOSSES._entries[name] = original


@contextlib.contextmanager
def ppo_clip_kl_sign_flipped(claim=None) -> Iterator[None]:
    import functools

    def build(original):
        @functools.wraps(original)
        def flipped(logp, old_logp, advantages, mask, ref_logp=None, weights=None, *,
                    clip_eps=0.2, beta=0.0, kl="k3", aggregation="token-mean"):  # fmt: skip
            kw = dict(clip_eps=clip_eps, kl=kl, aggregation=aggregation)
            with_kl = original(logp, old_logp, advantages, mask, ref_logp, weights, beta=beta, **kw)
            without = original(logp, old_logp, advantages, mask, ref_logp, weights, beta=0.0, **kw)
            return 2 * without - with_kl  # the bug: clipped loss - beta KL

        return flipped

    with _loss_replaced("ppo-clip", build):
        yield


@contextlib.contextmanager
def _advantage_replaced(kind: str, by: str) -> Iterator[None]:
    from theorylab.algorithms.deep import policy_gradient_losses as pg

    original = pg.group_advantages

    def replaced(rewards, group, k="std", **kwargs):
        return original(rewards, group, by if k == kind else k, **kwargs)

    with _patched(pg, "group_advantages", replaced):
        yield


@contextlib.contextmanager
def grpo_advantage_not_std_normalised(claim=None) -> Iterator[None]:
    with _advantage_replaced("std", "mean"):  # the bug: (r - mean) without / (std + eps)
        yield


@contextlib.contextmanager
def rloo_baseline_includes_own_sample(claim=None) -> Iterator[None]:
    with _advantage_replaced("loo", "mean"):  # the bug: the baseline averages the sample too
        yield


@contextlib.contextmanager
def k3_computed_as_k1(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import kl
    from theorylab.algorithms.deep import policy_gradient_losses as pg

    original = kl.kl_tokens

    def as_k1(logp, ref_logp, estimator="k3"):
        return original(logp, ref_logp, "k1" if estimator == "k3" else estimator)

    with _patched(kl, "kl_tokens", as_k1), _patched(pg, "kl_tokens", as_k1):
        yield


@contextlib.contextmanager
def grpo_dr_grpo_length_normalisations_swapped(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import policy_gradient_losses as pg

    original = pg._group_pg
    swap = {"seq-mean-token-mean": "seq-mean-token-sum-norm"}
    swap.update({v: k for k, v in swap.items()})

    def swapped(logp, old_logp, ref_logp, mask, rewards, group, advantage, aggregation, **kw):
        return original(
            logp, old_logp, ref_logp, mask, rewards, group, advantage, swap[aggregation], **kw
        )

    with _patched(pg, "_group_pg", swapped):
        yield


@contextlib.contextmanager
def token_mean_as_sequence_mean(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import policy_gradient_losses as pg

    original = pg.aggregate

    def seq_mean(token_loss, mask, mode="seq-mean-token-mean", **kw):
        return original(
            token_loss, mask, "seq-mean-token-mean" if mode == "token-mean" else mode, **kw
        )

    with _patched(pg, "aggregate", seq_mean):
        yield


if importlib.util.find_spec("torch") is not None:
    MUTATIONS = (
        *MUTATIONS,
        *(
            register_control(Control(name, "mutation", description, mutation))
            for name, description, mutation in (
                (
                    "rpo-sft-sign-flipped",
                    "RPO's SFT term with the wrong sign (+eta beta E_base log pi)",
                    rpo_sft_sign_flipped,
                ),
                (
                    "xpo-bonus-sign-flipped",
                    "XPO's exploration bonus subtracted (-alpha E_ref log pi)",
                    xpo_bonus_sign_flipped,
                ),
                (
                    "ppo-clip-kl-sign-flipped",
                    "PPO-clip's KL penalty subtracted instead of added",
                    ppo_clip_kl_sign_flipped,
                ),
                (
                    "grpo-advantage-not-std-normalised",
                    "GRPO's advantage r - mean without the division by the group's std",
                    grpo_advantage_not_std_normalised,
                ),
                (
                    "k3-computed-as-k1",
                    "the k3 KL estimator computed as k1 = log(pi/ref)",
                    k3_computed_as_k1,
                ),
                (
                    "rloo-baseline-includes-own-sample",
                    "RLOO's baseline the group mean including the sample itself",
                    rloo_baseline_includes_own_sample,
                ),
                (
                    "grpo-dr-grpo-length-normalisations-swapped",
                    "GRPO normalised by 1/L_max and Dr. GRPO by 1/|o_i| (swapped)",
                    grpo_dr_grpo_length_normalisations_swapped,
                ),
                (
                    "token-mean-as-sequence-mean",
                    "the token-mean aggregation computed as a mean of per-response means",
                    token_mean_as_sequence_mean,
                ),
            )
        ),
    )


# ============================================================================ issue 26 (constants)
# Slips that make a bonus, a radius or an inverse temperature smaller (a bonus halved, a radius
# constant inverted, a missing 1/alpha, a square outside the expectation, a log without delta,
# N + 1 for max(N, 1), a bonus subtracted). Each is a one-expression edit of the library's source
# (``_source_edits``), applied where the constant is computed: in the Python agent and, where the
# compiled kernel gets it from ``loop_constants``, there too; a slip inside a numba kernel's body
# cannot be patched, so such a mutation forces the Python loop (``_python_loops``). On benign
# instances a smaller bonus makes a learner look *better*, so most claims cannot see these: each
# names the pinned-constant tests (tests/test_paper_constants_*.py) that catch it, and CI checks
# that they do (tests/test_mutation_table.py).
@contextlib.contextmanager
def _source_edits(*edits) -> Iterator[None]:
    """Patch, for the block, each ``(owner, attribute, old, new)``: the function (or property
    getter) ``owner.attribute`` recompiled from its source with the text ``old`` (which must
    occur exactly once) replaced by ``new``. A module-level function is also replaced where other
    theorylab modules imported it by name."""
    import ast
    import inspect
    import sys
    import textwrap

    made: list[tuple[str, object, object]] = []  # (attribute, original, mutant) of functions
    with contextlib.ExitStack() as stack:
        stack.callback(_unbind_mutants, made)
        for owner, attribute, old, new in edits:
            original = vars(owner)[attribute]
            func = original.fget if isinstance(original, property) else original
            source = textwrap.dedent(inspect.getsource(func))
            if source.count(old) != 1:
                raise ValueError(f"mutation: {old!r} occurs {source.count(old)} times in {func}")
            tree = ast.parse(source.replace(old, new))
            tree.body[0].decorator_list = []  # no re-registration
            namespace = dict(func.__globals__)  # a copy: the module's globals stay untouched
            if isinstance(owner, type):  # zero-argument super() needs the class cell
                namespace["__class__"] = owner
                tree = ast.parse(ast.unparse(tree).replace("super()", "super(__class__, self)"))
            code = compile(tree, f"<mutant of {func.__qualname__}>", "exec")
            local: dict = {}
            exec(code, namespace, local)  # noqa: S102  (the library's own source, one edit)
            mutant = local[func.__name__]
            value = property(mutant) if isinstance(original, property) else mutant
            stack.enter_context(_patched(owner, attribute, value))
            if not isinstance(owner, type):
                made.append((attribute, original, value))
                for mod in list(sys.modules.values()):
                    name = getattr(mod, "__name__", "") or ""
                    if mod is not owner and name.startswith("theorylab."):
                        if vars(mod).get(attribute) is original:
                            stack.enter_context(_patched(mod, attribute, value))
        yield


def _unbind_mutants(made) -> None:
    """A module imported while a mutation was active bound the mutant by name: rebind the
    original there (the patches themselves are undone by their own context managers)."""
    import sys

    for attribute, original, mutant in made:
        for mod in list(sys.modules.values()):
            if vars(mod).get(attribute) is mutant if hasattr(mod, "__dict__") else False:
                setattr(mod, attribute, original)


@contextlib.contextmanager
def _python_loops() -> Iterator[None]:
    """The online and offline runners forced onto their Python loops (a slip in Python code does
    not reach a compiled kernel's body)."""
    import functools

    import theorylab.runners.offline as offline
    import theorylab.runners.online as online

    def forced(run):
        @functools.wraps(run)
        def python_loop(*args, **kwargs):
            kwargs["loop"] = "python"
            return run(*args, **kwargs)

        return python_loop

    with _patched(online, "run", forced(online.run)), _patched(offline, "run", forced(offline.run)):
        yield


def _constant_mutation(name, description, family, tests, *edits, python_loop=False) -> Control:
    """A registered mutation made of source ``edits`` (owners given as import paths)."""
    import importlib

    def resolve(path: str):
        module, _, cls = path.partition(":")
        mod = importlib.import_module(module)
        return getattr(mod, cls) if cls else mod

    @contextlib.contextmanager
    def applied(claim=None) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            stack.enter_context(
                _source_edits(*((resolve(o), a, old, new) for o, a, old, new in edits))
            )
            if python_loop:
                stack.enter_context(_python_loops())
            yield

    return register_control(
        Control(name, "mutation", description, applied, family=family, tests=tests)
    )


_UCBVI = "theorylab.algorithms.online.ucbvi"
_LOOP = "theorylab.algorithms.online.whole_run"
_ONLINE_T = "test_paper_constants_online"
_OFFLINE_T = "test_paper_constants_offline"
_LINEAR_T = "test_paper_constants_linear"


def _both_paths(module: str, function: str, **kwargs) -> tuple:
    return tuple((module, function, {**kwargs, "path": p}) for p in ("python", "kernel"))


CONSTANT_MUTATIONS = (
    _constant_mutation(
        "ucbvi-ch-radius-constant-inverted",
        "UCBVI-CH's bonus (1/7) H L sqrt(1/N) instead of 7 H L sqrt(1/N)",
        ("tabular_regret",),
        _both_paths(_ONLINE_T, "test_ucbvi_hoeffding_bonus_is_azar_alg3"),
        (f"{_UCBVI}:UCBVIHoeffding", "plan", "7.0 * self.H * self.L", "self.H * self.L / 7.0"),
        (_LOOP, "loop_constants", "7.0 * agent.H * agent.L", "agent.H * agent.L / 7.0"),
    ),
    _constant_mutation(
        "ucbvi-log-without-delta",
        "UCBVI's L = ln(5 S A T) instead of ln(5 S A T / delta) (CH and BF)",
        ("tabular_regret",),
        _both_paths(_ONLINE_T, "test_ucbvi_hoeffding_bonus_is_azar_alg3")
        + _both_paths(_ONLINE_T, "test_ucbvi_bernstein_bonus_is_azar_alg4"),
        (_UCBVI, "azar_log_term", "episodes * H / delta)", "episodes * H)"),
    ),
    _constant_mutation(
        "ucbvi-bf-variance-square-outside",
        "UCBVI-BF's variance E[W]^2 - E[W]^2 (the square outside the expectation): 0",
        ("tabular_regret",),
        ((_ONLINE_T, "test_ucbvi_bernstein_bonus_is_azar_alg4", {"path": "python"}),),
        (f"{_UCBVI}:UCBVIBernstein", "_mean_and_bonus", "PW2 - PW * PW", "PW**2 - PW * PW"),
        python_loop=True,
    ),
    _constant_mutation(
        "ucbvi-ajks-bonus-halved",
        "AJKS UCBVI's bonus H sqrt(L / N) instead of 2 H sqrt(L / N)",
        ("tabular_regret",),
        _both_paths(_ONLINE_T, "test_ucbvi_ajks_bonus_is_ajks_ch7"),
        (
            f"{_UCBVI}:UCBVIAJKS",
            "plan",
            "2.0 * H * np.sqrt(L / N[:, h])",
            "H * np.sqrt(L / N[:, h])",
        ),
        (_LOOP, "loop_constants", "c_bonus = 2.0 * Hf", "c_bonus = Hf"),
    ),
    _constant_mutation(
        "ucbvi-ajks-count-plus-one",
        "AJKS UCBVI's bonus with N + 1 where the book has max(N, 1)",
        ("tabular_regret",),
        ((_ONLINE_T, "test_ucbvi_ajks_bonus_is_ajks_ch7", {"path": "python"}),),
        (
            f"{_UCBVI}:UCBVIAJKS",
            "plan",
            "np.maximum(self.model.N_sa, 1.0)",
            "self.model.N_sa + 1.0",
        ),
        python_loop=True,
    ),
    _constant_mutation(
        "icvar-bonus-missing-inverse-alpha",
        "ICVaR-RM's bonus H sqrt(L / n) instead of (H / alpha) sqrt(L / n)",
        ("risk",),
        _both_paths(_ONLINE_T, "test_icvar_rm_bonus_is_du2023_alg1", alpha=0.2),
        (
            "theorylab.algorithms.online.icvar_rm:ICVaRRM",
            "bonus",
            "(self.env.H / self.alpha)",
            "self.env.H",
        ),
        (_LOOP, "loop_constants", "(agent.env.H / agent.alpha)", "agent.env.H"),
    ),
    _constant_mutation(
        "icvar-count-plus-one",
        "ICVaR-RM's bonus with n + 1 where the paper has n (max(n, 1) on visited pairs)",
        ("risk",),
        ((_ONLINE_T, "test_icvar_rm_bonus_is_du2023_alg1", {"path": "python", "alpha": 0.2}),),
        ("theorylab.algorithms.online.icvar_rm:ICVaRRM", "bonus", "np.maximum(n, 1)", "n + 1"),
        python_loop=True,
    ),
    _constant_mutation(
        "icvar-log-without-delta",
        "ICVaR-RM's L = log(K H S A) instead of log(K H S A / delta')",
        ("risk",),
        _both_paths(_ONLINE_T, "test_icvar_rm_bonus_is_du2023_alg1", alpha=0.5),
        (
            "theorylab.algorithms.online.icvar_rm:ICVaRRM",
            "__init__",
            "env.A / (delta / 5))",
            "env.A)",
        ),
    ),
    _constant_mutation(
        "optimistic-q-bonus-subtracted",
        "Q-learning with UCB-Hoeffding subtracts its bonus c sqrt(H^3 iota / t)",
        ("tabular_regret",),
        (
            (
                _ONLINE_T,
                "test_optimistic_q_bonus_is_jin2018",
                {"path": "python", "bonus": "hoeffding", "consts": {}},
            ),
        ),
        (
            "theorylab.algorithms.online.optimistic_q:OptimisticQLearning",
            "_bonus",
            "return self.c * hoeffding",
            "return -self.c * hoeffding",
        ),
        python_loop=True,
    ),
    _constant_mutation(
        "optimistic-q-variance-square-outside",
        "UCB-Bernstein's W_t = (mu / t)^2 - (mu / t)^2 (the square outside the expectation)",
        ("tabular_regret",),
        (
            (
                _ONLINE_T,
                "test_optimistic_q_bonus_is_jin2018",
                {"path": "python", "bonus": "bernstein", "consts": {"c1": 1e-4, "c2": 1e6}},
            ),
        ),
        (
            "theorylab.algorithms.online.optimistic_q:OptimisticQLearning",
            "_bonus",
            "self.sigma[idx] / t - ",
            "(self.mu[idx] / t) ** 2 - ",
        ),
        python_loop=True,
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS)

_LINEAR = "theorylab.algorithms.online"
_OFFLINE = "theorylab.algorithms.offline"
CONSTANT_MUTATIONS_LINEAR_OFFLINE = (
    _constant_mutation(
        "lsvi-ucb-log-without-delta",
        "LSVI-UCB's iota = log(2 d T) instead of log(2 d T / p)",
        ("linear",),
        ((_LINEAR_T, "test_lsvi_ucb_bonus_is_jin2020", {"features": "one-hot", "c": 1.0}),),
        (f"{_LINEAR}.lsvi_ucb", "jin_iota", "episodes * H / delta)", "episodes * H)"),
    ),
    _constant_mutation(
        "linucb-radius-log-without-delta",
        "OFUL's radius R sqrt(2 log(det(V)^1/2 det(lambda I)^-1/2)) + sqrt(lambda) S: no delta",
        ("linear",),
        _both_paths(_LINEAR_T, "test_linucb_radius_is_oful", lam=1.0, noise=0.5, theta_norm=1.0),
        (f"{_LINEAR}.linucb", "oful_radius", "math.log(1.0 / delta)", "0.0"),
        (
            f"{_LINEAR}.whole_run_linucb:LinUCBLoop",
            "__init__",
            "math.log(1.0 / agent.delta)",
            "0.0",
        ),
    ),
    _constant_mutation(
        "lmc-lsvi-temperature-square-dropped",
        "LMC-LSVI's 1 / beta_k = c H sqrt(d) instead of (c H sqrt(d))^2",
        ("linear",),
        ((_LINEAR_T, "test_lmc_lsvi_step_size_steps_and_temperature", {"c": 1.0}),),
        (
            f"{_LINEAR}.lmc_lsvi:LMCLSVI",
            "inv_beta",
            "(self.c * self.H * math.sqrt(self.d)) ** 2",
            "self.c * self.H * math.sqrt(self.d)",
        ),
    ),
    _constant_mutation(
        "rep-ucb-bonus-halved",
        "Rep-UCB's bonus scale alpha = c H sqrt(d iota) / 2",
        ("linear",),
        ((_LINEAR_T, "test_rep_ucb_bonus_scale", {"c": 1.0}),),
        (f"{_LINEAR}.rep_ucb:RepUCB", "alpha", "self.c * self.H", "0.5 * self.c * self.H"),
    ),
    _constant_mutation(
        "vi-lcb-count-plus-one",
        "VI-LCB's penalty V_max sqrt(L / (m + 1)) where the code has max(m, 1)",
        ("offline",),
        ((_OFFLINE_T, "test_vi_lcb_penalty_is_rashidinejad2021", {"c_L": 0.002}),),
        (f"{_OFFLINE}.vi_lcb", "vi_lcb", "np.maximum(m, 1.0)", "(m + 1.0)"),
        python_loop=True,
    ),
    _constant_mutation(
        "pessimistic-vi-log-without-delta",
        "finite-horizon pessimistic VI's L = log(N H) instead of log(N H / delta)",
        ("offline",),
        (
            (
                _OFFLINE_T,
                "test_pessimistic_vi_penalty_is_li2022",
                {"penalty": "hoeffding", "consts": {"c_h": 0.05}},
            ),
            (
                _OFFLINE_T,
                "test_pessimistic_vi_penalty_is_li2022",
                {"penalty": "bernstein", "consts": {"c_b": 0.02}},
            ),
        ),
        (f"{_OFFLINE}.pessimistic_vi", "pessimistic_vi", "* H / delta)[:, None", "* H)[:, None"),
        python_loop=True,
    ),
    _constant_mutation(
        "pessimistic-vi-variance-square-outside",
        "Li et al.'s Bernstein penalty with Var = E[y]^2 - E[y]^2 (the square outside): 0",
        ("offline",),
        (
            (
                _OFFLINE_T,
                "test_pessimistic_vi_penalty_is_li2022",
                {"penalty": "bernstein", "consts": {"c_b": 0.02}},
            ),
        ),
        (
            f"{_OFFLINE}.pessimistic_vi",
            "pessimistic_vi",
            "blk.means(y * y, n) - m1 * m1",
            "blk.means(y, n) ** 2 - m1 * m1",
        ),
        python_loop=True,
    ),
    _constant_mutation(
        "pevi-beta-sqrt-d",
        "PEVI's beta = c sqrt(d) H sqrt(zeta) instead of c d H sqrt(zeta)",
        ("offline",),
        (
            (_OFFLINE_T, "test_pevi_penalty_is_jin2021", {"features": "one-hot"}),
            (_OFFLINE_T, "test_pevi_penalty_is_jin2021", {"features": "random"}),
            (
                _OFFLINE_T,
                "test_compiled_sweep_penalties_are_the_papers",
                {
                    "algorithm": "pevi-tabular",
                    "problem": "random:S=4,A=2,H=3,seed=5",
                    "consts": {"c_beta": 0.01},
                    "reference": "pevi",
                },
            ),
        ),
        (f"{_OFFLINE}.pevi", "pevi_beta", "c_beta * d * H", "c_beta * math.sqrt(d) * H"),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_LINEAR_OFFLINE)

_PREF = "theorylab.algorithms.preference"
_PREF_T = "test_paper_constants_preference"
CONSTANT_MUTATIONS_PREFERENCE = (
    _constant_mutation(
        "pessimistic-mle-curvature-square-dropped",
        "Zhu-Jordan-Jiao's radius with (d + log(1/delta)) / (gamma n): gamma's square dropped",
        ("preference",),
        (
            (
                _PREF_T,
                "test_pessimistic_mle_radius_is_zjj_lemma31",
                {"delta": 0.1, "lam": 1e-3, "C": 1.0},
            ),
            (_PREF_T, "test_pessimistic_mle_mdp_radius_is_zjj_section5", {}),
        ),
        (f"{_PREF}.pessimistic", "mle_radius", "(g * g * n)", "(g * n)"),
    ),
    _constant_mutation(
        "dueling-radius-missing-inverse-kappa",
        "Dueling RL's GLM radius without its 1 / kappa (kappa = sigma'(sqrt(2) H B))",
        ("preference_duels",),
        (
            (
                _PREF_T,
                "test_dueling_glm_radius_and_l1_width",
                {"t": 1, "d": 4, "H": 2, "lam": 1.0, "delta": 0.1, "B": 1.0},
            ),
        ),
        (f"{_PREF}.dueling", "glm_radius", "/ (kappa)", "* 1.0"),
    ),
    _constant_mutation(
        "p2r-repeats-alpha-square-dropped",
        "P2R's repeats m = log(2 N / delta) / (2 alpha eps0^2): alpha's square dropped",
        ("preference",),
        (
            (
                _PREF_T,
                "test_p2r_repeats_are_hoeffding_with_alpha_squared",
                {"eps0": 0.1, "delta": 0.1},
            ),
        ),
        (f"{_PREF}.p2r", "repeats_for", "ALPHA**2", "ALPHA"),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_PREFERENCE)

CONSTANT_MUTATIONS_DUAL = (
    _constant_mutation(
        "reps-temperature-inverted",
        "REPS' tilt q exp(eta delta_V) where q exp(delta_V / eta) belongs",
        ("dual",),
        (
            (
                "test_paper_constants_dual",
                "test_reps_solution_and_dual_are_peters2010",
                {"seed": 0, "epsilon": 0.05},
            ),
        ),
        (
            "theorylab.algorithms.dual.reps",
            "_tilt",
            "u = (r + B @ V) / eta",
            "u = (r + B @ V) * eta",
        ),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_DUAL)

CONSTANT_MUTATIONS_CVAR = (
    _constant_mutation(
        "cvar-ucbvi-variance-square-outside",
        "CVaR-UCBVI's Var_{P_hat}(W_lo) = (P_hat W_lo)^2 - mean^2 (the square outside): 0",
        ("risk",),
        ((_ONLINE_T, "test_cvar_ucbvi_bonus_as_stated", {"bonus": "bernstein"}),),
        (
            f"{_LINEAR}.cvar_ucbvi:CVaRUCBVI",
            "_bonus",
            "expect(p_hat, W_lo**2) - mean**2",
            "expect(p_hat, W_lo) ** 2 - mean**2",
        ),
        python_loop=True,
    ),
    _constant_mutation(
        "cvar-ucbvi-log-without-delta",
        "CVaR-UCBVI's L = log(S A H K J) instead of log(S A H K J / delta)",
        ("risk",),
        (
            (_ONLINE_T, "test_cvar_ucbvi_bonus_as_stated", {"bonus": "bernstein"}),
            (_ONLINE_T, "test_cvar_ucbvi_bonus_as_stated", {"bonus": "hoeffding"}),
        ),
        (f"{_LINEAR}.cvar_ucbvi:CVaRUCBVI", "__init__", "self.K * J / delta)", "self.K * J)"),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_CVAR)

CONSTANT_MUTATIONS_VW = (
    _constant_mutation(
        "vw-pevi-beta-without-d",
        "VW-PEVI's beta = c sqrt(zeta) instead of c sqrt(d zeta)",
        ("offline",),
        ((_OFFLINE_T, "test_vw_pevi_weights_and_penalty_are_xiong2023", {}),),
        (f"{_OFFLINE}.vw_pevi", "vw_beta", "math.sqrt(d * math.log(", "math.sqrt(math.log("),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_VW)

_PR_LSVI_T = (
    _PREF_T,
    "test_pr_lsvi_query_rule_and_reward_perturbation",
    {"threshold": 0.3, "sigma_r": 1.0, "nu": 1.0},
)
CONSTANT_MUTATIONS_PR_LSVI = (
    _constant_mutation(
        "pr-lsvi-perturbation-halved",
        "PR-LSVI's reward perturbation sigma_r Sigma^(-1/2) xi / 2 (the exploration halved)",
        ("pr_lsvi",),
        (_PR_LSVI_T,),
        (
            f"{_PREF}.pr_lsvi:PRLSVI",
            "_perturb",
            "self.theta_hat + self.sigma_r * z",
            "self.theta_hat + 0.5 * self.sigma_r * z",
        ),
    ),
    _constant_mutation(
        "pr-lsvi-query-width-squared",
        "PR-LSVI asks iff ||x||^2_(Sigma^-1) > epsilon (the width's square root dropped)",
        ("pr_lsvi",),
        (_PR_LSVI_T,),
        (
            f"{_PREF}.pr_lsvi:PRLSVI",
            "update",
            "ask = width > self.threshold",
            "ask = width**2 > self.threshold",
        ),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_PR_LSVI)

CONSTANT_MUTATIONS_F_DVL = (
    _constant_mutation(
        "f-dvl-temperature-dropped",
        "f-DVL's reverse-KL V-step log sum d e^(Q / lam) without its temperature lam in front",
        ("dual_imitation",),
        (
            (
                "test_paper_constants_dual",
                "test_f_dvl_value_losses_and_v_step",
                {"loss": "reverse-kl", "lam": 0.6},
            ),
        ),
        (
            "theorylab.algorithms.dual.f_dvl",
            "value_step",
            "V[has] = loss_temp * (np.log(ew) + top[:, 0])",
            "V[has] = np.log(ew) + top[:, 0]",
        ),
    ),
)
MUTATIONS = (*MUTATIONS, *CONSTANT_MUTATIONS_F_DVL)


# ----------------------------------------------------------------------------- issue 26 (prefdual)
# confidence radii (validations/claims/confidence_sets.py) and OptiDICE (claims/dual_exact.py)
from theorylab.validations import confidence_mutations, dual_mutations, llm_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *confidence_mutations.MUTATIONS, *dual_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 27 (klpoB)
from theorylab.validations import surrogate_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *surrogate_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 30 (avgrew)
# UCRL2 (validations/claims/average_reward.py)
from theorylab.validations import average_reward_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *average_reward_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 30 (robust)
from theorylab.validations import robust_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *robust_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 28 (twins)
MUTATIONS = (*MUTATIONS, *llm_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 29 (pref)
# preference alignment rows (validations/claims/preference.py, claims 5-)
from theorylab.validations import alignment_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *alignment_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (offl31)
# OGSRL (validations/claims/offline.py, claim 8)
from theorylab.validations import offline_support_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *offline_support_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (expl31)
# JSRL (validations/claims/exploration.py)
from theorylab.validations import exploration_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *exploration_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 27 (demo27)
# demonstration-regularised BPI (validations/claims/demonstrations.py)
from theorylab.validations import demonstration_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *demonstration_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 28 (llm28)
# ROVER (validations/claims/rlvr_twins.py)
from theorylab.validations import rlvr_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *rlvr_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 29 (con29)
# constrained-alignment duals (validations/claims/dual.py, claim 7: MoCAN)
from theorylab.validations import alignment_dual_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *alignment_dual_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (expl31b)
# CDPO (validations/claims/tabular_regret.py, cdpo-conservative-riverswim)
from theorylab.validations import cdpo_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *cdpo_mutations.MUTATIONS)
# C-RLFT and P3O (validations/claims/rlvr_twins.py, issue 28, llm28b)
from theorylab.validations import openchat_p3o_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *openchat_p3o_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (sq31)
# SQIRL / effective horizon (validations/claims/exploration.py, sqirl-effective-horizon)
from theorylab.validations import sqirl_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *sqirl_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 28 (tier B)
# SEC, DUMP, MoPPS, difficulty filtering, SEELE, Guide (validations/claims/curriculum.py)
from theorylab.validations import curriculum_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *curriculum_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 30 (icvar30)
# ICVaR-L / ICVaR-HF (validations/claims/risk_icvar_fa.py, seed 001#48)
from theorylab.validations import icvar_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *icvar_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- 000#66 (dich29)
# the RLHF / DPO dichotomy (validations/claims/preference_dichotomy.py)
from theorylab.validations import dichotomy_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *dichotomy_mutations.MUTATIONS)

# LaSeR (validations/claims/self_rewarding.py, issue 28, llm28)
from theorylab.validations import laser_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *laser_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 29 (drpo29)
# DR-PO and PARL (validations/claims/preference.py)
from theorylab.validations import alignment_bilevel_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *alignment_bilevel_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (rep31)
# Contrastive UCB (validations/claims/representation.py, contrastive-ucb-recovers-subspace)
from theorylab.validations import representation_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *representation_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 29 (act29)
# active context selection (validations/claims/preference_active.py, 001#18)
from theorylab.validations import active_context_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *active_context_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 28 (tier B)
# CPL (validations/claims/preference_cpl.py, 002-004#E10)
from theorylab.validations import cpl_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *cpl_mutations.MUTATIONS)

# ----------------------------------------------------------------------------- issue 31 (gp31)
# CONFIG (validations/claims/gp_bandit.py, 000#39)
from theorylab.validations import gp_bandit_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *gp_bandit_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 31 (advlin31)
# Adversarial linear-Q MDPs (validations/claims/adversarial.py, adversarial-linear-q-sqrt-k)
from theorylab.validations import adversarial_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *adversarial_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 31 (hybrid31)
# HNPG (validations/claims/hybrid_policy_gradient.py)
from theorylab.validations import hybrid_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *hybrid_mutations.MUTATIONS)
# issue 28 tier B, llm28b: CoPG, OPRL, reward refinement (validations/claims/llm_tier_b.py)
from theorylab.validations import llm_tier_b_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *llm_tier_b_mutations.MUTATIONS)
# issue 31 tier B, struct31: cascading RL (validations/claims/cascading.py, 001#13)
from theorylab.validations import cascading_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *cascading_mutations.MUTATIONS)

from theorylab.validations import completion_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *completion_mutations.MUTATIONS)

from theorylab.validations import density_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *density_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- issue 31 (games31)
# multi-batch policy evaluation (validations/claims/multi_batch.py, 001#25)
from theorylab.validations import multi_batch_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *multi_batch_mutations.MUTATIONS)
# offline zero-sum Markov games (validations/claims/markov_game.py, 001#43)
from theorylab.validations import markov_game_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *markov_game_mutations.MUTATIONS)
# issue 31 tier B, offline31b: WSRL (validations/claims/offline_wsrl.py)
from theorylab.validations import offline_finetune_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *offline_finetune_mutations.MUTATIONS)
# CFGRL, diffusion guidance as policy improvement (validations/claims/offline_cfgrl.py, 000#68)
from theorylab.validations import guidance_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *guidance_mutations.MUTATIONS)
# issue 31 tier B, cpsrl31: C-PSRL (validations/claims/causal_psrl.py, 001#72)
from theorylab.validations import c_psrl_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *c_psrl_mutations.MUTATIONS)
# ------------------------------------------------------------------------- issue 31 (mtbandit31)
# multi-task best-arm identification (validations/claims/multitask_bandit.py, 001#19)
from theorylab.validations import multitask_bandit_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *multitask_bandit_mutations.MUTATIONS)
# QRL, optimal goal reaching by quasimetric learning (validations/claims/goal_reaching.py,
# 000#65, 001#73)
from theorylab.validations import goal_reaching_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *goal_reaching_mutations.MUTATIONS)
# ------------------------------------------------------------------------- 000#43 (irlreset)
# inverse RL with expert-state resets (validations/claims/inverse_rl.py)
from theorylab.validations import inverse_rl_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *inverse_rl_mutations.MUTATIONS)
# stochastic shortest path two-timescale learners (validations/claims/ssp.py, 000#51)
from theorylab.validations import ssp_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *ssp_mutations.MUTATIONS)

# ------------------------------------------------------------------------- submodular RL (submod)
# SubPO's marginal gains (validations/claims/submodular.py, 000#13, 001#14, 002-004#A5)
from theorylab.validations import submodular_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *submodular_mutations.MUTATIONS)
# ----------------------------------------------------------------------------- seed row 001#3
# SUBSAMPLE-Q (validations/claims/multiagent.py)
from theorylab.validations import multiagent_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *multiagent_mutations.MUTATIONS)

# ------------------------------------------------------------------------- traces (001#5, 001#6)
# off-policy traces and orchestrated value mapping (validations/claims/off_policy_traces.py,
# validations/claims/value_mapping.py)
from theorylab.validations import traces_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *traces_mutations.MUTATIONS)

# US-IRL feasible reward set (validations/claims/feasible_rewards.py, 001#2)
from theorylab.validations import feasible_rewards_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *feasible_rewards_mutations.MUTATIONS)
# ------------------------------------------------------------------------- 000#55 (rhip)
# receding-horizon inverse planning (validations/claims/inverse_rl_rhip.py)
from theorylab.validations import rhip_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *rhip_mutations.MUTATIONS)

# ------------------------------------------------------------------------- 001#8 (grouping)
# action grouping (validations/claims/action_grouping.py)
from theorylab.validations import grouping_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *grouping_mutations.MUTATIONS)
