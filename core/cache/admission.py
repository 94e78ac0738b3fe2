"""Admission into the host tier: which backups a host tier writes at all.

Every device-to-host copy costs PCIe bandwidth that the GPU's prefills share
(docs/hints.md, "Admission"). SGLang's write policies decide by a node's
``hit_count`` alone; an *admission policy* is a second filter the host tier
asks before each backup it would otherwise write (an insert's candidate under
``write_through`` / ``write_through_selective``, a device victim under
``write_back``). A rejected candidate stays where it is (on device only, or,
under ``write_back``, leaves the tree). The un-backed ancestors of an
admitted node are written with it, as the write policies always do.

Without an admission policy the host tier asks nothing (one attribute test
per batch of backups): every decision is the write policy's.

- ``selective``: SGLang 0.5.23's ``write_through_selective`` rule as a filter:
  a node is written once its ``hit_count`` reaches ``threshold`` (2), the
  count an insert raises on every node it walks past its ``inserted_len``
  (``unified_tree_core.py`` 1104-1122; the threshold ``init_hicache`` sets,
  ``unified_radix_cache.py`` 558-560). Under ``write_through`` it writes
  exactly what ``write_through_selective`` writes (tested).
- ``tinylfu``: a TinyLFU frequency filter (Einziger, Friedman & Manes, ACM
  TOS 2017; the frequency sketch NVIDIA Dynamo's KV block manager admits
  by): a count-min sketch of how often each prefix was offered for backup,
  halved every ``sample`` offers so old popularity fades; a candidate is
  written once its estimate reaches ``min_count``. A prefix is identified by
  where it starts and its first tokens, so one that comes back after its node
  was evicted counts as the same.
"""

from __future__ import annotations

import zlib
from typing import Any, ClassVar

from radix_evict.cache.tree import TreeNode

__all__ = ["ADMISSION_POLICIES", "AdmissionPolicy", "SelectiveAdmission",
           "TinyLFUAdmission", "admission_policy"]

KEY_BYTES = 64  # first 8 tokens


class AdmissionPolicy:
    """Decides whether the host tier writes a backup of ``node``; counts its decisions."""

    name: ClassVar[str] = ""

    def __init__(self) -> None:
        self.admitted_nodes = 0
        self.rejected_nodes = 0
        self.rejected_tokens = 0

    def admits(self, node: TreeNode) -> bool:
        """The decision, counted (subclasses give :meth:`admit`)."""
        if self.admit(node):
            self.admitted_nodes += 1
            return True
        self.rejected_nodes += 1
        self.rejected_tokens += node.num_tokens
        return False

    def admit(self, node: TreeNode) -> bool:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"admission": self.name}

    def counts(self) -> dict[str, int]:
        return {"admission_admitted_nodes": self.admitted_nodes,
                "admission_rejected_nodes": self.rejected_nodes,
                "admission_rejected_tokens": self.rejected_tokens}


class SelectiveAdmission(AdmissionPolicy):
    """SGLang's ``write_through_selective``: write once ``hit_count >= threshold``."""

    name = "selective"

    def __init__(self, threshold: int = 2) -> None:
        super().__init__()
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
            raise ValueError(f"admission selective: threshold must be an integer >= 1, "
                             f"got {threshold!r}")
        self.threshold = threshold

    def admit(self, node: TreeNode) -> bool:
        return node.hit_count >= self.threshold

    def describe(self) -> dict[str, Any]:
        return {"admission": self.name, "threshold": self.threshold}


class TinyLFUAdmission(AdmissionPolicy):
    """A count-min sketch of backup offers per prefix; write at ``min_count`` (module docstring)."""

    name = "tinylfu"
    ROWS = 4

    def __init__(self, min_count: int = 2, width: int = 1 << 16, sample: int = 1 << 18) -> None:
        super().__init__()
        for key, v, low in (("min_count", min_count, 1), ("width", width, 16),
                            ("sample", sample, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"admission tinylfu: {key} must be an integer >= {low}, "
                                 f"got {v!r}")
        self.min_count = min_count
        self.width = width
        self.sample = sample
        self.table = [[0] * width for _ in range(self.ROWS)]
        self.offers = 0

    def _slots(self, node: TreeNode) -> list[int]:
        start = node.prefix_len - node.num_tokens
        h = zlib.crc32(node.key_bytes[:KEY_BYTES], start & 0xFFFFFFFF)
        w = self.width
        return [((h >> (8 * r)) ^ (h * (2 * r + 1))) % w for r in range(self.ROWS)]

    def estimate(self, node: TreeNode) -> int:
        """How often ``node``'s prefix was offered (an overestimate, never under)."""
        return min(row[i] for row, i in zip(self.table, self._slots(node), strict=True))

    def admit(self, node: TreeNode) -> bool:
        slots = self._slots(node)
        est = min(row[i] for row, i in zip(self.table, slots, strict=True)) + 1
        for row, i in zip(self.table, slots, strict=True):
            if row[i] < est:  # conservative update: raise only the minimum counters
                row[i] = est
        self.offers += 1
        if self.offers >= self.sample:
            self._age()
        return est >= self.min_count

    def _age(self) -> None:
        self.offers = 0
        for row in self.table:
            row[:] = [c >> 1 for c in row]

    def describe(self) -> dict[str, Any]:
        return {"admission": self.name, "min_count": self.min_count, "width": self.width,
                "sample": self.sample}


ADMISSION_POLICIES: dict[str, type[AdmissionPolicy]] = {
    "selective": SelectiveAdmission,
    "tinylfu": TinyLFUAdmission,
}


def admission_policy(spec: str | AdmissionPolicy | None,
                     config: dict[str, Any] | None = None) -> AdmissionPolicy | None:
    """An admission policy from a name (with keyword ``config``) or an object; None: none."""
    if spec is None or isinstance(spec, AdmissionPolicy):
        if config:
            raise ValueError("host tier: admission_config is only for an admission policy "
                             "given by name")
        return spec
    cls = ADMISSION_POLICIES.get(spec) if isinstance(spec, str) else None
    if cls is None:
        raise ValueError(f"host tier: admission {spec!r} is not one of "
                         f"{', '.join(ADMISSION_POLICIES)}")
    try:
        return cls(**(config or {}))
    except TypeError as e:
        raise ValueError(f"host tier: admission {spec!r}: bad config {config!r} ({e})") from None
