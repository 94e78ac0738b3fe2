"""radix-evict's conformance kit, run against each of this package's policies.

The ``radix_evict_conformance`` marker comes from radix-evict's pytest plugin:
it adds the whole suite to the class, including the check that every leaf in
the eviction heap sits under the score a fresh ``score()`` gives it (the
stateful policies here keep their scores in lifecycle callbacks).
"""

from __future__ import annotations

import pytest


@pytest.mark.radix_evict_conformance("arc", config=None, public=True)
class TestARCDefaults:
    pass


@pytest.mark.radix_evict_conformance(
    "arc", config={"ghost_capacity": 0.25, "initial_target": 0.5}, public=True)
class TestARCSmallDirectoryHalfTarget:
    pass


@pytest.mark.radix_evict_conformance("s3fifo", config=None, public=True)
class TestS3FIFODefaults:
    pass


@pytest.mark.radix_evict_conformance(
    "s3fifo",
    config={"small_fraction": 0.3, "ghost_fraction": 0.1, "move_to_main": 2, "max_freq": 1},
    public=True)
class TestS3FIFOLargeSmallQueueTwoHits:
    pass


@pytest.mark.radix_evict_conformance("sieve", config=None, public=True)
class TestSieveDefaults:
    pass


@pytest.mark.radix_evict_conformance("sieve", config={"max_visits": 3}, public=True)
class TestSieveCounter:
    pass


@pytest.mark.radix_evict_conformance("wtinylfu", config=None, public=True)
class TestWTinyLFUDefaults:
    pass


@pytest.mark.radix_evict_conformance(
    "wtinylfu",
    config={"window_fraction": 0.2, "protected_fraction": 0.5, "sketch_width": 16,
            "sketch_depth": 2, "reset_period": 5},
    public=True)
class TestWTinyLFUSmallSketchFastReset:
    pass
