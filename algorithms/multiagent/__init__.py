"""Global decision making with many local agents (``kind="local-agents"``): a global agent acts
on a system of n exchangeable local agents (``theorylab.mdps.local_agents``); the runner
``theorylab.runners.local_agents`` scores the deployed policy exactly on the n-agent system.
Registered:

* ``subsample-q`` (:mod:`.subsample_q`): SUBSAMPLE-Q (Anand & Qu 2024; seed row 001#3).
"""

from theorylab.algorithms.multiagent import subsample_q  # noqa: F401
