"""A stateful policy (lifecycle callbacks) runs inside SGLang: its strategy carries the events.

This used to be refused at startup (SGLang's trees delivered no events, so `reuse`
replayed exactly as lru there); the plugin now delivers them (test_sglang_events.py
checks the delivery against radix-evict's own cache). No SGLang import is needed here:
the factory is radix-evict's own.
"""

from __future__ import annotations

import pytest

from radix_evict import registry
from radix_evict.sglang import strategies
from radix_evict.sglang.adapter import BridgedStrategy


def test_a_policy_with_lifecycle_callbacks_is_bridged_with_its_events() -> None:
    if "reuse" not in registry.choices(extended=True):
        pytest.skip("the example package (radix-evict-costaware) is not installed: make install")
    strategy = strategies.bridged("reuse", registry)()
    assert isinstance(strategy, BridgedStrategy) and strategy.name == "reuse"
    events = strategy.events
    assert events is not None and events.policy is strategy.policy
    assert all(getattr(events, cb) is not None
               for cb in ("on_insert", "on_hit", "on_split", "on_evict"))


def test_a_policy_without_callbacks_is_bridged_without_events() -> None:
    strategy = strategies.bridged("lru", registry)()
    assert isinstance(strategy, BridgedStrategy) and strategy.name == "lru"
    assert strategy.events is None
