"""The deep trainer: exact tables from a transformer, sampling, training loop, result, errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from theorylab.algorithms.deep.masking import InvalidBatchError  # noqa: E402
from theorylab.algorithms.deep.models import (  # noqa: E402
    DeviceUnavailableError,
    ModelSpecError,
    TinyTransformer,
    make_model,
)
from theorylab.algorithms.deep.trainer import (  # noqa: E402
    preference_pairs,
    prefix_inputs,
    response_logp,
    sample_responses,
    sequence_ids,
    sequence_table,
    train,
    with_reference,
)
from theorylab.errors import UnknownNameError  # noqa: E402
from theorylab.mdps.registry import make as make_task  # noqa: E402
from theorylab.results import Result, TrainingResult  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    task = make_task("tokentree:V=3,L=3,prompts=2")
    model = make_model("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", 5, seed=1).eval()
    return task, model


def test_sequence_table_matches_scoring_every_response(setup):
    """The prefix-tree table (one pass over the V^(L-1) prefixes) equals scoring every full
    response with a forward pass of its own, and is a distribution per prompt."""
    task, model = setup
    P, Y = task.n_prompts, task.n_responses
    with torch.no_grad():
        table = sequence_table(model, task, prefix_inputs(task, "cpu"), torch.float64)
        x = torch.arange(P).repeat_interleave(Y)
        ids = sequence_ids(task, x, torch.as_tensor(task.tokens).repeat(P, 1))
        direct = response_logp(model, ids, task.V).sum(-1).reshape(P, Y)
    assert torch.allclose(table.float(), direct, atol=1e-5)
    assert torch.allclose(
        torch.logsumexp(table, 1), torch.zeros(P, dtype=torch.float64), atol=1e-12
    )


def test_sampling_follows_the_table(setup):
    task, model = setup
    gen = torch.Generator().manual_seed(0)
    n = 6000
    ids = sample_responses(model, task, torch.zeros(n, dtype=torch.long), gen)
    assert ids.shape == (n, task.L + 1) and bool((ids[:, 0] == task.V).all())
    y = (ids[:, 1:].numpy() * task.V ** np.arange(task.L - 1, -1, -1)).sum(1)
    freq = np.bincount(y, minlength=task.n_responses) / n
    with torch.no_grad():
        p = sequence_table(model, task, prefix_inputs(task, "cpu"), torch.float64)[0].exp().numpy()
    # TV of an n-sample empirical law: E TV <= sum_y sqrt(p(1-p)/n) / 2 ~ 0.03 here
    assert 0.5 * np.abs(freq - p).sum() < 0.06


def test_preference_pairs_are_a_distribution_with_bradley_terry_labels(setup):
    task, _ = setup
    ref = with_reference(task, np.log(task.ref_cond)).ref_logprobs
    x, yw, yl, w = preference_pairs(task, ref)
    assert np.isclose(w.sum(), 1.0)
    r = task.mean_reward
    i = np.flatnonzero((r[x, yw] == 1) & (r[x, yl] == 0))[0]
    j = np.flatnonzero((x == x[i]) & (yw == yl[i]) & (yl == yw[i]))[0]
    assert np.isclose(w[i] / w[j], np.exp(1.0))  # sigmoid(1) / sigmoid(-1) = e


@pytest.mark.parametrize("loss", ["grpo", "dr-grpo", "rloo", "cvar-grpo", "ppo-clip", "dpo",
                                  "ipo", "rpo", "vpo", "xpo", "chipo"])  # fmt: skip
def test_every_policy_loss_trains_a_few_steps(loss):
    # graded rewards: CVaR-GRPO's lower-tail advantage is 0 on most 0/1 groups
    task = "tokentree:V=3,L=2,reward=graded"
    res = train("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", task, loss, steps=3, eval_every=1,
                target_beta=0.1)  # fmt: skip
    assert res.accuracy.shape == (1, 4) and res.loss.shape == (1, 3)
    assert np.isfinite(res.loss).all() and np.isfinite(res.kl_optimum).all()
    assert res.kl_ref[0, 0] == 0.0 and res.kl_ref[0, -1] > 1e-8  # the model moved


def test_zero_learning_rate_leaves_every_exact_metric_unchanged():
    res = train("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", "tokentree:V=3,L=2", "grpo",
                steps=4, eval_every=2, lr=0.0)  # fmt: skip
    for name in ("accuracy", "kl_optimum", "kl_ref", "pass_at_k"):
        arr = getattr(res, name)
        assert np.all(arr == arr[:, :1]), name
    assert np.all(res.kl_ref == 0.0)  # the policy is its own reference


def test_sampled_dpo_and_result_protocol(tmp_path):
    res = train("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", "tokentree:V=3,L=2", "dpo",
                steps=4, eval_every=2, preference="sampled", pairs_per_prompt=4,
                seeds=2)  # fmt: skip
    assert res.accuracy.shape == (2, 3) and list(res.steps) == [0, 2, 4]
    assert res.config["family"] == "preference" and res.config["seeds"] == [0, 1]
    res.save(tmp_path / "run")
    back = Result.load(tmp_path / "run")
    assert isinstance(back, TrainingResult)
    np.testing.assert_array_equal(back.kl_optimum, res.kl_optimum)
    frame = res.to_frame()
    assert len(frame["accuracy"]) == 6
    res.plot(tmp_path / "acc.png")
    res.plot(tmp_path / "kl.png", metric="kl_optimum")
    assert (tmp_path / "acc.png").stat().st_size > 0
    s = res.summary()
    assert s["seeds"] == 2 and 0 <= s["accuracy_final"] <= 1


def test_seeds_are_reproducible_and_independent():
    kw = dict(steps=2, eval_every=2, seeds=[0, 1])
    a = train("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", "tokentree:V=3,L=2", "grpo", **kw)
    b = train("tiny:d_model=32,n_layer=1,n_head=2,d_ff=64", "tokentree:V=3,L=2", "grpo",
              steps=2, eval_every=2, seeds=[1])  # fmt: skip
    np.testing.assert_array_equal(a.accuracy[1], b.accuracy[0])
    assert a.accuracy[0, 0] != a.accuracy[1, 0]


def test_hf_model_trains_through_the_same_loop():
    pytest.importorskip("transformers")
    res = train("gpt2-config:n_layer=1,n_embd=32,n_head=2", "tokentree:V=3,L=2", "grpo", steps=2,
                eval_every=1)  # fmt: skip
    assert res.accuracy.shape == (1, 3) and not np.allclose(res.accuracy, res.accuracy[0, 0])


def test_bad_input():
    tt = "tokentree:V=4,L=2,prompts=4"
    with pytest.raises(ModelSpecError, match=r"has 6 tokens but the task \(4 symbol tokens \+ 4 "):
        train(TinyTransformer(6), tt, "grpo", steps=1)
    with pytest.raises(UnknownNameError, match="unknown loss 'gpro'; available: .*grpo"):
        train("tiny", tt, "gpro", steps=1)
    with pytest.raises(InvalidBatchError, match="'kl-k3' is not a policy loss"):
        train("tiny", tt, "kl-k3", steps=1)
    with pytest.raises(ValueError, match="no beta > 0 to define pi"):
        train("tiny", tt, "dr-grpo", steps=1)
    with pytest.raises(ValueError, match="group_size must be an integer >= 2"):
        train("tiny", tt, "grpo", steps=1, group_size=1)
    if not torch.cuda.is_available():
        with pytest.raises(DeviceUnavailableError, match="CUDA is not available"):
            train("tiny", tt, "grpo", steps=1, device="cuda")


def test_cli_train(tmp_path, capsys):
    from theorylab.cli import main

    png, saved = tmp_path / "curve.png", tmp_path / "run"
    model = "tiny:d_model=32,n_layer=1,n_head=2"
    args = ["train", "grpo", "tokentree:V=3,L=2", "--model", model, "--steps", "2"]
    args += ["--eval-every", "1", "--plot", str(png), "--save", str(saved), "--no-progress"]
    rc = main(args)
    assert rc == 0 and png.stat().st_size > 0
    assert "accuracy (start -> end)" in capsys.readouterr().out
    assert Result.load(saved).accuracy.shape == (1, 3)
    assert main(["train", "gpro", "tokentree:V=3,L=2", "--steps", "1"]) == 2
    assert "unknown loss 'gpro'; available:" in capsys.readouterr().err


def test_tl_run_trains_a_registered_transformer_entry():
    import theorylab as tl

    res = tl.run("dpo-transformer:beta=0.2", "tokentree:V=3,L=2", steps=2, eval_every=1,
                 model="tiny:d_model=32,n_layer=1,n_head=2", seeds=2)  # fmt: skip
    assert isinstance(res, TrainingResult) and res.accuracy.shape == (2, 3)
    assert res.config["loss"] == "dpo:beta=0.2" and res.config["target_beta"] == 0.2
    with pytest.raises(ValueError, match="grpo-transformer .* has no parameter 'gamma'"):
        tl.run("grpo-transformer", "tokentree:V=3,L=2", steps=2, gamma=3)
    with pytest.raises(ValueError, match="needs a budget: steps"):
        tl.run("grpo-transformer", "tokentree:V=3,L=2")
    with pytest.raises(ValueError, match="runs on a token-tree task"):
        tl.run("grpo-transformer", "riverswim:S=4,H=5", steps=2)


@pytest.mark.gpu
def test_trainer_runs_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    res = train("tiny:d_model=32,n_layer=1,n_head=2", "tokentree:V=3,L=2", "grpo", steps=2,
                eval_every=1, device="cuda")  # fmt: skip
    assert res.config["params"]["device"].startswith("cuda") and res.accuracy.shape == (1, 3)


@pytest.fixture()
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: one thread is much faster on a loaded machine
    yield
    torch.set_num_threads(threads)


def _preference_setup():
    """A task, a tiny model moved away from its (initial-model) reference, and the exact
    preference tables."""
    import copy

    task = make_task("tokentree:V=4,L=2,prompts=2,reward=graded")
    policy = make_model("tiny", task.V + task.n_prompts, max_len=task.L + 1, seed=0)
    policy.eval()
    reference = copy.deepcopy(policy).requires_grad_(False)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.5 * torch.randn(p.shape, generator=gen))
    inputs = prefix_inputs(task, "cpu")
    with torch.no_grad():
        ref_seq_t = sequence_table(reference, task, inputs, torch.float64)
    return task, policy, reference, inputs, ref_seq_t


@pytest.mark.parametrize("loss", ["xpo:beta=0.1,alpha=1.0", "vpo:beta=0.1,alpha=1.0,sign=1"])
def test_sampled_preference_loss_estimates_the_exact_objective(loss, one_thread):
    """The mean of XPO's / VPO's sampled-mode loss over 60 batches (16 pairs per prompt) matches
    the exact mode's loss within 4 standard errors: the two modes optimise one objective."""
    from theorylab.algorithms.deep import trainer as tr
    from theorylab.algorithms.deep.registry import make_loss

    task, policy, reference, inputs, ref_seq_t = _preference_setup()
    ref_seq = ref_seq_t.numpy()
    pairs = [torch.as_tensor(a) for a in preference_pairs(task, ref_seq)]
    fn = make_loss(loss)
    rng = np.random.default_rng(1)
    with torch.no_grad():
        exact = float(tr.call_loss(fn, tr._exact_pairs(policy, task, inputs, pairs, ref_seq_t)))
        vals = np.array(
            [
                float(tr.call_loss(fn, tr._sampled_pairs(policy, reference, task, ref_seq, 16,
                                                         rng, "cpu")))
                for _ in range(60)
            ]
        )  # fmt: skip
    z = abs(vals.mean() - exact) / (vals.std(ddof=1) / np.sqrt(len(vals)))
    assert z < 4.0, (vals.mean(), exact, z)


def test_sampled_reference_responses_come_from_pi_ref(monkeypatch, one_thread):
    """The responses whose log-probabilities the sampled mode passes as VPO's calibration and
    XPO's reference samples are distributed as pi_ref (Xie et al. 2025, Alg. 1: y~ ~ pi_ref;
    Cen et al. 2025 with pi_cal = pi_ref), as the exact mode weights them: a chi-square test of
    8000 samples per prompt does not reject pi_ref (p > 1e-3), while the same test rejects it
    for the chosen responses (what the sampled mode used before: p < 1e-6)."""
    from scipy.stats import chisquare

    from theorylab.algorithms.deep import trainer as tr

    task, policy, reference, _, ref_seq_t = _preference_setup()
    ref_seq = ref_seq_t.numpy()
    seen = []
    original = tr.sequence_ids

    def record(task_, prompts, responses):
        seen.append((prompts.numpy().copy(), tr.response_index(task_, responses)))
        return original(task_, prompts, responses)

    monkeypatch.setattr(tr, "sequence_ids", record)
    rng = np.random.default_rng(2)
    n = 8000
    with torch.no_grad():
        tr._sampled_pairs(policy, reference, task, ref_seq, n, rng, "cpu")
    ((x, y),) = seen
    m = task.n_prompts * n
    blocks = {"chosen": (x[:m], y[:m]), "ref samples": (x[2 * m :], y[2 * m :])}
    p_values = {}
    for name, (xb, yb) in blocks.items():
        p_values[name] = min(
            chisquare(
                np.bincount(yb[xb == k], minlength=task.n_responses),
                n * np.exp(ref_seq[k]) / np.exp(ref_seq[k]).sum(),
            ).pvalue
            for k in range(task.n_prompts)
        )
    assert p_values["ref samples"] > 1e-3, p_values
    assert p_values["chosen"] < 1e-6, p_values
