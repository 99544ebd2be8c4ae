"""The name-string registry, the lazy package surface, and run()'s contract with agents."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from theorylab.errors import UnknownNameError
from theorylab.experiment import run
from theorylab.mdps import make
from theorylab.registry import Registry, parse_spec


def test_parse_spec_splits_name_and_parameters():
    assert parse_spec("RiverSwim:S=6, H=20") == ("riverswim", {"S": "6", "H": "20"})
    assert parse_spec("riverswim") == ("riverswim", {})


@pytest.mark.parametrize(
    "spec, match",
    [
        ("riverswim:S", "not of the form key=value"),
        ("riverswim:S=3,S=4", "given twice"),
        ("", "expected a name"),
    ],
)
def test_parse_spec_rejects_malformed(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_spec(spec)


def test_registry_converts_to_default_types_and_names_bad_values():
    reg = Registry("thing")

    @reg.register("box")
    def box(n: int = 1, x: float = 0.5, flag: bool = False, cells: tuple = (0,), label="a"):
        return n, x, flag, cells, label

    assert reg.make("box:n=3,x=2,flag=true,cells=4|5,label=q") == (3, 2.0, True, (4, 5), "q")
    with pytest.raises(ValueError, match="n='x' is not an integer"):
        reg.make("box:n=x")
    with pytest.raises(ValueError, match="flag='maybe' is not a boolean"):
        reg.make("box:flag=maybe")
    with pytest.raises(ValueError, match="has no parameter 'm'; parameters: n=1"):
        reg.make("box:m=1")
    with pytest.raises(UnknownNameError, match="unknown thing 'bx'; available: box"):
        reg.make("bx")


def test_import_theorylab_is_lazy():
    code = (
        "import sys, theorylab; "
        "heavy = [m for m in ('numba', 'sympy', 'cvxpy', 'theorylab.algorithms') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class CoinAgent:
    """A test agent: each episode, every seed plays a uniformly random deterministic policy drawn
    from its own generator (a fixed number of draws per episode)."""

    name = "coin"

    def __init__(self, env, n_seeds, rngs, *, episodes: int, bias: float = 0.0):
        self.env, self.n_seeds, self.rngs = env, n_seeds, rngs
        self.episodes_seen = episodes
        self.updates = 0

    def policy(self) -> np.ndarray:
        H, S, A = self.env.H, self.env.S, self.env.A
        return np.stack([g.integers(0, A, size=(H, S)) for g in self.rngs])

    def update(self, traj) -> None:
        assert traj.states.shape == (self.n_seeds, self.env.H)
        self.updates += 1


def test_run_exact_regret_matches_direct_evaluation_and_seeds_are_independent():
    from theorylab.algorithms.planning import backward_induction, evaluate_policies

    mdp = make("riverswim:S=4,H=5")
    res = run(CoinAgent, mdp, episodes=30, seeds=5, seed=7)
    assert res.regret.shape == (5, 30) and res.returns.shape == (5, 30)
    # regret of episode 0 equals V* minus the exact value of the policy the agent drew
    from theorylab.seeding import AGENT_STREAM, generators

    g = generators(7, [3], AGENT_STREAM)[0]
    pi = g.integers(0, mdp.A, size=(mdp.H, mdp.S))
    v_pi = evaluate_policies(mdp, pi)[0] @ mdp.mu0
    assert res.regret[3, 0] == pytest.approx(backward_induction(mdp).value - v_pi, abs=1e-12)
    assert np.all(res.regret >= -1e-12)
    alone = run(CoinAgent, mdp, episodes=30, seeds=[3], seed=7)
    # The sampled episodes are identical draw for draw; the exact evaluation of one policy uses
    # BLAS gemv, of a batch gemm, so the regret agrees to round-off (not bit for bit).
    np.testing.assert_array_equal(alone.returns[0], res.returns[3])
    np.testing.assert_allclose(alone.regret[0], res.regret[3], rtol=0, atol=1e-13)
    other_root = run(CoinAgent, mdp, episodes=30, seeds=[3], seed=8)
    assert not np.array_equal(other_root.returns[0], res.returns[3])


def test_run_passes_episodes_to_agents_that_take_it_and_records_config():
    seen = {}

    class Spy(CoinAgent):
        def __init__(self, env, n_seeds, rngs, *, episodes: int, bias: float = 0.0):
            super().__init__(env, n_seeds, rngs, episodes=episodes, bias=bias)
            seen["episodes"], seen["bias"] = episodes, bias

    res = run(Spy, "riverswim:S=3,H=2", episodes=4, seeds=2, bias=0.25)
    assert seen == {"episodes": 4, "bias": 0.25}
    assert res.config["params"] == {"bias": 0.25}
    assert res.config["seeds"] == [0, 1] and res.config["mdp"] == "riverswim:S=3,H=2"
    assert "numpy" in res.config["versions"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"episodes": 0}, "episodes must be a positive integer"),
        ({"episodes": 2.5}, "episodes must be a positive integer"),
        ({"episodes": 3, "seeds": 0}, "seeds must be >= 1"),
        ({"episodes": 3, "seeds": [1, 1]}, "seed indices repeat"),
    ],
)
def test_run_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run(CoinAgent, "riverswim:S=3,H=2", **kwargs)


def test_run_rejects_discounted_only_mdp():
    mdp = make("riverswim:S=3,H=2").with_objective(horizon=None, gamma=0.9)
    with pytest.raises(ValueError, match="no finite horizon"):
        run(CoinAgent, mdp, episodes=2)


def test_the_root_seed_reaches_an_algorithm_that_draws_its_own_randomness():
    """tl.run's ``seed`` is the root seed; a factory declaring ``seed`` (md-vi's noise, TRPO's
    random features, demonstration samples) receives it, so ``seed=`` changes the draw (it was
    once swallowed, and such algorithms always drew seed 0)."""
    import inspect

    from theorylab.algorithms.registry import get_algorithm, list_algorithms

    def declares_seed(name):
        return "seed" in inspect.signature(get_algorithm(name).factory).parameters

    takers = sorted(n for n in list_algorithms() if declares_seed(n))
    assert "demo-regularised-vi" in takers and "md-vi" in takers
    mdp = make("random:S=4,A=3,H=4,seed=2")
    runs = [run("demo-regularised-vi", mdp, iterations=1, demonstrations=8, seed=s)
            for s in (1, 2, 1)]  # fmt: skip
    bc = [r.config["bc_policy"] for r in runs]
    assert np.array_equal(bc[0], bc[2]) and not np.array_equal(bc[0], bc[1])
    assert [r.config["seed"] for r in runs] == [1, 2, 1]
