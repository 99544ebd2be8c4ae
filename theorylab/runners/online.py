"""The runner of ``kind="online"``: K episodes x B seeds of an episodic learner, exact regret.

Per episode k and seed i (for the default, risk-neutral objective; see
``theorylab.algorithms.objectives``):

    regret_k = V*_1(mu0) - V^{pi_k}_1(mu0)

by exact, batched policy evaluation of every seed's policy on the true model (the way Colosseum
does it, not by subtracting noisy returns). The realised return of the sampled episode is kept
beside it. Called through :func:`theorylab.run`, which checks names, parameters and budgets.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from theorylab.agent import env_spec
from theorylab.algorithms.objectives import RISK_NEUTRAL, BackendRiskNeutral, objective_of
from theorylab.backends import get_backend
from theorylab.errors import RunInterrupted
from theorylab.memory import check_curves_fit
from theorylab.results import RegretResult
from theorylab.runners.problems import finite_horizon_problem, resolve_mdp
from theorylab.runners.python_checkpoint import (
    CURVES,
    PythonCheckpoint,
    check_picklable,
    segment_length,
)
from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

LOOPS = ("auto", "python", "compiled", "torch")
AUTO_COMPILED_MIN = 20_000
"""Seed-episodes from which ``loop="auto"`` takes the whole-run kernel (when there is one)."""
CLOSED_FORM_MIN = 1_000_000
"""Seed-episodes from which ``loop="auto"`` takes a non-learning agent's exact run when it offers
one (``agent.closed_form_run``: the null controls of ``theorylab.validations.controls``), instead
of simulating episodes whose regret is known in advance (docs/validations.md, "Power")."""


def run(
    entry,
    problem,
    *,
    seeds: list[int],
    seed: int,
    progress: bool,
    params: dict[str, Any],
    episodes: int,
    known_rewards: bool = True,
    backend: str = "numpy",
    device: str = "cpu",
    loop: str = "auto",
    segment: int | None = None,
    checkpoint: str | None = None,
    score_policy: str = "played",
) -> RegretResult:
    """Run the online algorithm ``entry`` on ``problem`` (a TabularMDP-like model or a family
    spec) for ``episodes`` episodes and every seed index in ``seeds``.

    known_rewards: give the learner the mean rewards (Azar et al.'s setting).
    backend, device: where the hot kernels run (:func:`theorylab.backends.get_backend`): the
        exact regret (policy evaluation on the true model) and the rollouts of the risk-neutral
        objective, and the agent when its constructor takes ``backend`` (UCBVI does).
    params: the algorithm's typed parameters.
    loop: "python" (the episode loop below), "compiled" (the whole-run kernel,
        :mod:`theorylab.algorithms.online.whole_run`: the same numbers, bit for bit where the
        reference's products are ordered sums, to round-off on dense BLAS products) or "auto"
        (default): compiled when the algorithm has a kernel, the backend is numpy and the run has
        at least ``AUTO_COMPILED_MIN`` seed-episodes (below that the one-off compile costs more
        than the loop). "torch": the same loop as a device-resident torch program on ``device``
        (:mod:`theorylab.algorithms.online.whole_run_torch`; its own random stream, so the same
        law, not the same trajectories); never chosen by "auto".
    segment, checkpoint: a directory where finished segments and the state are stored and
        from which an interrupted run resumes, exactly, and the episodes per segment. Compiled
        and torch loops: episodes per kernel call (progress is reported between segments;
        default 100,000, torch 2,000). Python loop: episodes between checkpoints (default
        :data:`theorylab.runners.python_checkpoint.DEFAULT_SEGMENT`, 10,000, at most K; only
        with a checkpoint), the agent pickled (:mod:`theorylab.runners.python_checkpoint`).
    score_policy: "played" (always, except in a test): episode k's regret is that of the policy
        played in episode k. "next" is a known bug kept as a negative control (the mutation
        ``score-next-policy`` of theorylab.validations.mutations): episode k is scored with the
        policy of episode k + 1, which the claims must catch. Not a budget keyword: ``tl.run``
        never passes it. "next" runs the Python loop.
    """
    if score_policy not in ("played", "next"):
        raise ValueError(f"score_policy must be 'played' or 'next', got {score_policy!r}")
    if isinstance(episodes, bool) or int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes must be a positive integer, got {episodes!r}")
    episodes = int(episodes)
    if segment is not None and (
        isinstance(segment, bool) or not isinstance(segment, (int, np.integer)) or segment < 1
    ):  # checked here, before the agent is built and any episode runs
        raise ValueError(f"segment must be a positive number of episodes, got {segment!r}")
    if loop not in LOOPS:
        raise ValueError(f"loop must be one of {', '.join(LOOPS)}, got {loop!r}")
    torch_dev = None
    if loop == "torch":  # fail before any work when torch or the CUDA device is missing
        from theorylab.algorithms.online.whole_run_torch import torch_device

        torch_dev = str(torch_device(device))
        device = "cpu"  # the agent is only read for its constants
    mdp = finite_horizon_problem(resolve_mdp(problem), entry.name)  # refuses an unusable gamma
    B = len(seeds)
    check_curves_fit(B, episodes, checkpoint=checkpoint)  # every loop keeps (B, K) curves
    env = env_spec(mdp, known_rewards=known_rewards)
    env_rngs = generators(seed, seeds, ENV_STREAM)
    agent_rngs = generators(seed, seeds, AGENT_STREAM)
    bk = get_backend(backend, device)
    agent_params = dict(params)
    accepted = entry.parameters()
    if "episodes" in accepted:
        agent_params.setdefault("episodes", episodes)  # K enters the confidence widths (T = KH)
    if "backend" in accepted:
        agent_params.setdefault("backend", bk)
    agent = entry.factory(env, B, agent_rngs, **agent_params)

    # What regret measures: the registration's objective at these parameters (e.g. CVaR at tau),
    # built without the agent (it never grades itself), else expected return.
    objective = objective_of(entry, params)
    v_star = objective.optimal_value(mdp)
    scored_by = objective
    if score_policy != "played":  # the known-bug control lives in the reference loop only
        loop = "python"
    closed_form = loop == "auto" and B * episodes >= CLOSED_FORM_MIN and checkpoint is None
    if closed_form and segment is None and hasattr(agent, "closed_form_run"):
        scorer = BackendRiskNeutral(bk) if objective is RISK_NEUTRAL else objective
        t0 = time.perf_counter()
        arrays = agent.closed_form_run(mdp, scorer, float(v_star), episodes)
        if arrays is not None:  # None: no closed form for this objective (the loop runs)
            config = _config(mdp, episodes, known_rewards, scorer, bk, "closed form", None)
            wall = time.perf_counter() - t0
            return RegretResult(*arrays, float(v_star), wall, config)
    loop = _choose_loop(loop, agent, bk, B * episodes, segment, checkpoint)
    if loop == "python":
        _check_python_checkpoint(entry, agent, segment, checkpoint)
    if objective is RISK_NEUTRAL:
        scored_by = BackendRiskNeutral(bk)
    try:
        if loop != "python":
            regret, returns, estimates, timing = _run_compiled(
                entry, agent, mdp, v_star, env_rngs, episodes, seeds, seed, params, progress,
                segment, checkpoint, torch_dev,
            )  # fmt: skip
        else:
            ckpt = None
            if checkpoint is not None:
                ident = {
                    "algorithm": entry.name, "mdp": mdp.name, "params": params,
                    "seeds": list(seeds), "seed": seed, "episodes": episodes, "loop": "python",
                    "backend": bk.name, "known_rewards": known_rewards,
                    "score_policy": score_policy,
                }  # fmt: skip
                ckpt = PythonCheckpoint(checkpoint, ident, segment_length(segment, episodes))
                ckpt.open()  # refuses another run's directory before any episode
            regret, returns, estimates, timing = _run_python(
                entry, agent, mdp, objective, v_star, env_rngs, bk, episodes, progress,
                score_policy, ckpt,
            )  # fmt: skip
    except _Stopped as stop:  # Ctrl-C after some episodes: they travel with the exception
        partial = RegretResult(
            *stop.arrays, float(v_star), stop.timing["wall"], {
                **_config(mdp, stop.done, known_rewards, scored_by, bk, loop, torch_dev),
                **_timing_config(stop.timing),
                "interrupted_after": stop.done,
            }
        )  # fmt: skip
        raise RunInterrupted(partial, stop.done) from stop.__cause__
    config = {
        **_config(mdp, episodes, known_rewards, scored_by, bk, loop, torch_dev),
        **_timing_config(timing),
    }
    return RegretResult(regret, returns, estimates, float(v_star), timing["wall"], config)


def _timing_config(timing: dict[str, float]) -> dict[str, Any]:
    """What the result records of the run's time: ``compile_seconds`` (numba's compile or
    cache load and the loop's set-up, apart from the wall time) and ``episodes_this_run`` (a
    resumed run's rate counts only the episodes this process ran)."""
    return {
        "compile_seconds": timing.get("compile", 0.0),
        "episodes_this_run": int(timing["episodes_this_run"]),
    }


def _config(mdp, episodes, known_rewards, objective, bk, loop, torch_dev) -> dict[str, Any]:
    return {
        "mdp": mdp.name,
        "S": mdp.S,
        "A": mdp.A,
        "H": mdp.horizon,
        "episodes": episodes,
        "known_rewards": known_rewards,
        "objective": objective.name,
        "backend": bk.name,
        "device": bk.device if torch_dev is None else torch_dev,
        "loop": loop,
    }


class _Stopped(Exception):
    """A loop was interrupted after ``done`` complete episodes (arrays truncated; ``timing``
    as the loops return it)."""

    def __init__(self, arrays: tuple, done: int, timing: dict[str, float]) -> None:
        super().__init__(f"stopped after {done} episodes")
        self.arrays, self.done, self.timing = arrays, done, timing


def _check_python_checkpoint(entry, agent, segment, checkpoint) -> None:
    """``checkpoint`` and ``segment`` with the Python loop, checked before any episode:
    ``segment`` (how often the checkpoint is written) needs a checkpoint, and the agent must
    pickle (:func:`theorylab.runners.python_checkpoint.check_picklable`)."""
    if segment is not None and checkpoint is None:
        raise ValueError(
            f"segment={segment!r} (--segment): the Python loop of {entry.name} uses it only as "
            "the episodes between checkpoints; expected --checkpoint DIR with it, or no "
            "--segment"
        )
    if checkpoint is not None:
        check_picklable(entry.name, agent, checkpoint)


def _choose_loop(loop, agent, bk, seed_episodes, segment, checkpoint) -> str:
    """The loop that runs: "python", "compiled" or "torch" (``loop="auto"`` resolved)."""
    from theorylab.algorithms.online.whole_run import compiled_variant

    variant = compiled_variant(agent)
    has_kernel = variant is not None
    if loop in ("compiled", "torch") and not has_kernel:
        raise ValueError(
            f"{type(agent).__name__} has no whole-run kernel (compiled loops: "
            "ucbvi-hoeffding/-bernstein/-ajks, greedy, epsilon-greedy, "
            "optimistic-q-hoeffding/-bernstein, maxwp, icvar-rm, linucb, lsvi-ucb, cvar-ucbvi, "
            "icvar-hf, cvar-ela); "
            "use loop='python' or 'auto'"
        )
    if loop == "torch":
        from theorylab.algorithms.online.whole_run_torch import TORCH_VARIANTS

        if variant not in TORCH_VARIANTS:
            raise ValueError(
                f"{type(agent).__name__} has no torch whole-run loop (torch loops: "
                "ucbvi-hoeffding/-bernstein/-ajks, greedy, optimistic-q-hoeffding/-bernstein); "
                "use loop='compiled'"
            )
    if loop == "auto":
        use = has_kernel and bk.name == "numpy" and seed_episodes >= AUTO_COMPILED_MIN
        use = use or (has_kernel and (segment is not None or checkpoint is not None))
        return "compiled" if use else "python"
    return loop


def _run_compiled(
    entry, agent, mdp, v_star, env_rngs, episodes, seeds, seed, params, progress, segment,
    checkpoint, torch_dev=None,
):  # fmt: skip
    """The whole-run loop in segments (the numba kernel, or with ``torch_dev`` the torch loop
    on that device), with a progress report in seed-episodes/s. Returns the curves and the
    timing: ``compile`` (building the loop and a zero-episode call that compiles, or loads
    from numba's cache, every kernel), ``wall`` (the episodes, after it) and
    ``episodes_this_run`` (a resumed checkpoint's episodes excluded). Ctrl-C raises
    :class:`_Stopped` with the finished segments."""
    from theorylab.algorithms.online.whole_run import (
        DEFAULT_SEGMENT,
        WholeRunInterrupted,
        make_compiled_loop,
        run_whole,
    )
    from theorylab.progress import progress_bar

    label = "compiled" if torch_dev is None else f"torch {torch_dev}"
    bar = progress_bar(
        episodes, f"{entry.name} on {mdp.name} ({label})", "ep", enabled=progress,
        scale=len(seeds), rate_unit="seed-ep",
        note="compiling" if torch_dev is None else "setting up",
    )  # fmt: skip
    t0 = time.perf_counter()
    try:
        if torch_dev is None:
            whole = make_compiled_loop(agent, mdp, v_star, env_rngs)
            default_segment = DEFAULT_SEGMENT
        else:
            from theorylab.algorithms.online.whole_run_torch import (
                DEFAULT_SEGMENT as TORCH_SEGMENT,
            )
            from theorylab.algorithms.online.whole_run_torch import TorchLoop, torch_seed

            whole = TorchLoop(
                agent, mdp, v_star, env_rngs, device=torch_dev,
                generator_seed=torch_seed(seed, seeds),
            )  # fmt: skip
            default_segment = TORCH_SEGMENT
        whole.advance(0)  # compiles (or loads) the kernels: no episode, no random number
    except BaseException:
        bar.close()
        raise
    timing = {"compile": time.perf_counter() - t0}
    start: list[int] = []  # the episodes done when this process started (a resumed checkpoint)

    def report(done: int, total: int, rate: float) -> None:
        if not start:  # run_whole's first call, before any segment
            start.append(done)
            bar.restart(done)
            return
        bar.update(done - bar.n)

    run_id = {
        "algorithm": entry.name,
        "mdp": mdp.name,
        "params": params,
        "seeds": list(seeds),
        "seed": seed,
        "episodes": episodes,
    }
    if torch_dev is not None:  # a compiled checkpoint is not a torch one, nor CPU a CUDA one
        run_id.update(loop="torch", device=torch_dev)
    t1 = time.perf_counter()
    try:
        out = run_whole(
            whole,
            episodes,
            segment=default_segment if segment is None else int(segment),
            checkpoint=checkpoint,
            run_id=run_id,
            progress=report,
        )
    except WholeRunInterrupted as stop:
        if stop.done == 0:  # nothing finished: a plain Ctrl-C
            raise KeyboardInterrupt from stop
        ran = stop.done - (start[0] if start else 0)
        timing.update(wall=time.perf_counter() - t1, episodes_this_run=ran)
        c = stop.curves
        raise _Stopped((c["regret"], c["returns"], c["estimates"]), stop.done, timing) from stop
    finally:
        bar.close()
    ran = episodes - (start[0] if start else 0)
    timing.update(wall=time.perf_counter() - t1, episodes_this_run=ran)
    return out["regret"], out["returns"], out["estimates"], timing


def _run_python(
    entry, agent, mdp, objective, v_star, env_rngs, bk, episodes, progress,
    score_policy="played", ckpt: PythonCheckpoint | None = None,
):  # fmt: skip
    """The episode-by-episode loop (the reference). With ``ckpt``, a checkpoint is written
    after every ``ckpt.segment`` episodes and a stored one is resumed first (the agent and the
    environment's streams replaced by the stored ones). Ctrl-C raises :class:`_Stopped` with the
    finished episodes (those of a resumed checkpoint included)."""
    B = len(env_rngs)
    if objective is RISK_NEUTRAL:  # exact regret and rollouts through the backend's kernels
        objective = BackendRiskNeutral(bk)
    # (B, K) each; np.empty: pages are taken as episodes fill them
    curves = {name: np.empty((B, episodes)) for name in CURVES}
    regret, returns, estimates = (curves[name] for name in CURVES)
    has_estimate = hasattr(agent, "value_estimate")
    from theorylab.progress import progress_bar

    pending = None  # score_policy="next": the policy of episode k + 1, already asked for
    start = 0  # episodes done when this process started (a resumed checkpoint)
    if ckpt is not None and ckpt.resumable:
        state = ckpt.load(curves, episodes)
        start, agent, env_rngs, pending = (
            state["done"], state["agent"], state["env_rngs"], state["pending"]
        )  # fmt: skip
    bar = progress_bar(
        episodes, f"{entry.name} on {mdp.name}", "ep", enabled=progress, leave=False,
        scale=B, rate_unit="seed-ep",
    )  # fmt: skip
    bar.restart(start)
    t0 = time.perf_counter()
    done = start  # episodes every seed has finished
    stored = start  # episodes on disk
    try:
        for k in range(start, episodes):
            pi = agent.policy() if pending is None else pending
            estimates[:, k] = agent.value_estimate() if has_estimate else np.nan
            if score_policy == "played":
                regret[:, k] = v_star - objective.policy_values(mdp, pi)
            traj = objective.rollout(mdp, pi, env_rngs)
            returns[:, k] = traj.returns()
            agent.update(traj)
            if score_policy == "next":
                pending = agent.policy()
                regret[:, k] = v_star - objective.policy_values(mdp, pending)
            done = k + 1
            bar.update(1)
            if ckpt is not None and (done - stored == ckpt.segment or done == episodes):
                ckpt.write(curves, stored, done, agent, env_rngs, pending)
                stored = done
    except KeyboardInterrupt as exc:
        bar.close()
        if done == 0:
            raise
        arrays = (regret[:, :done], returns[:, :done], estimates[:, :done])
        timing = {"wall": time.perf_counter() - t0, "episodes_this_run": done - start}
        raise _Stopped(arrays, done, timing) from exc
    wall = time.perf_counter() - t0
    bar.close()
    return regret, returns, estimates, {"wall": wall, "episodes_this_run": episodes - start}
