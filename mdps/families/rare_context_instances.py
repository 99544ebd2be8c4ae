"""The rare-context comparison bandit of active context selection as a registered family
(``theorylab.mdps.rare_context``): ``rare-context:S=8,A=64,R=1,R_rare=0.5,norm=0.8``."""

from __future__ import annotations

from theorylab.mdps.rare_context import rare_context_bandit
from theorylab.mdps.registry import register

register("rare-context")(rare_context_bandit)
