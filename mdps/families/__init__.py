"""MDP families with known structure; importing this package registers them all."""

from theorylab.mdps.families import riverswim  # noqa: F401
