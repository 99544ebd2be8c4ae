"""Every online algorithm resumes bit for bit from ``checkpoint=``, not only the ones the
older resume tests pick (tests/test_resume_exact.py: the compiled whole-run loops;
tests/test_resume_python_loop.py: PSRL, UCBVI-Bernstein, LSVI-UCB).

The algorithms added for the seed papers (CDPO, Contrastive UCB, CVaR-ELA, demonstration-
regularised BPI, ICVaR-L / ICVaR-HF, JSRL, LMC-LSVI, plain LSVI, MusIK, Rep-UCB, SQIRL) hold
state the older agents do not: growing design matrices, MLE feature choices, posterior samples,
stage schedules, recommendation policies. Each run is interrupted twice (in the agent's update,
where the state has moved but nothing of it is stored, and right after a checkpoint write),
resumed, and compared with the uninterrupted run. A test at the end checks the table covers
every registered online algorithm, so a new one joins it or a resume test names it.
"""

from __future__ import annotations

import numpy as np
import pytest

import theorylab as tl
from theorylab.agent import env_spec
from theorylab.algorithms.offline.dataset import make_dataset
from theorylab.algorithms.policy_optimization.demonstration_regularised import (
    expert_demonstrations,
)
from theorylab.algorithms.registry import get_algorithm, list_algorithms
from theorylab.errors import RunInterrupted
from theorylab.mdps import make
from theorylab.runners import python_checkpoint
from theorylab.runners.problems import resolve_mdp
from theorylab.seeding import generators

SEED, SEGMENT = 2026, 5
NAMES = ("regret", "returns", "value_estimates")


def _case(algorithm: str):
    """(MDP, episodes, params) for ``algorithm``: small instances from each module's tests."""
    if algorithm == "cdpo":
        return "riverswim:S=3,H=3", 24, {}
    if algorithm == "c-psrl":  # a factored MDP over 3 binary variables, 1 parent each
        from theorylab.mdps.factored import random_factored_mdp

        return random_factored_mdp(3, 2, 1, 3, np.random.default_rng(0))[0], 24, {"degree": 1}
    if algorithm == "contrastive-ucb":
        return "lowrank-simplex:S=6,A=3,d=2,H=3,seed=3", 24, {"rank": 2}
    if algorithm == "cvar-ela":
        mdp = make("lowrank-simplex:S=6,A=2,d=2,H=3,seed=1,reward_model=bernoulli")
        return mdp, 24, {"tau": 0.25, "feature_class": mdp.candidates, "c": 0.1}
    if algorithm == "rep-ucb":
        mdp = make("lowrank-simplex:S=5,A=2,d=2,H=3,n_random=2,n_perturbed=1")
        return mdp, 24, {"feature_class": mdp.candidates, "c": 0.1}
    if algorithm == "demo-regularised-bpi":
        lock = "combination-lock:H=3,A=3,code_seed=3"
        demos = expert_demonstrations(make(lock), 8, np.random.default_rng(0))
        return lock, 24, {"demonstrations": demos}
    if algorithm in ("icvar-l", "icvar-hf"):
        mdp = make("linear-mixture:S=5,A=2,d=3,H=3,seed=0,concentration=0.5")
        return mdp.name, 24, {"alpha": 0.25, "basis": mdp.basis}
    if algorithm == "jsrl":
        return "combination-lock:H=4,A=2,code_seed=2", 24, {}
    if algorithm in ("lsvi", "lmc-lsvi"):
        mdp = make("linear-simplex:S=5,A=3,d=3,H=5,seed=0,rewards=cube")
        return mdp, 24, {"features": mdp.phi}
    if algorithm == "musik":
        return "block-lock:H=3,A=2,m=2", 3 * 6 + 1, {"samples": 6, "n_latent": 3}
    if algorithm == "multitask-epsilon-greedy":
        return "combination-lock:H=4,A=2,code_seed=2", 24, {"tasks": "reach"}
    if algorithm == "wsrl":  # offline data from a behaviour that rarely plays pi*, then online
        mdp = make("random:S=4,A=2,H=3,seed=5")
        data = make_dataset(mdp, 40 * mdp.horizon, coverage=0.2, other="adversarial", seeds=2)
        return mdp, 24, {"dataset": data, "warmup": 4}
    if algorithm == "sqirl":
        return "bait-lock:H=4,A=2,k=2,code_seed=1", 4 * 6, {"k": 2, "rollouts": 6}
    raise KeyError(algorithm)


CASES = ["c-psrl", "cdpo", "contrastive-ucb", "cvar-ela", "demo-regularised-bpi", "icvar-hf",
         "icvar-l", "jsrl", "lmc-lsvi", "lsvi", "multitask-epsilon-greedy", "musik", "rep-ucb",
         "sqirl", "wsrl"]  # fmt: skip
# resumed in tests/test_resume_exact.py (compiled loops) or tests/test_resume_python_loop.py
ELSEWHERE = {"cvar-ucbvi", "epsilon-greedy", "greedy", "icvar-rm", "linucb", "lsvi-ucb", "maxwp",
             "optimistic-q-bernstein", "optimistic-q-hoeffding", "psrl", "ucbvi-ajks",
             "ucbvi-bernstein", "ucbvi-hoeffding"}  # fmt: skip


# with a compiled loop too (which `checkpoint=` would pick): their Python loop's resume is tested
# here, the compiled loop's in tests/test_resume_exact.py
PYTHON_LOOP = {"cvar-ela", "icvar-hf"}


def _run(algorithm: str, **kw):
    mdp, episodes, params = _case(algorithm)
    if algorithm in PYTHON_LOOP:
        kw = {"loop": "python", **kw}
    return tl.run(algorithm, mdp, episodes=episodes, seeds=2, seed=SEED, **params, **kw)


def _agent_class(algorithm: str) -> type:
    mdp, episodes, params = _case(algorithm)
    entry = get_algorithm(algorithm)
    kw = {"episodes": episodes} if "episodes" in entry.parameters() else {}
    env = env_spec(resolve_mdp(mdp), known_rewards=True)
    return type(entry.factory(env, 2, generators(0, [0, 1], 1), **kw, **params))  # 2 = seeds


def _stop_in_update(monkeypatch, algorithm: str, at: int) -> None:
    cls, calls = _agent_class(algorithm), []
    update = cls.update

    def update_then_stop(self, traj):
        calls.append(1)
        if len(calls) == at:
            raise KeyboardInterrupt
        return update(self, traj)

    monkeypatch.setattr(cls, "update", update_then_stop)


def _stop_after_write(monkeypatch, at: int) -> None:
    write, calls = python_checkpoint.PythonCheckpoint.write, []

    def write_then_stop(self, *a, **kw):
        write(self, *a, **kw)
        calls.append(1)
        if len(calls) == at:
            raise KeyboardInterrupt

    monkeypatch.setattr(python_checkpoint.PythonCheckpoint, "write", write_then_stop)


@pytest.mark.parametrize("algorithm", CASES)
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, monkeypatch, algorithm):
    whole = _run(algorithm)
    ckpt = str(tmp_path / "ck")
    done = []
    for stop in (lambda: _stop_in_update(monkeypatch, algorithm, 8),
                 lambda: _stop_after_write(monkeypatch, 1)):  # fmt: skip
        stop()
        with pytest.raises(KeyboardInterrupt) as err:
            _run(algorithm, checkpoint=ckpt, segment=SEGMENT)
        monkeypatch.undo()
        if isinstance(err.value, RunInterrupted):
            done.append(err.value.completed)
            part = err.value.result
            for name in NAMES:
                got = getattr(part, name)
                assert np.array_equal(got, getattr(whole, name)[:, : got.shape[1]],
                                      equal_nan=True), name  # fmt: skip
    assert done and done == sorted(done)  # each resume went on from the last
    resumed = _run(algorithm, checkpoint=ckpt, segment=SEGMENT)
    assert 0 < resumed.config["episodes_this_run"] < whole.regret.shape[1]
    for name in NAMES:
        assert np.array_equal(getattr(resumed, name), getattr(whole, name), equal_nan=True), name


def test_every_online_algorithm_has_a_resume_test():
    online = {n for n in list_algorithms() if get_algorithm(n).kind == "online"}
    missing = online - set(CASES) - ELSEWHERE
    assert not missing, f"online algorithms without a resume test: {sorted(missing)}"
