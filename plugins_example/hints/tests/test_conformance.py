"""radix-evict's conformance kit, run against this package's policies.

The kit checks, among the rest, that every leaf in the eviction heap sits under
the score a fresh ``score()`` gives it: both policies fix scores in callbacks.
"""

from __future__ import annotations

import pytest


@pytest.mark.radix_evict_conformance("session", config=None, public=True)
class TestSessionDefaults:
    pass


@pytest.mark.radix_evict_conformance(
    "session", config={"horizon": 1.0, "ghosts": 0, "adaptive": False}, public=True)
class TestSessionNoGhostsFullTrust:
    pass


@pytest.mark.radix_evict_conformance("retain", config=None, public=True)
class TestRetainDefaults:
    pass


@pytest.mark.radix_evict_conformance(
    "retain", config={"budget": 1.0, "max_extension": 64.0, "adaptive": False}, public=True)
class TestRetainUnbounded:
    pass
