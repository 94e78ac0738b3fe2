"""A full consistency check of a cache and its pool, for tests and the conformance kit.

It walks the whole tree, so it is for tests, not for serving.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import torch

from radix_evict.cache.eviction import is_evictable_leaf
from radix_evict.cache.ownership import CACHED, CALLER, FREE
from radix_evict.cache.radix_cache import RadixCache
from radix_evict.cache.tree import TOKEN_BYTES

OWNER_NAMES = {FREE: "free", CALLER: "a caller's", CACHED: "a cache node's"}


class InvariantError(AssertionError):
    """The cache or its pool is inconsistent."""


def _as_np(slots: Any) -> np.ndarray:
    if isinstance(slots, torch.Tensor):
        return slots.detach().cpu().numpy().astype(np.int64, copy=False)
    return np.asarray(slots, dtype=np.int64)


def check_cache(cache: RadixCache, held_by_callers: Iterable[Any] = ()) -> None:
    """Raise :class:`InvariantError` unless the tree, its sizes and the pool agree.

    ``held_by_callers``: slot arrays that callers allocated and still hold
    (not yet given to the cache). Checked: links, page alignment, lengths,
    lock counts, prefix and history lengths, evictable/protected sizes, the
    eviction candidates, and that every pool slot is free, held by exactly one
    node, or held by a caller (and, for a KVPool, that its owner table agrees).
    """

    def fail(msg: str) -> None:
        raise InvariantError(msg)

    root = cache.root
    P = cache.page_size
    if root.parent is not None or root.lock_ref < 1:
        fail("the root must have no parent and stay locked")
    evictable = protected = 0
    owned: list[np.ndarray] = []
    leaves = set()
    stack = [root]
    count = 0
    while stack:
        x = stack.pop()
        for first, c in x.children.items():
            count += 1
            if c.parent is not x:
                fail(f"{c!r}: parent link broken")
            if c.key_bytes[: P * TOKEN_BYTES] != first:
                fail(f"{c!r}: filed under the wrong first page")
            if c.num_tokens <= 0 or c.num_tokens % P:
                fail(f"{c!r}: {c.num_tokens} tokens is not a positive whole number of pages")
            if len(c.key_bytes) != c.num_tokens * TOKEN_BYTES or len(c.value) * P != c.num_tokens:
                fail(f"{c!r}: key, value and num_tokens disagree")
            if c.prefix_len != x.prefix_len + c.num_tokens:
                fail(
                    f"{c!r}: prefix_len {c.prefix_len} != parent's {x.prefix_len} + {c.num_tokens}"
                )
            if c.history_len < c.prefix_len or (x is not root and x.history_len < c.history_len):
                fail(f"{c!r}: history_len below the branch's depth")
            if c.lock_ref < 0 or (x is not root and c.lock_ref > x.lock_ref):
                fail(f"{c!r}: lock_ref {c.lock_ref} exceeds its parent's {x.lock_ref}")
            if c.value is None:
                fail(f"{c!r}: a host-only node among the device children")
            if c.lock_ref:
                protected += c.num_tokens
            else:
                evictable += c.num_tokens
            if is_evictable_leaf(c):
                leaves.add(id(c))
            owned.append(_as_np(cache.node_slots(c)))
            stack.append(c)
    if getattr(cache, "host_tier", None) is not None:
        count += check_host_tier(cache)
    if count != cache.num_nodes:
        fail(f"num_nodes {cache.num_nodes} but the tree has {count}")
    if (evictable, protected) != (cache.evictable_size(), cache.protected_size()):
        fail(
            f"sizes: tree has evictable={evictable} protected={protected}, cache reports "
            f"{cache.evictable_size()} and {cache.protected_size()}"
        )
    candidates = cache.evictable_leaves()
    if len(candidates) != len(leaves) or {id(c) for c in candidates} != leaves:
        fail("the eviction driver's candidates are not exactly the evictable leaves")
    callers = [_as_np(s) for s in held_by_callers]
    tree_slots = np.concatenate(owned) if owned else np.empty(0, np.int64)
    caller_slots = np.concatenate(callers) if callers else np.empty(0, np.int64)
    every = np.concatenate([tree_slots, caller_slots])
    uniq, counts = np.unique(every, return_counts=True)
    if (counts > 1).any():
        fail(f"slot {int(uniq[counts > 1][0])} is held twice (by nodes and/or callers)")
    pool = cache.pool
    size = getattr(pool, "size", None)
    if size is not None and pool.available_size() + len(every) != size:
        fail(
            f"slot accounting: {pool.available_size()} free + {len(tree_slots)} in the tree + "
            f"{len(caller_slots)} held by callers != pool size {size}"
        )
    free_mask = getattr(pool, "free_mask", None)
    if free_mask is not None and len(every):
        held_but_free = every[free_mask()[every]]
        if len(held_but_free):
            fail(f"slot {int(held_but_free[0])} is held but the pool counts it as free")
    slot_owners = getattr(pool, "slot_owners", None)
    if slot_owners is not None:  # a KVPool: its owner table must say the same
        owners = slot_owners()
        for slots, state, who in (
            (tree_slots, CACHED, "the tree"),
            (caller_slots, CALLER, "a caller"),
        ):
            wrong = slots[owners[slots] != state]
            if len(wrong):
                fail(
                    f"slot {int(wrong[0])} is held by {who} but the pool's owner table "
                    f"says {OWNER_NAMES[int(owners[wrong[0]])]}"
                )
            if int((owners == state).sum()) != len(slots):
                fail(f"the pool's owner table gives {who} slots that {who} does not hold")


def check_host_tier(cache: RadixCache, ledger: bool = True) -> int:
    """Raise :class:`InvariantError` unless the host tier, its pool and its counts agree.

    Checked: host-only nodes sit in ``host_children`` (below a device node or
    another host-only node), hold no device KV, no device children and no lock;
    every host copy is whole pages of the host pool, each page held once and
    tagged as a node's; the host pool's free + held pages are its size; the host
    driver's candidates are exactly the host leaves. With ``ledger``, every
    token's KV is accounted for: on device = inserted + given back fresh KV +
    loaded back - evicted from device - freed by ``reset``; on host only =
    demoted - put back on device - host-evicted - dropped - reset; held on
    host = written - host-evicted - reclaimed - dropped - reset. Returns the
    number of host-only nodes (the caller counts device nodes).
    """

    from radix_evict.cache.eviction import is_host_leaf

    def fail(msg: str) -> None:
        raise InvariantError(msg)

    host = cache.host_tier
    assert host is not None
    P = cache.page_size
    copies: list[np.ndarray] = []
    host_only = host_only_tokens = 0
    leaves: set[int] = set()
    stack = [cache.root]
    while stack:
        x = stack.pop()
        stack.extend(x.children.values())
        if x.host_value is not None:
            if len(x.host_value) * P != x.num_tokens:
                fail(f"{x!r}: its host copy has {len(x.host_value)} pages for "
                     f"{x.num_tokens} tokens")
            copies.append(np.asarray(x.host_value, dtype=np.int64))
        for first, c in (x.host_children or {}).items():
            host_only += 1
            host_only_tokens += c.num_tokens
            if c.parent is not x:
                fail(f"{c!r}: host-only node's parent link broken")
            if c.key_bytes[: P * TOKEN_BYTES] != first:
                fail(f"{c!r}: host-only node filed under the wrong first page")
            if c.value is not None or c.host_value is None:
                fail(f"{c!r}: filed as host-only but value={c.value!r}, host copy "
                     f"{'present' if c.host_value is not None else 'missing'}")
            if c.children:
                fail(f"{c!r}: a host-only node with device children")
            if c.lock_ref or c.host_lock_ref:
                fail(f"{c!r}: host-only node locked (lock_ref {c.lock_ref}, "
                     f"host_lock_ref {c.host_lock_ref}) outside a load-back")
            if c.prefix_len != x.prefix_len + c.num_tokens:
                fail(f"{c!r}: prefix_len {c.prefix_len} != parent's {x.prefix_len} + "
                     f"{c.num_tokens}")
            if is_host_leaf(c):
                leaves.add(id(c))
            stack.append(c)
    held = np.concatenate(copies) if copies else np.empty(0, np.int64)
    uniq, counts = np.unique(held, return_counts=True)
    if (counts > 1).any():
        fail(f"host page {int(uniq[counts > 1][0])} is held by two nodes")
    pool = host.pool
    if pool.available_size() + len(held) * P != host.size:
        fail(f"host accounting: {pool.available_size()} free + {len(held) * P} held != "
             f"host size {host.size}")
    owners = pool.owners.states()
    if len(held) and (owners[held] != CACHED).any():
        fail(f"host page {int(held[owners[held] != CACHED][0])} is held by a node but the "
             "host pool's owner table disagrees")
    if int((owners == CACHED).sum()) != len(held):
        fail("the host pool's owner table gives nodes pages that no node holds")
    if host_only_tokens != host.host_only_tokens:
        fail(f"host-only tokens: the tree has {host_only_tokens}, the tier counts "
             f"{host.host_only_tokens}")
    candidates = host.candidates()
    if {id(c) for c in candidates} != leaves or len(candidates) != len(leaves):
        fail("the host driver's candidates are not exactly the host leaves")
    if ledger:
        st, hs = cache.stats, host.stats
        on_device = (st.inserted_tokens + hs.unevicted_tokens + hs.loaded_tokens
                     - st.evicted_tokens - st.reset_tokens)
        if on_device != cache.total_size():
            fail(f"device ledger: inserted {st.inserted_tokens} + fresh {hs.unevicted_tokens} + "
                 f"loaded {hs.loaded_tokens} - evicted {st.evicted_tokens} - reset "
                 f"{st.reset_tokens} = {on_device}, but the device holds {cache.total_size()}")
        only = (hs.demoted_tokens - hs.unevicted_tokens - hs.loaded_tokens - hs.evicted_tokens
                - hs.dropped_tokens - hs.reset_host_only_tokens)
        if only != host_only_tokens:
            fail(f"host-only ledger: demoted {hs.demoted_tokens} - put back "
                 f"{hs.unevicted_tokens + hs.loaded_tokens} - evicted {hs.evicted_tokens} - "
                 f"dropped {hs.dropped_tokens} - reset {hs.reset_host_only_tokens} = {only}, "
                 f"but {host_only_tokens} are host-only")
        kept = (hs.written_tokens - hs.evicted_tokens - hs.reclaimed_tokens - hs.dropped_tokens
                - hs.reset_held_tokens)
        if kept != len(held) * P:
            fail(f"host ledger: written {hs.written_tokens} - evicted {hs.evicted_tokens} - "
                 f"reclaimed {hs.reclaimed_tokens} - dropped {hs.dropped_tokens} - reset "
                 f"{hs.reset_held_tokens} = {kept}, but the host holds {len(held) * P}")
    return host_only
