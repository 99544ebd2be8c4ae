"""Offline algorithms by name: ``fit("vi-lcb:c_L=0.5", dataset)``, ``list_offline_algorithms()``.

Each entry is a function ``fit_x(dataset, **params) -> OfflineResult``; parameters can be given in
the name string (typed like the function's defaults, ``theorylab.registry``) or as keywords
(arrays such as ``phi=`` only as keywords). The registered names, the setting each needs and the
bound card each carries:

=========================== ============== ===================================================
name                        data           bound card (``theorylab.bounds``)
=========================== ============== ===================================================
vi-lcb                      discounted     vi-lcb-upper (lower: vi-lcb-lower[-near-expert])
pessimistic-vi-hoeffding    finite horizon (none registered)
pessimistic-vi-bernstein    finite horizon li2022-offline-finite-horizon
pevi                        finite horizon pevi-linear, pevi-well-explored
pevi-tabular                finite horizon pevi-linear (one-hot features, d = S A)
vw-pevi                     finite horizon (none registered; PNLSVI, [M])
naive-vi                    both           none (the contrast that fails without pessimism)
behaviour-cloning           both           none (imitation contrast)
=========================== ============== ===================================================
"""

from __future__ import annotations

from theorylab.registry import Registry, parse_spec

OFFLINE_ALGORITHMS = Registry("offline algorithm")
register = OFFLINE_ALGORITHMS.register

BOUND_CARDS: dict[str, tuple[str, ...]] = {
    "vi-lcb": ("vi-lcb-upper", "vi-lcb-lower", "vi-lcb-lower-near-expert"),
    "pessimistic-vi-bernstein": ("li2022-offline-finite-horizon",),
    "pevi": ("pevi-linear", "pevi-well-explored"),
    "pevi-tabular": ("pevi-linear",),
}
DISCOUNTED_ONLY = ("vi-lcb",)
FINITE_HORIZON_ONLY = (
    "pessimistic-vi-hoeffding",
    "pessimistic-vi-bernstein",
    "pevi",
    "pevi-tabular",
    "vw-pevi",
)
USES_FEATURES = ("pevi", "vw-pevi")


def _load() -> None:
    import theorylab.algorithms.offline.registrations  # noqa: F401


def fit(name: str, dataset, **params):
    """Fit the registered offline algorithm ``name`` (a name or ``"name:k=v,..."`` spec) to
    ``dataset`` and return its :class:`~theorylab.algorithms.offline.result.OfflineResult`."""
    _load()
    return OFFLINE_ALGORITHMS.make(name, dataset=dataset, **params)


def offline_parameters(name: str) -> dict:
    """User-settable parameters and defaults of a registered offline algorithm."""
    _load()
    return {k: v for k, v in OFFLINE_ALGORITHMS.parameters(name).items() if k != "dataset"}


def list_offline_algorithms() -> list[str]:
    _load()
    return OFFLINE_ALGORITHMS.names()


def algorithm_name(spec: str) -> str:
    """The registered name of a spec string (``"vi-lcb:c_L=0.5"`` -> ``"vi-lcb"``)."""
    return parse_spec(spec)[0]
