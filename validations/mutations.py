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

``python -m theorylab.validations.mutants`` reports which claims catch each of them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control


@contextlib.contextmanager
def _patched(owner, attribute: str, value) -> Iterator[None]:
    had = attribute in vars(owner)
    old = vars(owner).get(attribute)
    setattr(owner, attribute, value)
    try:
        yield
    finally:
        if had:
            setattr(owner, attribute, old)
        else:
            delattr(owner, attribute)


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
    from theorylab.algorithms.deep import policy_gradient_losses as pg

    original = pg.group_advantages

    def mean_instead(rewards, group, kind="std", **kwargs):
        # the bug: the lower-tail CVaR advantage computed as the group-mean (risk-neutral) one
        return original(rewards, group, "mean" if kind == "cvar" else kind, **kwargs)

    with _patched(pg, "group_advantages", mean_instead):
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

# ----------------------------------------------------------------------------- issue 26 (prefdual)
# confidence radii (validations/claims/confidence_sets.py) and OptiDICE (claims/dual_exact.py)
from theorylab.validations import confidence_mutations, dual_mutations  # noqa: E402

MUTATIONS = (*MUTATIONS, *confidence_mutations.MUTATIONS, *dual_mutations.MUTATIONS)
