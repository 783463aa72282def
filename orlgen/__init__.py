"""orlgen: reviewable, typed TRL adapters generated from Open Reward Standard environments."""

__version__ = "0.3.0"
