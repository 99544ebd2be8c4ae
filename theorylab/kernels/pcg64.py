"""numpy's PCG64 stream inside numba kernels: the one implementation that the whole-run online
loops (``algorithms/online/whole_run_*.py``) and the compiled offline sweep
(``algorithms/offline/sweep_kernel.py``) step, so that a compiled run draws exactly the doubles
the Python loop's ``Generator.random`` draws (``docs/long-runs.md``, "The same numbers").

PCG64 is O'Neill's pcg_setseq_128_xsl_rr_64: the 128-bit LCG state advances as
state <- state * M + inc (mod 2^128), the output is rotr64(hi ^ lo, hi >> 58), and a double is
(output >> 11) * 2^-53. The 128-bit step is one LLVM i128 multiply-add (about 3 ns a double
here, against 8 ns with four 32-bit partial products). State: uint64 ``(4,)`` = state hi, lo,
increment hi, lo, as :func:`theorylab.algorithms.online.segmented_loop.pcg64_states` reads it
off a ``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

_PCG_MULTIPLIER = (0x2360ED051FC65DA4 << 64) | 0x4385DF649FCCF645


@intrinsic
def _lcg128_step(typingctx, hi, lo, inc_hi, inc_lo):
    """``(hi, lo)`` of ``(hi:lo) * M + (inc_hi:inc_lo) mod 2^128``."""
    sig = types.UniTuple(types.uint64, 2)(types.uint64, types.uint64, types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i128, i64 = ir.IntType(128), ir.IntType(64)

        def join(h, low):
            high = builder.shl(builder.zext(h, i128), ir.Constant(i128, 64))
            return builder.or_(high, builder.zext(low, i128))

        state = builder.mul(join(args[0], args[1]), ir.Constant(i128, _PCG_MULTIPLIER))
        state = builder.add(state, join(args[2], args[3]))
        new_lo = builder.trunc(state, i64)
        new_hi = builder.trunc(builder.lshr(state, ir.Constant(i128, 64)), i64)
        return context.make_tuple(builder, signature.return_type, (new_hi, new_lo))

    return sig, codegen


@njit(cache=True, error_model="numpy", inline="always")
def pcg64_random(st):
    """The next ``Generator.random()`` double of the PCG64 state ``st`` (uint64 ``(4,)``),
    advanced in place."""
    hi, lo = _lcg128_step(st[0], st[1], st[2], st[3])
    st[0] = hi
    st[1] = lo
    x = hi ^ lo
    rot = hi >> np.uint64(58)
    out = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
    return np.float64(out >> np.uint64(11)) * (1.0 / 9007199254740992.0)
