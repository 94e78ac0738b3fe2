"""Trace formats: Bailian/Qwen (linked turns), ServeGen offline, detection, plug-in formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.fake_dists import FakeSite
from helpers.rigs import run_cli

from radix_evict.sim.replay import replay
from radix_evict.sim.traces import BlockTrace, TraceFormatError, open_trace, trace_formats
from radix_evict.sim.workloads import MooncakeTrace, TraceError


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def blocks(first: int, n: int) -> list[int]:
    return list(range(first, first + n))


# A two-turn conversation (chat 10 -> 11), an unrelated chat, and a turn whose parent is not in
# the file. Turn 11's hash ids after the parent's blocks are its own (the trace's ids for
# the reply differ from the replay's, which is the point: the reply comes from the parent).
BAILIAN = [
    {"chat_id": 10, "parent_chat_id": -1, "turn": 1, "timestamp": 0.0, "input_length": 40,
     "output_length": 20, "hash_ids": blocks(0, 3), "type": "text"},
    {"chat_id": 20, "parent_chat_id": -1, "turn": 1, "timestamp": 0.5, "input_length": 32,
     "output_length": 5, "hash_ids": blocks(100, 2)},
    {"chat_id": 11, "parent_chat_id": 10, "turn": 2, "timestamp": 30.0, "input_length": 90,
     "output_length": 8, "hash_ids": [0, 1, 2, 50, 51, 52]},
    {"chat_id": 31, "parent_chat_id": 30, "turn": 2, "timestamp": 31.0, "input_length": 16,
     "output_length": 1, "hash_ids": [200]},
]

SERVEGEN = [
    {"request_id": "a", "input_length": 64, "output_length": 4, "hash_ids": [0, 1]},
    {"request_id": "b", "input_length": 64, "hash_ids": [0, 2]},
    {"request_id": "c", "input_length": 40, "output_length": 2, "hash_ids": [0, 1]},
]


def test_bailian_turn_starts_with_its_parents_prompt_and_reply(tmp_path: Path) -> None:
    wl = open_trace(write(tmp_path / "qwen.jsonl", BAILIAN))
    assert isinstance(wl, BlockTrace) and wl.format == "bailian" and wl.block == 16
    first, child = wl.request(0, 0.0), wl.request(2, 30.0)
    assert list(child.prompt[:60]) == list(first.tokens())
    # Past the history its own blocks: position 60 lies in block 3 (hash id 50), 64 in 51.
    assert list(child.prompt[60:64]) == [50 * 16 + k for k in range(12, 16)]
    assert child.prompt[64] == 51 * 16
    assert (child.session, child.turn) == (0, 1)
    info = wl.describe()
    assert info["linked_turns"] == 1 and info["unlinked_turns"] == 1
    # With room for everything the second turn hits its parent's prompt and reply, cut to pages.
    r = replay(wl, "lru", pool_tokens=10_000, page_size=16, keep_requests=True)
    assert r.per_request is not None
    hits = {rec.rid: rec.hit_tokens for rec in r.per_request}
    assert hits["r2"] == 48  # 60 tokens of history, in whole 16-token pages
    assert hits["r1"] == 0 and hits["r3"] == 0


def test_servegen_has_no_timestamps_so_requests_run_one_after_another(tmp_path: Path) -> None:
    path = write(tmp_path / "servegen.jsonl", SERVEGEN)
    with pytest.raises(TraceFormatError, match="block-size"):
        open_trace(path)
    wl = open_trace(path, block_size=32)
    assert isinstance(wl, BlockTrace) and wl.format == "servegen"
    kinds = [(ev.kind, ev.request.rid) for ev in wl.events()]
    assert kinds == [("arrive", "r0"), ("finish", "r0"), ("arrive", "r1"), ("finish", "r1"),
                     ("arrive", "r2"), ("finish", "r2")]
    assert len(wl.request(1, 0.0).output) == 0
    r = replay(wl, "lru", pool_tokens=1024, page_size=32, keep_requests=True)
    assert r.per_request is not None
    assert [rec.hit_tokens for rec in r.per_request] == [0, 32, 32]


def test_mooncake_is_detected_and_read_as_before(tmp_path: Path) -> None:
    rec = {"timestamp": 0, "input_length": 600, "output_length": 3, "hash_ids": [0, 1]}
    wl = open_trace(write(tmp_path / "m.jsonl", [rec]))
    assert isinstance(wl, MooncakeTrace) and wl.block == 512


def test_an_unrecognised_format_says_what_was_expected(tmp_path: Path) -> None:
    path = write(tmp_path / "odd.jsonl", [{"prompt": "hi", "len": 3}])
    with pytest.raises(TraceError) as err:
        open_trace(path)
    msg = str(err.value)
    assert "not recognised" in msg and "len, prompt" in msg
    for name in ("mooncake", "bailian", "servegen", "parent_chat_id", "request_id"):
        assert name in msg
    with pytest.raises(TraceFormatError, match="unknown trace format 'nope'"):
        open_trace(path, "nope")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"hash_ids": [0, 1]}, "needs 3 blocks"),
        ({"timestamp": "soon"}, "timestamp must be a number of seconds"),
        ({"parent_chat_id": 10}, "names itself"),
        ({"input_length": -1}, "input_length must be >= 0"),
        # The limits a Mooncake trace has: token ids in int64, a request a replay can hold.
        ({"hash_ids": [0, 2**63, 2]}, r"hash_ids\[1\] = 9223372036854775808 is too large"),
        ({"hash_ids": [0, 2**70, 2]}, "pass the int64 range"),
        ({"output_length": 10**12}, "the longest request a replay takes"),
        ({"hash_ids": [0, True, 2]}, r"hash_ids\[1\] must be an integer"),
        # issue #36: an empty prompt is refused at parse time, not when a replay reaches it
        ({"input_length": 0, "hash_ids": []}, "input_length must be >= 1, got 0"),
    ],
)
def test_bad_bailian_lines_name_file_line_and_problem(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    records = [BAILIAN[1], {**BAILIAN[0], **change}]
    path = write(tmp_path / "bad.jsonl", records)
    with pytest.raises(TraceError, match=problem) as err:
        open_trace(path, "bailian")
    assert err.value.line == 2


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"hash_ids": [2**62, 1]}, "is too large"),
        ({"output_length": 2**40}, "the longest request a replay takes"),
        ({"hash_ids": [0, -1]}, r"hash_ids\[1\] must be >= 0"),
        ({"input_length": 0, "hash_ids": []}, "input_length must be >= 1, got 0"),
    ],
)
def test_bad_servegen_lines_name_file_line_and_problem(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    path = write(tmp_path / "bad.jsonl", [SERVEGEN[1], {**SERVEGEN[0], **change}])
    with pytest.raises(TraceError, match=problem) as err:
        open_trace(path, "servegen", block_size=32)
    assert err.value.line == 2


FORMAT_MODULE = '''
from radix_evict.sim.traces import BlockRow, BlockTrace, TraceFormat
import json, numpy as np


class Tiny(TraceFormat):
    name = "tinyfmt"
    fields = ("t", "blocks")
    block_size = 4

    def load(self, path, params):
        rows = []
        for line in open(path):
            rec = json.loads(line)
            ids = np.asarray(rec["blocks"], dtype=np.int64)
            rows.append(BlockRow(rec["t"], 4 * len(ids), 1, ids))
        return BlockTrace(path, self.name, rows, params)
'''


def test_a_package_adds_a_format_through_the_entry_point_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = FakeSite(tmp_path / "site", monkeypatch)
    names = site.add("tiny-traces", "1.0", {"tinyfmt": FORMAT_MODULE})
    ep_file = next((tmp_path / "site").glob("*.dist-info")) / "entry_points.txt"
    ep_file.write_text(f"[radix_evict.trace_formats]\ntinyfmt = {names['tinyfmt']}:Tiny\n")
    assert "tinyfmt" in trace_formats()
    wl = open_trace(write(tmp_path / "t.jsonl", [{"t": 0.0, "blocks": [1, 2]},
                                                 {"t": 1.0, "blocks": [1, 3]}]))
    assert isinstance(wl, BlockTrace) and wl.format == "tinyfmt" and wl.num_requests == 2


def test_cli_reads_every_format_and_takes_block_size(tmp_path: Path) -> None:
    qwen = write(tmp_path / "qwen.jsonl", BAILIAN)
    r = run_cli("simulate", "--trace", str(qwen), "-p", "lru", "--page-size", "16",
                "--pool-tokens", "4096", "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["workload"]["format"] == "bailian" and data["results"][0]["hit_tokens"] == 48
    sg = write(tmp_path / "sg.jsonl", SERVEGEN)
    r = run_cli("simulate", "--trace", str(sg), "-p", "lru", "--pool-tokens", "4096")
    assert r.exit_code == 1 and "--block-size" in r.output
    r = run_cli("simulate", "--trace", str(sg), "--block-size", "32", "-p", "lru",
                "--page-size", "32", "--pool-tokens", "4096", "--json")
    assert r.exit_code == 0, r.output
    odd = write(tmp_path / "odd.jsonl", [{"x": 1}])
    r = run_cli("simulate", "--trace", str(odd), "-p", "lru")
    assert r.exit_code == 1 and "not recognised" in r.output
    r = run_cli("simulate", "--block-size", "16", "-p", "lru")
    assert r.exit_code == 2 and "go with --trace" in r.output


def test_model_tiny_replays_a_trace(tmp_path: Path) -> None:
    qwen = write(tmp_path / "qwen.jsonl", BAILIAN)
    r = run_cli("simulate", "--model", "tiny", "--device", "cpu", "--trace",
                str(qwen), "-p", "lru", "--json", "--no-baseline")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["mode"] == "engine" and data["requests"] == 4
    (row,) = data["rows"]
    assert row["hit_rate"] > 0, "the linked turn must hit its parent's shrunk prompt and reply"


def _conversation(path: Path, turns: int) -> Path:
    """One Bailian conversation: each turn continues the one before with 32 new tokens."""
    records, il, out = [], 0, 8
    for t in range(turns):
        il = il + out + 32 if t else 32
        records.append({"chat_id": t, "parent_chat_id": t - 1 if t else -1, "turn": t + 1,
                        "timestamp": float(t), "input_length": il, "output_length": out,
                        "hash_ids": blocks(1000 * t, -(-il // 16))})
    return write(path, records)


def test_a_long_linked_conversation_builds_each_turn_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear: n turns build n token arrays, not one per ancestor per turn (n^2 / 2)."""
    import numpy as np

    from radix_evict.sim.traces import block_trace

    wl = open_trace(_conversation(tmp_path / "long.jsonl", 300))
    aranges = []

    class CountingNumpy:
        def __getattr__(self, name: str) -> Any:
            return getattr(np, name)

        def arange(self, *args: Any, **kw: Any) -> Any:
            aranges.append(1)
            return np.arange(*args, **kw)

    monkeypatch.setattr(block_trace, "np", CountingNumpy())
    r = replay(wl, "lru", pool_tokens=10**7, timeline_points=0, keep_requests=True)
    assert len(aranges) <= 2 * 300  # two per turn built (prompt positions, reply ids)
    assert r.per_request is not None
    # each turn hits its whole history (the previous turn's prompt and reply)
    assert all(rec.hit_tokens == rec.prompt_tokens - 32 for rec in r.per_request[1:])
    # asked out of order, a turn is still its parent's tokens plus its own
    again = open_trace(tmp_path / "long.jsonl")
    late, parent = again.request(200, 0.0), again.request(199, 0.0)
    assert list(late.prompt[:len(parent.tokens())]) == list(parent.tokens())
