"""The cache depends on the policy contract only: importing it loads no registry and no pluggy.

Policy names reach the registry through one seam (``radix_evict.policies.resolve``),
which imports it only when a name must be resolved. pydantic does load: the contract's
``PolicyConfig`` is a pydantic model.
"""

from __future__ import annotations

import subprocess
import sys


def run(code: str) -> None:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_importing_the_cache_loads_neither_the_registry_nor_pluggy() -> None:
    run("import sys, radix_evict.cache.radix_cache, radix_evict.cache.eviction\n"
        "loaded = [m for m in ('pluggy', 'radix_evict.policies.registry',\n"
        "          'radix_evict.policies.plugins') if m in sys.modules]\n"
        "assert not loaded, loaded\n")


def test_a_cache_given_a_policy_object_never_needs_the_registry() -> None:
    run("import sys\n"
        "from radix_evict import KVPool, RadixCache, EvictionPolicy\n"
        "class P(EvictionPolicy):\n"
        "    name = 'p'\n"
        "    def score(self, node): return 0\n"
        "c = RadixCache(KVPool(size=8, device='cpu'), policy=P())\n"
        "c.insert([1, 2], c.pool.alloc(2)); c.evict(2)\n"
        "assert 'pluggy' not in sys.modules\n"
        "assert 'radix_evict.policies.registry' not in sys.modules\n")


def test_a_name_is_resolved_through_the_registry_when_one_is_needed() -> None:
    run("from radix_evict import KVPool, RadixCache, PolicyConfigError\n"
        "c = RadixCache(KVPool(size=8, device='cpu'), policy='slru',\n"
        "               policy_config={'protected_threshold': 3})\n"
        "assert c.policy.config.protected_threshold == 3, c.policy\n"
        "try:\n"
        "    RadixCache(KVPool(size=8, device='cpu'), policy='lruu')\n"
        "except PolicyConfigError as e:\n"
        "    assert \"did you mean 'lru'\" in str(e), e\n"
        "else:\n"
        "    raise AssertionError('unknown policy accepted')\n")
