"""Claims for LLM-RL methods of issue 28 as exact twins on token trees with variable-length
responses (EOS): ROVER (000#17; its uniform-Q twin and its practical loss), PACS (002-004#G5),
C-RLFT (002-004#F7), P3O (002-004#E3), BroRL (002-004#G2), PrefixRL (002-004#G4). Each checks
the method against an independent exact answer (enumeration over the tree's responses) and names
a registered mutation that fails it."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from theorylab.validations.claim import Check, Report
from theorylab.validations.claim import finished_report as _report
from theorylab.validations.claims.deep import different_lengths, register_validation


@dataclass(frozen=True)
class RoverScale:
    trees: int  # random binary trees for the greedy-optimality checks
    tree: tuple[int, int, int, float]  # (V, L, prompts, p) of each
    diversity_trees: int  # trees for the diversity comparison (V=4, L=4, 4 prompts, p=0.04)
    pg_lr: float  # step size of the exact policy-gradient baseline


@dataclass(frozen=True)
class RoverUniformQ:
    name: str = "rover-uniform-q-greedy-optimal"
    statement: str = (
        "ROVER (He et al. 2025, Theorem 3.1): on random token trees with binary rewards and "
        "responses of 1..L tokens ended by EOS (each response correct i.i.d. with probability p; "
        "quick 30 trees V=4, L=4, p=0.04; full 200 trees V=4, L=5, p=0.02; 2 prompts each), the "
        "uniform policy's Q by the Bellman recursion Q(h,a) = mean_a' Q(ha, a') equals the sum "
        "over the responses through (h, a) of V^-(tokens left) r(y) (max gap <= 1e-12); "
        "argmax_a Q^unif(h, a) is an optimal action (Q* by enumeration: max reward below) at "
        "every node of every tree (0 violations; Q^unif(h, a) > 0 exactly where Q*(h, a) = 1) "
        "and the greedy policy is correct with "
        "probability 1; ROVER's softmax(Q^unif / rho) accuracy never falls as rho falls (1, 0.1, "
        "0.01, 1e-3, 1e-4), >= 0.999 at rho = 1e-4 (the Q gaps deep in the tree are "
        "~V^-(L-1)); at matched accuracy 0.9 its expected number of "
        "distinct correct responses in k = 16 samples is >= 1.3x that of exact policy-gradient "
        "ascent on the accuracy from the uniform policy, and larger on >= 70% of the prompts "
        "with >= 2 correct responses. With graded rewards (i.i.d. U(0, 1), Theorem 3.1's "
        "hypothesis violated) the greedy action is not optimal at some nodes. Control: Q^unif "
        "taken as the fraction of correct responses below (h, a) (each response weighted "
        "equally, whatever its length) fails."
    )
    rhos: tuple[float, ...] = (1.0, 0.1, 0.01, 1e-3, 1e-4)
    k: int = 16
    target: float = 0.9
    scales: dict[str, RoverScale] = field(
        default_factory=lambda: {
            "quick": RoverScale(30, (4, 4, 2, 0.04), 6, 10.0),
            "full": RoverScale(200, (4, 5, 2, 0.02), 30, 5.0),
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.deep import rover as rv

        t0 = time.perf_counter()
        sc = self.scales[scale]
        V, L, P, p = sc.tree
        gap, bad, nodes, graded_bad, greedy_acc, mismatch = 0.0, 0, 0, 0, 1.0, 0
        accs = np.zeros((sc.trees, len(self.rhos)))
        for i in range(sc.trees):
            task = rv.random_binary_tree(V, L, P, p, seed * 100_000 + i)
            q = rv.uniform_q(task)
            gap = max(gap, float(np.abs(q - rv.uniform_q_by_enumeration(task)).max()))
            mismatch += int(((q > 0) != (rv.optimal_q_by_enumeration(task) == 1)).sum())
            b, n = rv.greedy_violations(task, q)
            bad, nodes = bad + b, nodes + n
            seq = rv.sequence_probs(task, rv.greedy_policy(q))
            greedy_acc = min(greedy_acc, float((seq * task.correct).sum(1).min()))
            for j, rho in enumerate(self.rhos):
                seq = rv.sequence_probs(task, rv.rover_policy(q, rho))
                accs[i, j] = float((seq * task.correct).sum(1).min())
            graded = rv.random_binary_tree(V, L, P, p, seed * 100_000 + i, graded=True)
            graded_bad += rv.greedy_violations(graded, rv.uniform_q(graded))[0]
        rising = bool((np.diff(accs, axis=1) >= -1e-12).all())  # 1.0 may repeat at small rho
        wins, counted, d_rover, d_pg = 0, 0, [], []
        for i in range(sc.diversity_trees):
            task = rv.random_binary_tree(4, 4, 4, 0.04, seed * 100_000 + 50_000 + i)
            many = task.correct.sum(1) >= 2
            d = rv.expected_distinct_correct(
                task, rv.rover_at_accuracy(task, rv.uniform_q(task), self.target), self.k
            )
            dp = rv.expected_distinct_correct(
                task, rv.policy_gradient_at_accuracy(task, self.target, lr=sc.pg_lr), self.k
            )
            wins += int((d > dp)[many].sum())
            counted += int(many.sum())
            d_rover += list(d[many])
            d_pg += list(dp[many])
        ratio = float(np.mean(d_rover) / np.mean(d_pg))
        frac = wins / max(counted, 1)
        task0 = rv.random_binary_tree(V, L, P, p, seed * 100_000)
        checks = [
            different_lengths(task0, "else the uniform policy weights every response alike"),
            Check(
                "Q^unif by the Bellman recursion equals its enumeration over responses",
                gap <= 1e-12,
                f"max |Q_backup - sum_y V^-(tokens left) r(y)| = {gap:.1e} <= 1e-12 over "
                f"{sc.trees} trees",
                {"q_gap": gap},
            ),
            Check(
                "argmax Q^unif is an optimal action at every node (binary rewards)",
                bad == 0 and greedy_acc >= 1 - 1e-12 and mismatch == 0,
                f"{bad} of {nodes} (prompt, node) pairs where argmax Q^unif is not in argmax Q*; "
                f"the greedy policy's worst accuracy {greedy_acc:.12f}; {mismatch} (x, h, a) where "
                "Q^unif > 0 and Q* = 1 disagree",
                {
                    "violations": bad,
                    "nodes": nodes,
                    "greedy_accuracy": greedy_acc,
                    "q_sign_mismatches": mismatch,
                },
            ),
            Check(
                "softmax(Q^unif / rho) tends to an optimal policy as rho -> 0",
                rising and accs[:, -1].min() >= 0.999,
                "worst accuracy over trees at rho = "
                + ", ".join(f"{r:g}: {a:.4f}" for r, a in zip(self.rhos, accs.min(0), strict=True))
                + "; never falling as rho falls on any tree, >= 0.999 at the smallest",
                {"worst_accuracy": accs.min(0).tolist()},
            ),
            Check(
                "ROVER keeps more distinct correct responses than policy gradient",
                ratio >= 1.3 and frac >= 0.7,
                f"at accuracy {self.target}: E # distinct correct in k = {self.k} samples "
                f"{np.mean(d_rover):.3f} (ROVER) vs {np.mean(d_pg):.3f} (exact PG, lr "
                f"{sc.pg_lr:g}), ratio {ratio:.2f} >= 1.3; ROVER larger on {wins}/{counted} "
                "prompts with >= 2 correct responses (>= 70%)",
                {
                    "distinct_rover": float(np.mean(d_rover)),
                    "distinct_pg": float(np.mean(d_pg)),
                    "ratio": ratio,
                    "wins": wins,
                    "prompts": counted,
                },
            ),  # fmt: skip
            Check(
                "the binary-reward hypothesis is needed: graded rewards break greedy optimality",
                graded_bad > 0,
                f"{graded_bad} (prompt, node) pairs over {sc.trees} graded trees where argmax "
                "Q^unif is not optimal (> 0)",
                {"graded_violations": graded_bad},
            ),
        ]
        figure = None
        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(
                list(self.rhos),
                {"worst accuracy over trees": accs.min(0), "mean": accs.mean(0)},
                xlabel="temperature rho",
                ylabel="P(correct) under softmax(Q^unif / rho)",
                title=f"{self.name} ({scale})",
                logx=True,
                path=plot,
            )
            figure = plot
        cfg = {"scale": sc.__dict__, "rhos": list(self.rhos), "k": self.k,
               "target": self.target, "seed": seed}  # fmt: skip
        return _report(self.name, self.statement, scale, checks, t0, cfg, figure)


register_validation(
    RoverUniformQ(), controls=("rover-leaf-fraction",), papers=("000#17", "002-004#G1")
)


@dataclass(frozen=True)
class RoverPracticalLoss:
    name: str = "rover-practical-loss-gradient"
    statement: str = (
        "ROVER's practical loss (He et al. 2025; the authors' verl code: Q_t = rho log "
        "pi/pi_old, target = centred reward + rho x the next state's vocabulary-mean log-ratio, "
        "detached, MSE) on tokentree-eos with binary rewards (responses of 1..3 tokens; quick "
        "V=3, L=3, 2 prompts, G in {2, 3}; full 3 prompts, G in {2, 3, 4}, more policies), rho in "
        "{0.5, 1}, the registered loss on every ordered G-tuple of responses (constant normaliser "
        "L): (1) on-policy its expected gradient equals -(2 rho (G-1)/(G L)) grad J, J = E_pi r, "
        "by the score function (a REINFORCE step with the group-mean baseline); (2) off-policy "
        "(samples from a random pi_old != pi_theta) it equals the gradient written by "
        "enumerating responses with the bootstrap at s_{t+1} and the target held fixed (max "
        "relative gap <= 1e-10 each). Control: the target not detached (the gradient also flows "
        "through the bootstrap, whose gradient rho grad m(s_{t+1}) is not 0 even on-policy) "
        "fails both (gaps > 1e-2)."
    )
    rhos: tuple[float, ...] = (0.5, 1.0)
    scales: dict[str, tuple[str, tuple[int, ...], int]] = field(
        default_factory=lambda: {
            "quick": ("tokentree-eos:V=3,L=3,prompts=2,reward=binary", (2, 3), 1),
            "full": ("tokentree-eos:V=3,L=3,prompts=3,reward=binary,seed=1", (2, 3, 4), 3),
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import torch

        from theorylab.algorithms.deep import pacs, rover_loss
        from theorylab.algorithms.deep import regression_twins as rt
        from theorylab.algorithms.deep.twins import LogitTable
        from theorylab.mdps import make

        t0 = time.perf_counter()
        spec, groups, n_policies = self.scales[scale]
        task = make(spec)
        gaps: dict[str, dict[str, float]] = {"on-policy": {}, "off-policy": {}}
        for i in range(n_policies):
            theta = rt.random_logits(task, seed + 13 + i)
            old = rt.log_softmax(rt.random_logits(task, seed + 113 + i))
            for rho in self.rhos:
                for G in groups:
                    key = f"policy {i}, rho {rho:g}, G {G}"
                    for mode, old_cond in (("on-policy", None), ("off-policy", old)):
                        pol = LogitTable(task, theta)
                        e = rover_loss.loss_expectation(task, pol, G, rho, old_cond=old_cond)
                        (g,) = torch.autograd.grad(e, pol.theta)
                        if old_cond is None:
                            step = 2 * rho * (G - 1) / (G * task.L)
                            want = pacs.policy_gradient(task, rt.log_softmax(theta), step)
                        else:
                            want = rover_loss.expected_gradient(task, theta, old, G, rho)
                        gap = float(np.abs(g.numpy() - want).max() / np.abs(want).max())
                        gaps[mode][key] = gap
        checks = [different_lengths(task, "else the bootstrap's end-of-response mask is invisible")]
        for mode, what in (
            ("on-policy", "on-policy: grad E[loss] = -(2 rho (G-1)/(G L)) grad J"),
            ("off-policy", "off-policy: grad E[loss] = the enumerated semi-gradient"),
        ):
            worst = max(gaps[mode], key=gaps[mode].get)
            checks.append(
                Check(
                    what,
                    gaps[mode][worst] <= 1e-10,
                    f"max relative gap {gaps[mode][worst]:.1e} <= 1e-10 over {len(gaps[mode])} "
                    f"cases (worst: {worst}; rho {self.rhos}, G {groups})",
                    {"gaps": gaps[mode]},
                )
            )
        cfg = {"task": spec, "groups": list(groups), "rhos": list(self.rhos), "seed": seed}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


register_validation(
    RoverPracticalLoss(),
    controls=("rover-target-not-detached",),
    papers=("000#17", "002-004#G1"),
)


@dataclass(frozen=True)
class PacsPolicyGradient:
    name: str = "pacs-policy-gradient"
    statement: str = (
        "PACS (Li et al. 2025): on tokentree-eos with binary rewards (responses of 1..3 tokens "
        "ended by EOS; quick V=3, L=3, 2 prompts, G in {2, 3}; full 3 prompts, G in {2, 3, 4}), "
        "at random logit policies (on-policy: pi_old = pi_theta), the gradient of the exact "
        "expectation of the registered pacs loss (BCE-with-logits of the leave-one-out implicit "
        "reward beta sum_t log pi/pi_old against the 0/1 reward; every ordered G-tuple of "
        "responses enumerated) equals -beta grad J(theta), J = E_pi r, written with the score "
        "function (max relative gap <= 1e-10, beta in {0.5, 2}): the supervised loss is the "
        "RLOO policy gradient. Control: the implicit reward averaged over a response's tokens "
        "(the authors' reward_method 2) fails (gap > 1e-2)."
    )
    betas: tuple[float, ...] = (0.5, 2.0)
    scales: dict[str, tuple[str, tuple[int, ...], int]] = field(
        default_factory=lambda: {
            "quick": ("tokentree-eos:V=3,L=3,prompts=2,reward=binary", (2, 3), 1),
            "full": ("tokentree-eos:V=3,L=3,prompts=3,reward=binary,seed=1", (2, 3, 4), 3),
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import torch

        from theorylab.algorithms.deep import pacs
        from theorylab.algorithms.deep import regression_twins as rt
        from theorylab.algorithms.deep.twins import LogitTable
        from theorylab.mdps import make

        t0 = time.perf_counter()
        spec, groups, n_policies = self.scales[scale]
        task = make(spec)
        gaps: dict[str, float] = {}
        for i in range(n_policies):
            theta = rt.random_logits(task, seed + 7 + i)
            for beta in self.betas:
                want = pacs.policy_gradient(task, rt.log_softmax(theta), beta)
                for G in groups:
                    pol = LogitTable(task, theta)
                    (g,) = torch.autograd.grad(pacs.pacs_expectation(task, pol, G, beta), pol.theta)
                    gap = float(np.abs(g.numpy() - want).max() / np.abs(want).max())
                    gaps[f"policy {i}, beta {beta:g}, G {G}"] = gap
        worst = max(gaps, key=gaps.get)
        checks = [
            different_lengths(task, "else a length normalisation is invisible"),
            Check(
                "grad E[PACS loss] = -beta grad J (the RLOO policy gradient)",
                gaps[worst] <= 1e-10,
                f"max relative gap {gaps[worst]:.1e} <= 1e-10 over {len(gaps)} cases "
                f"(worst: {worst}; {n_policies} random policies, beta {self.betas}, G {groups})",
                {"gaps": gaps},
            ),
        ]
        cfg = {"task": spec, "groups": list(groups), "betas": list(self.betas), "seed": seed}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


register_validation(
    PacsPolicyGradient(), controls=("pacs-ratio-length-normalised",), papers=("002-004#G5",)
)


@dataclass(frozen=True)
class CRlftConditionedOptimum:
    name: str = "c-rlft-conditioned-optimum"
    statement: str = (
        "C-RLFT (OpenChat, Wang et al. 2023): on tokentree-eos with binary rewards (responses of "
        "1..L tokens ended by EOS; quick V=3, L=2, 2 prompts; full V=3, L=3 and V=4, L=2, 3 "
        "prompts each) and two "
        "data sources, the expert pi*_0.2 of the task (class reward 1, a quarter of the data) and "
        "a random table (class reward 0.1), the minimiser (L-BFGS) of the exact expectation of the "
        "registered c-rlft loss (class-reward-weighted NLL, the class a prompt token) over a "
        "class-conditioned logit table equals pi*(y|x,c) ∝ pi_c(y|x) exp(r_c/beta), computed "
        "independently by soft value iteration with reference pi_c (max |log pi_theta - log pi*| "
        "<= 1e-5 over every (x, c, y)); conditioning on the expert class at inference has an "
        "accuracy >= 0.1 above plain SFT on the mixture and above the r_c-weighted MLE without a "
        "class token (the minimiser ∝ sum_c p(c|x) r_c pi_c). Measured, not asserted: the "
        "unweighted conditioned MLE has the same minimiser (r_c is constant within a class). "
        "Controls: the class token dropped, and the log-likelihood averaged over a response's "
        "tokens, both fail (gap > 0.1)."
    )
    beta: float = 0.5
    tolerance: float = 1e-5
    margin: float = 0.1
    scales: dict[str, tuple[str, ...]] = field(
        default_factory=lambda: {
            "quick": ("tokentree-eos:V=3,L=2,prompts=2,reward=binary",),
            "full": ("tokentree-eos:V=3,L=3,prompts=3,reward=binary,seed=1",
                     "tokentree-eos:V=4,L=2,prompts=3,reward=binary,seed=2"),
        }
    )  # fmt: skip

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.deep import c_rlft as cr
        from theorylab.mdps import make

        t0 = time.perf_counter()
        gaps, unweighted, acc = {}, {}, {}
        for i, spec in enumerate(self.scales[scale]):
            task = make(spec)
            data = cr.mixed_quality_data(task, seed=seed + i)
            want = cr.conditioned_task(data).soft_optimum(self.beta).seq_logp  # (P C, Y)
            got = cr.minimise(data)
            gaps[spec] = float(np.abs(got - want).max())
            unweighted[spec] = float(np.abs(cr.minimise(data, weighted=False) - want).max())

            def accuracy(seq_logp, task=task):
                return float((np.exp(seq_logp) * task.correct).sum(1).mean())

            acc[spec] = {
                "expert-conditioned": accuracy(cr.inference_logp(data, got, 0)),
                "sft on the mixture": accuracy(cr.mixture_mle(data, np.ones(data.n_classes))),
                "r_c-weighted, no class token": accuracy(cr.mixture_mle(data, data.class_reward)),
            }
        worst = max(gaps, key=gaps.get)
        lift = min(a["expert-conditioned"] - max(a["sft on the mixture"],
                                                 a["r_c-weighted, no class token"])
                   for a in acc.values())  # fmt: skip
        checks = [
            different_lengths(task, "else a per-token mean log-likelihood has the same minimiser"),
            Check(
                "the weighted conditioned MLE minimiser is pi*(y|x,c) ∝ pi_c exp(r_c/beta)",
                gaps[worst] <= self.tolerance,
                f"max |log pi_theta - log pi*| = {gaps[worst]:.1e} <= {self.tolerance:g} "
                f"(worst: {worst}); the unweighted conditioned MLE's gap "
                f"{max(unweighted.values()):.1e} (the class weights cancel within a class)",
                {"gaps": gaps, "unweighted_gaps": unweighted},
            ),
            Check(
                "conditioning on the expert class beats SFT and weighted MLE without the class",
                lift >= self.margin,
                "accuracy "
                + "; ".join(", ".join(f"{k} {v:.3f}" for k, v in a.items()) for a in acc.values())
                + f"; smallest lift {lift:.3f} >= {self.margin}",
                {"accuracy": acc, "lift": lift},
            ),
        ]
        cfg = {"tasks": list(self.scales[scale]), "beta": self.beta, "seed": seed}
        return _report(self.name, self.statement, scale, checks, t0, cfg)


register_validation(
    CRlftConditionedOptimum(),
    controls=("c-rlft-no-class-token", "c-rlft-token-mean"),
    papers=("002-004#F7",),
)


@dataclass(frozen=True)
class P3oShiftInvariance:
    name: str = "p3o-shift-invariance"
    statement: str = (
        "P3O (Wu et al. 2023): on tokentree-eos (responses of 1..L tokens ended by EOS; quick "
        "V=3, L=2, 2 prompts, 2 policy pairs; full V=3, L=3, 3 prompts, 4 policy pairs), with "
        "the sampler pi_old a random table and pi_theta = pi_old perturbed so that trajectory "
        "ratios leave [0.8, 1.2] (clipping active), the gradient of the exact expectation of the "
        "registered p3o loss (every ordered pair of responses from pi_old enumerated; beta in "
        "{0, 0.1}) is unchanged when r(x, y) becomes r(x, y) + c(x) for random shifts c(x) in "
        "[-2, 2] (max relative change <= 1e-12), and so is the gradient on a sampled batch of "
        "64 pairs; PPO-clip with a value-free single-response advantage A = r changes (relative "
        "change of the expected gradient >= 1e-2, and of the sampled gradient at theta = "
        "theta_old >= 1e-2), although its expected on-policy gradient does not (<= 1e-12: the "
        "change comes from the clip and from sampling). "
        "Control: P3O with the single-response advantage (trajectory-wise PPO) fails."
    )
    clip_eps: float = 0.2
    betas: tuple[float, ...] = (0.0, 0.1)
    scales: dict[str, tuple[str, int]] = field(
        default_factory=lambda: {
            "quick": ("tokentree-eos:V=3,L=2,prompts=2,reward=binary", 2),
            "full": ("tokentree-eos:V=3,L=3,prompts=3,reward=binary,seed=1", 4),
        }
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        import torch

        from theorylab.algorithms.deep import regression_twins as rt
        from theorylab.algorithms.deep.kl_reward_frontier import value_free_ppo
        from theorylab.algorithms.deep.pacs import group_expectation
        from theorylab.algorithms.deep.registry import make_loss
        from theorylab.algorithms.deep.twins import LogitTable
        from theorylab.mdps import make

        t0 = time.perf_counter()
        spec, n_policies = self.scales[scale]
        task = make(spec)
        P, Y = task.n_prompts, task.n_responses
        rng = np.random.default_rng(seed + 29)
        # value-free PPO: registered ppo-clip, A_i = r_i, each response's token sum (a token
        # mean, 1/|y|, would move even the expected on-policy gradient under r + c(x) on a tree
        # with EOS: measured 1.9 relative)
        ppo = value_free_ppo(self.clip_eps)

        def grad(loss, theta, old, rewards):
            pol = LogitTable(task, theta)
            (g,) = torch.autograd.grad(group_expectation(task, pol, 2, loss, old, rewards),
                                       pol.theta)  # fmt: skip
            return g.numpy()

        def change(g0, g1):
            return float(np.abs(g1 - g0).max() / np.abs(g0).max())

        p3o_gap, ppo_change, ppo_onpolicy, ratio_spread = 0.0, np.inf, 0.0, 0.0
        for i in range(n_policies):
            old_theta = rt.random_logits(task, seed + 100 + i)
            theta = old_theta + rt.random_logits(task, seed + 200 + i, scale=0.6)
            old = torch.as_tensor(rt.log_softmax(old_theta))
            lr = task.sequence_logprobs(rt.log_softmax(theta)) - task.sequence_logprobs(old.numpy())
            ratio_spread = max(ratio_spread, float(np.abs(np.exp(lr) - 1).max()))
            shifted = task.mean_reward + rng.uniform(-2, 2, size=(P, 1))
            for beta in self.betas:
                loss = make_loss("p3o", clip_eps=self.clip_eps, beta=beta)
                p3o_gap = max(p3o_gap, change(grad(loss, theta, old, task.mean_reward),
                                              grad(loss, theta, old, shifted)))  # fmt: skip
            ppo_change = min(ppo_change, change(grad(ppo, theta, old, task.mean_reward),
                                                grad(ppo, theta, old, shifted)))  # fmt: skip
            on_policy = change(grad(ppo, old_theta, None, task.mean_reward),
                               grad(ppo, old_theta, None, shifted))  # fmt: skip
            ppo_onpolicy = max(ppo_onpolicy, on_policy)
        # a sampled batch: 64 pairs from pi_old, the reward shifted per prompt
        pol_old = LogitTable(task, old_theta)
        probs = np.exp(pol_old.numpy_seq_logp())
        xs = np.repeat(rng.integers(0, P, 64), 2)
        ys = np.array([rng.choice(Y, p=probs[x]) for x in xs])
        x_t, y_t = torch.as_tensor(xs), torch.as_tensor(ys)
        group = torch.arange(64).repeat_interleave(2)
        shift = rng.uniform(-2, 2, size=P)

        def batch_grad(loss, th, old_cond, r):
            pol = LogitTable(task, th)
            cond = pol.cond_logp()
            o = None if old_cond is None else pol.token_logp(old_cond, x_t, y_t)
            ref = pol.token_logp(torch.as_tensor(np.log(task.ref_cond)), x_t, y_t)
            val = loss(pol.token_logp(cond, x_t, y_t), o, ref, pol.mask[y_t],
                       torch.as_tensor(r), group)  # fmt: skip
            return torch.autograd.grad(val, pol.theta)[0].numpy()

        r0 = task.mean_reward[xs, ys]
        p3o_loss = make_loss("p3o", clip_eps=self.clip_eps, beta=0.1)
        batch_p3o = change(batch_grad(p3o_loss, theta, old, r0),
                           batch_grad(p3o_loss, theta, old, r0 + shift[xs]))  # fmt: skip
        batch_ppo = change(batch_grad(ppo, old_theta, None, r0),
                           batch_grad(ppo, old_theta, None, r0 + shift[xs]))  # fmt: skip
        checks = [
            different_lengths(task, "else a per-token ratio and the trajectory ratio coincide"),
            Check(
                "P3O's expected and sampled gradients are invariant to r + c(x)",
                p3o_gap <= 1e-12 and batch_p3o <= 1e-12 and ratio_spread > self.clip_eps,
                f"max relative change {p3o_gap:.1e} (exact expectation, {n_policies} policy "
                f"pairs, beta {self.betas}; max |rho - 1| = {ratio_spread:.2f} > eps "
                f"{self.clip_eps}), {batch_p3o:.1e} (64 sampled pairs) <= 1e-12",
                {"expected": p3o_gap, "sampled": batch_p3o, "ratio_spread": ratio_spread},
            ),
            Check(
                "PPO with a value-free single-response advantage is not invariant",
                ppo_change >= 1e-2 and batch_ppo >= 1e-2 and ppo_onpolicy <= 1e-12,
                f"smallest relative change of the expected gradient (theta != theta_old) "
                f"{ppo_change:.3f} >= 1e-2; sampled batch at theta = theta_old {batch_ppo:.3f} "
                f">= 1e-2; its expected on-policy gradient moves by {ppo_onpolicy:.1e} <= 1e-12 "
                "(E[c(x) grad log pi] = 0)",
                {"expected": ppo_change, "sampled": batch_ppo, "on_policy": ppo_onpolicy},
            ),
        ]
        cfg = {"task": spec, "policies": n_policies, "betas": list(self.betas),
               "clip_eps": self.clip_eps, "seed": seed}  # fmt: skip
        return _report(self.name, self.statement, scale, checks, t0, cfg)


register_validation(
    P3oShiftInvariance(), controls=("p3o-single-response-advantage",), papers=("002-004#E3",)
)


@dataclass(frozen=True)
class BrorlCorrectMassGrowth:
    name: str = "brorl-correct-mass-growth"
    statement: str = (
        "BroRL (Hu et al. 2025, mass balance under one-step RL): for random softmax policies over "
        "V tokens, 2V/5 of them correct (quick 20 policies with V = 10, full 300 with V = 12; p ~ "
        "Dirichlet(0.5) floored at 1e-3), rewards R_c = 1, R_w = -1, the first-order change of "
        "the correct mass under the one-step update from N rollouts equals the paper's printed "
        "three-term mass-balance equation (written out here) on every set of sampled tokens (max "
        "gap <= 1e-12) and a finite-difference of the softmax (<= 1e-6 relative); the "
        "sampled-token terms are >= 0 on every set; the exact probability over the N draws (all "
        "2^V sets, inclusion-exclusion; probabilities sum to 1 within 1e-12 and agree with 20,000 "
        "Monte-Carlo batches within 4 SE at N = 4) that the correct mass grows rises with N (its "
        "mean over policies never falls over N = 1, 2, 4, ..., 512) to >= 0.999 for every policy "
        "at N = 512, while at N = 1 some policy loses correct mass with positive probability. "
        "Control: the batch mood S_R taken as the unweighted sum of the sampled tokens' rewards "
        "fails."
    )
    ns: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    threshold: float = 0.999
    # (policies, V): 2V/5 tokens correct
    scales: dict[str, tuple[int, int]] = field(
        default_factory=lambda: {"quick": (20, 10), "full": (300, 12)}
    )

    def policies(self, count: int, V: int, seed: int):
        rng = np.random.default_rng(seed + 11)
        for _ in range(count):
            p = np.maximum(rng.dirichlet(np.full(V, 0.5)), 1e-3)
            c = np.zeros(V, bool)
            c[rng.choice(V, 2 * V // 5, replace=False)] = True
            yield p / p.sum(), c

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.deep import brorl

        t0 = time.perf_counter()
        count, V = self.scales[scale]
        rng = np.random.default_rng(seed)
        sets = brorl.all_sets(V)  # (M, V)
        growth = np.zeros((count, len(self.ns)))
        formula_gap, fd_gap, sampled_min, mass_gap, mc_z, lose1 = 0.0, 0.0, np.inf, 0.0, 0.0, 0.0
        for k, (p, c) in enumerate(self.policies(count, V, seed)):
            growth[k] = [brorl.growth_probability(p, c, n) for n in self.ns]
            n = 4
            rate = brorl.correct_mass_rate(p, c, brorl.logit_update(p, c, sets, n))  # (M,)
            # the paper's equation, written out: dQ = (1/N)[(R_c - S_R) Q_neg A_2 + (S_R - R_w)
            # Q_pos B_2 + S_R (Q_pos U_neg,2 - Q_neg U_pos,2)], R_c = 1, R_w = -1, eta = 1
            s = sets.astype(float)
            q_pos = p[c].sum()
            q_neg = 1.0 - q_pos
            s_r = s[:, c] @ p[c] - s[:, ~c] @ p[~c]
            a2, b2 = s[:, c] @ p[c] ** 2, s[:, ~c] @ p[~c] ** 2
            u_pos2, u_neg2 = (1 - s[:, c]) @ p[c] ** 2, (1 - s[:, ~c]) @ p[~c] ** 2
            sampled_terms = (1 - s_r) * q_neg * a2 + (s_r + 1) * q_pos * b2
            paper = (sampled_terms + s_r * (q_pos * u_neg2 - q_neg * u_pos2)) / n
            formula_gap = max(formula_gap, float(np.abs(rate - paper).max()))
            sampled_min = min(sampled_min, float(sampled_terms.min()))
            dz = brorl.logit_update(p, c, sets[-1 - k % 7], n)  # one set, by finite difference
            z, h = np.log(p), 1e-4
            q = [(np.exp(z + e * dz) / np.exp(z + e * dz).sum())[c].sum() for e in (-h, h)]
            fd = (q[1] - q[0]) / (2 * h)
            want = brorl.correct_mass_rate(p, c, dz)
            fd_gap = max(fd_gap, abs(fd - want) / max(abs(want), 1e-12))
            probs = brorl.set_probabilities(p, n)
            mass_gap = max(mass_gap, abs(probs.sum() - 1.0))
            if k < 3:  # Monte Carlo: real multinomial draws, independent of the enumeration
                draws = brorl.sample_sets(p, n, 20_000, rng)
                hits = brorl.correct_mass_rate(p, c, brorl.logit_update(p, c, draws, n)) > 0
                se = max(float(np.sqrt(hits.mean() * (1 - hits.mean()) / len(hits))), 1e-4)
                mc_z = max(mc_z, abs(hits.mean() - growth[k, self.ns.index(n)]) / se)
            lose1 = max(lose1, brorl.small_n_losses(p, c, 1)[0])
        mean = growth.mean(0)
        rising = bool((np.diff(mean) >= -1e-12).all())
        last = float(growth[:, -1].min())
        worst = growth.min(0)
        reach = next((n for n, w in zip(self.ns, worst, strict=True) if w >= self.threshold), None)
        checks = [
            Check(
                "the first-order correct-mass change is the paper's mass-balance equation",
                formula_gap <= 1e-12 and fd_gap <= 1e-6,
                f"max |dQ - three-term formula| = {formula_gap:.1e} <= 1e-12 over all 2^{V} "
                f"sets; finite difference of the softmax relative gap {fd_gap:.1e} <= 1e-6",
                {"formula_gap": formula_gap, "finite_difference_gap": fd_gap},
            ),
            Check(
                "sampled tokens always contribute to correct-mass expansion",
                sampled_min >= 0,
                f"min over policies and sets of the two sampled terms {sampled_min:.2e} >= 0",
                {"sampled_min": sampled_min},
            ),
            Check(
                "the exact distribution over draws (inclusion-exclusion) is right",
                mass_gap <= 1e-12 and mc_z <= 4,
                f"|sum_S P(S) - 1| <= {mass_gap:.1e} (<= 1e-12); Monte Carlo (20,000 batches of "
                f"N = 4, 3 policies) within {mc_z:.2f} SE of the exact probability (<= 4)",
                {"mass_gap": mass_gap, "mc_z": mc_z},
            ),
            Check(
                "P(correct mass grows) rises with N towards 1",
                rising and last >= self.threshold and lose1 > 0,
                "mean over policies at N = "
                + ", ".join(f"{n}: {g:.4f}" for n, g in zip(self.ns, mean, strict=True))
                + f" (never falling); worst policy at N = {self.ns[-1]}: {last:.6f} >= "
                f"{self.threshold} (reached from N = {reach}); at N = 1 the worst P(dQ < 0) is "
                f"{lose1:.4f} > 0",
                {"mean": mean.tolist(), "worst": growth.min(0).tolist(), "loss_at_1": lose1},
            ),
        ]
        figure = None
        if plot:
            from theorylab.plotting import plot_lines

            plot_lines(
                list(self.ns),
                {"mean over policies": mean, "worst policy": growth.min(0)},
                xlabel="rollouts per prompt N",
                ylabel="P(correct mass grows after one step)",
                title=f"{self.name} ({scale})",
                logx=True,
                path=plot,
            )
            figure = plot
        cfg = {"policies": count, "V": V, "n_correct": 2 * V // 5,
               "ns": list(self.ns), "threshold": self.threshold, "seed": seed}  # fmt: skip
        return _report(self.name, self.statement, scale, checks, t0, cfg, figure)


register_validation(
    BrorlCorrectMassGrowth(), controls=("brorl-unweighted-mood",), papers=("002-004#G2",)
)


@dataclass(frozen=True)
class PrefixrlSignal:
    name: str = "prefixrl-prefix-signal"
    statement: str = (
        "PrefixRL (Setlur et al. 2026): on hard random token trees with EOS (V = 3, responses of "
        "1..L tokens, each correct i.i.d. with probability p; quick 4 trees L = 5, p = 0.01, full "
        "16 trees L = 6, p = 0.005; 2 prompts each; uniform reference; a tree kept only if hard: "
        "every prompt's longest correct response y* has >= L - 1 tokens and success from the root "
        "<= 3^-(L-2)), conditioning on the first l tokens of the longest correct response y*: the "
        "expected number of rollouts until the first non-zero group-centred gradient (groups of G "
        "= 4), G / (1 - s_l^G - (1 - s_l)^G) with s_l the exact success probability of on-policy "
        "completion (written out here), strictly falls with l on every prompt, by >= 10x from l = "
        "0 to the longest prefix, and agrees with token-by-token Monte Carlo (200 runs, the two "
        "longest prefixes, 3 trees) within 4 SE; consistency: the root-optimal greedy policy "
        "(argmax Q* by enumeration) has s_l = 1 for every l, and exact gradient ascent on the "
        "PrefixRL objective (prefix lengths uniform, l = 0 included; step 50) ends root-optimal "
        "(s_0 >= 0.99). Control: the prefix sampled on-policy instead of forced fails."
    )
    group: int = 4
    scales: dict[str, tuple[int, int, float, int]] = field(
        default_factory=lambda: {"quick": (4, 5, 0.01, 100), "full": (16, 6, 0.005, 200)}
    )

    def run(self, scale="quick", *, plot=None, progress=False, seed=0) -> Report:
        from theorylab.algorithms.deep import prefixrl as pr
        from theorylab.algorithms.deep import rover as rv

        t0 = time.perf_counter()
        trees, L, p, steps = self.scales[scale]
        G = self.group
        rng = np.random.default_rng(seed)
        falls, ratio, mc_z, greedy_gap, root = True, np.inf, 0.0, 0.0, 1.0
        curve: list[np.ndarray] = []
        kept, draws = 0, 0
        while kept < trees:  # hard trees only: a long trace, a rare success from the root
            if draws >= 100 * trees:
                raise ValueError(f"fewer than {trees} hard trees in {draws} draws (L={L}, p={p})")
            task = rv.random_binary_tree(3, L, 2, p, seed * 100_000 + draws)
            draws += 1
            trace = pr.longest_correct(task)
            lt = int(task.token_mask.sum(axis=1)[trace].min())
            if lt < L - 1 or pr.prefix_success(task, task.ref_cond, trace, 0).max() > 3.0 ** (
                2 - L
            ):
                continue
            i, kept = kept, kept + 1
            s = np.array([pr.prefix_success(task, task.ref_cond, trace, ell) for ell in range(lt)])
            want = G / (1.0 - s**G - (1.0 - s) ** G)  # (lt, P) the formula, written out
            falls = falls and bool((np.diff(want, axis=0) < 0).all())
            ratio = min(ratio, float((want[0] / want[-1]).min()))
            curve.append(want.mean(axis=1))
            if i < 3:
                for ell in (lt - 2, lt - 1):
                    mc = pr.sampled_rollouts_to_signal(task, task.ref_cond, trace, ell, G, 200, rng)
                    se = mc.std(axis=1) / np.sqrt(mc.shape[1])
                    mc_z = max(mc_z, float((np.abs(mc.mean(axis=1) - want[ell]) / se).max()))
            greedy = rv.greedy_policy(rv.optimal_q_by_enumeration(task))
            gs = np.array([pr.prefix_success(task, greedy, trace, ell) for ell in range(lt)])
            greedy_gap = max(greedy_gap, float(np.abs(gs - 1.0).max()))
            final = pr.train(task, trace, np.full(lt, 1.0 / lt), steps, 50.0)[-1]
            root = min(root, float(pr.prefix_success(task, final, trace, 0).min()))
        checks = [
            Check(
                "rollouts to the first non-zero gradient fall with the prefix length",
                falls and ratio >= 10 and mc_z <= 4,
                f"strictly falling on every prompt: {falls}; worst ratio l = 0 / longest prefix "
                f"{ratio:.1f} >= 10; Monte Carlo within {mc_z:.2f} SE (<= 4)",
                {"falls": falls, "ratio": ratio, "mc_z": mc_z, "mean_tree0": curve[0].tolist()},
            ),  # fmt: skip
            Check(
                "the PrefixRL objective is consistent with the root objective",
                greedy_gap <= 1e-12 and root >= 0.99,
                f"root-optimal greedy policy max |s_l - 1| = {greedy_gap:.1e} (it maximises J_w "
                f"for every w); after {steps} exact steps on "
                f"J_w the worst root success s_0 = {root:.4f} >= 0.99",
                {"greedy_gap": greedy_gap, "root": root},
            ),
        ]
        figure = None
        if plot:
            from theorylab.plotting import plot_lines

            n = min(len(c) for c in curve)
            plot_lines(
                list(range(n)),
                {f"tree {k}": c[:n] for k, c in enumerate(curve[:5])},
                xlabel="prefix length l (tokens of the correct trace)",
                ylabel=f"E rollouts to first non-zero gradient (G = {G})",
                title=f"{self.name} ({scale})",
                logy=True,
                path=plot,
            )
            figure = plot
        cfg = {"trees": trees, "draws": draws, "L": L, "p": p, "steps": steps, "group": G,
               "seed": seed}  # fmt: skip
        return _report(self.name, self.statement, scale, checks, t0, cfg, figure)


register_validation(
    PrefixrlSignal(), controls=("prefixrl-prefix-resampled",), papers=("002-004#G4",)
)
