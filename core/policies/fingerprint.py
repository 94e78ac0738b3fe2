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
a few vectorised passes over its own tokens, once (a node object ends the same
prefix for its whole life: a split hands the head to a new node). The passes
multiply, shift and mask, never divide (both primes are ``2**31 - c``): stateful
policies fingerprint every node they see, and numpy's int64 division made this
half of an ARC replay's time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from radix_evict.cache.tree import TreeNode

Fingerprint = int

# Both primes are 2**31 - c (c = 1 and 19): a product of two residues reduces modulo one
# with a shift, a mask and a multiply by c (no division), and the sums stay in int64.
_PRIMES = (2_147_483_647, 2_147_483_629)
_BASES = (1_000_003, 972_663_749)
_LOW31 = 2**31 - 1
_BELOW_BOTH = min(_PRIMES)  # tokens below this are residues of both primes as they are
# Terms reduced that way are below 20 * 2**31, so int64 sums hold 2**27 of them; longer
# keys are summed in pieces of this many tokens.
_SUM_CHUNK = 2**26
# Lengths whose B^n a _Powers remembers: a page-aligned replay has few distinct node lengths,
# a page-1 one may have a new length per node; past this many, B^n is computed, not kept.
_FORWARD_MEMO = 4096


class _Powers:
    """One (base, prime) pair: ``B^-k mod p`` for k = 0, 1, ..., grown by doubling as
    longer keys come.

    Inverse powers so that the table is read forwards: ``sum t_j * B^(n-1-j)`` is
    ``B^(n-1) * sum t_j * B^-j`` (mod p).
    """

    def __init__(self, base: int, prime: int) -> None:
        self.base, self.prime = base, prime
        self.fold = 2**31 - prime  # 2**31 = fold (mod p)
        self.inverse = pow(base, -1, prime)
        self.table = np.ones(1, dtype=np.int64)
        self._forward: dict[int, int] = {}  # n -> B^n mod p: node lengths repeat (whole pages)

    def forward(self, n: int) -> int:
        """``B^n mod p``, memoised for the first :data:`_FORWARD_MEMO` lengths asked."""
        got = self._forward.get(n)
        if got is None:
            got = pow(self.base, n, self.prime)
            if len(self._forward) < _FORWARD_MEMO:
                self._forward[n] = got
        return got

    def upto(self, n: int) -> np.ndarray:
        t = self.table
        while len(t) < n:
            step = pow(self.inverse, len(t), self.prime)
            t = np.concatenate([t, t * step % self.prime])
        self.table = t
        return t


def _poly(residues: np.ndarray, powers: _Powers) -> int:
    """``sum t_j * B^(n-1-j) mod p`` of ``residues`` (int64 values in ``[0, p)``)."""
    n = len(residues)
    if n == 0:
        return 0
    p = powers.prime
    terms = residues * powers.upto(n)[:n]  # each below p**2 < 2**62
    high = terms >> 31
    terms &= _LOW31
    if powers.fold != 1:
        high *= powers.fold
    terms += high  # = the product (mod p), below 20 * 2**31
    if n <= _SUM_CHUNK:
        total = int(terms.sum())
    else:
        total = sum(int(terms[i : i + _SUM_CHUNK].sum()) for i in range(0, n, _SUM_CHUNK))
    return total % p * powers.forward(n - 1) % p


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
        length, h1, h2 = fp >> 62, (fp >> 31) & _LOW31, fp & _LOW31
        (q1, q2), (w1, w2) = _PRIMES, self._powers
        # token ids are below both primes but for unusual workloads: reduce those first
        big = n > 0 and (int(tokens.min()) < 0 or int(tokens.max()) >= _BELOW_BOTH)
        h1 = (h1 * w1.forward(n) + _poly(tokens % q1 if big else tokens, w1)) % q1
        h2 = (h2 * w2.forward(n) + _poly(tokens % q2 if big else tokens, w2)) % q2
        return (length + n) << 62 | h1 << 31 | h2


__all__ = ["Fingerprint", "PrefixFingerprints", "tokens_fingerprint"]
