"""Lifecycle callbacks: what a stateful policy may hear about the tree, and its rules.

A policy whose score is a function of one node's fields needs nothing more.
Policies from the cache literature that beat recency (ARC's ghost lists,
TinyLFU's frequency sketch, adaptive targets) keep history the node does not
carry. Such a policy defines any of these methods; the cache calls each one
only if the policy defines it, decided once when the cache is built, so a
policy that defines none runs exactly the code path it always did:

``on_insert(node)``
    ``insert`` created ``node``, a new leaf; it is linked into the tree and
    about to be offered to the driver.
``on_hit(node)``
    a ``match_prefix`` lookup reached ``node``; called for every matched
    node, root excluded, shallow to deep, after the path is stamped.
    (``insert`` walking an existing node is not a hit: SGLang's ``hit_count``
    counts those; a lookup is a request that wanted the prefix.)
``on_split(head, tail)``
    ``tail`` (the original node object, which keeps its lock handle and the
    prefix it ends) was split after ``head``, a new node that ends a shorter
    prefix; ``head`` inherits what describes the shared prefix.
``on_evict(node)``
    ``node`` is about to leave the tree: it is still linked, so its path and
    :class:`~radix_evict.policies.fingerprint.PrefixFingerprints` of it can be
    read. Its parent is offered afterwards if it becomes a leaf.

:class:`~radix_evict.policies.fingerprint.PrefixFingerprints` gives the stable
fingerprint of the prefix a node ends, for ghost entries and sketches.

The rules that keep the driver exact
------------------------------------
The driver keeps every evictable leaf in a heap under the score it had when
it was last *offered*; it never looks at a leaf again until the cache offers
it anew. The cache offers a node after each of these events: a new leaf
(after ``on_insert``), the last node of a lookup when it is a leaf (after
``on_hit``), the tail of a split (after ``on_split``), a node unlocked to
zero, and a parent left childless by an eviction (after ``on_evict``). So:

1. A callback about node ``X`` may change the score of ``X`` (and, in
   ``on_split``, of ``head`` and ``tail``; in ``on_evict``, of the parent):
   those are re-offered after it.
2. Nothing may change the score of any *other* node: state that many
   nodes' scores read (an adaptive target, a decaying clock, a global
   frequency sketch) makes those scores stale in the heap. Either keep such
   state out of ``score`` (use it to set per-node state when that node's
   own event comes), or set ``volatile_score = True`` and pay a full
   re-score on every ``evict``.
3. Callbacks (and ``score``) must not call back into the cache: a cache
   operation started from one raises :class:`~radix_evict.errors.PolicyError`
   naming the policy, and the interrupted operation is undone (reading sizes
   or ``iter_nodes()`` is fine). One that raises gets its
   error through to the caller and the cache operation is undone, as for a
   ``score()`` that raises: the tree, sizes, pool and candidates are as they
   were (an eviction links its victims back), but the policy's own state is
   then the policy's problem.

The conformance kit checks rule 2 mechanically: after every step of its
random operation sequences, each evictable leaf's score in the heap must
equal a from-scratch ``score()`` of it (``check_cache_invariants``).
"""

from __future__ import annotations

# The callbacks are part of the policy contract (the cache reads them from there).
from radix_evict.policies.contract import (
    CALLBACKS,
    Callbacks,
    NodeCallback,
    SplitCallback,
    callbacks_of,
)

__all__ = ["CALLBACKS", "Callbacks", "NodeCallback", "SplitCallback", "callbacks_of"]
