"""A failed run is the policy's only when the policy raised (issue #36).

Every crash of the timed replay used to read "policy 'lru' from radix-evict
... failed:", blaming the policy for the input or for radix-evict's own
bug. Now a failure is blamed on the policy for a PolicyError or an exception
that passed through one of the policy's methods (a lifecycle callback the
cache lets through); a refusal of the input is the input's, anything else
radix-evict's.
"""

from __future__ import annotations

from typing import Any

from helpers.timed import ListWorkload, request

from radix_evict import EvictionPolicy, TreeNode
from radix_evict.sim.failures import RunFailure, blame_of, guarded
from radix_evict.sim.replay import replay
from radix_evict.sim.timed.spec import TimingSpec


class Exploding(EvictionPolicy):
    """Recency, and a lifecycle callback that raises on the first insert."""

    name = "exploding"

    def score(self, node: TreeNode) -> Any:
        return node.last_access_time

    def on_insert(self, node: TreeNode) -> None:
        raise ZeroDivisionError("on_insert blew up")


def _run(job: Any, policy: str = "lru") -> RunFailure:
    out = guarded(job, workload="w", label=policy, policy=policy)(None)
    assert isinstance(out, RunFailure)
    return out


def test_a_callback_that_raises_is_the_policys_failure() -> None:
    wl = ListWorkload([request(0, [1, 2, 3], [4], 0.0)])
    f = _run(lambda _p: replay(wl, Exploding()), "exploding")
    assert f.blame == "policy"
    assert "policy 'exploding'" in f.error and "failed: ZeroDivisionError" in f.error


def test_an_input_the_run_cannot_use_is_not_the_policys() -> None:
    wl = ListWorkload([request(0, [], [4], 0.0)])
    f = _run(lambda _p: replay(wl, "lru", timing=TimingSpec()))
    assert f.blame == "input" and f.to_dict()["blame"] == "input"
    assert "input refused" in f.error and "empty prompt" in f.error
    assert "failed:" not in f.error


def test_radix_evicts_own_error_is_not_the_policys() -> None:
    def broken(_p: Any) -> None:
        raise AssertionError("slot accounting is off")

    f = _run(broken)
    assert f.blame == "internal"
    assert "internal error" in f.error and "the policy did not raise it" in f.error
    assert "from radix-evict" not in f.error


def test_blame_reads_the_traceback_not_the_type() -> None:
    try:
        Exploding().on_insert(None)  # type: ignore[arg-type]
    except ZeroDivisionError as exc:
        assert blame_of(exc) == "policy"
    try:
        raise ZeroDivisionError("ours")
    except ZeroDivisionError as exc:
        assert blame_of(exc) == "internal"
