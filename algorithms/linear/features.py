"""How a linear-MDP agent gets its feature table ``phi (S, A, d)``.

``EnvSpec`` (theorylab.agent) carries no features, so every linear agent takes a constructor
parameter ``features``, resolved by :func:`resolve_features`:

* ``None``: the EnvSpec's ``features`` if it has such a field (a proposed extension of
  ``theorylab.agent.EnvSpec``; read with ``getattr`` so that this module works before and after
  it), otherwise one-hot features;
* ``"onehot"``: tabular features ``phi(s, a) = e_{s*A+a}`` (d = S*A), built from the sizes in the
  EnvSpec -- with them LSVI-UCB is a tabular algorithm (its Gram matrix is the count matrix);
* an array ``(S, A, d)`` (``theorylab.run("lsvi-ucb", mdp, ..., features=mdp.phi)`` passes it
  through ``**params``);
* a string naming an MDP family spec (``"linear-simplex:S=10,A=4,d=5,seed=3"``): the MDP is built
  and its public ``features`` are used. Inside an algorithm spec, where ``,`` separates the
  algorithm's own parameters, write ``;`` instead of ``:`` and ``,``:
  ``lsvi-ucb:c=0.1,features=linear-simplex;S=10;A=4;d=5;seed=3``. A
  :class:`~theorylab.mdps.lowrank.LowRankMDP` has no public features and is refused.

The table is validated: shape ``(env.S, env.A, d)``, finite, ``||phi(s, a)||_2 <= 1``.
"""

from __future__ import annotations

import numpy as np

from theorylab.agent import EnvSpec


class FeatureError(ValueError):
    """A feature table does not fit the environment (shape, values, or it is hidden)."""


def one_hot_features(S: int, A: int) -> np.ndarray:
    """``(S, A, S*A)``: ``phi(s, a) = e_{s*A + a}``."""
    return np.eye(S * A).reshape(S, A, S * A)


def mdp_spec(text: str) -> str:
    """``"linear-simplex;S=10;d=5"`` -> ``"linear-simplex:S=10,d=5"`` (``;`` written for ``:``
    and ``,`` inside another spec); a spec with ``:`` and ``,`` is returned unchanged."""
    if ";" not in text:
        return text
    head, _, rest = text.replace(":", ";").partition(";")
    return f"{head}:{rest.replace(';', ',')}"


def resolve_features(env: EnvSpec, features, *, agent: str = "agent") -> np.ndarray:
    """The feature table ``(S, A, d)`` float64 (read-only) for ``env`` (module docstring)."""
    if features is None:
        features = getattr(env, "features", None)
    if features is None or (isinstance(features, str) and features.lower() == "onehot"):
        phi = one_hot_features(env.S, env.A)
    elif isinstance(features, str):
        from theorylab.mdps import make

        mdp = make(mdp_spec(features))
        phi = getattr(mdp, "features", None)
        if phi is None:
            raise FeatureError(
                f"{agent}: the MDP {features!r} exposes no features (a low-rank MDP hides them; "
                "give its candidate class to rep-ucb instead)"
            )
    else:
        phi = features
    phi = np.array(phi, dtype=np.float64)
    if phi.ndim != 3 or phi.shape[:2] != (env.S, env.A) or phi.shape[2] < 1:
        raise FeatureError(
            f"{agent}: features must have shape (S, A, d) = ({env.S}, {env.A}, d), got {phi.shape}"
        )
    if not np.all(np.isfinite(phi)):
        s, a, i = (int(j) for j in np.argwhere(~np.isfinite(phi))[0])
        raise FeatureError(f"{agent}: features are not finite at (s={s}, a={a}, i={i})")
    norms = np.linalg.norm(phi, axis=-1)  # (S, A)
    if norms.max() > 1.0 + 1e-9:
        s, a = (int(j) for j in np.argwhere(norms > 1.0 + 1e-9)[0])
        raise FeatureError(
            f"{agent}: ||phi(s={s}, a={a})||_2 = {norms[s, a]:.6g} > 1 (linear-MDP features must "
            "have norm at most 1)"
        )
    phi.setflags(write=False)
    return phi
