"""A stable fingerprint of the token prefix a node ends: for ghost entries and sketches.

A stateful policy remembers prefixes after their nodes are gone (an evicted
prefix that comes back is a *ghost hit*), or counts them in a sketch. It
needs a key that depends on the tokens alone, not on how the tree happens to
be cut into nodes: a prefix inserted again after its eviction, or a node
split in two, must give the same key for the same tokens.

The fingerprint of tokens ``t_0 .. t_{n-1}`` is ``n`` together with two
polynomial hashes ``sum t_j * B^(n-1-j) mod p`` (two 31-bit primes, so 62
bits in all). A polynomial hash extends: the prefix through a node is its
parent's hash times ``B^len`` plus the node's own, so each node's key costs
one vectorised pass over its own tokens, once (a node object ends the same
prefix for its whole life: a split hands the head to a new node).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from radix_evict.cache.tree import TreeNode

Fingerprint = int

_PRIMES = (2_147_483_647, 2_147_483_629)  # below 2**31: products of two residues fit int64
_BASES = (1_000_003, 972_663_749)


class _Powers:
    """``B^k mod p`` for k = 0, 1, ..., grown by doubling as longer keys come."""

    def __init__(self, base: int, prime: int) -> None:
        self.base, self.prime = base, prime
        self.table = np.ones(1, dtype=np.int64)

    def upto(self, n: int) -> np.ndarray:
        t = self.table
        while len(t) < n:
            step = pow(self.base, len(t), self.prime)
            t = np.concatenate([t, t * step % self.prime])
        self.table = t
        return t


def _poly(tokens: np.ndarray, powers: _Powers) -> int:
    """``sum t_j * B^(n-1-j) mod p`` of ``tokens`` (any int64 values)."""
    n = len(tokens)
    if n == 0:
        return 0
    p = powers.prime
    table = powers.upto(n)[n - 1 :: -1]
    return int((tokens % p * table % p).sum() % p)


def tokens_fingerprint(tokens: np.ndarray) -> Fingerprint:
    """The fingerprint of a whole token sequence (what :meth:`PrefixFingerprints.of` gives)."""
    return PrefixFingerprints().extend(0, np.asarray(tokens, dtype=np.int64))


class PrefixFingerprints:
    """Fingerprints of the prefixes that nodes end, memoised per node.

    ``of(node)`` works for any node in the tree, and for a node already
    evicted if it was asked for while the node was in the tree (an
    ``on_evict`` callback runs before the node leaves, so it always can).
    Call ``forget(node)`` once the node is gone for good, to drop the memo.
    """

    def __init__(self) -> None:
        self._powers = tuple(_Powers(b, p) for b, p in zip(_BASES, _PRIMES, strict=True))
        self._memo: dict[TreeNode, Fingerprint] = {}

    def of(self, node: TreeNode) -> Fingerprint:
        memo = self._memo
        got = memo.get(node)
        if got is not None:
            return got
        chain: list[TreeNode] = []
        x = node
        while x not in memo:
            parent = x.parent
            if parent is None:
                if x.key_bytes:  # no root: a node that left the tree before it was asked for
                    raise ValueError("fingerprint of a node that left the tree before it "
                                     "was taken (take it in on_evict at the latest)")
                break  # the root ends the empty prefix
            chain.append(x)
            x = parent
        fp = memo.get(x, 0)
        for y in reversed(chain):
            fp = self.extend(fp, np.frombuffer(y.key_bytes, dtype=np.int64))
            memo[y] = fp
        return fp

    def forget(self, node: TreeNode) -> None:
        self._memo.pop(node, None)

    def extend(self, fp: Fingerprint, tokens: np.ndarray) -> Fingerprint:
        """The fingerprint of the prefix ``fp`` stands for, followed by ``tokens``."""
        n = len(tokens)
        length, h1, h2 = fp >> 62, (fp >> 31) & (2**31 - 1), fp & (2**31 - 1)
        (q1, q2), (w1, w2) = _PRIMES, self._powers
        h1 = (h1 * pow(w1.base, n, q1) + _poly(tokens, w1)) % q1
        h2 = (h2 * pow(w2.base, n, q2) + _poly(tokens, w2)) % q2
        return (length + n) << 62 | h1 << 31 | h2


__all__ = ["Fingerprint", "PrefixFingerprints", "tokens_fingerprint"]
