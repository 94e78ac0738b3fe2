"""radix-evict's conformance kit, run against ``learned``.

The ``radix_evict_conformance`` marker comes from radix-evict's pytest plugin:
it adds the whole suite to the class, including the check that every leaf in
the eviction heap sits under the score a fresh ``score()`` gives it (``learned``
computes its scores in lifecycle callbacks and only reads them in ``score``).
"""

from __future__ import annotations

import pytest


@pytest.mark.radix_evict_conformance("learned", config=None, public=True)
class TestLearnedDefaults:
    pass


# No warm-up, a gradient step per label, a short horizon and sharp lifetimes: the
# model changes after almost every event, so stale heap scores would show at once.
@pytest.mark.radix_evict_conformance(
    "learned",
    config={"warmup": 0, "batch": 1, "learning_rate": 2.0, "horizon": 0.1,
            "sharpness": 2.0, "max_lifetime": 16.0, "ghosts": 4},
    public=True)
class TestLearnedEagerLearner:
    pass


@pytest.mark.radix_evict_conformance("learned", config={"learn": False, "ghosts": 0},
                                     public=True)
class TestLearnedFrozenNoGhosts:
    pass
