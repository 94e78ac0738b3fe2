"""Helpers for the tests: Mooncake-format traces written to a temporary folder."""

from __future__ import annotations

import json
import random
from pathlib import Path


def conversation_rows(n: int, seed: int, block: int = 16) -> list[dict[str, object]]:
    """``n`` Mooncake-format requests: conversations that grow turn by turn.

    A shared first block (a system prompt), then each conversation's own
    blocks; about half of the requests continue an earlier conversation.
    """
    rng = random.Random(seed)
    next_id = 1
    convs: list[list[int]] = []
    rows: list[dict[str, object]] = []
    t = 0
    for _ in range(n):
        t += rng.randint(0, 400)
        hids = convs.pop(rng.randrange(len(convs))) if convs and rng.random() < 0.5 else [0]
        grow = rng.randint(1, 6)
        hids = hids + list(range(next_id, next_id + grow))
        next_id += grow
        if rng.random() < 0.7:
            convs.append(hids)
        rows.append({"timestamp": t, "input_length": len(hids) * block,
                     "output_length": rng.randint(1, 3 * block), "hash_ids": hids})
    return rows


def write_trace(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
