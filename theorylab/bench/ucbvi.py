"""Benchmark: batched UCBVI throughput, and where an episode's time goes.

For each problem (RiverSwim and, when registered, the TabulaRL chain) with S in {10, 100, 1000}
and H in {20, 50}, and each batch size B in ``seeds``, one episode of ``theorylab.run``'s loop is
timed phase by phase:

* ``plan``: the agent's backward induction (UCBVI.plan: H batched Bellman backups with bonuses);
* ``counts``: the count / P_hat update from the episode (EmpiricalModel.update);
* ``regret``: exact evaluation of the B policies on the true model (``evaluate_policies``);
* ``rollout``: sampling the B episodes;
* ``policy``: reading the greedy policy and the value estimate.

Reported: batch episodes/s (one episode of all B seeds) and seed-episodes/s (= B x batch
episodes/s), and the median seconds of each phase over ``repeats`` timed blocks. The true model is
built with CSR transitions (``sparse=true``): it only serves exact regret and sampling, and the
agent never sees it; its dense P would make exact regret, not UCBVI, the cost at S = 1000.

Memory cap: the dense empirical model holds 2 x 8 x B x S x A x S bytes (x H for ``ucbvi-ajks``).
A configuration above ``max_model_bytes`` (default 2 GiB, e.g. S = 1000 with B = 256: 8 GiB) is
reported as skipped, not run.

Reference (docs/benchmarks.md, "Peers"): rlberry-scool 0.7.3's UCBVIAgent ran about 600
episodes/s on Chain(L=10), H=20 and about 4 episodes/s on Chain(L=100), H=50 on a 2-core machine
(one seed at a time). ``RLBERRY_REFERENCE`` holds those numbers; ``measure_rlberry`` measures it
again when a Python with rlberry-scool is available (it is not a dependency of theorylab).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from functools import partial

import numpy as np

from theorylab.table import Row, Span, left, render, right

DEFAULT_CONFIGS: tuple[tuple[str, int, int], ...] = tuple(
    (family, S, H) for family in ("riverswim", "chain") for S in (10, 100, 1000) for H in (20, 50)
)
QUICK_SIZES = (10, 100)
PHASES = ("plan", "counts", "regret", "rollout", "policy")
RLBERRY_REFERENCE = {  # episodes/s of one seed, rlberry-scool 0.7.3, 2-core machine (the brief)
    ("chain", 10, 20): 600.0,
    ("chain", 100, 50): 4.0,
}


def _families() -> list[str]:
    from theorylab.mdps import list_families

    return list_families()


def _model_bytes(algorithm: str, B: int, S: int, A: int, H: int) -> int:
    per_step = algorithm == "ucbvi-ajks"
    return 2 * 8 * B * (H if per_step else 1) * S * A * S


def time_episodes(agent, mdp, env_rngs, n: int, objective) -> dict[str, float]:
    """Run n episodes exactly as ``theorylab.run`` does, timing each phase; totals in seconds.

    objective: ``theorylab.experiment.BackendRiskNeutral`` (exact regret and rollouts through the
    run's backend, as ``theorylab.run`` does)."""
    v_star = 0.0  # regret = v_star - V^pi(mu0); the constant does not change the cost
    t = dict.fromkeys(PHASES, 0.0)
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        pi = agent.policy()
        agent.value_estimate()
        t1 = clock()
        _ = v_star - objective.policy_values(mdp, pi)
        t2 = clock()
        traj = objective.rollout(mdp, pi, env_rngs)
        t3 = clock()
        # the body of UCBVI.update(traj), timed in two parts
        agent.model.update(traj)
        agent.k += 1
        t4 = clock()
        agent.plan()
        t5 = clock()
        t["policy"] += t1 - t0
        t["regret"] += t2 - t1
        t["rollout"] += t3 - t2
        t["counts"] += t4 - t3
        t["plan"] += t5 - t4
    return t


def bench_ucbvi(
    configs: Sequence[tuple[str, int, int]] | None = None,
    seeds: Sequence[int] = (1, 32, 256),
    repeats: int = 3,
    quick: bool = False,
    *,
    algorithms: Sequence[str] = ("ucbvi-hoeffding",),
    seconds_per_block: float = 0.5,
    max_model_bytes: int = 2 * 2**30,
    rlberry_python: str | None = None,
    backend: str | None = None,
    device: str = "cpu",
) -> list[dict]:
    """Time UCBVI episodes phase by phase (see the module docstring).

    configs: (family, S, H) triples; default RiverSwim and chain, S in {10, 100, 1000},
        H in {20, 50} (families that are not registered are skipped).
    seeds: batch sizes B. repeats: timed blocks per configuration (medians are reported).
    quick: S in {10, 100} only, seeds (1, 32), 2 repeats.
    seconds_per_block: each timed block runs about this long (at least 2 episodes).
    rlberry_python: an interpreter with rlberry-scool installed; when given, rlberry's UCBVIAgent
        is measured on the same problems (S <= 100 only: its pure-Python backward induction takes
        minutes per episode at S = 1000) and the measured ratio is reported.
    backend, device: where the agent's model and the exact regret run
        (:func:`theorylab.backends.get_backend`); None is ``theorylab.run``'s default, numpy.
    Returns one dict per (algorithm, family, S, H, B).
    """
    from theorylab.algorithms.registry import make_agent
    from theorylab.backends import get_backend
    from theorylab.experiment import BackendRiskNeutral, env_spec
    from theorylab.mdps import make
    from theorylab.seeding import AGENT_STREAM, ENV_STREAM, generators

    if configs is None:
        configs = DEFAULT_CONFIGS
        if quick:
            configs = tuple(c for c in configs if c[1] in QUICK_SIZES)
    if quick:
        seeds = tuple(b for b in seeds if b <= 32) or (1,)
        repeats = min(repeats, 2)
    bk = get_backend(backend or "numpy", device)
    objective = BackendRiskNeutral(bk)
    available = set(_families())
    rows: list[dict] = []
    for family, S, H in configs:
        if family not in available:
            continue
        extra = ",fail=0.1" if family == "chain" else ""  # rlberry's Chain slips with prob 0.1
        mdp = make(f"{family}:S={S},H={H}{extra},sparse=true")
        rlberry = None
        if rlberry_python is not None and S <= 100:
            n_rl = max(5, int(3000 / (S * H)))  # about 1-5 s
            rlberry = measure_rlberry(rlberry_python, family, S, H, n_rl)["episodes_per_s"]
        for algorithm in algorithms:
            for B in seeds:
                row = {
                    "algorithm": algorithm,
                    "mdp": family,
                    "S": S,
                    "A": mdp.A,
                    "H": H,
                    "B": B,
                    "backend": bk.name + ("" if bk.device == "cpu" else f"[{bk.device}]"),
                }
                need = _model_bytes(algorithm, B, S, mdp.A, H)
                row["model_GiB"] = need / 2**30
                if need > max_model_bytes:
                    row["skipped"] = (
                        f"dense empirical model needs {need / 2**30:.1f} GiB "
                        f"> cap {max_model_bytes / 2**30:.1f} GiB"
                    )
                    rows.append(row)
                    continue
                idx = list(range(B))
                agent = make_agent(
                    algorithm,
                    env_spec(mdp),
                    B,
                    generators(0, idx, AGENT_STREAM),
                    episodes=10_000,
                    backend=bk,
                )
                env_rngs = generators(0, idx, ENV_STREAM)
                timed = partial(time_episodes, agent, mdp, env_rngs, objective=objective)
                one = sum(timed(1).values())  # warm-up + estimate
                n = int(max(2, min(2000, seconds_per_block / max(one, 1e-9))))
                blocks = [timed(n) for _ in range(repeats)]
                per_episode = {p: float(np.median([b[p] for b in blocks])) / n for p in PHASES}
                total = sum(per_episode.values())
                row.update({f"{p}_s": per_episode[p] for p in PHASES})
                row["episodes_timed"] = n * repeats
                row["batch_episodes_per_s"] = 1.0 / total
                row["seed_episodes_per_s"] = B / total
                ref = RLBERRY_REFERENCE.get((family, S, H))
                if ref is not None:
                    row["rlberry_reference_episodes_per_s"] = ref
                    row["speedup_vs_rlberry_reference"] = (B / total) / ref
                if rlberry is not None:
                    row["rlberry_measured_episodes_per_s"] = rlberry
                    row["speedup_vs_rlberry_measured"] = (B / total) / rlberry
                    no_regret = total - per_episode["regret"]  # rlberry computes no regret
                    row["speedup_vs_rlberry_measured_without_regret"] = (B / no_regret) / rlberry
                rows.append(row)
                del agent
    return rows


def format_table(rows: list[dict]) -> str:
    """A plain, parseable table: one line per configuration, phases as % of the episode.

    ``x rlberry``: seed-episodes/s over rlberry-scool's episodes/s, measured in this environment
    when available, else (marked ``*``) over the brief's reference numbers."""
    columns = [
        left("algorithm"),
        left("backend"),
        left("mdp"),
        *map(right, ("S", "H", "B", "batch ep/s", "seed-ep/s")),
        *map(right, ("plan", "count", "regret", "roll", "pol", "x rlberry")),
    ]
    body: list[Row] = []
    starred = False
    for r in rows:
        prefix = [
            r["algorithm"],
            r.get("backend", "numpy"),
            r["mdp"],
            str(r["S"]),
            str(r["H"]),
            str(r["B"]),
        ]
        if "skipped" in r:
            body.append(Span(prefix, f"skipped: {r['skipped']}"))
            continue
        total = sum(r[f"{p}_s"] for p in PHASES)
        pct = [f"{100 * r[f'{p}_s'] / total:.0f}%" for p in PHASES]
        key = next(
            (k for k in ("speedup_vs_rlberry_measured", "speedup_vs_rlberry_reference") if k in r),
            None,
        )
        speed = f"{r[key]:.0f}x{'' if key.endswith('measured') else '*'}" if key else ""
        starred = starred or speed.endswith("*")
        body.append(
            [
                *prefix,
                f"{r['batch_episodes_per_s']:.1f}",
                f"{r['seed_episodes_per_s']:.0f}",
                *pct,
                speed,
            ]
        )
    notes = [
        "plan ... pol: each phase's share of an episode's time.",
        "x rlberry: seed-episodes/s over rlberry-scool's UCBVIAgent episodes/s (one seed).",
    ]
    if starred:
        notes += [
            "* rlberry-scool is not installed here, so the ratio is not measured in this run: it",
            "  divides by the episodes/s recorded on a 2-core machine with rlberry-scool 0.7.3",
            '  (Chain S=10, H=20: 600/s; S=100, H=50: 4/s; docs/benchmarks.md, "UCBVI").',
        ]
    return render(columns, body, notes=notes)


# --------------------------------------------------------------------------- rlberry, measured
_RLBERRY_SCRIPT = r"""
import json, sys, time
import numpy as np
from rlberry.envs.finite_mdp import FiniteMDP
from rlberry_scool.agents import UCBVIAgent
from rlberry_scool.envs import Chain
spec = json.loads(sys.stdin.read())
if spec["P"] is None:  # rlberry's own Chain(L=S, fail_prob=0.1)
    env = Chain(L=spec["S"], fail_prob=0.1)
else:
    env = FiniteMDP(np.array(spec["R"]), np.array(spec["P"]), initial_state_distribution=0)
agent = UCBVIAgent(env, horizon=spec["H"], gamma=1.0, bonus_scale_factor=1.0, seeder=0)
agent.fit(budget=2)  # warm-up
t0 = time.perf_counter()
agent.fit(budget=spec["episodes"])
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def measure_rlberry(
    python: str, problem: str = "riverswim", S: int = 10, H: int = 20, episodes: int = 200
) -> dict:
    """Episodes/s of rlberry-scool's UCBVIAgent (one seed) on the same problem, run by ``python``
    (an interpreter with ``rlberry-scool`` installed, e.g. a separate venv; it is not a
    dependency of theorylab).

    problem: a theorylab family (``"riverswim"``, ``"chain"``) whose dense P and R are handed to
    ``rlberry.envs.finite_mdp.FiniteMDP``, or ``"rlberry-chain"``: rlberry's own
    ``Chain(L=S, fail_prob=0.1)``. The agent runs ``fit(budget=episodes)`` (its default
    "simplified_bernstein" bonus, full backward induction after every episode).
    """
    spec = {"S": S, "H": H, "episodes": episodes, "P": None, "R": None}
    if problem != "rlberry-chain":
        from theorylab.mdps import make

        extra = ",fail=0.1" if problem == "chain" else ""
        mdp = make(f"{problem}:S={S},H={H}{extra}")
        spec["P"], spec["R"] = mdp.dense_P().tolist(), np.asarray(mdp.R).tolist()
    out = subprocess.run(
        [python, "-c", _RLBERRY_SCRIPT],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = json.loads(out.stdout.strip().splitlines()[-1])["seconds"]
    return {
        "problem": problem,
        "S": S,
        "H": H,
        "episodes": episodes,
        "episodes_per_s": episodes / seconds,
    }
