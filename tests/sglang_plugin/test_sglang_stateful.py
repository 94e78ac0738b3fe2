"""A stateful policy (lifecycle callbacks) is refused inside SGLang, whose trees deliver no events.

Bridged, such a policy would silently run as a different policy (the side-by-side
harness showed `reuse` replaying exactly as lru there), so building it fails at
startup with a message naming the callbacks. No SGLang import is needed: the
factory is radix-evict's own.
"""

from __future__ import annotations

import pytest

from radix_evict import registry
from radix_evict.sglang import strategies
from radix_evict.sglang.adapter import BridgedStrategy


def test_a_policy_with_lifecycle_callbacks_is_refused_naming_them() -> None:
    if "reuse" not in registry.choices(extended=True):
        pytest.skip("the example package (radix-evict-costaware) is not installed: make install")
    build = strategies.bridged("reuse", registry)
    with pytest.raises(ValueError, match=r"'reuse' keeps state through lifecycle callbacks "
                                         r"\(on_[a-z_]+(, on_[a-z_]+)*\)") as err:
        build()
    assert "not supported" in str(err.value)


def test_a_policy_without_callbacks_is_bridged() -> None:
    strategy = strategies.bridged("lru", registry)()
    assert isinstance(strategy, BridgedStrategy) and strategy.name == "lru"
