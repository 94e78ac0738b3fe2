"""Measure the tiny decoder's prefill and decode step times, for ``radix-evict calibrate``.

The timed replay's cost model is only worth checking against real execution
if its numbers come from that execution: this script times the tiny decoder
(default ``TinyConfig``, float32, pool and cache as ``build_engine`` makes
them, 1 torch thread as ``run_engine_replay`` uses on cpu) and writes the
CSV that ``radix-evict calibrate`` fits (``uncached,cached,batch,ms,kind``).

- prefill: one request of ``uncached`` new tokens after ``cached`` tokens
  the radix cache already holds, timed by ``Engine._admit`` itself (its
  ``ttft_ms``: match, lock, evict, alloc, prefill, first token), so the fit's
  ``base_ms`` carries the per-request overhead the engine's TTFT contains;
- decode: ``Engine._decode_step`` on ``batch`` running requests of equal
  length, ``cached`` = the context tokens the step reads (each request's
  length + the token it feeds, the timed replay's ``context``).

Every point is measured round-robin (one pass over the grid per repeat, so a
burst of load on a shared machine smears over all points, not a few) and the
median of the repeats after the warm-up passes is written.

The clock: ``cpu`` (the default) is the calling thread's CPU time over the
same span the engine times (``time.thread_time`` around ``Engine._admit`` /
``_decode_step``); ``wall`` is the engine's own ``perf_counter`` figure. With
one torch thread on cpu every operation runs in the calling thread, so on an
idle machine the two agree; on a shared one, wall time also counts the time
other processes held the core (2x at a load average of 3 on 2 cores), which
is no property of the model. CPU time still includes the cache contention
those processes cause, so it is not noise-free either.

    .venv/bin/python bench/measure_tiny_costs.py [--out build/tiny_costs.csv] [--repeats 15]
        [--clock cpu|wall]
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch

# The engine's private steps and state on purpose: the point is to time exactly what it runs.
from radix_evict.engine.loop import Engine, EngineRequest, _Running, build_engine
from radix_evict.engine.result import EngineResult
from radix_evict.sim.timed.calibrate import Point

__all__ = [
    "DECODE_BATCHES",
    "DECODE_LENGTHS",
    "PREFILL_CACHED",
    "PREFILL_UNCACHED",
    "decode_grid",
    "measure",
    "prefill_grid",
    "write_csv",
]

# The tiny chat workload (tiny_workload("chat", seed=0), lru, its default pool)
# prefills 10..273 uncached tokens after 0..974 cached ones; prompts run to
# ~1,070 tokens and outputs to ~150, with up to 4 requests decoding at once.
# Odd sizes as well as round ones: torch's kernels run differently off round sizes, and a grid
# of powers of two read 16-28% fast on the chat workload's real token counts.
PREFILL_UNCACHED = (1, 7, 13, 22, 37, 53, 79, 101, 150, 213, 271, 320)
PREFILL_CACHED = (0, 61, 190, 333, 517, 700, 874, 1024)
DECODE_BATCHES = (1, 2, 3, 4)
DECODE_LENGTHS = (16, 128, 256, 512, 768, 1024, 1280)  # tokens per running request
HEADER = ("uncached", "cached", "batch", "ms", "kind")
CLOCKS = ("cpu", "wall")


def prefill_grid(uncached: Sequence[int] = PREFILL_UNCACHED,
                 cached: Sequence[int] = PREFILL_CACHED) -> list[tuple[int, int]]:
    """(uncached, cached) pairs, every combination."""
    return [(u, c) for c in cached for u in uncached]


def decode_grid(batches: Sequence[int] = DECODE_BATCHES,
                lengths: Sequence[int] = DECODE_LENGTHS) -> list[tuple[int, int]]:
    """(batch, tokens per request) pairs, every combination."""
    return [(b, n) for b in batches for n in lengths]


@contextmanager
def _threads(n: int) -> Iterator[None]:
    """torch's cpu thread count set to ``n`` for the block, as run_engine_replay does."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class _PrefillBench:
    """One cached sequence in the tree; a request = its first ``c`` tokens + ``u`` new ones.

    The new tokens never continue the cached sequence, so ``match_prefix``
    (on the prompt less its last token, as the engine does) hits exactly ``c``.
    Nothing is inserted after a measurement: the row's new slots are freed and
    the prefix unlocked, so every repeat sees the same cache.
    """

    def __init__(self, engine: Engine, longest: int, rng: random.Random, clock: str) -> None:
        self.engine, self.rng, self.clock = engine, rng, clock
        self.vocab = engine.model.cfg.vocab_size
        self.seq = [rng.randrange(self.vocab) for _ in range(longest)]
        cache = engine.cache
        assert cache is not None
        if longest:
            pool = engine.pool
            slots = pool.alloc(longest)
            assert slots is not None, "pool too small for the cached prefix"
            toks = torch.tensor(self.seq, dtype=torch.int64, device=slots.device)
            engine.model.prefill(toks, 0, slots, pool)  # real K/V in the cached slots
            cache.insert(self.seq, slots)

    def once(self, uncached: int, cached: int) -> float:
        """Admit one request and undo it; its TTFT over ``Engine._admit``'s span (ms)."""
        engine = self.engine
        new = [self.rng.randrange(self.vocab) for _ in range(uncached)]
        if cached < len(self.seq) and new[0] == self.seq[cached]:
            new[0] = (new[0] + 1) % self.vocab
        req = EngineRequest(prompt=tuple(self.seq[:cached] + new), max_new_tokens=1, output=(0,))
        res = EngineResult.empty(1, str(engine.pool.device), True)
        t0 = time.thread_time()
        r = engine._admit(0, req, res)
        cpu_ms = (time.thread_time() - t0) * 1e3
        assert r is not None, "the request did not fit the pool"
        hit, wall_ms = res.hits[0], res.ttft_ms[0]
        assert hit == cached, f"matched {hit} tokens, expected {cached}"
        assert wall_ms is not None and engine.cache is not None and r.node is not None
        ms = cpu_ms if self.clock == "cpu" else wall_ms
        engine.pool.free(r.row[r.hit:])
        engine.cache.dec_lock_ref(r.node)
        return ms


class _DecodeBench:
    """``batch`` requests of ``length`` tokens each, stepped and reset to the same length."""

    def __init__(self, engine: Engine, batch: int, length: int, steps: int, clock: str) -> None:
        self.engine = engine
        self.timer = time.thread_time if clock == "cpu" else time.perf_counter
        pool = engine.pool
        self.running: list[_Running] = []
        for i in range(batch):
            row = pool.alloc(length + 1)  # the context + the slot this step writes
            assert row is not None, "pool too small for the decode batch"
            req = EngineRequest(prompt=(0,) * length, max_new_tokens=steps + 1,
                                output=(0,) * (steps + 1))
            self.running.append(_Running(index=i, req=req, node=None, hit=0, row=row,
                                         length=length, generated=[0]))
        self.length = length

    def once(self) -> float:
        """One ``Engine._decode_step`` of the batch (ms)."""
        engine = self.engine
        t0 = self.timer()
        engine._decode_step(self.running)
        engine._sync()
        ms = (self.timer() - t0) * 1e3
        for r in self.running:
            r.length = self.length
            del r.generated[1:]
        return ms

    def close(self) -> None:
        for r in self.running:
            self.engine.pool.free(r.row)


def measure(prefill: Sequence[tuple[int, int]], decode: Sequence[tuple[int, int]], *,
            repeats: int = 15, warmup: int = 2, seed: int = 0, threads: int = 1,
            clock: str = "cpu") -> list[Point]:
    """Median step times over ``repeats`` passes after ``warmup`` passes, one Point each.

    ``prefill``: (uncached, cached) pairs, uncached >= 1; ``decode``: (batch,
    tokens per request) pairs. Prefill points have batch 1; decode points have
    uncached 0 and cached = context tokens read, the calibrate CSV's meaning.
    ``clock``: ``cpu`` or ``wall`` (module docstring). On cpu only: thread CPU
    time would miss a GPU's work.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError("repeats must be >= 1 and warmup >= 0")
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    if any(u < 1 or c < 0 for u, c in prefill) or any(b < 1 or n < 1 for b, n in decode):
        raise ValueError("prefill needs uncached >= 1, decode needs batch and length >= 1")
    longest = max((c for _, c in prefill), default=0)  # the cached prefix stays allocated
    need = max([max((u for u, _ in prefill), default=0)] + [b * (n + 1) for b, n in decode])
    pool_tokens = -(-(longest + need + 64) // 64) * 64
    rng = random.Random(seed)
    with _threads(threads):
        engine = build_engine("lru", pool_tokens=pool_tokens, device="cpu", seed=seed)
        engine.warmup()
        pre = _PrefillBench(engine, longest, rng, clock)
        times: dict[tuple[str, int, int], list[float]] = {}
        for rep in range(warmup + repeats):
            for u, c in prefill:
                ms = pre.once(u, c)
                if rep >= warmup:
                    times.setdefault(("prefill", u, c), []).append(ms)
            for b, n in decode:
                bench = _DecodeBench(engine, b, n, 1, clock)
                ms = bench.once()
                bench.close()
                if rep >= warmup:
                    times.setdefault(("decode", b, n), []).append(ms)
    points = [Point("prefill", u, c, 1, statistics.median(times[("prefill", u, c)]))
              for u, c in prefill]
    points += [Point("decode", 0, b * (n + 1), b, statistics.median(times[("decode", b, n)]))
               for b, n in decode]
    return points


def write_csv(points: Sequence[Point], path: str | Path) -> Path:
    """``points`` as calibrate's CSV (``uncached,cached,batch,ms,kind``); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for p in points:
            w.writerow((p.uncached, p.cached, p.batch, f"{p.ms:.6f}", p.kind))
    return out


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("build/tiny_costs.csv"))
    ap.add_argument("--repeats", type=int, default=15, help="measured passes (median kept)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured passes first")
    ap.add_argument("--threads", type=int, default=1, help="torch cpu threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--clock", choices=CLOCKS, default="cpu",
                    help="cpu: thread CPU time over the engine's span; wall: the engine's own")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _args(argv)
    t0 = time.perf_counter()
    load0 = os.getloadavg()[0]
    points = measure(prefill_grid(), decode_grid(), repeats=args.repeats, warmup=args.warmup,
                     seed=args.seed, threads=args.threads, clock=args.clock)
    out = write_csv(points, args.out)
    print(f"wrote {len(points)} points to {out} in {time.perf_counter() - t0:.1f} s "
          f"(torch {torch.__version__}, {args.threads} thread(s), {args.clock} clock, "
          f"median of {args.repeats}; load average {load0:.2f} -> {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
