"""``session``: lru that evicts the private tail of an ended session first, while that pays.

A client (or a hint model) marks a session's last request
(``RequestContext.session_end``). The nodes that request created or reached
last, when they are leaves, hold its prompt tail and reply: nothing of that
session will ask for them again. ``session`` scores every node as lru does,
``last_access_time``, and an ended session's node ``demotion`` ticks older:

    demotion = trust * horizon * (mean age of lru's victims)

With ``horizon`` 2 such a leaf looks older than anything lru would evict, so it
goes first; with ``trust`` 0 the policy is lru exactly. ``trust``
(:mod:`radix_evict_hints.trust`) compares how often demoted victims come back
(their branch inserted again, or reached while still cached) with how often
lru's own victims do, so wrong or hostile hints turn the demotion off instead
of evicting live prefixes. A shared prefix (a system prompt) that an ending
request walks is marked too, but it is rarely a leaf, and the next request of
another session that reaches it clears the mark.

Scores are fixed in the node's own callbacks (a demotion is computed when the
node is inserted, reached or split), so the driver's heap stays exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from radix_evict import EvictionPolicy, PolicyConfig

from .trust import Trust

if TYPE_CHECKING:
    from radix_evict import TreeNode

AGE_WEIGHT = 1 / 64  # the running mean of lru victims' ages moves this far per eviction


class SessionConfig(PolicyConfig):
    """Keys of the ``session`` policy (strict: unknown keys and coercion are errors)."""

    horizon: float = Field(
        default=2.0, ge=0.0, le=16.0,
        description=("How much older an ended session's node looks, in mean ages of lru's "
                     "victims (0: lru; 1 and more: it goes before lru's victim)."))
    ghosts: int = Field(
        default=65536, ge=0, le=1 << 22,
        description="Evicted branches remembered to check whether hints were right (0: trust "
                    "stays at its prior).")
    adaptive: bool = Field(
        default=True,
        description="Scale the demotion by the measured trust in the hints (false: always "
                    "trust them fully).")


SHARED = object()  # a node's owner once two sessions have touched it


def _ended(node: TreeNode) -> bool:
    ctx: Any = node.context
    return ctx is not None and ctx.session_end is True


class SessionPolicy(EvictionPolicy[SessionConfig]):
    """``last_access_time`` minus a demotion for an ended session's nodes (module docstring)."""

    name = "session"
    uses_context = True

    def __init__(self, config: SessionConfig | None = None) -> None:
        super().__init__(config)
        self._horizon = self.config.horizon
        self._adaptive = self.config.adaptive
        self.trust = Trust(self.config.ghosts)
        self._demotion: dict[TreeNode, float] = {}
        self._flagged: set[TreeNode] = set()
        self._owner: dict[TreeNode, Any] = {}  # the one session that touched it, or SHARED
        self._now = 0.0
        self.mean_age = 0.0  # of lru-order victims, in ticks

    def score(self, node: TreeNode) -> float:
        return node.last_access_time - self._demotion.get(node, 0.0)

    def _touch(self, node: TreeNode, owner: Any = None) -> bool:
        """Note the session touching ``node``; whether the node is still private to it.

        Without a session id only a node the request created counts as private.
        """
        session = getattr(node.context, "session", None)
        if session is None:
            self._owner[node] = SHARED if owner is None else owner
            return owner is not None and owner is not SHARED
        was = self._owner.get(node, session) if owner is None else owner
        self._owner[node] = now = session if was == session else SHARED
        return now is not SHARED

    def _mark(self, node: TreeNode, private: bool) -> None:
        t = node.last_access_time
        if t > self._now:
            self._now = t
        if private and _ended(node):
            self._flagged.add(node)
            trust = self.trust.value if self._adaptive else 1.0
            d = trust * self._horizon * self.mean_age
            if d > 0:
                self._demotion[node] = d
                return
        else:
            self._flagged.discard(node)
        self._demotion.pop(node, None)

    def on_insert(self, node: TreeNode) -> None:
        self.trust.inserted(node)
        session = getattr(node.context, "session", None)
        self._mark(node, self._touch(node, "new" if session is None else session))

    def on_hit(self, node: TreeNode) -> None:
        if node in self._flagged and not node.children:
            self.trust.flagged_reused()  # an "ended" leaf is wanted after all
        self._mark(node, self._touch(node))

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        self._owner[head] = self._owner.get(tail, SHARED)
        self._mark(head, self._touch(head))

    def on_evict(self, node: TreeNode) -> None:
        self._owner.pop(node, None)
        flagged = node in self._flagged
        self._flagged.discard(node)
        self._demotion.pop(node, None)
        self.trust.evicted(node, flagged)
        if not flagged:
            age = max(0.0, self._now - node.last_access_time)
            self.mean_age += AGE_WEIGHT * (age - self.mean_age) if self.mean_age else age
