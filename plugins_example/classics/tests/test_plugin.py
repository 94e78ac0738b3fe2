"""The package as radix-evict sees it: registration, documentation, and deterministic replays."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import radix_evict_classics
from radix_evict_classics import arc, plugin, s3fifo, sieve, wtinylfu

from radix_evict import registry
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload

SOURCES = {
    "arc": (arc, "Megiddo", "FAST 2003"),
    "s3fifo": (s3fifo, "Yang", "SOSP 2023"),
    "sieve": (sieve, "Zhang", "NSDI 2024"),
    "wtinylfu": (wtinylfu, "Einziger", "ACM Transactions on Storage"),
}


@pytest.mark.parametrize("name", plugin.NAMES)
def test_registered_as_a_choice_from_this_distribution(name: str) -> None:
    assert name in registry.choices()
    spec = registry.check_choice(name)
    assert spec.distribution == "radix-evict-classics"
    assert spec.entry_point == "classics"
    assert spec.policy is plugin.POLICIES[name]
    assert spec.summary == plugin.SUMMARIES[name]


@pytest.mark.parametrize("name", plugin.NAMES)
def test_each_policy_cites_its_source_and_says_how_it_was_adapted(name: str) -> None:
    module, author, venue = SOURCES[name]
    doc = module.__doc__ or ""
    assert author in doc and venue in doc
    assert "Adapted to leaf-only radix eviction" in doc
    for what in ("**An access**", "ghost"):
        assert what in doc, (name, what)
    assert venue.split()[0] in plugin.SUMMARIES[name] or author in plugin.SUMMARIES[name]


def test_importing_the_package_registers_nothing() -> None:
    assert not any(hasattr(radix_evict_classics, hook) for hook in
                   ("radix_evict_register_policies", "radix_evict_extend_choices"))


def _rates() -> dict[str, list[float]]:
    workload = get_workload("chat", convs=60)
    out = {}
    for name in plugin.NAMES:
        r = replay(workload, name, pool_tokens=20_000, page_size=1, timeline_points=0)
        out[name] = [r.hit_rate, float(r.stats["evicted_tokens"])]
    return out


def test_replays_are_deterministic_across_processes() -> None:
    """Ghost and sketch keys are integer fingerprints, never ``hash()`` of bytes."""
    here = _rates()
    assert here == _rates()
    code = ("import json, test_plugin; print(json.dumps(test_plugin._rates()))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(__file__), check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == here
    for name, (rate, evicted) in here.items():
        assert 0.2 < rate < 0.95 and evicted > 0, name


@pytest.mark.parametrize("name", plugin.NAMES)
def test_after_a_reset_the_order_still_follows_fresh_scores(name: str) -> None:
    """reset() tells a policy nothing: what it kept about the old nodes must not matter."""
    from classics_testing import lookup, make_cache, put

    from radix_evict import load_policy

    policy = load_policy(name)
    cache = make_cache(policy, size=64)
    for i in range(12):
        put(cache, [i, 1, 2, 3])
        lookup(cache, [i % 3, 1])
    cache.reset()
    for i in range(14):
        put(cache, [i % 5, 7, i, 9])
        lookup(cache, [i % 4, 7])
    while cache.total_size():
        leaves = cache.evictable_leaves()
        first = min(leaves, key=lambda x: (policy.score(x), x.last_access_time))
        cache.evict(1)
        assert first.parent is None, name  # the lowest fresh score went
