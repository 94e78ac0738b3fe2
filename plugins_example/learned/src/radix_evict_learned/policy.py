"""``learned``: evict the leaf least likely to be reused, as an online model predicts it.

At each of a leaf's own events (it is inserted, a lookup reaches it, a split
leaves it as the tail, or the eviction of its last child leaves it a leaf)
the policy describes it by bucketed features (:data:`.model.FEATURES`: what
the event was, its lookup hits, whether its branch came back after an
eviction, its depth, size and level in the tree, how many of its ancestors
lookups reached (a conversation's turn), its parent's hits and children, the
ticks since the parent was last looked up (the session's think time), its
age, and, when the cache records a request context, the request's turn, kind
and output length) and asks a logistic regression for the log-odds ``z``
that a lookup reaches the leaf within the horizon. The score is a deadline on
an eviction clock, as in GreedyDual (Young 1994; Cao & Irani 1997)::

    score = clock at the leaf's last use + clip(1 + sharpness * (z - mean z), 0, max_lifetime)

where the clock is the score of the last victim (it only grows) and the
leaf's last use is its last lookup or its creation. A leaf the model rates
at the mean lives one unit of clock, like every entry of an LRU queue; a
likelier one lives longer, an unlikely one (a one-off prompt, the page of a
reply nobody quotes) shorter. The lowest score goes first, ties in LRU order.
While the model has seen fewer than ``warmup`` labels every lifetime is 1:
LRU by last use.

Learning, online and causal (LRB's delay window)
------------------------------------------------
Each leaf event also opens a *sample*: the features as they were and a
deadline, ``clock now + horizon``. The sample is labelled positive when a
lookup reaches the node before the clock passes the deadline, or, if the
node was evicted meanwhile, when a new leaf with the same branch (the same
parent node and first tokens) is inserted before then (the request came back
and missed). It is labelled negative once the clock passes the
deadline without either. Labels therefore come only from events that have
already happened; nothing reads the future (``tests/test_no_future.py``
proves it on two traces that differ only after request k). Every ``batch``
labels the model takes one AdaGrad step (:mod:`.model`).

Keeping the driver's heap exact
-------------------------------
A score is computed in a callback and stored; ``score()`` only reads it. A
callback stores a score only for the node it is about (``on_split``: the
tail; ``on_evict``: the parent it leaves a leaf), which the cache offers
again afterwards. Model updates and the clock change the scores that *later*
events compute, never one already in the heap. A node the policy never heard
of (a hypothesis snapshot) scores 0.
"""

from __future__ import annotations

import itertools
import os
import zlib
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, field_validator

from radix_evict import EvictionPolicy, PolicyConfig
from radix_evict.inputs import may_open_named_files
from radix_evict.policies.config import NamedFile

from .model import OFFSETS, ReuseModel, WeightsFileError

if TYPE_CHECKING:
    from radix_evict import TreeNode

INSERT, HIT, SPLIT, ORPHAN = 0, 1, 2, 3
_BRANCH_BYTES = 64  # the first 8 tokens of a node identify its branch under its parent
_ROOT_HASH = (0, 1)  # crc32 and adler32 of the empty prefix


def _extend(h: tuple[int, int], key: bytes) -> tuple[int, int]:
    """The prefix hash ``h`` followed by ``key``: (crc32, adler32), both incremental in C.

    Each is a running checksum, so the hash of a prefix does not depend on how
    the tree cuts it into nodes (a split, a re-insertion after an eviction),
    and it is the same in every process (no ``hash()`` of bytes).
    """
    return zlib.crc32(key, h[0]), zlib.adler32(key, h[1])


class LearnedConfig(PolicyConfig):
    """Keys of the ``learned`` policy (strict: unknown keys and coercion are errors)."""

    weights: Annotated[str | None, NamedFile()] = Field(  # its content is a run's identity
        default=None,
        min_length=1,
        description=(
            "Path of a weights file (JSON, format 'radix-evict-learned-weights') to start "
            "from, e.g. trained on another trace; None starts from zero weights (LRU)."
        ),
    )

    @field_validator("weights")
    @classmethod
    def _weights_file_is_usable(cls, v: str | None) -> str | None:
        """Read the file now, so a bad one fails at startup with the key named; a lint-time
        check (``may_open_named_files()`` False) checks the path's form only."""
        if v is not None and may_open_named_files():
            try:
                ReuseModel().load(v)
            except WeightsFileError as e:
                raise ValueError(str(e)) from None
        return v

    learn: bool = Field(
        default=True,
        description="Keep learning online during the replay (false: the weights stay fixed).",
    )
    learning_rate: float = Field(
        default=0.1, gt=0, le=10,
        description="AdaGrad step size of the online logistic regression.",
    )
    batch: int = Field(
        default=16, ge=1, le=100_000,
        description="Labels per gradient step (the model is updated every `batch` labels).",
    )
    l2: float = Field(
        default=1e-4, ge=0, le=1, description="L2 shrink of the weights per gradient step."
    )
    horizon: float = Field(
        default=0.5, gt=0, le=100,
        description=(
            "A sample is positive if a lookup reaches its leaf before the eviction clock "
            "advances by `horizon` mean lifetimes (LRB's delay window)."
        ),
    )
    sharpness: float = Field(
        default=0.6, ge=0, le=100,
        description=(
            "Lifetimes added per unit of log-odds above the running mean: a leaf's lifetime "
            "is 1 + sharpness * (logit(p) - mean logit), clipped to [0, max_lifetime]; "
            "0 is LRU."
        ),
    )
    max_lifetime: float = Field(
        default=4.0, ge=1, le=1e6,
        description="The longest lifetime, in units of the mean lifetime (1).",
    )
    warmup: int = Field(
        default=200, ge=0,
        description=(
            "Labels seen before predictions are used (LRU until then); 0 with `weights` "
            "uses the file's model from the first event."
        ),
    )
    ghosts: int = Field(
        default=65536, ge=0,
        description="Evicted branches remembered (for the `returned` feature and late labels).",
    )


class _Sample:
    """One leaf event waiting for its label: the features then, and the clock deadline."""

    __slots__ = ("deadline", "done", "x")

    def __init__(self, x: tuple[int, ...], deadline: float) -> None:
        self.x = x
        self.deadline = deadline
        self.done = False


class _Node:
    """What the policy keeps about one tree node."""

    __slots__ = ("gap", "hash", "hits", "inflation", "level", "returned", "sample", "score",
                 "seen", "serial", "w")

    def __init__(self, level: int, seen: float, serial: int) -> None:
        self.serial = serial  # which node object this is (a split's tail keeps its own)
        self.score = 0.0
        self.w = 1.0
        self.hits = 0
        self.level = level
        self.seen = seen  # time of the last lookup that reached it (or its creation)
        self.gap = -1.0  # ticks between its last two lookups (-1: fewer than two)
        self.inflation = 0.0  # the eviction clock then
        self.returned = 0  # its branch came back after an eviction: 0 no, 1 yes, 2 reused before
        self.hash = _ROOT_HASH  # of the token prefix it ends (only to record decisions)
        self.sample: _Sample | None = None


def _log2b(v: float, n: int) -> int:
    if v < 1:
        return 0
    b = int(v).bit_length()
    return b if b < n else n - 1


def _hints(ctx: Any) -> tuple[int, ...]:
    """The hint features a request sent (none: the features are absent, not "unknown")."""
    out: tuple[int, ...] = ()
    end = getattr(ctx, "session_end", None)
    if end is not None:
        out += (OFFSETS["session_end"] + (1 if end else 0),)
    secs = max(getattr(ctx, "retention_s", None) or 0.0,
               getattr(ctx, "next_request_s", None) or 0.0)
    if secs > 0:
        out += (OFFSETS["return_s"] + _log2b(secs + 1, 12),)
    return out


def _clip(v: int, n: int) -> int:
    return 0 if v < 0 else (v if v < n else n - 1)


class LearnedPolicy(EvictionPolicy[LearnedConfig]):
    """Lowest ``clock at last use + lifetime(z)`` goes first; ``z`` from an online model."""

    name = "learned"
    uses_context = True

    def __init__(self, config: LearnedConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.model = ReuseModel(cfg.learning_rate, cfg.batch, cfg.l2)
        self.inflation = 0.0  # the eviction clock: the score of the last victim
        self._warm = cfg.warmup
        self._z_mean = 0.0
        if cfg.weights is not None and may_open_named_files():  # not while linting
            self._z_mean = self.model.load(cfg.weights)
            if cfg.warmup == 0:
                self._warm = -1
        self._learn = cfg.learn
        self._horizon = cfg.horizon
        self._alpha = cfg.sharpness
        self._hi = cfg.max_lifetime
        self._ghost_cap = cfg.ghosts
        self._st: dict[TreeNode, _Node] = {}
        self._serials = itertools.count(1)
        self._queue: deque[_Sample] = deque()
        # branch key -> (sample of the evicted leaf or None, was it ever reused)
        self._ghosts: OrderedDict[int, tuple[_Sample | None, bool]] = OrderedDict()
        self._last_seen = 0.0  # the latest logical time a callback saw
        self.events = 0  # leaf events scored (for the benchmark and the tests)
        self.decisions: list[Any] | None = None  # set to a list to record every victim

    # ------------------------------------------------------------------ score
    def score(self, node: TreeNode) -> float:
        st = self._st.get(node)
        if st is None:  # a node no callback told the policy about (a test's snapshot)
            return 0.0
        return st.score

    @property
    def trained(self) -> bool:
        return self._warm < 0 or self.model.labels >= self._warm

    # ------------------------------------------------------------------ callbacks
    def on_insert(self, node: TreeNode) -> None:
        now = float(node.creation_time)
        clock = self.inflation
        self._expire(clock)
        parent = node.parent
        pst = self._st.get(parent) if parent is not None else None
        st = _Node(pst.level + 1 if pst is not None else 1, now, next(self._serials))
        st.inflation = clock
        self._st[node] = st
        returned = 0
        if self._ghost_cap and parent is not None:
            got = self._ghosts.pop(self._branch(node), None)
            if got is not None:
                sample, reused = got
                returned = 2 if reused else 1
                if sample is not None:
                    self._label(sample, True)
        st.returned = returned
        self._event(node, st, INSERT, now, returned)

    def on_hit(self, node: TreeNode) -> None:
        now = float(node.last_access_time)
        st = self._st.get(node)
        if st is None:
            parent = node.parent
            pst = self._st.get(parent) if parent is not None else None
            st = _Node(pst.level + 1 if pst is not None else 1, now, next(self._serials))
            self._st[node] = st
        st.hits += 1
        st.gap = now - st.seen
        st.seen = now
        st.inflation = self.inflation
        sample = st.sample
        if sample is not None:
            st.sample = None
            self._label(sample, True)
        if not node.children:
            self._expire(self.inflation)
            self._event(node, st, HIT, now, st.returned)

    def on_split(self, head: TreeNode, tail: TreeNode) -> None:
        now = float(tail.last_access_time)
        st = self._st.get(tail)
        if st is None:
            st = _Node(1, now, next(self._serials))
            st.inflation = self.inflation
            self._st[tail] = st
        hst = _Node(st.level, st.seen, next(self._serials))
        hst.hits, hst.gap, hst.inflation = st.hits, st.gap, st.inflation
        hst.returned = st.returned
        hst.score, hst.w = st.score, st.w
        self._st[head] = hst
        st.level += 1
        if not tail.children:
            self._event(tail, st, SPLIT, now, st.returned)

    def on_evict(self, node: TreeNode) -> None:
        if self.decisions is not None:
            self.decisions.append((self._hash(node), node.num_tokens))
        st = self._st.get(node)
        if st is not None:
            if st.score > self.inflation:
                self.inflation = st.score
            if self._ghost_cap:
                ghosts = self._ghosts
                ghosts[self._branch(node)] = (st.sample, st.hits > 0)
                if len(ghosts) > self._ghost_cap:
                    ghosts.popitem(last=False)
            del self._st[node]
        parent = node.parent
        if parent is not None and len(parent.children) == 1 and parent.parent is not None:
            pst = self._st.get(parent)
            if pst is not None:
                self._expire(self.inflation)
                now = pst.seen if pst.seen > self._last_seen else self._last_seen
                self._event(parent, pst, ORPHAN, now, pst.returned)

    def save_weights(self, path: str | os.PathLike[str], source: str = "") -> None:
        """Write the model as a weights file (format: :mod:`radix_evict_learned.model`)."""
        self.model.save(path, self._z_mean, source)

    # ------------------------------------------------------------------ internals
    def _hash(self, node: TreeNode) -> tuple[int, int]:
        """The prefix hash of ``node``, for recording decisions (memoised, computed lazily).

        It reads every token of the path once, so the policy itself never uses it:
        a branch key needs only the parent's serial number (see :meth:`_branch`).
        """
        st = self._st.get(node)
        if st is not None and st.hash is not _ROOT_HASH:
            return st.hash
        parent = node.parent
        if parent is None:
            return _ROOT_HASH
        h = _extend(self._hash(parent), node.key_bytes)
        if st is not None:
            st.hash = h
        return h

    def _branch(self, node: TreeNode) -> int:
        """The key of the branch ``node`` starts: its parent node and its first tokens.

        The parent is named by the serial number the policy gave it: a node object
        ends the same prefix for its whole life (a split gives the head to a new
        node), so a request that comes back for an evicted leaf inserts its new
        leaf under the same parent object, with the same first tokens. (When the
        parent was evicted too, the new leaf starts higher up and matches the
        parent's own ghost instead.) Serials are deterministic, unlike ``id()``.
        """
        parent = node.parent
        pst = self._st.get(parent) if parent is not None else None
        serial = pst.serial if pst is not None else 0
        return serial << 32 | zlib.crc32(node.key_bytes[:_BRANCH_BYTES])

    def _features(self, node: TreeNode, st: _Node, event: int, now: float,
                  returned: int) -> tuple[int, ...]:
        parent = node.parent
        pst = self._st.get(parent) if parent is not None else None
        if parent is None or parent.parent is None:
            phits, sib = 6, 0
        else:
            phits = pst.hits if pst is not None and pst.hits < 5 else 5
            sib = len(parent.children)
        sib_b = sib - 1 if sib <= 3 else (3 if sib < 8 else (4 if sib < 16 else 5))
        if sib_b < 0:
            sib_b = 0
        if event == INSERT:
            gap = pst.gap if pst is not None else -1.0
        elif event == ORPHAN:
            gap = now - st.seen if now > st.seen else 0.0
        else:
            gap = st.gap
        hits = st.hits if st.hits < 5 else 5
        ctx = getattr(node, "context", None)
        turn, kind, out = 9, 8, 16
        if ctx is not None:
            n_out = getattr(ctx, "output_len", None)
            if type(n_out) is int and n_out >= 0:
                out = _log2b(n_out, 16)
            t = getattr(ctx, "turn", None)
            if type(t) is int and t >= 0:
                turn = t if t < 8 else 8
            k = getattr(ctx, "kind", None)
            if isinstance(k, str):
                kind = zlib.crc32(k.encode()) & 7
        level = st.level if st.level < 16 else 16
        chain = 0
        x = parent
        get = self._st.get
        while x is not None and chain < 11:
            xs = get(x)
            if xs is None:
                break
            if xs.hits:
                chain += 1
            x = x.parent
        size = _log2b(node.num_tokens, 20)
        o = OFFSETS
        x_ = (
            o["event"] + event,
            o["hits"] + hits,
            o["returned"] + returned,
            o["depth"] + _log2b(node.prefix_len, 24),
            o["size"] + size,
            o["level"] + level,
            o["parent_hits"] + phits,
            o["siblings"] + sib_b,
            o["gap"] + (0 if gap < 0 else 1 + _log2b(gap, 23)),
            o["age"] + _log2b(now - float(node.creation_time), 24),
            o["turn"] + turn,
            o["kind"] + kind,
            o["event_hits"] + event * 6 + hits,
            o["chain"] + chain,
            o["parent_returned"] + (pst.returned if pst is not None else 0),
            o["output"] + out,
            o["size_output"] + _clip(size - 9, 8) * 8 + (7 if out == 16 else _clip(out - 2, 7)),
        )
        return x_ + _hints(ctx) if getattr(ctx, "has_hints", False) else x_

    def _event(self, node: TreeNode, st: _Node, event: int, now: float, returned: int) -> None:
        """Score ``node`` (a leaf at one of its own events) and open its sample."""
        self.events += 1
        if now > self._last_seen:
            self._last_seen = now
        x = self._features(node, st, event, now, returned)
        if self.trained:
            z = self.model.logit(x)
            self._z_mean += 0.001 * (z - self._z_mean)
            w = 1.0 + self._alpha * (z - self._z_mean)
            w = 0.0 if w < 0.0 else (self._hi if w > self._hi else w)
        else:
            w = 1.0
        st.w = w
        st.score = st.inflation + w
        old = st.sample
        if old is not None:  # superseded by a newer view of the same leaf: dropped unlabelled
            old.done = True
            st.sample = None
        if self._learn and self.inflation > 0:  # no samples before the first eviction
            sample = _Sample(x, self.inflation + self._horizon)
            st.sample = sample
            self._queue.append(sample)

    def _label(self, sample: _Sample, label: bool) -> None:
        if sample.done:
            return
        sample.done = True
        if self.inflation > sample.deadline:
            label = False
        if self._learn:
            self.model.learn(sample.x, label)

    def _expire(self, now: float) -> None:
        """Label negative every sample whose deadline has passed without a reuse."""
        q = self._queue
        while q and (q[0].done or q[0].deadline < now):
            s = q.popleft()
            if not s.done:
                s.done = True
                self.model.learn(s.x, False)
