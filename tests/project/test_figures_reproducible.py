"""``docs/generate.py figures`` writes what a rerun on any machine writes again.

No wall or CPU times, no requests per second, no absolute paths in
docs/figures/results.json (or the tables drawn from it): measuring again
leaves tracked files unmodified wherever the figures themselves did not change.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))

from gen import figures  # noqa: E402


def _walk(data: Any, at: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, dict):
        return [kv for k, v in data.items() for kv in [(f"{at}.{k}", v), *_walk(v, f"{at}.{k}")]]
    if isinstance(data, list):
        return [kv for i, v in enumerate(data) for kv in _walk(v, f"{at}[{i}]")]
    return []


def test_results_json_holds_nothing_machine_dependent() -> None:
    items = _walk(json.loads(figures.RESULTS.read_text(encoding="utf-8")))
    timed = [k for k, _ in items if k.rsplit(".", 1)[-1] in figures.MACHINE_DEPENDENT]
    assert not timed, timed[:5]
    absolute = [(k, v) for k, v in items if isinstance(v, str) and v.startswith("/")]
    assert not absolute, absolute[:5]


def test_a_measurement_is_made_reproducible() -> None:
    measured = {"results": [{"policy": "lru", "hit_rate": 0.5, "wall_s": 4.7, "cache_s": 0.3,
                             "req_per_s": 14883.8, "stats": {"eviction_seconds": 0.2,
                                                             "evicted_tokens": 7}}],
                "workload": {"path": "/somewhere/shared/traces/t.jsonl", "seed": 0},
                "trace": {"path": str(ROOT / "docs" / "x.jsonl")}}
    assert figures.reproducible(measured) == {
        "results": [{"policy": "lru", "hit_rate": 0.5, "stats": {"evicted_tokens": 7}}],
        "workload": {"path": "../shared/traces/t.jsonl", "seed": 0},
        "trace": {"path": "docs/x.jsonl"},
    }
