"""How far a hint-aware policy may trust its hints, measured from what comes back.

A policy demotes (or protects) a node because a hint said so. Whether that was
right shows later: a demoted leaf that a lookup reaches, or whose branch is
inserted again after its eviction (a *ghost* returning), was not dead. The same
ghosts measure how often the leaves lru would have evicted anyway come back.
Trust is how much better the hinted victims are than those:

    trust = clip(1 - flagged_return_rate / plain_return_rate, 0, 1)

so correct hints earn trust 1, hints no better than lru's own victims earn 0
(the policy is then lru, exactly), and hostile hints lose it as fast as their
victims come back. Priors (a few pseudo-evictions each) keep the first
decisions near full trust for hints and a typical return rate for lru.

A branch is keyed by where a leaf starts (its parent's prefix length) and its
first tokens: a prefix that comes back after its node was evicted starts at the
same place with the same tokens, however the tree was split meanwhile.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radix_evict import TreeNode

KEY_BYTES = 64  # the first 8 tokens of a leaf identify its branch


def branch_key(node: TreeNode) -> tuple[int, bytes]:
    """Where ``node``'s tokens start, and the first of them."""
    return (node.prefix_len - node.num_tokens, node.key_bytes[:KEY_BYTES])


class Trust:
    """Return rates of flagged and plain victims, and the trust they give (module docstring)."""

    def __init__(self, ghosts: int, prior_flagged: tuple[float, float] = (0.0, 4.0),
                 prior_plain: tuple[float, float] = (1.0, 4.0)) -> None:
        self.capacity = ghosts
        self.ghosts: OrderedDict[tuple[int, bytes], bool] = OrderedDict()  # key -> flagged
        self.flagged_back, self.flagged_out = prior_flagged
        self.plain_back, self.plain_out = prior_plain
        self.value = self._compute()

    def _compute(self) -> float:
        plain = self.plain_back / self.plain_out
        flagged = self.flagged_back / self.flagged_out
        if plain <= 0:
            return 0.0
        return min(1.0, max(0.0, 1.0 - flagged / plain))

    def evicted(self, node: TreeNode, flagged: bool) -> None:
        """A leaf left the cache; remember its branch."""
        if flagged:
            self.flagged_out += 1
        else:
            self.plain_out += 1
        if self.capacity:
            key = branch_key(node)
            self.ghosts[key] = flagged
            self.ghosts.move_to_end(key)
            if len(self.ghosts) > self.capacity:
                self.ghosts.popitem(last=False)
        self.value = self._compute()

    def inserted(self, node: TreeNode) -> None:
        """A new leaf: if its branch was evicted before, that eviction was a mistake."""
        if not self.ghosts:
            return
        flagged = self.ghosts.pop(branch_key(node), None)
        if flagged is None:
            return
        if flagged:
            self.flagged_back += 1
        else:
            self.plain_back += 1
        self.value = self._compute()

    def flagged_reused(self) -> None:
        """A flagged leaf was reached by a lookup before it was evicted: the hint was wrong."""
        self.flagged_back += 1
        self.flagged_out += 1
        self.value = self._compute()
