"""Multi-task linear bandits sharing a representation (``kind="multitask-bandit"``): DouExpDes
and independent per-task elimination (001#19), GFUCB (001#20)."""
