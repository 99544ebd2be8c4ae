"""theorylab: provable RL algorithms checked against their theorems."""
__version__ = "0.1.0"
