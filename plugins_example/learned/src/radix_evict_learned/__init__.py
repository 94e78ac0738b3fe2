"""radix-evict-learned: a learned eviction policy for radix-evict.

``learned`` predicts each evictable leaf's reuse with an online logistic
regression trained during the replay from outcomes already seen, and evicts
the least likely first (:mod:`radix_evict_learned.policy`; the model and its
weights file: :mod:`radix_evict_learned.model`). Importing this package
registers nothing: radix-evict finds the plugin through the
``radix_evict.policies`` entry point ``learned`` when it first needs a policy.
"""

from __future__ import annotations

from .model import FEATURES, FORMAT, VERSION, ReuseModel, WeightsFileError
from .policy import LearnedConfig, LearnedPolicy

__all__ = [
    "FEATURES",
    "FORMAT",
    "VERSION",
    "LearnedConfig",
    "LearnedPolicy",
    "ReuseModel",
    "WeightsFileError",
]
__version__ = "0.1.0"
