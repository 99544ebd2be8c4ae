"""What every whole-run compiled loop shares (``docs/long-runs.md``): the curves a segment
returns, the memory cap on a segment, the true model's positive entries, the PCG64 states handed
to and from a kernel, and :class:`SegmentedLoop`, the segment / checkpoint shell that the
tabular (:mod:`~theorylab.algorithms.online.whole_run`), LinUCB, LSVI-UCB and CVaR-UCBVI loops
fill with their own kernel call.

A loop is a lower floor than its driver: the driver (``whole_run.run_whole``,
``whole_run.make_compiled_loop``) imports the loops, and the loops import only this module and
their kernels.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

CURVES = ("regret", "returns", "estimates")
MAX_SEGMENT_BYTES = 256 * 2**20  # one segment's curves (3 x B x n float64)
_MASK64 = (1 << 64) - 1


def positive_entries(model) -> tuple[np.ndarray, ...]:
    """The true model's CSR view and sampler restricted to its positive entries:
    ``(indptr, indices, data, cum, last)`` (int64 positions, float64 values).

    A dense model's view stores all S entries of a row; dropping the zeros changes no number:
    a left-to-right sum skips only ``+ 0.0 * V`` terms, the within-row cumulative sums at the
    kept entries are the same values, and the sampled entry (the first with cumulative sum > u,
    clamped to the last positive one) is never a zero entry. Exact regret then costs
    O(H S nnz_row) per seed instead of O(H S^2) (RiverSwim S = 100: 3 entries a row, not 100).
    """
    indptr, indices, data = model.csr()
    cum, last, _, _ = model.sampler()
    keep = data > 0
    new_pos = np.cumsum(keep) - 1  # position of each kept entry in the compressed arrays
    counts = np.add.reduceat(keep.astype(np.int64), indptr[:-1]) if data.size else keep[:0]
    counts = np.where(np.diff(indptr) > 0, counts, 0)  # reduceat repeats on empty rows
    new_indptr = np.zeros(indptr.size, np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    return (
        new_indptr,
        np.ascontiguousarray(indices[keep], dtype=np.int64),
        np.ascontiguousarray(data[keep]),
        np.ascontiguousarray(cum[keep]),
        new_pos[last].astype(np.int64),
    )


def true_model_args(mdp, v_star: float) -> tuple:
    """What a tabular kernel reads of the true model: its positive entries and sampler
    (:func:`positive_entries`), the number of transition stages, R ``(n_R, S, A)``, whether
    rewards are Bernoulli, mu0 ``(S,)`` with its sampler (cdf, last positive state), and
    ``v_star`` = V*_1(mu0)."""
    from theorylab.backends import transition_model

    model = transition_model(mdp)
    indptr, indices, data, cum, last = positive_entries(model)
    _, _, mu0_cdf, last_mu0 = model.sampler()
    return (
        indptr, indices, data, cum, last, int(model.n_stages),
        np.ascontiguousarray(model.R, dtype=np.float64), bool(model.bernoulli),
        np.ascontiguousarray(model.mu0, dtype=np.float64), mu0_cdf, int(last_mu0),
        float(v_star),
    )  # fmt: skip


def pcg64_states(rngs: Sequence[np.random.Generator]) -> np.ndarray:
    """``(B, 4)`` uint64: each generator's PCG64 state (hi, lo) and increment (hi, lo), for
    :func:`theorylab.kernels.pcg64.pcg64_random`."""
    out = np.empty((len(rngs), 4), np.uint64)
    for b, g in enumerate(rngs):
        st = g.bit_generator.state
        if st.get("bit_generator") != "PCG64":
            raise ValueError(
                f"the whole-run kernel draws numpy's PCG64 stream; seed {b}'s generator is "
                f"{st.get('bit_generator')!r} (theorylab.seeding makes PCG64 generators)"
            )
        s, inc = st["state"]["state"], st["state"]["inc"]
        out[b] = (s >> 64, s & _MASK64, inc >> 64, inc & _MASK64)
    return out


def set_pcg64_states(rngs: Sequence[np.random.Generator], states: np.ndarray) -> None:
    """Hand the kernel's advanced PCG64 states ``(B, 4)`` back to the generators."""
    for g, (hi, lo, inc_hi, inc_lo) in zip(rngs, states.tolist(), strict=True):
        st = g.bit_generator.state
        st["state"] = {"state": (hi << 64) | lo, "inc": (inc_hi << 64) | inc_lo}
        g.bit_generator.state = st


class SegmentedLoop:
    """The learner state of B seeds, advanced a segment of episodes at a time by a kernel.

    A subclass sets ``B``, ``env_rngs`` (one numpy PCG64 Generator per seed), ``state`` (a dict
    of arrays, the learner state a checkpoint stores), ``STATE_FIELDS`` (its keys, in order),
    ``CARRIED`` (the names of the other array attributes the kernel carries from one episode to
    the next: the incremental plan's bonuses, the last evaluated policy's values and from which
    step to re-evaluate them, ...) and ``episodes_done``, and implements :meth:`_run_segment`.

    A checkpoint holds all of them, so a restored loop is the saved loop array for array and a
    resumed run is the uninterrupted run bit for bit (``tests/test_resume_exact.py``). Leaving a
    carried array out is the bug this rule fixes: UCBVI-CH's incremental plan recomputes the
    bonus of the visited pairs only, so a restore that left the bonuses at zero planned with
    zero bonuses everywhere else and every seed departed from the uninterrupted run right
    after the resume point.
    """

    STATE_FIELDS: tuple[str, ...] = ()
    CARRIED: tuple[str, ...] = ()
    B: int
    env_rngs: list
    state: dict[str, np.ndarray]
    episodes_done: int

    def segment_length(self, requested: int) -> int:
        """Episodes per kernel call: ``requested``, capped so that one segment's curves stay
        under ``MAX_SEGMENT_BYTES``."""
        per_episode = 8 * self.B * len(CURVES)
        return max(1, min(int(requested), MAX_SEGMENT_BYTES // per_episode))

    def advance(self, n: int) -> dict[str, np.ndarray]:
        """Run the next ``n`` episodes of every seed; returns ``regret``, ``returns`` and
        ``estimates``, each ``(B, n)``."""
        rng = pcg64_states(self.env_rngs)  # (B, 4): advanced in the kernel, handed back below
        out = {name: np.empty((self.B, n)) for name in CURVES}
        self._run_segment(rng, out)
        set_pcg64_states(self.env_rngs, rng)
        self.episodes_done += n
        return out

    def _run_segment(self, rng: np.ndarray, out: dict[str, np.ndarray]) -> None:
        """The kernel call: advance ``state`` and the ``(B, 4)`` PCG64 states ``rng`` by
        ``out``'s ``n`` episodes, filling the three ``(B, n)`` curves of ``out``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ checkpoints
    def snapshot(self) -> dict[str, np.ndarray]:
        """Arrays that restore this loop: the learner state, the carried arrays (``carried_``
        + name), episodes done and the generators' states (JSON in a 0-d string array)."""
        rng_states = [g.bit_generator.state for g in self.env_rngs]
        return {
            **{name: self.state[name] for name in self.STATE_FIELDS},
            **{f"carried_{name}": getattr(self, name) for name in self.CARRIED},
            "episodes_done": np.array(self.episodes_done),
            "rng_states": np.array(json.dumps(rng_states)),
        }

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """Load a :meth:`snapshot` (same shapes), carried arrays and generators included."""
        targets = [(name, self.state[name]) for name in self.STATE_FIELDS]
        targets += [(f"carried_{name}", getattr(self, name)) for name in self.CARRIED]
        for key, target in targets:
            if key not in arrays or arrays[key].shape != target.shape:
                got = arrays[key].shape if key in arrays else "nothing"
                raise ValueError(
                    f"checkpoint array {key!r}: found {got}, this run needs {target.shape}"
                )
        for key, target in targets:
            target[...] = arrays[key]
        self.episodes_done = int(arrays["episodes_done"])
        for g, state in zip(self.env_rngs, json.loads(str(arrays["rng_states"])), strict=True):
            g.bit_generator.state = state
