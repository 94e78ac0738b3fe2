"""radix-evict's conformance kit, run against this package's policy.

The ``radix_evict_conformance`` marker comes from radix-evict's pytest plugin
(installed with radix-evict): it adds the whole suite to the class.
"""

from __future__ import annotations

import pytest


@pytest.mark.radix_evict_conformance("gdsf", config={"credit": 8.0, "attention_span": 512},
                                     public=True)
class TestGreedyDualConformance:
    pass


@pytest.mark.radix_evict_conformance("gdsf", config=None, public=True)
class TestGreedyDualDefaults:
    pass


@pytest.mark.radix_evict_conformance("fifo", public=True)
class TestFifoIsOfferedByThisPackage:
    """fifo is radix-evict's hidden built-in; this package puts it on the choice list."""


@pytest.mark.radix_evict_conformance("reuse", config=None, public=True)
class TestReuseConformance:
    """A stateful policy: the kit also checks its heap scores against a rescan."""


@pytest.mark.radix_evict_conformance("reuse", config={"credit": 3, "ghosts": 2}, public=True)
class TestReuseSmallCreditFewGhosts:
    pass
