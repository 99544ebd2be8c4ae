"""Runners, one per kind of algorithm (``theorylab.algorithms.registry.KINDS``), called by
:func:`theorylab.run` (top floor: may import anything below it). ``docs/architecture.md`` says
how a new kind adds one."""
