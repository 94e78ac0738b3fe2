"""What the host tier's copies cost the timed server: load-backs and blocking writes.

With a host tier (``docs/hicache.md``), a load-back overlaps the next
prefill layer by layer, and write_back's writes block the eviction that
makes them (write-through's go on a side stream, off the critical path).
:class:`HostCopies` counts the tokens copied since the last step and turns
them into milliseconds on the cost model's ``[transfer]`` table; the prefill
and decode steps (``prefill.py``, ``decode.py``) charge them.
"""

from __future__ import annotations

from radix_evict.cache.host_tier import HostTier
from radix_evict.sim.timed.cost import CostModel

__all__ = ["HostCopies"]


class HostCopies:
    """The host copies since the last step, as (load-back ms, blocking write ms)."""

    __slots__ = ("charge_writes", "cost", "host", "loaded_seen", "written_seen")

    def __init__(self, host: HostTier, cost: CostModel) -> None:
        self.host, self.cost = host, cost
        self.charge_writes = host.write_back  # write-through's writes do not block
        self.loaded_seen = self.written_seen = 0
        cost.transfer_ms(0)  # a cost model without a [transfer] table fails here, named

    def since_last_step(self) -> tuple[float, float]:
        """(load-back ms, blocking write ms) of the host copies since the last step."""
        st = self.host.stats
        loads = st.loaded_tokens - self.loaded_seen
        self.loaded_seen = st.loaded_tokens
        writes = 0
        if self.charge_writes:
            writes = st.written_tokens - self.written_seen
            self.written_seen = st.written_tokens
        return self.cost.transfer_ms(loads), self.cost.transfer_ms(writes)
