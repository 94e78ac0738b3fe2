"""``learned`` never reads the future: change a trace after request k, and every
decision it made before request k arrives stays the same.

Two traces share their first K requests and differ afterwards (other blocks,
other lengths). Each is replayed through a fresh ``learned`` policy that records
every victim (a hash of the prefix it ended, and its size). At the
moment request K arrives, both runs must have evicted the same prefixes in the
same order, scored them identically, and trained the same model. The same
check on Belady's oracle, which does read the future, fails: the test can tell.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from learned_testing import conversation_rows, write_trace
from radix_evict_learned import LearnedConfig, LearnedPolicy

from radix_evict.policies.fingerprint import PrefixFingerprints
from radix_evict.sim.oracle import OraclePolicy, oracle_workload
from radix_evict.sim.replay import replay
from radix_evict.sim.workloads.base import Event, Workload
from radix_evict.sim.workloads.trace import load_trace

K = 250
N = 500
BLOCK = 16
POOL = 2_400  # tokens: far fewer than the trace's working set, so it evicts from early on
CONFIG = {"warmup": 20, "batch": 4, "learning_rate": 0.5, "horizon": 0.5}


class _Stop(Workload):
    """``inner`` whose events note, as request ``k`` arrives, what the policy has done."""

    def __init__(self, inner: Workload, k: int, snap: Any) -> None:
        self.inner, self.k, self.snap = inner, k, snap
        self.name, self.seed = inner.name, inner.seed
        self.params = inner.params
        self.default_pool_tokens = inner.default_pool_tokens
        self.taken: Any = None

    @property
    def num_requests(self) -> int:
        return self.inner.num_requests

    def growth_samples(self) -> Any:
        return self.inner.growth_samples()

    def stats(self) -> Any:
        return self.inner.stats()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def events(self) -> Iterator[Event]:
        for ev in self.inner.events():
            if ev.kind == "arrive" and ev.request.rid == f"r{self.k}" and self.taken is None:
                self.taken = self.snap()
            yield ev


def _traces(tmp_path: Path) -> tuple[Any, Any]:
    """Two traces equal up to request K, then other blocks and other lengths.

    Arrival times stay those of the first trace, so request K arrives at the
    same point in both; both end with the same request, which holds the
    largest hash id, because the trace reader numbers output tokens past it.
    """
    a = conversation_rows(N, seed=1, block=BLOCK)
    other = conversation_rows(N, seed=2, block=BLOCK)
    b = a[:K] + [
        {**o, "timestamp": r["timestamp"],
         "hash_ids": [h + 10_000 if h else 0 for h in o["hash_ids"]],  # type: ignore[attr-defined]
         "output_length": int(o["output_length"]) + 7}  # type: ignore[call-overload]
        for r, o in zip(a[K:], other[K:], strict=True)
    ]
    last = {"timestamp": int(a[-1]["timestamp"]) + 1,  # type: ignore[call-overload]
            "input_length": BLOCK, "output_length": 1, "hash_ids": [99_999]}
    a, b = [*a, last], [*b, last]
    assert a[:K] == b[:K] and a[K:] != b[K:]
    return (load_trace(write_trace(tmp_path / "a.jsonl", a), block_size=BLOCK),
            load_trace(write_trace(tmp_path / "b.jsonl", b), block_size=BLOCK))


def _learned_run(workload: Any) -> tuple[Any, list[Any]]:
    policy = LearnedPolicy(LearnedConfig.model_validate(CONFIG))
    policy.decisions = []

    def snap() -> Any:
        assert policy.decisions is not None
        return (list(policy.decisions), list(policy.model.w), policy.model.bias,
                policy.model.labels, policy.inflation)

    wrapped = _Stop(workload, K, snap)
    replay(wrapped, policy, pool_tokens=POOL, page_size=BLOCK, timeline_points=0)
    assert policy.decisions is not None
    return wrapped.taken, policy.decisions


def test_decisions_up_to_k_do_not_depend_on_the_future(tmp_path: Path) -> None:
    a, b = _traces(tmp_path)
    (dec_a, w_a, bias_a, labels_a, clock_a), all_a = _learned_run(a)
    (dec_b, w_b, bias_b, labels_b, clock_b), all_b = _learned_run(b)
    assert len(dec_a) > 100, "the test needs evictions before request K"
    assert labels_a > 50, "and a model that has learned from labels by then"
    assert any(w_a), "with weights that moved"
    assert dec_a == dec_b  # the same victims, in the same order
    assert (w_a, bias_a, labels_a, clock_a) == (w_b, bias_b, labels_b, clock_b)
    assert all_a != all_b  # afterwards the futures differ, and so do the decisions


class _RecordingOracle(OraclePolicy):
    def __init__(self, future: Any) -> None:
        super().__init__(future)
        self.fp = PrefixFingerprints()
        self.decisions: list[Any] = []

    def on_evict(self, node: Any) -> None:
        self.decisions.append((self.fp.of(node), node.num_tokens))
        self.fp.forget(node)
        super().on_evict(node)


def _oracle_run(workload: Any) -> Any:
    wrapped, oracle = oracle_workload(workload, BLOCK)
    rec = _RecordingOracle(oracle.future)
    wrapped.oracle = rec  # type: ignore[attr-defined]  # its clock drives our recorder
    stop = _Stop(wrapped, K, lambda: list(rec.decisions))
    replay(stop, rec, pool_tokens=POOL, page_size=BLOCK, timeline_points=0)
    return stop.taken


def test_the_check_catches_a_policy_that_reads_the_future(tmp_path: Path) -> None:
    a, b = _traces(tmp_path)
    assert _oracle_run(a) != _oracle_run(b)
