"""Pool-size curves in one pass: lru's hit rate at every pool size from one replay.

See :mod:`radix_evict.sim.curve.stack` for how, and docs/pool-curve.md for why
it is exact. Public: :func:`pool_curve`, :class:`PoolCurve`, :class:`CurvePoint`.
"""

from radix_evict.sim.curve.run import CURVE, REPLAY, CurvePoint, PoolCurve, pool_curve, round_sizes

__all__ = ["CURVE", "REPLAY", "CurvePoint", "PoolCurve", "pool_curve", "round_sizes"]
