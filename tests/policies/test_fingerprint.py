"""Prefix fingerprints equal their definition, whatever the token values and lengths.

The fingerprint is ``n`` with ``sum t_j * B^(n-1-j) mod p`` for two (B, p)
pairs (``policies/fingerprint.py``). Its values are part of a replay's result
where a policy hashes them (a sketch's counters collide by value), so the
fast arithmetic is held to the definition computed with Python integers.
"""

from __future__ import annotations

import numpy as np
import pytest

from radix_evict.policies import fingerprint
from radix_evict.policies.fingerprint import PrefixFingerprints, tokens_fingerprint


def by_definition(tokens: list[int]) -> int:
    """The fingerprint from its definition, in Python integers."""
    hashes = []
    for base, prime in zip(fingerprint._BASES, fingerprint._PRIMES, strict=True):
        h = 0
        for t in tokens:
            h = (h * base + t) % prime
        hashes.append(h)
    return len(tokens) << 62 | hashes[0] << 31 | hashes[1]


@pytest.mark.parametrize("n", [0, 1, 2, 7, 512, 1000, 4099])
@pytest.mark.parametrize(
    "low, high",
    [(0, 50_000), (0, 2**31 - 1), (-(2**63), 2**63 - 1)],
    ids=["token-ids", "up-to-the-primes", "any-int64"],
)
def test_fingerprint_equals_its_definition(n: int, low: int, high: int) -> None:
    rng = np.random.default_rng(n)
    tokens = rng.integers(low, high, n, dtype=np.int64, endpoint=True)
    assert tokens_fingerprint(tokens) == by_definition(tokens.tolist())


def test_values_at_the_primes_edges() -> None:
    edges = [p + d for p in fingerprint._PRIMES for d in (-1, 0, 1)]
    tokens = np.asarray([*edges, 0, -1, 2**63 - 1, -(2**63)], dtype=np.int64)
    assert tokens_fingerprint(tokens) == by_definition(tokens.tolist())


def test_extending_is_hashing_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split invariance: the prefix's fingerprint extended by the rest is the whole's, also
    where a key is summed in pieces (the piece size made small to reach that path)."""
    monkeypatch.setattr(fingerprint, "_SUM_CHUNK", 100)
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 2**40, 1234, dtype=np.int64)
    whole = tokens_fingerprint(tokens)
    assert whole == by_definition(tokens.tolist())
    fps = PrefixFingerprints()
    for cut in (0, 1, 99, 100, 101, 700, 1234):
        head = fps.extend(0, tokens[:cut])
        assert fps.extend(head, tokens[cut:]) == whole, cut


def test_extending_by_more_lengths_than_it_remembers(monkeypatch: pytest.MonkeyPatch) -> None:
    """B^n is kept for a bounded number of lengths (a page-1 replay may bring a new length per
    node); lengths past that bound are computed each time and extend just as well."""
    monkeypatch.setattr(fingerprint, "_FORWARD_MEMO", 5)
    rng = np.random.default_rng(11)
    tokens = rng.integers(0, 2**31, 200, dtype=np.int64)
    fps = PrefixFingerprints()
    h, at = 0, 0
    for step in range(1, 20):  # pieces of 1, 2, ..., 19 tokens: 19 distinct lengths
        h = fps.extend(h, tokens[at : at + step])
        at += step
        assert h == by_definition(tokens[:at].tolist()), step
    assert all(len(p._forward) <= 5 for p in fps._powers)
