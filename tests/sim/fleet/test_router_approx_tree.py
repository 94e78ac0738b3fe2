"""sglang-router's approximate tree: worked examples of tree.rs's insert, match and evict rules."""

from __future__ import annotations

import numpy as np

from radix_evict.sim.fleet.routers.approx_tree import ApproxTree, as_key, shared_prefix


def child(tree: ApproxTree, *path: str):  # type: ignore[no-untyped-def]
    """The node reached from the root through the children keyed by ``path``."""
    node = tree.root
    for first in path:
        node = node.children[first]
    return node


def test_shared_prefix_counts_leading_equal_elements() -> None:
    assert shared_prefix("abcdef", "abcxyz") == 3
    assert shared_prefix("abc", "abcdef") == 3
    assert shared_prefix("xbc", "abc") == 0
    assert shared_prefix((1, 2, 3, 4, 5), (1, 2, 3, 9)) == 3
    long = tuple(range(1000))
    assert shared_prefix(long, (*long[:777], -1)) == 777


def test_as_key_keeps_text_and_integer_arrays_and_makes_the_rest_tuples() -> None:
    assert as_key("ab") == "ab"
    prompt = np.array([3, 4], dtype=np.int64)
    assert as_key(prompt) is prompt
    assert as_key([1, 2]) == (1, 2)
    assert as_key(np.array([0.5, 1.5])) == (0.5, 1.5)


def test_array_keys_match_as_tuples_do_and_leaves_own_their_tokens() -> None:
    by_array, by_tuple = ApproxTree(), ApproxTree()
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [7, 8], [1, 2, 3, 4, 5, 6], [1, 2]]
    for tenant, p in enumerate(prompts):
        arr = np.array(p, dtype=np.int64)
        by_array.insert(arr, tenant % 3)
        by_tuple.insert(tuple(p), tenant % 3)
        arr[:] = -1  # the caller's array changing later does not reach the tree
    assert by_array.size == by_tuple.size
    for probe in ([1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 9], [1, 2, 4], [7], [9]):
        assert by_array.prefix_match(np.array(probe)) == by_tuple.prefix_match(tuple(probe))
    assert shared_prefix(np.array([1, 2, 3]), np.array([1, 2, 4, 5])) == 2
    assert shared_prefix(np.array([1, 2]), np.array([1, 2, 4])) == 2
    assert shared_prefix(np.array([], dtype=np.int64), np.array([1])) == 0


def test_insert_splits_a_segment_where_texts_part() -> None:
    tree = ApproxTree()
    tree.insert("hello", 0)
    tree.insert("help", 1)
    upper = child(tree, "h")
    assert upper.text == "hel"
    assert set(upper.tenants) == {0, 1}
    assert child(tree, "h", "l").text == "lo" and set(child(tree, "h", "l").tenants) == {0}
    assert child(tree, "h", "p").text == "p" and set(child(tree, "h", "p").tenants) == {1}
    # tenant 1 passed through "hel" (3) and owns "p" (1); tenant 0 still owns 5
    assert tree.size == {0: 5, 1: 4}


def test_prefix_match_counts_whole_and_partial_segments() -> None:
    tree = ApproxTree()
    tree.insert("hello", 0)
    tree.insert("help", 1)
    assert tree.prefix_match("helicopter") == (0, 3)  # stops after "hel": its last tenant
    assert tree.prefix_match("helper") == (1, 4)  # "hel" + "p"
    assert tree.prefix_match("hellx") == (0, 4)  # partial into "lo" still counts "l"
    # nothing matched: the root's tenant (Rust: DashMap order; a rate of 0 never uses it)
    assert tree.prefix_match("zzz")[1] == 0
    assert tree.prefix_match("")[1] == 0


def test_the_first_tenant_of_a_text_keeps_reporting_it() -> None:
    """last_tenant is set when a node is made and never moved by later inserts (tree.rs:409)."""
    tree = ApproxTree()
    tree.insert("abcd", 0)
    tree.insert("abcd", 1)
    tree.insert("abcd", 1)
    assert tree.prefix_match("abcd") == (0, 4)
    tree.remove_tenant(0)  # a stale cached tenant falls back to one the node still has
    assert tree.prefix_match("abcd") == (1, 4)


def test_one_match_in_eight_refreshes_the_tenants_timestamp() -> None:
    tree = ApproxTree()
    tree.insert("x", 0)  # epoch 0 stamps the new leaf
    node = child(tree, "x")
    for _ in range(7):  # epochs 1..7: no refresh
        tree.prefix_match("x")
    assert node.tenants[0] == 0
    tree.prefix_match("x")  # epoch 8: 8 & 7 == 0
    assert node.tenants[0] == 8


def test_insert_stamps_the_node_it_ends_on_and_passes_others_with_zero() -> None:
    tree = ApproxTree()
    tree.insert("aaaa", 0)  # epoch 0
    tree.insert("aabb", 1)  # split "aa"; tenant 1 passes "aa" with 0; leaf "bb" epoch 1
    assert child(tree, "a").tenants == {0: 0, 1: 0}
    assert child(tree, "a", "b").tenants == {1: 1}
    tree.insert("aa", 1)  # ends on "aa": stamped with epoch 2
    assert child(tree, "a").tenants[1] == 2


def test_evict_by_size_removes_oldest_leaves_until_under_the_limit() -> None:
    tree = ApproxTree()
    tree.insert("aaaa", 0)  # leaf epoch 0
    tree.insert("aabb", 0)  # split: "aa" (copied stamp 0) -> "aa" (0) and "bb" (1)
    tree.insert("cc", 0)  # epoch 2
    assert tree.size[0] == 8
    tree.evict_by_size(4)
    # the lower "aa" (stamp 0) goes, then "bb" (1); the upper "aa" becomes a leaf at
    # stamp 0 but the size is 4 by then; "cc" (2) stays
    assert tree.size[0] == 4
    upper = child(tree, "a")
    assert upper.text == "aa" and not upper.children
    assert child(tree, "c").text == "cc"
    assert tree.prefix_match("aabb") == (0, 2)


def test_eviction_trims_each_tenant_and_passed_through_nodes_go_first() -> None:
    """A node an insert only passed through keeps epoch 0: once a leaf, it is the oldest."""
    tree = ApproxTree()
    tree.insert("shared-prefix-one", 0)  # epoch 0
    tree.insert("shared-prefix-two", 1)  # split at 14; tenant 1 passes "shared-prefix-" at 0
    tree.insert("other", 1)  # epoch 2
    assert tree.size == {0: 17, 1: 22}
    tree.evict_by_size(15)
    # tenant 0 loses "one" (17 -> 14) and stops; tenant 1 loses "two" (22 -> 19), then
    # "shared-prefix-" (its stamp 0, now its leaf: 19 -> 5); "other" stays
    assert tree.size == {0: 14, 1: 5}
    upper = child(tree, "s")
    assert upper.text == "shared-prefix-" and set(upper.tenants) == {0} and not upper.children
    assert tree.prefix_match("shared-prefix-two") == (0, 14)
    assert tree.prefix_match("other") == (1, 5)


def test_token_keys_work_like_text() -> None:
    tree = ApproxTree()
    tree.insert((1, 2, 3, 4), 2)
    tree.insert((1, 2, 9), 3)
    assert tree.prefix_match((1, 2, 3, 4, 5)) == (2, 4)
    assert tree.prefix_match((1, 2, 9, 9)) == (3, 3)
    assert tree.size == {2: 4, 3: 3}


def _evict_as_tree_rs(tree: ApproxTree, max_size: int) -> None:
    """tree.rs:718-821 read literally: every (node, tenant) leaf in the heap, over the limit
    or not (the tree's own evict_by_size leaves out tenants within it: same result)."""
    import heapq

    from radix_evict.sim.fleet.routers.approx_tree import head

    heap, seq, stack = [], 0, [tree.root]
    while stack:
        node = stack.pop()
        stack.extend(node.children.values())
        for tenant, stamp in node.tenants.items():
            if tree._is_leaf_for(node, tenant):
                heap.append((stamp, seq, tenant, node))
                seq += 1
    heapq.heapify(heap)
    while heap:
        _, _, tenant, node = heapq.heappop(heap)
        if tree.size.get(tenant, 0) <= max_size or not tree._is_leaf_for(node, tenant):
            continue
        tree.size[tenant] = max(0, tree.size[tenant] - len(node.text))
        del node.tenants[tenant]
        parent = node.parent
        if parent is None:
            continue
        if not node.children and not node.tenants:
            del parent.children[head(node.text)]
        if tree._is_leaf_for(parent, tenant):
            heapq.heappush(heap, (parent.tenants[tenant], seq, tenant, parent))
            seq += 1


def _dump(tree: ApproxTree) -> list[tuple[str, dict[int, int], list[str]]]:
    out, stack = [], [("", tree.root)]
    while stack:
        path, node = stack.pop()
        here = path + str(node.text)
        out.append((here, dict(node.tenants), sorted(node.children)))
        stack.extend((here, c) for c in node.children.values())
    return sorted(out)


def test_evict_by_size_equals_tree_rs_read_literally_on_random_trees() -> None:
    """Leaving the tenants within the limit out of the heap changes no decision: random
    inserts by four tenants (some under the limit, some over), trimmed both ways, again
    and again, give the same trees, sizes and next matches."""
    rng = np.random.default_rng(7)
    for trial in range(60):
        fast, literal = ApproxTree(), ApproxTree()
        for step in range(200):
            text = "".join(rng.choice(list("abc"), size=int(rng.integers(1, 9))))
            tenant = int(rng.integers(0, 4)) if trial % 2 else int(rng.integers(0, 2)) * 3
            fast.insert(text, tenant)
            literal.insert(text, tenant)
            if step % 25 == 24:
                limit = int(rng.integers(0, 40))
                fast.evict_by_size(limit)
                _evict_as_tree_rs(literal, limit)
                assert fast.size == literal.size
                assert _dump(fast) == _dump(literal), (trial, step)
                probe = "".join(rng.choice(list("abc"), size=5))
                assert fast.prefix_match(probe) == literal.prefix_match(probe)
