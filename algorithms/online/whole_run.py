"""Whole-run compiled loops: an online agent's K episodes in compiled segments, resumable.

``theorylab.run(..., loop="compiled")`` (and ``loop="auto"`` whenever :func:`compiled_variant`
finds a kernel) hands the run to :func:`run_whole`: the episode loop of the Python runner (plan,
exact regret, rollout, count update) runs inside one numba call per *segment* of episodes
(:mod:`theorylab.algorithms.online.whole_run_kernel`, parallel over seeds), and returns the same
per-episode exact regret, returns and value estimates as the Python loop on the same seeds (bit
for bit where the reference's products are left-to-right sums; see the kernel's docstring).

Which agents have a kernel: ``ucbvi-hoeffding``, ``ucbvi-bernstein``, ``ucbvi-ajks``,
``greedy``, ``epsilon-greedy``, ``optimistic-q-hoeffding`` and ``optimistic-q-bernstein``
(exact classes, the risk-neutral objective, a finite horizon), ``maxwp`` and ``icvar-rm`` (scored
under their own objectives), ``linucb`` (its own kernel,
:mod:`theorylab.algorithms.online.whole_run_linucb`), ``lsvi-ucb`` (its own kernel,
:mod:`theorylab.algorithms.online.whole_run_lsvi`), ``cvar-ucbvi`` (its own kernel, scored
under static CVaR at its tau, :mod:`theorylab.algorithms.online.whole_run_cvar`) and ``icvar-hf``
(its own kernel between the reward refits, which stay in Python, scored under the iterated CVaR at
its alpha, :mod:`theorylab.algorithms.online.whole_run_icvar_hf`; none while a mutation has
replaced one of the agent's functions, ``icvar_l.compiled_loop_mirrors``) and ``cvar-ela`` (its
own kernel, the EM step, plan, exact static CVaR and rollout of every episode,
:mod:`theorylab.algorithms.online.whole_run_cvar_ela`; none while a mutation has replaced one of
its functions, ``cvar_ela.compiled_loop_mirrors``);
:func:`make_compiled_loop` picks the loop class. The kernel
reads the constants (L, the bonus coefficients, tie-breaking, known rewards, epsilon and its
schedule, alpha) off the constructed Python agent, so parameters are validated and computed in
one place.

Segments and checkpoints (``segment`` episodes at a time): between segments the driver reports
progress (episodes/s) and, with ``checkpoint=DIR``, stores the finished segment's curves
(``DIR/segments/NNNNNN.npz``) and then the learner state and the generators' states
(``DIR/state.npz``), each written atomically (``theorylab.store``). An interrupted run loses at
most the segment in flight; :func:`run_whole` with the same ``checkpoint`` resumes after the last
finished segment (``DIR/run.json`` must describe the same run, else it refuses).

Randomness: the kernel advances each seed's environment generator (numpy's PCG64, whose
algorithm it implements) by ``1 + 3H`` doubles per episode: the same numbers, in the same order,
as the Python loop's ``rng.random(1 + 3H)``; the generators' states are handed back after each
segment. These agents draw no random numbers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from theorylab.algorithms.online.segmented_loop import (
    CURVES,
    MAX_SEGMENT_BYTES,
    SegmentedLoop,
    pcg64_states,
    positive_entries,
    set_pcg64_states,
    true_model_args,
)

__all__ = [  # the loop's shared pieces are re-exported for the callers that read them here
    "CURVES",
    "MAX_SEGMENT_BYTES",
    "CompiledLoop",
    "pcg64_states",
    "positive_entries",
    "run_whole",
    "set_pcg64_states",
]

STATE_FIELDS = ("nsa", "rsum", "nhs", "cnt", "pc", "succ", "nsucc", "Q", "V", "pol", "qstat")
DEFAULT_SEGMENT = 100_000


def compiled_variant(agent) -> int | None:
    """The kernel variant (``whole_run_kernel.VARIANT_*``) for this agent, or None when it has
    no whole-run kernel (another class, a subclass, a non-risk-neutral objective)."""
    from theorylab.algorithms.online import cvar_ela
    from theorylab.algorithms.online.cvar_ucbvi import CVaRUCBVI
    from theorylab.algorithms.online.greedy import CertaintyEquivalentGreedy, EpsilonGreedy
    from theorylab.algorithms.online.icvar_l import ICVaRHF, compiled_loop_mirrors
    from theorylab.algorithms.online.icvar_rm import ICVaRRM, MaxWP
    from theorylab.algorithms.online.linucb import LinUCB
    from theorylab.algorithms.online.lsvi_ucb import LSVIUCB
    from theorylab.algorithms.online.optimistic_q import OptimisticQBernstein, OptimisticQHoeffding
    from theorylab.algorithms.online.ucbvi import UCBVIAJKS, UCBVIBernstein, UCBVIHoeffding
    from theorylab.algorithms.online.whole_run_kernel import (
        VARIANT_AJKS,
        VARIANT_BF,
        VARIANT_CH,
        VARIANT_CVAR,
        VARIANT_CVAR_ELA,
        VARIANT_EPS,
        VARIANT_GREEDY,
        VARIANT_ICVAR,
        VARIANT_ICVAR_HF,
        VARIANT_LINUCB,
        VARIANT_LSVI_UCB,
        VARIANT_MAXWP,
        VARIANT_QB,
        VARIANT_QH,
    )

    variants = {
        UCBVIHoeffding: VARIANT_CH,
        UCBVIBernstein: VARIANT_BF,
        UCBVIAJKS: VARIANT_AJKS,
        CertaintyEquivalentGreedy: VARIANT_GREEDY,
        EpsilonGreedy: VARIANT_EPS,
        MaxWP: VARIANT_MAXWP,
        ICVaRRM: VARIANT_ICVAR,
        LinUCB: VARIANT_LINUCB,
        LSVIUCB: VARIANT_LSVI_UCB,
        CVaRUCBVI: VARIANT_CVAR,
        ICVaRHF: VARIANT_ICVAR_HF,
        cvar_ela.CVaRELA: VARIANT_CVAR_ELA,
        OptimisticQHoeffding: VARIANT_QH,
        OptimisticQBernstein: VARIANT_QB,
    }
    if type(agent) is ICVaRHF and not compiled_loop_mirrors():  # a mutation patched the agent
        return None
    if type(agent) is cvar_ela.CVaRELA and not cvar_ela.compiled_loop_mirrors():
        return None
    return variants.get(type(agent))


@dataclass(frozen=True)
class LoopConstants:
    """What a whole-run loop reads off a constructed agent (:func:`loop_constants`).

    variant, tie: ``whole_run_kernel.VARIANT_*`` and ``TIE_*``; S, A, H; Hm: stages of the
    learner's counts (H: per-step model or Q-learning's N_h; 1: pooled); Hf = float(H); known,
    r_known (n_R, S, A): the rewards given to the learner; bonus_scale, c_bonus, L, c_g,
    unvisited: the plan's constants (see ``plan_seed``); qc (6,): Q-learning's [c, c1, c2, iota,
    H^3 iota, sqrt(H^7 S A)], epsilon-greedy's [epsilon, 0 constant / 1 inv-sqrt]."""

    variant: int
    tie: int
    S: int
    A: int
    H: int
    Hm: int
    Hf: float
    known: bool
    r_known: np.ndarray
    bonus_scale: float
    c_bonus: float
    L: float
    c_g: float
    unvisited: float
    qc: np.ndarray

    @property
    def q_learning(self) -> bool:
        from theorylab.algorithms.online.whole_run_kernel import VARIANT_QB, VARIANT_QH

        return self.variant in (VARIANT_QH, VARIANT_QB)


def loop_constants(agent, mdp) -> LoopConstants:
    """The constants of ``agent``'s plan (L, bonus coefficients, tie rule, known rewards),
    computed by the same Python expressions as the agent's ``plan()``, for the compiled and the
    torch whole-run loops. Raises ValueError for an agent without a whole-run loop or an MDP
    without a finite horizon."""
    from theorylab.algorithms.online.whole_run_kernel import (
        TIE_WITHIN_TOL,
        VARIANT_CVAR,
        VARIANT_CVAR_ELA,
        VARIANT_EPS,
        VARIANT_GREEDY,
        VARIANT_ICVAR,
        VARIANT_ICVAR_HF,
        VARIANT_LINUCB,
        VARIANT_LSVI_UCB,
        VARIANT_MAXWP,
        VARIANT_QB,
        VARIANT_QH,
    )

    variant = compiled_variant(agent)
    # make_compiled_loop's others
    own_loops = (VARIANT_LINUCB, VARIANT_LSVI_UCB, VARIANT_CVAR, VARIANT_ICVAR_HF, VARIANT_CVAR_ELA)
    if variant is None or variant in own_loops:
        raise ValueError(
            f"{type(agent).__name__} has no whole-run kernel; run it with loop='python'"
        )
    if mdp.horizon is None:
        raise ValueError(f"{mdp!r} has no finite horizon; online episodic runs need one")
    S, A, H = mdp.S, mdp.A, int(mdp.horizon)
    greedy = variant in (VARIANT_GREEDY, VARIANT_EPS)
    q_learning = variant in (VARIANT_QH, VARIANT_QB)
    if q_learning:  # N_h(x, a) per step, no empirical model
        per_step = True
    elif variant in (VARIANT_MAXWP, VARIANT_ICVAR):  # counts pooled over h (stationary P)
        per_step = False
    else:
        per_step = agent.stage_dependent if greedy else agent.per_step_model
    Hf = float(H)
    qc = np.zeros(6)
    if q_learning:  # [c, c1, c2, iota, H^3 iota, sqrt(H^7 S A)] (optimistic_q.py)
        tie, bonus_scale, c_bonus, L, c_g, unvisited = 0, 0.0, 0.0, 0.0, 0.0, Hf
        known, r_known = False, np.zeros((1, S, A))
        iota = agent.iota
        qc[:] = (agent.c, agent.c1, agent.c2, iota, H**3 * iota, np.sqrt(H**7 * S * A))
    elif variant in (VARIANT_MAXWP, VARIANT_ICVAR):  # ties as first_argmax
        tie, bonus_scale, c_bonus, L, c_g, unvisited = TIE_WITHIN_TOL, 0.0, 0.0, 0.0, 0.0, Hf
        if variant == VARIANT_ICVAR:  # bonus_scale (H / alpha) sqrt(L / n); alpha in c_g
            c_bonus = agent.bonus_scale * (agent.env.H / agent.alpha)
            L, c_g = float(agent.L), float(agent.alpha)
        reward = agent.env.reward
        known = reward is not None
        r_known = np.zeros((1, S, A)) if not known else np.asarray(reward, dtype=np.float64)
        r_known = r_known if r_known.ndim == 3 else r_known[None]
    elif greedy:
        tie, bonus_scale, c_bonus, L, c_g = 0, 0.0, 0.0, 0.0, 0.0
        unvisited = agent.unvisited_value
        known = agent.known_rewards
        r_known = agent.R_known if known else np.zeros((1, S, A))
        if variant == VARIANT_EPS:  # [epsilon, schedule] (greedy.py, epsilon_at)
            qc[:2] = (agent.epsilon, 0.0 if agent.schedule == "constant" else 1.0)
    else:
        tie = 0 if agent.tie_break == "first" else 1
        bonus_scale, L, c_g, unvisited = agent.bonus_scale, float(agent.L), 0.0, Hf
        known = agent.known_rewards
        r_known = agent.r if known else np.zeros((1, S, A))
        name = agent.name
        if name == "ucbvi-hoeffding":
            c_bonus = 7.0 * agent.H * agent.L  # b = 7 H L sqrt(1 / N)
        elif name == "ucbvi-bernstein":
            c_bonus = 8.0 * L  # sqrt(8 L Var / N)
            c_g = 100.0**2 * Hf**3 * S**2 * A * L**2  # min{c / N'(y), H^2}
        else:
            c_bonus = 2.0 * Hf  # b = 2 H sqrt(L / N_h)
    return LoopConstants(
        variant=variant, tie=tie, S=S, A=A, H=H, Hm=H if per_step else 1, Hf=Hf,
        known=bool(known), r_known=np.ascontiguousarray(r_known, dtype=np.float64),
        bonus_scale=float(bonus_scale), c_bonus=float(c_bonus), L=float(L), c_g=float(c_g),
        unvisited=float(unvisited), qc=qc,
    )  # fmt: skip


def make_compiled_loop(agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):
    """The compiled whole-run loop of ``agent`` (:class:`CompiledLoop`, or LinUCB's,
    LSVI-UCB's, CVaR-UCBVI's, ICVaR-HF's and CVaR-ELA's own loops); raises ValueError for an
    agent without one."""
    from theorylab.algorithms.online.whole_run_kernel import (
        VARIANT_CVAR,
        VARIANT_CVAR_ELA,
        VARIANT_ICVAR_HF,
        VARIANT_LINUCB,
        VARIANT_LSVI_UCB,
    )

    variant = compiled_variant(agent)
    if variant == VARIANT_CVAR_ELA:  # the whole episode, EM included
        from theorylab.algorithms.online.whole_run_cvar_ela import CVaRELALoop

        return CVaRELALoop(agent, mdp, v_star, env_rngs)
    if variant == VARIANT_ICVAR_HF:  # kernel between the reward refits, the MLE in Python
        from theorylab.algorithms.online.whole_run_icvar_hf import ICVaRHFLoop

        return ICVaRHFLoop(agent, mdp, v_star, env_rngs)
    if variant == VARIANT_LINUCB:
        from theorylab.algorithms.online.whole_run_linucb import LinUCBLoop

        return LinUCBLoop(agent, mdp, v_star, env_rngs)
    if variant == VARIANT_LSVI_UCB:
        from theorylab.algorithms.online.whole_run_lsvi import LSVIUCBLoop

        return LSVIUCBLoop(agent, mdp, v_star, env_rngs)
    if variant == VARIANT_CVAR:  # the budget-augmented plan and the exact return law
        from theorylab.algorithms.online.whole_run_cvar import CVaRUCBVILoop

        return CVaRUCBVILoop(agent, mdp, v_star, env_rngs)
    return CompiledLoop(agent, mdp, v_star, env_rngs)


class CompiledLoop(SegmentedLoop):
    """The learner state of B seeds of one agent on one MDP, advanced by the compiled kernel.

    agent: a freshly constructed agent with a kernel (:func:`compiled_variant`); only its
    constants and initial plan are read. mdp: the true finite-horizon TabularMDP. v_star:
    V*_1(mu0). env_rngs: one numpy Generator per seed (the environment streams).
    """

    STATE_FIELDS = STATE_FIELDS
    # the incremental plan's scratch and caches (CH's bonuses are recomputed only at the visited
    # pairs), the last evaluated policy's V^pi and from which step to re-evaluate it
    CARRIED = ("_F", "_g", "_bon", "_work", "_vis", "_vpi", "_eval_from")

    def __init__(self, agent, mdp, v_star: float, env_rngs: Sequence[np.random.Generator]):

        c = loop_constants(agent, mdp)
        B = agent.n_seeds
        if len(env_rngs) != B:
            raise ValueError(f"got {len(env_rngs)} environment generators for {B} seeds")
        self.variant = variant = c.variant
        self.env_rngs = list(env_rngs)
        self.v_star = float(v_star)
        S, A, H, Hm = c.S, c.A, c.H, c.Hm
        self.B, self.S, self.A, self.H = B, S, A, H
        q_learning = c.q_learning
        Hf = c.Hf
        self.model_args = true_model_args(mdp, self.v_star)
        indptr = self.model_args[0]
        # successors stored per pair: the longest row of the true model bounds what a pair can
        # be seen to reach (1 for Q-learning, which keeps no model)
        cap = 1 if q_learning else max(1, int(np.diff(indptr).max()))
        self.tie = c.tie
        qc = c.qc.copy()
        self.params = (
            variant, self.tie, Hf, c.known, c.r_known, c.bonus_scale, c.c_bonus, c.L, c.c_g,
            c.unvisited,
        )  # fmt: skip
        need = 8 * B * Hm * S * A * cap * 3  # cnt, pc, succ
        if need > 2 * 2**30:
            raise MemoryError(
                f"the whole-run state (B, Hm, S, A, cap) = {(B, Hm, S, A, cap)} needs "
                f"{need / 2**30:.1f} GiB; run fewer seeds at a time or loop='python'"
            )
        self.state = {
            "nsa": np.zeros((B, Hm, S, A)),
            "rsum": np.zeros((B, Hm, S, A)),
            "nhs": np.zeros((B, H + 1, S)),
            "cnt": np.zeros((B, Hm, S, A, cap)),
            "pc": np.zeros((B, Hm, S, A, cap)),
            "succ": np.zeros((B, Hm, S, A, cap), np.int64),
            "nsucc": np.zeros((B, Hm, S, A), np.int64),
            "Q": np.full((B, H, S, A), Hf),
            "V": np.zeros((B, H + 1, S)),
            "pol": np.zeros((B, H, S), np.int64),
        }
        self._F = np.zeros((B, S, 4))
        self._g = np.zeros((B, H + 1, S))  # BF: min{c / N', H^2}; epsilon-greedy: V_hat^pi
        self._bon = np.zeros((B, S, A))
        self._work = np.zeros((B, 3 * S + 4 * H + 2 + A))
        self._vis = np.zeros((B, 2, H), np.int64)  # the pairs and states an episode visited
        # V^pi of the last evaluated policy, and from which step it must be re-evaluated
        self._vpi = np.zeros((B, H + 1, S))
        self._eval_from = np.full(B, H - 1, np.int64)
        self._qc = qc
        self.state["qstat"] = np.zeros((B, 3, H * S * A if q_learning else 1))  # mu, sigma, beta
        self.episodes_done = 0
        self.incremental = True  # False: plan and evaluate in full every episode (a check)
        if q_learning:  # Q_h = H, V_h = H, V_{H+1} = 0, greedy action 0
            self.state["V"][:, :H] = Hf
        else:
            self._plan_all()

    def _state_args(self):
        st = self.state
        return (
            st["nsa"], st["rsum"], st["nhs"], st["pc"], st["succ"], st["nsucc"],
            st["Q"], st["V"], st["pol"], self._F, self._g, self._bon,
        )  # fmt: skip

    def _plan_all(self) -> None:
        from theorylab.algorithms.online.whole_run_kernel import plan_all

        plan_all(*self.params, *self._state_args())

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        from theorylab.algorithms.online.whole_run_kernel import run_segment

        st = self.state
        run_segment(
            *self.params, *self.model_args,
            st["nsa"], st["rsum"], st["nhs"], st["cnt"], st["pc"], st["succ"], st["nsucc"],
            st["Q"], st["V"], st["pol"], self._F, self._g, self._bon, self._work, self._qc,
            st["qstat"], self._vpi, self._eval_from, self._vis, self.incremental,
            self.episodes_done,
            rng, out["regret"], out["returns"], out["estimates"],
        )  # fmt: skip


CALL_SECONDS = 0.25
"""A segment runs in kernel calls of about this length: Python sees Ctrl-C when a call returns
(compiled code does not), so an interruption is honoured within about this time."""
FIRST_CALL, MIN_CALL = 256, 64  # episodes of the first kernel call, and the fewest per call
CHECKPOINT_FORMAT = 2
"""Stored in ``run.json``: format 1 (before the carried arrays, ``SegmentedLoop.CARRIED``)
resumed UCBVI-CH with zero bonuses; its directories are refused, not resumed wrongly."""


class WholeRunInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_whole`: ``curves`` holds the ``done`` episodes of the finished
    segments (those of a resumed checkpoint included), each ``(B, done)``; the segment in
    flight is dropped (with ``checkpoint=`` the finished ones are also on disk)."""

    def __init__(self, curves: dict[str, np.ndarray], done: int) -> None:
        super().__init__(f"interrupted after {done} complete episodes")
        self.curves, self.done = curves, done


def run_whole(
    loop: CompiledLoop,
    episodes: int,
    *,
    segment: int = DEFAULT_SEGMENT,
    checkpoint: str | Path | None = None,
    run_id: dict[str, Any] | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> dict[str, np.ndarray]:
    """Run ``loop`` to ``episodes`` episodes in segments; returns the curves ``(B, episodes)``.

    segment: episodes per kernel call (capped by :meth:`CompiledLoop.segment_length`).
    checkpoint: a directory; finished segments and the state after each are stored there, and a
        run found there is resumed (``run_id`` must then equal the stored one).
    run_id: JSON-able description of the run (algorithm, MDP, params, seeds, root seed, K).
    progress: called once before the first segment (``done`` = the episodes a resumed
        checkpoint holds, rate 0.0) and after each segment, as ``progress(done, episodes,
        episodes_per_second)``; the rate counts only the episodes this call ran.

    The curves are allocated once (``np.empty``: pages are taken as the segments fill them)
    and each kernel call's episodes are copied into their columns, so the peak is one copy of
    the curves plus one call's. A segment (the unit of checkpoints and progress) runs in
    kernel calls sized to take about ``CALL_SECONDS`` (the numbers do not depend on how a run
    is cut: ``tests/test_whole_run.py``). Ctrl-C (KeyboardInterrupt), honoured when the call
    in flight returns, raises :class:`WholeRunInterrupted` with the finished segments' episodes.
    """
    from theorylab.store import atomic_write_json, load_arrays, save_arrays

    if segment < 1:
        raise ValueError(f"segment must be a positive number of episodes, got {segment!r}")
    n_seg = loop.segment_length(segment)
    curves = {name: np.empty((loop.B, episodes)) for name in CURVES}  # (B, K) each
    n_parts = 0  # segments finished (stored as DIR/segments/NNNNNN.npz with a checkpoint)
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None:
        ident = json.loads(json.dumps(run_id or {}, default=str))
        ident["segment"] = n_seg
        ident["checkpoint_format"] = CHECKPOINT_FORMAT
        meta_path = ckpt / "run.json"
        if meta_path.exists():
            stored = json.loads(meta_path.read_text())
            if stored.get("checkpoint_format") != CHECKPOINT_FORMAT:
                raise ValueError(
                    f"checkpoint {ckpt} was written by an older theorylab (checkpoint format "
                    f"{stored.get('checkpoint_format', 1)}, this one reads "
                    f"{CHECKPOINT_FORMAT}) whose resume was not exact; remove it and rerun"
                )
            if stored != ident:
                raise ValueError(
                    f"checkpoint {ckpt} holds a different run: {stored} (this run: {ident}); "
                    "use another directory or remove it"
                )
            if (ckpt / "state.npz").exists():
                loop.restore(load_arrays(ckpt / "state.npz"))
                if loop.episodes_done > episodes:
                    raise ValueError(
                        f"the checkpoint has {loop.episodes_done} episodes, more than the "
                        f"{episodes} asked for"
                    )
                have = 0  # finished segments in order (a segment written after the last
                while have < loop.episodes_done:  # state, by a run interrupted there, is redone)
                    part = load_arrays(ckpt / "segments" / f"{n_parts:06d}.npz")
                    n = part["regret"].shape[1]
                    if have + n > loop.episodes_done:
                        break
                    for name in CURVES:
                        curves[name][:, have : have + n] = part[name]
                    have += n
                    n_parts += 1
                if have != loop.episodes_done:
                    raise ValueError(
                        f"checkpoint {ckpt}: the segments hold {have} episodes, the state "
                        f"{loop.episodes_done}"
                    )
        else:
            (ckpt / "segments").mkdir(parents=True, exist_ok=True)
            atomic_write_json(meta_path, ident)
    done = loop.episodes_done
    if progress is not None:  # where this call starts (after a resume: not at 0)
        progress(done, episodes, 0.0)
    t0 = time.perf_counter()
    done0 = done
    chunk = FIRST_CALL  # episodes per kernel call, adapted to take about CALL_SECONDS
    try:
        while done < episodes:
            n = min(n_seg, episodes - done)
            ran = 0  # a segment is run in kernel calls short enough for Ctrl-C to land
            while ran < n:
                m = min(chunk, n - ran)
                t_call = time.perf_counter()
                out = loop.advance(m)
                took = time.perf_counter() - t_call
                for name in CURVES:
                    curves[name][:, done + ran : done + ran + m] = out[name]
                ran += m
                if m == chunk:
                    grown = int(chunk * CALL_SECONDS / max(took, 1e-3))
                    chunk = max(MIN_CALL, min(n_seg, grown))
            if ckpt is not None:  # curves first, then the state that follows them
                seg = {name: curves[name][:, done : done + n] for name in CURVES}
                save_arrays(ckpt / "segments" / f"{n_parts:06d}.npz", **seg)
                save_arrays(ckpt / "state.npz", **loop.snapshot())
            n_parts += 1
            done += n
            if progress is not None:
                elapsed = time.perf_counter() - t0
                progress(done, episodes, (done - done0) / max(elapsed, 1e-12))
    except KeyboardInterrupt as exc:
        if isinstance(exc, WholeRunInterrupted):
            raise
        kept = {name: curves[name][:, :done] for name in CURVES}
        raise WholeRunInterrupted(kept, done) from exc
    return curves
