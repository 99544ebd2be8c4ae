"""Known-bug mutations of LaSeR (``validations/claims/self_rewarding.py``, issue 28); appended to
``mutations.MUTATIONS``:

* ``laser-last-column``: the pre-specified token's log-probability read at the padded batch's last
  column instead of after each response's last token (EOS included); on a tree whose responses
  all have L tokens the two coincide, on ``tokentree-eos`` a short response reads a padding
  position;
* ``laser-unscaled``: the self-reward log pi(z | x, y) - c_ref without the KL coefficient beta_v.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def laser_last_column(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import laser

    def last_column(values, mask):
        return values[:, -1]  # the bug: the padded batch's last column

    with _patched(laser, "last_position", last_column):
        yield


@contextlib.contextmanager
def laser_unscaled(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import laser

    def unscaled(z_last, ref_last, beta_v):
        return z_last - ref_last  # the bug: no beta_v

    with _patched(laser, "self_reward", unscaled):
        yield


MUTATIONS = tuple(
    register_control(Control(name, "mutation", description, mutation))
    for name, description, mutation in (
        (
            "laser-last-column",
            "LaSeR's z log-probability read at the padded batch's last column, not after the "
            "response's last token",
            laser_last_column,
        ),
        (
            "laser-unscaled",
            "LaSeR's self-reward without the KL coefficient beta_v",
            laser_unscaled,
        ),
    )
)
