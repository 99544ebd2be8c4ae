"""Known-bug mutations of C-RLFT (seed row 002-004#F7, ``algorithms/deep/c_rlft.py``) and P3O
(002-004#E3, ``algorithms/deep/p3o.py``); appended to ``mutations.MUTATIONS``:

* ``c-rlft-no-class-token``: the class token dropped, every example (and every inference) read
  under the first class's slot -- the policy is fitted to the r_c-weighted mixture of the sources;
* ``c-rlft-token-mean``: the log-likelihood of a response averaged over its tokens instead of
  summed, which weights a response by 1/|y| (invisible when every response has one length);
* ``p3o-single-response-advantage``: P3O's pairwise advantage r_i - r_j replaced by the
  value-free single-response advantage r_i (trajectory-wise PPO), which a prompt-dependent reward
  shift c(x) moves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from theorylab.validations.controls import Control, register_control
from theorylab.validations.controls import patched as _patched


@contextlib.contextmanager
def c_rlft_no_class_token(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import c_rlft

    def no_class(x, c, n_classes):
        return x * n_classes  # the bug: the class token ignored

    with _patched(c_rlft, "class_prompt", no_class):
        yield


@contextlib.contextmanager
def c_rlft_token_mean(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import c_rlft

    original = c_rlft.masked_sum

    def token_mean(x, mask):
        return original(x, mask) / mask.sum(dim=1)  # the bug: / |y|

    with _patched(c_rlft, "masked_sum", token_mean):
        yield


@contextlib.contextmanager
def p3o_single_response_advantage(claim=None) -> Iterator[None]:
    from theorylab.algorithms.deep import p3o

    original = p3o.pairwise_advantages

    def single(rewards, group):
        _, pairs = original(rewards, group)
        return rewards[:, None] * pairs, pairs  # the bug: A_ij = r_i, no partner subtracted

    with _patched(p3o, "pairwise_advantages", single):
        yield


MUTATIONS = tuple(
    register_control(Control(name, "mutation", description, mutation))
    for name, description, mutation in (
        (
            "c-rlft-no-class-token",
            "C-RLFT's class token dropped: one policy fitted to the weighted mixture of sources",
            c_rlft_no_class_token,
        ),
        (
            "c-rlft-token-mean",
            "C-RLFT's response log-likelihood averaged over its tokens instead of summed",
            c_rlft_token_mean,
        ),
        (
            "p3o-single-response-advantage",
            "P3O's pairwise advantage r_i - r_j replaced by the single-response r_i (PPO)",
            p3o_single_response_advantage,
        ),
    )
)
