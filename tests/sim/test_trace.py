"""Mooncake trace reader: tokens, timing, and errors that name the file and the line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from radix_evict.builtin_policies.tlru import derive_config as derive_tlru
from radix_evict.sim.workloads import MooncakeTrace, TraceError, load_trace

TRACES = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces"


def write(path: Path, records: list[Any]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


def rec(ts: Any, il: Any, ol: Any, hids: list[Any]) -> dict[str, Any]:
    return {"timestamp": ts, "input_length": il, "output_length": ol, "hash_ids": hids}


@pytest.fixture
def small_trace(tmp_path: Path) -> MooncakeTrace:
    return load_trace(
        write(
            tmp_path / "t.jsonl",
            [rec(0, 10, 3, [0, 1, 2]), rec(500, 8, 2, [0, 1]), rec(500, 5, 4, [7, 8])],
        ),
        block_size=4,
    )


def test_tokens_follow_the_blocks(small_trace: MooncakeTrace) -> None:
    reqs = [e.request for e in small_trace.events() if e.kind == "arrive"]
    assert [r.rid for r in reqs] == ["r0", "r1", "r2"]
    assert reqs[0].prompt.tolist() == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]  # cut to input_length
    assert reqs[1].prompt.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]  # shares r0's prefix
    assert reqs[2].prompt.tolist() == [28, 29, 30, 31, 32]  # block 7 = 28..31
    outs = np.concatenate([r.output for r in reqs])
    assert len(outs) == 3 + 2 + 4 and len(set(outs.tolist())) == len(outs)  # fresh, never repeated
    assert outs.min() > max(int(r.prompt.max()) for r in reqs)
    assert all(r.priority == 0 for r in reqs)


def test_timing_is_the_harness_service_time(small_trace: MooncakeTrace) -> None:
    ev = [(e.kind, e.request.rid, e.time) for e in small_trace.events()]
    arrive = {rid: t for k, rid, t in ev if k == "arrive"}
    finish = {rid: t for k, rid, t in ev if k == "finish"}
    assert arrive == {"r0": 0.0, "r1": 0.5, "r2": 0.5}
    assert finish["r0"] == pytest.approx(0.05 + 10 / 20000 + 3 / 100)
    assert finish["r2"] == pytest.approx(0.5 + 0.05 + 5 / 20000 + 4 / 100)
    # same time: arrivals in file order
    assert [rid for k, rid, _ in ev if k == "arrive"] == ["r0", "r1", "r2"]


def test_rates_and_limit(tmp_path: Path) -> None:
    p = write(tmp_path / "t.jsonl", [rec(i * 10, 4, 1, [i]) for i in range(5)])
    t = load_trace(p, block_size=4, limit=3, prefill_rate=4.0, decode_rate=1.0)
    assert t.num_requests == 3
    fin = [e.time for e in t.events() if e.kind == "finish"]
    assert fin[0] == pytest.approx(0.05 + 1 + 1)


def test_growth_estimate_counts_tokens_past_seen_block_prefixes(small_trace: MooncakeTrace) -> None:
    samples, _ = small_trace.growth_samples()
    # r0: all new; r1: blocks (0, 1) seen -> 0 new; r2: new
    assert samples.tolist() == [10, 0, 5]
    s = derive_tlru(small_trace.stats())
    assert s.config["next_prompt_estimate"] == 5 and s.config["threshold"] > 5


def test_describe(small_trace: MooncakeTrace) -> None:
    d = json.loads(json.dumps(small_trace.describe(), allow_nan=False))
    assert d["requests"] == 3 and d["prompt_tokens"] == 23 and d["output_tokens"] == 9
    assert d["block_size"] == 4 and d["unique_blocks"] == 5 and d["duration_s"] == 0.5
    assert d["default_pool_tokens"] == 4_000_000 and d["name"] == "trace:t.jsonl"


GOOD = rec(0, 600, 5, [1, 2])


@pytest.mark.parametrize(
    "bad, problem",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1}, "missing field(s) hash_ids"),
        (rec(0, -1, 5, []), "input_length must be >= 0"),
        (rec(0, 5, -3, [1]), "output_length must be >= 0"),
        (rec(0, 5.5, 1, [1]), "input_length must be an integer"),
        (rec(0, 5, "7", [1]), "output_length must be an integer"),
        (rec(0, True, 1, [1]), "input_length must be an integer"),
        (rec("soon", 5, 1, [1]), "timestamp must be a number"),
        (rec(-5, 5, 1, [1]), "timestamp must be >= 0"),
        (rec(0, 5, 1, [1.0]), "hash_ids[0] must be an integer"),
        (rec(0, 5, 1, [-2]), "hash_ids[0] must be >= 0"),
        ({"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": 3}, "must be a list"),
        (rec(0, 512, 1, [1, 2]), "allows at most 1"),
        (rec(0, 513, 1, [1, 2, 3]), "allows at most 2"),
        (rec(0, 1025, 1, [1, 2]), "needs 3 blocks"),
        # issue #36: no prompt, refused here rather than when the timed replay reaches it
        (rec(0, 0, 5, []), "input_length must be >= 1, got 0: a request needs a prompt"),
    ],
)
def test_bad_line_names_file_line_and_problem(tmp_path: Path, bad: Any, problem: str) -> None:
    p = write(tmp_path / "bad.jsonl", [GOOD, "", GOOD, bad, GOOD])  # line 4 (blank line 2)
    with pytest.raises(TraceError) as e:
        load_trace(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:4: ")
    assert problem in msg
    assert e.value.line == 4 and e.value.path == str(p)


def test_lines_after_the_limit_are_not_read(tmp_path: Path) -> None:
    p = write(tmp_path / "t.jsonl", [GOOD, GOOD, "{broken"])
    assert load_trace(p, limit=2).num_requests == 2
    with pytest.raises(TraceError, match=":3: "):
        load_trace(p)


def test_empty_missing_and_binary_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(TraceError, match="no requests"):
        load_trace(empty)
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "absent.jsonl")
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TraceError, match="UTF-8"):
        load_trace(binary)


def test_bad_block_size(tmp_path: Path) -> None:
    from radix_evict.sim.workloads import WorkloadError

    with pytest.raises(WorkloadError, match="block_size"):
        load_trace(write(tmp_path / "t.jsonl", [GOOD]), block_size=0)


@pytest.mark.parametrize(
    "name, requests, prompt_millions, seconds",
    [
        ("mooncake_synthetic_trace.jsonl", 3993, 61.2, 1022),
        ("mooncake_conversation_trace.jsonl", 12031, 144.8, 3537),
    ],
)
def test_shipped_traces_load(
    name: str, requests: int, prompt_millions: float, seconds: int
) -> None:
    path = TRACES / name
    if not path.exists():
        pytest.skip(f"{path} not present")
    t = load_trace(path)
    d = t.describe()
    assert d["requests"] == requests
    assert round(d["prompt_tokens"] / 1e6, 1) == prompt_millions
    assert round(d["duration_s"]) == seconds
    first = next(iter(t.events())).request
    assert len(first.prompt) == t.rows[0][1]


def plain_tokens(t: MooncakeTrace, i: int) -> list[int]:
    """Request ``i``'s tokens built the obvious way: blocks joined, cut, then fresh output ids."""
    _, il, ol, hids = t.rows[i]
    prompt = [h * t.block + k for h in hids.tolist() for k in range(t.block)][:il]
    out_start = (max(int(h.max()) for *_, h in t.rows if len(h)) + 1) * t.block
    out_start += sum(r[2] for r in t.rows[:i])
    return prompt + list(range(out_start, out_start + ol))


def one_heap_events(t: MooncakeTrace) -> list[tuple[float, str, str]]:
    """The harness's event loop: arrivals and finishes in one heap of (time, seq, ...)."""
    import heapq

    heap = [(r[0] / 1000.0, i, 0, i) for i, r in enumerate(t.rows)]
    heapq.heapify(heap)
    seq, out = len(heap), []
    while heap:
        time, _, is_finish, i = heapq.heappop(heap)
        out.append((time, "finish" if is_finish else "arrive", f"r{i}"))
        if not is_finish:
            heapq.heappush(heap, (time + t.service_time(t.rows[i][1], t.rows[i][2]), seq, 1, i))
            seq += 1
    return out


LAYOUT = [
    rec(0, 10, 3, [0, 1, 2]),  # partial last block (10 of 12)
    rec(0, 8, 0, [0, 1]),  # whole blocks, no output
    rec(5, 5, 4, [7, 8]),
    rec(5, 12, 2, [9, 3, 4]),  # two runs of consecutive ids
    rec(9, 9, 1, [6, 6, 5]),  # repeated and descending ids: three runs
    rec(2, 1, 0, [11]),  # one token, nothing else
]


def test_request_tokens_are_the_blocks_then_fresh_output_ids(tmp_path: Path) -> None:
    t = load_trace(write(tmp_path / "t.jsonl", LAYOUT), block_size=4)
    for i, (_, il, ol, _) in enumerate(t.rows):
        req = t.request(i)
        expected = plain_tokens(t, i)
        assert req.tokens().dtype == np.int64
        assert req.tokens().tolist() == expected, i
        assert req.prompt.tolist() == expected[:il] and req.output.tolist() == expected[il:]
        assert len(req.output) == ol


def test_shipped_trace_tokens_match_the_plain_construction() -> None:
    path = TRACES / "mooncake_synthetic_trace.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present")
    t = load_trace(path, limit=300)
    for i in (0, 1, 2, 57, 123, 299):
        assert t.request(i).tokens().tolist() == plain_tokens(t, i), i


def test_events_follow_the_harness_one_heap_order(tmp_path: Path) -> None:
    # Ties: arrivals at the same time in file order, an arrival before a finish at its time.
    records = LAYOUT + [
        rec(50 + 50 * (i % 3), 4 * (i % 5 + 1) - i % 2, i % 4, list(range(i % 5 + 1)))
        for i in range(40)
    ]
    # prefill this fast adds nothing to 0.05 s: a 50 ms request without output finishes at
    # the 100 ms arrivals (a tie)
    t = load_trace(write(tmp_path / "t.jsonl", records), block_size=4, decode_rate=20.0,
                   prefill_rate=1e30)
    got = [(e.time, e.kind, e.request.rid) for e in t.events()]
    assert got == one_heap_events(t)
    arrive = {rid: time for time, kind, rid in got if kind == "arrive"}
    assert any(kind == "finish" and time in arrive.values() for time, kind, _ in got)  # a tie


def trie_growth(t: MooncakeTrace) -> list[int]:
    """Prompt tokens past the longest block prefix seen before, by walking a dict trie."""
    seen: dict[tuple[int, int], int] = {}
    out = []
    for _, il, _, hids in t.rows:
        node = matched = 0
        for h in hids.tolist():
            nxt = seen.get((node, h))
            if nxt is None:
                nxt = seen[(node, h)] = len(seen) + 1
            else:
                matched += 1
            node = nxt
        out.append(il - min(matched * t.block, il))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_growth_samples_equal_a_trie_walk(tmp_path: Path, seed: int) -> None:
    import random

    rng = random.Random(seed)
    big = seed % 4 == 3  # huge ids (block 1): the pair keys must not overflow int64
    records = []
    for i in range(rng.randint(1, 80)):
        nb = rng.randint(1, 7)  # a prompt of one block at least (an empty one is refused)
        hids = [rng.choice([rng.randint(0, 3), rng.randint(0, 2**62 if big else 12)])
                for _ in range(nb)]
        il = nb if big else max(0, 4 * nb - rng.randint(0, 3))
        records.append(rec(i, il, 1, hids))
    t = load_trace(write(tmp_path / "t.jsonl", records), block_size=1 if big else 4)
    assert t.growth_samples()[0].tolist() == trie_growth(t)


def test_token_ids_past_int64_are_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="int64"):
        load_trace(write(tmp_path / "t.jsonl", [rec(0, 4, 1, [2**62])]), block_size=4)
