"""The package as radix-evict sees it: registration, documentation, and deterministic replays."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import radix_evict_learned
from radix_evict_learned import model, plugin, policy

from radix_evict import registry
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads import get_workload


def test_registered_as_a_choice_from_this_distribution() -> None:
    assert "learned" in registry.choices()
    spec = registry.check_choice("learned")
    assert spec.distribution == "radix-evict-learned"
    assert spec.entry_point == "learned"
    assert spec.policy is policy.LearnedPolicy
    assert spec.summary == plugin.SUMMARY


def test_importing_the_package_registers_nothing() -> None:
    assert not any(hasattr(radix_evict_learned, hook) for hook in
                   ("radix_evict_register_policies", "radix_evict_extend_choices"))


def test_every_config_key_and_feature_is_documented() -> None:
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"),
              encoding="utf-8") as f:
        readme = f.read()
    for key, field in policy.LearnedConfig.model_fields.items():
        assert field.description, key
        assert f"`{key}`" in readme, key
    for name, _ in model.FEATURES:
        assert f"`{name}`" in readme, name
    assert model.FORMAT in readme


def _rates() -> list[float]:
    workload = get_workload("chat", convs=60)
    r = replay(workload, "learned", {"warmup": 20}, pool_tokens=20_000, page_size=1,
               timeline_points=0)
    return [r.hit_rate, float(r.stats["evicted_tokens"])]


def test_replays_are_deterministic_across_processes() -> None:
    """Ghost keys are node serial numbers and crc32s, never ``hash()`` of bytes."""
    here = _rates()
    assert here == _rates()
    code = "import json, test_plugin; print(json.dumps(test_plugin._rates()))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=os.path.dirname(__file__), check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == here
    assert 0.2 < here[0] < 0.95 and here[1] > 0


def test_before_warmup_it_is_lru() -> None:
    """No labels yet (an unreachable warm-up): the lifetimes are all equal, i.e. LRU."""
    workload = get_workload("chat", convs=60)
    lru = replay(workload, "lru", pool_tokens=20_000, page_size=1, timeline_points=0)
    cold = replay(workload, "learned", {"warmup": 10**9}, pool_tokens=20_000, page_size=1,
                  timeline_points=0)
    assert abs(cold.hit_rate - lru.hit_rate) < 0.005
