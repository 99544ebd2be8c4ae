"""Plots that teach what the run shows (issue 13, item 7): the null agent's exact regret, the
K from which a theorem is informative, log-log axes with the bound as printed, and the demo's
sentences computed from its run."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import theorylab as tl
from theorylab.algorithms.planning import backward_induction, evaluate_policies
from theorylab.cli import main
from theorylab.mdps import make
from theorylab.plotting import plot_regret
from theorylab.validations.reference import (
    NULL_LABEL,
    TRIVIAL_LABEL,
    burn_in_end,
    first_below,
    informative_from,
    max_regret_per_episode,
    null_regret_per_episode,
    plot_keywords,
    regret_reference,
    window_means,
)


@pytest.mark.parametrize("spec", ["riverswim:S=3,H=2", "random:S=3,A=2,H=2,seed=4"])
def test_null_and_worst_regret_match_enumeration_of_deterministic_policies(spec):
    # The value is multilinear in the per-(h, s) action distributions, so the uniformly random
    # policy's value is the average over all deterministic Markov policies (independent choices),
    # and the worst policy's is their minimum.
    mdp = make(spec)
    H, S, A = mdp.horizon, mdp.S, mdp.A
    policies = np.array(list(itertools.product(range(A), repeat=H * S))).reshape(-1, H, S)
    V = evaluate_policies(mdp, policies, batched=True)[:, 0] @ mdp.mu0  # (A^(HS),)
    v_star = backward_induction(mdp).value
    assert null_regret_per_episode(mdp, v_star) == pytest.approx(v_star - V.mean(), abs=1e-12)
    assert max_regret_per_episode(mdp, v_star) == pytest.approx(v_star - V.min(), abs=1e-12)


def test_informative_from_is_the_first_k_below_the_trivial_bound():
    assert informative_from(lambda K: 100 * np.sqrt(K), 1.0) == 10_001  # 100 sqrt(K) < K
    assert informative_from(lambda K: 0.5 * K, 1.0) == 1
    assert informative_from(lambda K: 2.0 * K, 1.0) is None  # never below K x 1
    assert informative_from(lambda K: np.sqrt(K), 0.0) is None  # nothing to learn


def test_informative_k_of_a_real_bound_brackets_the_crossing():
    res = tl.run("ucbvi-bernstein", "riverswim:S=3,H=3", episodes=20, seeds=1)
    ref = regret_reference(res)
    assert ref.bound_name == "azar2017-thm2" and ref.informative_k is not None
    from theorylab.bounds import get_bound

    b = get_bound("azar2017-thm2")

    def at(k):
        return float(b.evaluate(S=3, A=2, H=3, K=float(k), delta=0.1))

    k = ref.informative_k
    assert at(k) < k * ref.max_per_episode
    assert at(k - 1) >= (k - 1) * ref.max_per_episode
    assert "vacuous over the whole run" in ref.bound_status()


def test_burn_in_end():
    K = 1000
    flat = np.full((2, K), 0.07)
    assert burn_in_end(flat, 0.07) is None  # a non-learner never leaves it
    learner = np.concatenate([np.full((2, 300), 0.07), np.full((2, K - 300), 0.001)], axis=1)
    end = burn_in_end(learner, 0.07)
    assert 280 <= end <= 301
    relapse = learner.copy()
    relapse[:, -100:] = 0.07
    assert burn_in_end(relapse, 0.07) is None  # must stay below until the end


def test_burn_in_end_on_a_long_run_is_not_swallowed_by_its_window():
    """Regression (issue 13): with a window of K/50 episodes, a run of 2e6 episodes whose first
    10,000 are at the null agent's regret had its first 4e4-episode window below half the null's
    and reported a burn-in ending at K = 1 (on a 4e7 run: 8e5-episode windows). The window now
    grows with the episode (max(10, k/10) episodes from k)."""
    K, k_burn, null = 2_000_000, 10_000, 0.5
    regret = np.zeros((1, K))
    regret[:, :k_burn] = null
    end = burn_in_end(regret, null)
    assert k_burn - k_burn // 10 <= end <= k_burn + 1, end
    # what the former K/50 window measured: the first window already below half the null's
    w = K // 50
    assert regret[0, :w].mean() < 0.5 * null
    assert k_burn - k_burn // 10 <= first_below(regret, null) <= end  # below the null itself
    # the windows: lengths max(10, k // 10), increasing starts, all inside the run
    starts, means = window_means(regret[0, :1000])
    assert starts[0] == 1 and np.all(np.diff(starts) == 1)
    assert starts[-1] + max(10, starts[-1] // 10) - 1 <= 1000
    assert window_means(np.ones(3))[1].tolist() == [1.0]  # shorter than 10: the whole run


def test_the_plot_draws_the_null_agent_and_says_when_the_bound_is_vacuous():
    res = tl.run("ucbvi-hoeffding", "riverswim:S=3,H=3", episodes=50, seeds=2)
    ref = regret_reference(res)
    ax = plot_regret({"ucbvi-hoeffding": res.cumulative_regret}, **plot_keywords(ref))
    labels = [line.get_label() for line in ax.lines]
    assert NULL_LABEL in labels
    null = next(line for line in ax.lines if line.get_label() == NULL_LABEL)
    np.testing.assert_allclose(null.get_ydata(), ref.null_per_episode * np.arange(1, 51))
    assert any("not drawn: vacuous for K <= 50" in lab for lab in labels)
    assert ax.get_xscale() == "linear"

    ax = plot_regret({"x": res.cumulative_regret}, **plot_keywords(ref, loglog=True))
    assert ax.get_xscale() == ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.lines]
    assert TRIVIAL_LABEL in labels
    bound = next(line for line in ax.lines if line.get_label().startswith("azar2017-thm1"))
    np.testing.assert_allclose(bound.get_ydata(), ref.bound_curve)  # as printed, not rescaled
    assert "vacuous over the plotted range (informative from K =" in bound.get_label()


def test_an_informative_bound_is_drawn_with_its_k_marked():
    x = np.arange(1, 101)
    curve = np.sqrt(x)[None, :]
    bound = 3 * np.sqrt(x) + 20.0
    ax = plot_regret(
        {"a": curve},
        bound_curves={"toy as printed": bound},
        informative_from={"toy as printed": 30},
        references={NULL_LABEL: 1.0 * x},
    )
    marks = [line for line in ax.lines if "informative from K = 30" in line.get_label()]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [30, 30]


def test_run_plot_prints_what_the_run_shows(tmp_path, capsys):
    out = tmp_path / "r.png"
    args = ["run", "ucbvi-hoeffding", "riverswim:S=3,H=3", "-K", "60", "-B", "2"]
    assert main([*args, "--plot", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert out.stat().st_size > 0
    assert "null agent (uniform random policy)" in text
    assert "still in its burn-in at K = 60" in text
    assert "azar2017-thm1 is vacuous over the whole run" in text
    assert "rescaled" not in text
    assert main([*args, "--plot", str(tmp_path / "l.png"), "--loglog", "--no-progress"]) == 0


def test_demo_sentences_come_from_its_run(tmp_path, capsys):
    assert (
        main(
            [
                "demo",
                "--episodes",
                "60",
                "--seeds",
                "2",
                "--no-progress",
                "--out",
                str(tmp_path / "d.png"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    # at K = 60 no UCBVI has left its burn-in: the demo must not say it has
    assert "ucbvi-bernstein: not out of its burn-in at K = 60" in text
    assert "ucbvi-hoeffding: not out of its burn-in at K = 60" in text
    assert "grows like K^(1/2)" not in text and "has left its burn-in" not in text
    assert "azar2017-thm2 is vacuous over the whole run (K <= 60)" in text
    assert (tmp_path / "d.png").stat().st_size > 0


def test_claim_figures_draw_the_null_agent_and_the_bound_as_printed(tmp_path, monkeypatch):
    import theorylab.plotting as plotting

    drawn = []
    real_save = plotting.save_figure
    monkeypatch.setattr(
        plotting, "save_figure", lambda fig, path, **kw: drawn.append(fig) or real_save(fig, path)
    )
    rep = tl.validate("ucbvi-hoeffding-riverswim", plot=str(tmp_path / "c.png"))
    assert rep.figure and (tmp_path / "c.png").stat().st_size > 0
    ax = drawn[-1]
    labels = [line.get_label() for line in ax.lines]
    assert NULL_LABEL in labels and TRIVIAL_LABEL in labels
    assert ax.get_xscale() == "log"
    assert not any("rescaled" in lab for lab in labels)
