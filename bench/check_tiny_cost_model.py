"""Check the ``tiny-cpu`` cost model: timed-replay TTFT against the tiny decoder's measured TTFT.

The claim: with the ``tiny-cpu`` preset (measured by ``bench/measure_tiny_costs.py``)
the timed replay's TTFT p50 and p90 on the tiny chat workload agree with
``simulate --model tiny``'s measured TTFT within 20%. Like with like: the
engine times TTFT from admission (match, lock, evict, alloc, prefill; no
queueing), one request prefilled at a time; the timed replay runs a closed
loop of one client on one running slot, so its TTFT is each request's
prefill time with no queueing either.

Two clocks for the engine, over the same span: ``wall``, the engine's own
TTFT (what ``simulate --model tiny`` reports, the check's default), and
``cpu``, the thread CPU time of each ``Engine._admit``, which is what
``bench/measure_tiny_costs.py`` measures by default: on a shared machine the
wall figure also counts the time other processes held the core. The load
average is printed so a reader can tell which situation the figures come from.

The two replays do not serve the same token counts, which the verdict
includes: the closed loop of one runs each conversation's turns back to
back, while the engine takes the workload's interleaved order with up to 4
requests running, and caches a request only when it finishes (a request
admitted while another with the same system prompt still decodes misses
it; the timed server caches a prompt after its prefill), and it never
caches an answer's last token (no K/V of it exists). So besides the verdict
the script prints the hit tokens of both replays and a chain of figures on
the engine's own (uncached, cached) token counts: the measuring script run
now on them (is the method faithful to the engine?), the cost model on them
(the fit, plus any drift of a shared machine since the preset was measured),
then the timed replay (its schedule). Each ratio in the chain is one cause.

    .venv/bin/python bench/check_tiny_cost_model.py [--repeat 3] [--seeds 0 1 2]
        [--clock wall|cpu] [--engine-max-running 4] [--arrivals closed|recorded]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest.mock import patch

import numpy as np

from radix_evict.engine import EngineResult, requests_from_workload, run_engine_replay
from radix_evict.engine.loop import Engine, EngineRequest, _Running
from radix_evict.engine.model import TinyConfig
from radix_evict.engine.workload import default_pool_tokens
from radix_evict.sim.configs import resolve_config
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.arrivals import ArrivalSpec
from radix_evict.sim.timed.cost import CostModel, attention_pairs, load_cost_model
from radix_evict.sim.timed.server import SchedulerSpec
from radix_evict.sim.timed.spec import TimingSpec
from radix_evict.sim.workloads.tiny import TINY_PARAMS, tiny_workload

TOLERANCE = 0.20
POLICY = "lru"
CLOCKS = ("wall", "cpu")
ENGINE_MAX_RUNNING = 4  # run_engine_replay's default, which simulate --model tiny uses
# --arrivals: the brief's closed loop of one (each conversation's turns back to back), or
# the workload's own arrival times stretched so far apart that no request ever queues: the
# workload's order, which is the order the engine takes its requests in.
ARRIVALS = {"closed": ArrivalSpec(concurrency=1), "recorded": ArrivalSpec(time_scale=1e3)}


@contextmanager
def _cpu_ttft(into: list[float | None]) -> Iterator[None]:
    """While open, ``into[i]`` gets request ``i``'s thread CPU time in ``Engine._admit`` (ms).

    The same span as the engine's own (wall) TTFT: only the clock differs.
    """
    original = Engine._admit

    def admit(self: Engine, i: int, req: EngineRequest, res: EngineResult) -> _Running | None:
        t0 = time.thread_time()
        r = original(self, i, req, res)
        if r is not None:  # as the engine's: a request that did not fit is tried again
            into[i] = (time.thread_time() - t0) * 1e3
        return r

    with patch.object(Engine, "_admit", admit):
        yield


Pair = tuple[float, float]  # p50, p90 in ms


@dataclass(frozen=True)
class Comparison:
    """One workload's TTFT p50/p90, from the engine's measurement to the timed replay.

    Read down the chain: the engine (both clocks); the measuring script now,
    on the engine's own (uncached, cached) per request (does the method
    reproduce the engine?); the cost model on those same tokens (the fit, and
    any drift of the machine since the preset was measured); the timed replay
    (its own schedule, hence its own hits).
    """

    workload: str
    seed: int
    pool: int
    requests: int
    clock: str  # the engine clock the verdict uses
    wall: Pair
    cpu: Pair
    bench: Pair | None
    model: Pair
    timed: Pair
    engine_hit_rate: float
    timed_hit_rate: float
    same_hits: int  # requests whose hit tokens agree between the two replays
    near_hits: int  # ... within one token (the engine never caches an answer's last token)

    def engine(self, clock: str | None = None) -> Pair:
        return self.wall if (clock or self.clock) == "wall" else self.cpu

    def ratios(self, clock: str | None = None) -> Pair:
        """Timed over measured, p50 and p90 (the verdict's clock unless one is named)."""
        e = self.engine(clock)
        return self.timed[0] / e[0], self.timed[1] / e[1]

    def passed(self, clock: str | None = None) -> bool:
        return all(abs(r - 1) <= TOLERANCE for r in self.ratios(clock))


def _percentiles(values: Sequence[float]) -> Pair:
    return float(np.percentile(values, 50)), float(np.percentile(values, 90))


def _bench_now(tokens: Sequence[tuple[int, int]], repeats: int) -> Pair:
    """``bench/measure_tiny_costs.py`` (cpu clock) on these (uncached, cached) pairs now."""
    name = "measure_tiny_costs"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).resolve().parent / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    points = mod.measure(list(tokens), [], repeats=repeats, warmup=1, clock="cpu")
    return _percentiles([p.ms for p in points])


def compare(name: str, seed: int, cost: CostModel, repeat: int, clock: str = "wall",
            max_running: int = ENGINE_MAX_RUNNING, bench_repeats: int = 3,
            arrivals: str = "closed") -> Comparison:
    """Engine replay(s) and the timed replay of ``tiny_workload(name, seed)`` under lru.

    With ``repeat`` > 1 the engine's percentiles are the median over the runs
    (the timed replay is deterministic). ``max_running`` is the engine's
    (its default, 4, is what simulate --model tiny runs). ``bench_repeats`` 0
    skips measuring the engine's tokens with the measuring script.
    ``arrivals``: a key of :data:`ARRIVALS`.
    """
    wl = tiny_workload(name, seed=seed)
    requests = requests_from_workload(wl.requests(), vocab_size=TinyConfig().vocab_size)
    pool = default_pool_tokens(requests)  # as core/engine/compare.py, page size 1
    config = resolve_config(wl, POLICY, None).config
    runs: list[EngineResult] = []
    cpu: list[list[float | None]] = []
    for _ in range(repeat):
        cpu.append([None] * len(requests))
        with _cpu_ttft(cpu[-1]):
            runs.append(run_engine_replay(requests, POLICY, config, pool_tokens=pool,
                                          max_running=max_running))
    wall = (statistics.median(r.ttft(50) for r in runs),
            statistics.median(r.ttft(90) for r in runs))
    cpu_pairs = [_percentiles([v for v in c if v is not None]) for c in cpu]
    cpu_pct = (statistics.median(p[0] for p in cpu_pairs),
               statistics.median(p[1] for p in cpu_pairs))
    res = runs[0]
    tokens = [(len(q.prompt) - h, h) for q, h in zip(requests, res.hits, strict=True)
              if h is not None]
    model = _percentiles([cost.prefill_ms(u, attention_pairs(c, u), c) for u, c in tokens])
    bench = _bench_now(tokens, bench_repeats) if bench_repeats > 0 else None
    timed = replay(wl, POLICY, pool_tokens=pool, keep_requests=True, timing=TimingSpec(
        cost_model=cost, arrivals=ARRIVALS[arrivals], scheduler=SchedulerSpec(max_running=1)))
    assert timed.timing is not None and timed.per_request is not None
    if timed.timing.queue_ms.max > 0:
        raise SystemExit(f"{name} seed {seed}: the timed replay queued requests (max "
                         f"{timed.timing.queue_ms.max:.3f} ms): its TTFT is not prefill alone")
    timed_hits = {r.rid: r.hit_tokens for r in timed.per_request}
    rids = [q.rid for q in wl.requests()]
    gaps = [abs(timed_hits[rid] - h) for rid, h in zip(rids, res.hits, strict=True)
            if h is not None and rid in timed_hits]
    return Comparison(
        workload=name, seed=seed, pool=pool, requests=len(requests), clock=clock,
        wall=wall, cpu=cpu_pct, bench=bench, model=model,
        timed=(timed.timing.ttft_ms.p50, timed.timing.ttft_ms.p90),
        engine_hit_rate=res.hit_rate, timed_hit_rate=timed.hit_rate,
        same_hits=sum(g == 0 for g in gaps), near_hits=sum(g <= 1 for g in gaps))


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cost-model", default="tiny-cpu", help="preset name or TOML/JSON file")
    ap.add_argument("--workloads", nargs="*", default=sorted(TINY_PARAMS),
                    help="tiny workloads (default: every one in TINY_PARAMS)")
    ap.add_argument("--seeds", nargs="*", type=int, default=[0],
                    help="workload seeds; seed 0 is what simulate --model tiny runs")
    ap.add_argument("--repeat", type=int, default=3,
                    help="engine replays per workload (median of their percentiles)")
    ap.add_argument("--clock", choices=CLOCKS, default="wall",
                    help="the engine TTFT the verdict uses: wall (the engine's own, as "
                         "simulate --model tiny reports it) or cpu (thread CPU time, same span)")
    ap.add_argument("--engine-max-running", type=int, default=ENGINE_MAX_RUNNING,
                    help="the engine's max_running (1: no request is admitted before the one "
                         "ahead has finished and been cached, as in the timed closed loop)")
    ap.add_argument("--bench-repeats", type=int, default=3,
                    help="repeats of the measuring script on the engine's tokens (0: skip)")
    ap.add_argument("--arrivals", choices=sorted(ARRIVALS), default="closed",
                    help="timed replay: closed (a closed loop of one, the default) or recorded "
                         "(the workload's times stretched x1000: its order, no queueing)")
    return ap.parse_args(argv)


def _line(label: str, pair: Pair, extra: str = "") -> str:
    return f"  {label:<38} p50 {pair[0]:7.2f} ms  p90 {pair[1]:7.2f} ms{extra}"


def _ratio(label: str, num: Pair, den: Pair, extra: str = "") -> str:
    return f"  {label:<38} p50 {num[0] / den[0]:7.3f}     p90 {num[1] / den[1]:7.3f}{extra}"


def report(c: Comparison, cost_name: str) -> None:
    """One workload's block: the chain of figures, where the gap comes from, the verdict."""
    print(f"{c.workload} seed {c.seed}: {c.requests} requests, pool {c.pool:,} tokens, {POLICY}")
    print(_line("engine TTFT, wall (as measured)", c.wall, f"  hit rate {c.engine_hit_rate:.1%}"))
    print(_line("engine TTFT, thread cpu", c.cpu))
    if c.bench is not None:
        print(_line("measuring script now, engine's tokens", c.bench))
    print(_line(f"cost model {cost_name}, engine's tokens", c.model))
    print(_line(f"timed replay ({cost_name})", c.timed, f"  hit rate {c.timed_hit_rate:.1%}"))
    print(f"  hits per request, timed vs engine: {c.same_hits} equal, "
          f"{c.near_hits - c.same_hits} one token apart, "
          f"{c.requests - c.near_hits} further apart (of {c.requests})")
    print("  where a gap comes from:")
    if c.bench is not None:
        print(_ratio("  method: script now / engine cpu", c.bench, c.cpu))
        print(_ratio("  fit + drift: model / script now", c.model, c.bench))
    else:
        print(_ratio("  method + fit + drift: model / engine cpu", c.model, c.cpu))
    print(_ratio("  schedule: timed / model on engine's", c.timed, c.model))
    for clock in CLOCKS:
        r50, r90 = c.ratios(clock)
        mark = "  <- verdict" if clock == c.clock else ""
        verdict = "PASS" if c.passed(clock) else "FAIL"
        print(f"  {'ratio timed / engine ' + clock:<38} p50 {r50:7.3f}     p90 {r90:7.3f}"
              f"  {verdict} (within {TOLERANCE:.0%}){mark}")


def main(argv: Sequence[str] | None = None) -> int:
    """Print one block per workload and seed; exit 1 if the seed-0 chat check fails."""
    args = _args(argv)
    cost = load_cost_model(args.cost_model)
    failed = False
    print(f"load average {_load()} on {os.cpu_count()} cores; verdict on the {args.clock} "
          f"clock; engine percentiles the median of {args.repeat} run(s), engine max_running "
          f"{args.engine_max_running}; timed replay arrivals {args.arrivals}")
    for name in args.workloads:
        for seed in args.seeds:
            c = compare(name, seed, cost, args.repeat, args.clock, args.engine_max_running,
                        args.bench_repeats, args.arrivals)
            report(c, cost.name)
            if name == "chat" and seed == 0:
                failed |= not c.passed()
    print(f"load average {_load()}")
    return 1 if failed else 0


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


if __name__ == "__main__":
    sys.exit(main())
