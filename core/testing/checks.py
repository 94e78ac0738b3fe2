"""The conformance checks a policy package runs against its policy.

Each check takes a registered policy name (and a valid config for it) and
raises ``AssertionError`` with a readable message when the policy breaks the
contract. They need ``hypothesis`` (imported on first use, so installing
radix-evict never requires it).

* :func:`check_registration`: it registered, through an entry point, with a
  summary and a strict config model, and builds from the given config.
* :func:`check_config_strict`: unknown keys, near misses, wrong types, NaN and
  malformed JSON are all refused, naming the key; the JSON Schema is closed.
* :func:`check_score`: ``score`` is total (no exception, no NaN, any two
  scores compare) and deterministic (same fields, same score; no mutation).
* :func:`check_cache_invariants`: random operation sequences through a real
  :class:`~radix_evict.RadixCache` with the policy plugged in never leak a
  slot or free one twice, never evict the root or a locked node, free what
  ``evict`` asks for when the tree holds that much, evict in the
  policy's ``(score, last_access_time)`` order, and keep every leaf in the
  driver's heap under the score a from-scratch rescan gives it (the rules of
  :mod:`radix_evict.policies.lifecycle` for stateful policies).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from radix_evict.cache.eviction import is_evictable_leaf
from radix_evict.errors import ConfigProblem
from radix_evict.policies.contract import EvictionPolicy
from radix_evict.policies.strictness import config_model_problems, lax_schema_spots
from radix_evict.testing.snapshots import NodeSnapshot, chain

if TYPE_CHECKING:
    from radix_evict.policies.registry import Registry
    from radix_evict.policies.spec import PolicySpec

DEFAULT_EXAMPLES = 60
BOGUS_KEY = "radix_evict_conformance_unknown_key"


def _reg(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from radix_evict.policies.registry import registry as default

    return default


def _settings(max_examples: int, extra: Mapping[str, Any] | None) -> Any:
    """The hypothesis settings of a check: no deadline (CI machines vary), caller's extras."""
    from hypothesis import HealthCheck, settings

    kwargs: dict[str, Any] = {
        "max_examples": max_examples,
        "deadline": None,
        "suppress_health_check": list(HealthCheck),
    }
    kwargs.update(extra or {})
    return settings(**kwargs)


# --------------------------------------------------------------------------- registration


def check_registration(
    name: str, config: Any = None, *, public: bool | None = None, registry: Registry | None = None
) -> PolicySpec:
    """The policy registered cleanly and builds from ``config``.

    ``public=True`` also requires it to be a ``--policy`` choice (its package
    extends the choice list); ``public=False`` requires it not to be.
    """
    reg = _reg(registry)
    failed = [str(f) for f in reg.failures if name in f.policies]
    assert not failed, f"the plugin providing {name!r} failed to load: {failed}"
    conflicts = [str(c) for c in reg.conflicts if c.name == name]
    assert not conflicts, f"policy name {name!r} is registered twice: {conflicts}"
    assert name in reg.choices(extended=True), (
        f"policy {name!r} is not registered; registered: {reg.choices(extended=True)}; "
        f"plugin failures: {[str(f) for f in reg.failures]}"
    )
    spec = reg.get(name)
    assert spec.name == name
    assert isinstance(spec.policy, type) and issubclass(spec.policy, EvictionPolicy)
    assert spec.distribution, f"{name!r} has no source distribution recorded"
    assert isinstance(spec.summary, str) and spec.summary.strip(), (
        f"{name!r} registered without a summary (radix-evict list shows it)"
    )
    problems = config_model_problems(spec.config_model)
    assert not problems, f"{name!r}: config model is not strict: {problems}"
    built = reg.load_policy(name, config)
    built_config = built.config
    assert type(built) is spec.policy, f"load_policy({name!r}) built {type(built).__name__}"
    assert isinstance(built_config, spec.config_model), (
        f"{name!r}: policy.config is {type(built_config).__name__}, "
        f"not {spec.config_model.__name__}"
    )
    if public is True:
        assert name in reg.choices(), (
            f"{name!r} is not a --policy choice: its package must extend the choice list "
            f"(choices: {reg.choices()})"
        )
        reg.check_choice(name)
    elif public is False:
        assert name not in reg.choices(), f"{name!r} is unexpectedly a --policy choice"
    return spec


# --------------------------------------------------------------------------- config


def _wrong_values(value: Any) -> list[Any]:
    """Values of the wrong type (or non-finite) for a field whose valid value is ``value``."""
    if isinstance(value, bool):
        return [int(value), "true", "false"]
    if isinstance(value, int):
        return [str(value), value + 0.5, float(value), True, math.nan, "NaN"]
    if isinstance(value, float):
        return [str(value), math.nan, math.inf, -math.inf, True]
    if isinstance(value, str):
        return [1, True, 1.5]
    return [math.nan]


def _typos(key: str, valid: Sequence[str]) -> Iterator[str]:
    """Near misses of ``key`` that are not themselves valid keys."""
    if len(key) < 4:
        return
    swapped = key[0] + key[2] + key[1] + key[3:]
    for typo in (key[:-1], key + "s", swapped):
        if typo not in valid and typo != key:
            yield typo


def _names_key(problems: Sequence[ConfigProblem], key: str) -> bool:
    return any(p.key == key or (p.key or "").startswith(key + ".") for p in problems)


def check_config_strict(name: str, config: Any = None, *, registry: Registry | None = None) -> None:
    """Every malformed variation of a valid config is refused, naming the key."""
    reg = _reg(registry)
    spec = reg.get(name)
    valid = reg.parse_config(name, config)
    data = valid.model_dump(mode="python", by_alias=True)
    keys = spec.keys

    text = json.dumps(valid.model_dump(mode="json", by_alias=True))
    assert reg.parse_config(name, text) == valid, (
        f"{name!r}: the config as a JSON string does not give the same config as the dict"
    )
    assert reg.validate(name, data) == [], f"{name!r}: its own dumped config does not validate"

    problems = reg.validate(name, {**data, BOGUS_KEY: 1})
    assert any(p.key == BOGUS_KEY and p.type == "extra_forbidden" for p in problems), (
        f"{name!r}: an unknown key was not reported as unknown: {problems}"
    )
    assert all(p.policy == name for p in problems), f"a problem lacks the policy: {problems}"
    message = reg_error(reg, name, {**data, BOGUS_KEY: 1})
    assert name in message and BOGUS_KEY in message, f"the error message names neither: {message}"

    for key in keys:
        for typo in _typos(key, keys):
            found = reg.validate(name, {**data, typo: data.get(key)})
            hit = [p for p in found if p.key == typo]
            assert hit, f"{name!r}: misspelt key {typo!r} was accepted"
            assert any(p.hint and key in p.hint for p in hit), (
                f"{name!r}: misspelt key {typo!r} does not suggest {key!r}: {hit}"
            )
            assert all(key in p.valid_keys for p in hit), f"{name!r}: valid keys not listed: {hit}"

    for key in keys:
        if key not in data:
            continue
        for bad in _wrong_values(data[key]):
            found = reg.validate(name, {**data, key: bad})
            assert _names_key(found, key), (
                f"{name!r}: {key}={bad!r} was accepted (no silent coercion: it must be an error)"
            )

    for text in ('{"', "[1, 2]", "not json", '{"a": 1,}'):
        found = reg.validate(name, text)
        assert found, f"{name!r}: malformed config {text!r} was accepted"

    if keys:
        first = next(iter(spec.config_model.model_fields))
        try:
            setattr(valid, first, getattr(valid, first))
        except Exception:
            pass
        else:
            raise AssertionError(f"{name!r}: the config object is mutable (it must be frozen)")

    lax = list(lax_schema_spots(reg.json_schema(name)))
    assert not lax, f"{name!r}: JSON Schema lets unknown keys through: {lax}"


def reg_error(reg: Registry, name: str, config: Any) -> str:
    """The message ``load_policy`` raises for ``config`` ('' if it does not raise)."""
    from radix_evict.errors import PolicyConfigError

    try:
        reg.load_policy(name, config)
    except PolicyConfigError as e:
        return str(e)
    return ""


# --------------------------------------------------------------------------- score


def _check_score_value(score: Any, where: str) -> None:
    if isinstance(score, tuple):
        assert score, f"{where}: empty tuple score"
        for part in score:
            _check_score_value(part, where)
        return
    assert isinstance(score, numbers.Real), (
        f"{where}: score must be a number or a tuple of numbers, got {type(score).__name__}"
    )
    assert not (isinstance(score, float) and math.isnan(score)), f"{where}: score is NaN"


def _compare(a: Any, b: Any, where: str) -> None:
    try:
        outcomes = [a < b, a == b, a > b]
    except TypeError as e:
        raise AssertionError(f"{where}: scores {a!r} and {b!r} do not compare: {e}") from None
    assert sum(bool(x) for x in outcomes) == 1, f"{where}: {a!r}, {b!r} are not totally ordered"


def score_snapshots(
    policy: EvictionPolicy, other: EvictionPolicy, leaves: Sequence[NodeSnapshot]
) -> None:
    """Total, deterministic, side-effect free on ``leaves`` (``other`` is a second instance)."""
    name = type(policy).__name__
    # A snapshot stands in for a TreeNode: it has every field a score may read.
    score: Callable[[Any], Any] = policy.score
    score_other: Callable[[Any], Any] = other.score
    keys = []
    for leaf in leaves:
        before = leaf.fields()
        try:
            s1 = score(leaf)
        except Exception as e:
            raise AssertionError(f"{name}.score raised {type(e).__name__}: {e} on {leaf!r}") from e
        _check_score_value(s1, f"{name}.score({leaf!r})")
        assert leaf.fields() == before, f"{name}.score changed the node it scored"
        if not policy.volatile_score:
            s2 = score(leaf)
            s3 = score_other(leaf.clone())
            assert s1 == s2, f"{name}.score is not deterministic: {s1!r} then {s2!r}"
            assert s1 == s3, (
                f"{name}.score differs between two equal nodes / instances: {s1!r} vs {s3!r}"
            )
        keys.append((s1, leaf.last_access_time))
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            _compare(a, b, name)


def check_score(
    name: str,
    config: Any = None,
    *,
    max_examples: int = DEFAULT_EXAMPLES,
    registry: Registry | None = None,
    hypothesis_settings: Mapping[str, Any] | None = None,
) -> None:
    """``score`` is total and deterministic on hypothesis-generated node snapshots.

    ``hypothesis_settings`` adds to the ``hypothesis.settings`` used (e.g.
    ``{"derandomize": True}`` for a fixed sequence of examples in CI).
    """
    from hypothesis import given
    from hypothesis import strategies as st

    reg = _reg(registry)
    policy = reg.load_policy(name, config)
    other = reg.load_policy(name, config)
    big = st.one_of(st.integers(0, 64), st.integers(0, 2**40))

    @st.composite
    def leaf(draw: Any) -> NodeSnapshot:
        levels = []
        for _ in range(draw(st.integers(1, 4))):
            created = draw(big)
            levels.append(
                {
                    "creation_time": created,
                    "last_access_time": created + draw(big),
                    "hit_count": draw(st.one_of(st.integers(0, 4), st.integers(0, 2**31))),
                    "priority": draw(st.integers(-(2**31), 2**31)),
                    "num_tokens": draw(st.integers(1, 8192)),
                    "history_len": draw(st.integers(0, 2**20)),
                    "lock_ref": draw(st.integers(0, 3)),
                }
            )
        return chain(levels)

    @_settings(max_examples, hypothesis_settings)
    @given(st.lists(leaf(), min_size=1, max_size=6))
    def run(leaves: list[NodeSnapshot]) -> None:
        score_snapshots(policy, other, leaves)

    run()


# --------------------------------------------------------------------------- cache invariants


def _children(node: Any) -> list[Any]:
    kids = node.children
    return list(kids.values()) if isinstance(kids, dict) else list(kids)


def _attached(node: Any, root: Any) -> bool:
    """Whether ``node`` still hangs off ``root`` (evicted nodes do not)."""
    x = node
    while x is not root:
        parent = x.parent
        if parent is None or not any(c is x for c in _children(parent)):
            return False
        x = parent
    return True


def _walk(root: Any) -> list[Any]:
    out: list[Any] = []
    stack = _children(root)
    while stack:
        x = stack.pop()
        out.append(x)
        stack.extend(_children(x))
    return out


class CacheHarness:
    """Drives a cache as a serving engine would, checking the invariants after each step."""

    def __init__(self, policy: EvictionPolicy, pool_tokens: int, page_size: int) -> None:
        from radix_evict.cache.pool import KVPool
        from radix_evict.cache.radix_cache import RadixCache

        self.pool = KVPool(size=pool_tokens, page_size=page_size, device="cpu")
        self.cache = RadixCache(self.pool, policy=policy)
        self.policy = policy
        self.page = page_size
        self.root = self.cache.match_prefix([]).last_node
        self.locked: list[Any] = []
        assert self.root.parent is None, "the root's parent must be None"

    # -- operations
    def insert(self, tokens: list[int], priority: int, reuse: bool) -> None:
        import torch

        n = len(tokens) // self.page * self.page
        if n == 0:
            return
        key = tokens[:n]
        cache, pool = self.cache, self.pool
        m = cache.match_prefix(key) if reuse else None
        prev = m.prefix_len if m is not None else 0
        if m is not None:
            cache.inc_lock_ref(m.last_node)  # as an engine does while it computes the rest
        try:
            need = n - prev
            new = pool.alloc(need) if need else torch.empty(0, dtype=torch.int64)
            if new is None:
                short = need - pool.available_size()
                self.evict(max(short, 1))
                new = pool.alloc(need)
            if new is None:
                return
            indices = torch.cat([m.indices, new]) if m is not None else new
            matched = cache.insert(key, indices, priority=priority, prev_prefix_len=prev)
            assert matched >= prev, f"insert matched {matched} < the locked prefix {prev}"
        finally:
            if m is not None:
                cache.dec_lock_ref(m.last_node)

    def lock(self, tokens: list[int]) -> None:
        m = self.cache.match_prefix(tokens)
        if m.prefix_len:
            self.cache.inc_lock_ref(m.last_node)
            self.locked.append(m.last_node)

    def unlock(self, i: int) -> None:
        if self.locked:
            self.cache.dec_lock_ref(self.locked.pop(i % len(self.locked)))

    def evict(self, k: int) -> None:
        cache, pool = self.cache, self.pool
        cands = [x for x in _walk(self.root) if is_evictable_leaf(x)]
        keys = {id(x): (self.policy.score(x), x.last_access_time) for x in cands}
        before, avail = cache.evictable_size(), pool.available_size()
        freed = cache.evict(k)
        assert freed == before - cache.evictable_size(), (
            f"evict({k}) returned {freed}; evictable size went {before} -> "
            f"{cache.evictable_size()}"
        )
        assert pool.available_size() - avail == freed, (
            f"evict({k}) returned {freed} but the pool got {pool.available_size() - avail} back"
        )
        if k <= before:
            assert freed >= k, f"evict({k}) freed only {freed} with {before} tokens evictable"
        else:
            assert freed == before, f"evict({k}) freed {freed} of {before} evictable tokens"
        for x in self.locked:
            assert _attached(x, self.root), "a locked node was evicted"
        if not self.policy.volatile_score:
            gone = [keys[id(x)] for x in cands if not _attached(x, self.root)]
            kept = [keys[id(x)] for x in cands if _attached(x, self.root)]
            if gone and kept:
                assert max(gone) <= min(kept), (
                    f"evict({k}) took a leaf keyed {max(gone)!r} while {min(kept)!r} "
                    "(lower) stayed: the policy's order was not followed"
                )

    def match(self, tokens: list[int]) -> None:
        m = self.cache.match_prefix(tokens)
        assert m.prefix_len % self.page == 0 and m.prefix_len <= len(tokens)
        assert len(m.indices) == m.prefix_len

    # -- invariants
    def check(self) -> None:
        from radix_evict.testing.invariants import check_cache

        cache, pool = self.cache, self.pool
        # Every slot free, or held by exactly one node; links, locks and sizes agree.
        check_cache(cache)
        total = cache.total_size()
        assert cache.evictable_size() >= 0 and cache.protected_size() >= 0
        assert cache.evictable_size() + cache.protected_size() == total, "sizes disagree"
        assert pool.available_size() + total == pool.size, (
            f"slot leak: pool has {pool.available_size()} free + tree holds {total} "
            f"!= pool size {pool.size}"
        )
        assert self.root.parent is None, "the root was detached"
        nodes = _walk(self.root)
        assert sum(x.num_tokens for x in nodes) == total, "tree tokens differ from total_size()"
        for x in nodes:
            for c in _children(x):
                assert c.parent is x, "a child's parent link is broken"
        for x in self.locked:
            assert x.lock_ref > 0, "a locked node lost its lock"
            assert _attached(x, self.root), "a locked node left the tree"
        if not self.policy.volatile_score:
            # Rule 2 of radix_evict.policies.lifecycle: every leaf's score in the driver's
            # heap is what score() says now (a from-scratch rescan).
            leaves = [x for x in nodes if x.lock_ref == 0 and not _children(x)]
            stale = self.cache._driver.stale_scores(leaves)
            assert not stale, (
                f"{len(stale)} evictable leaves are in the driver's heap under a stale "
                f"score, e.g. {stale[0][1]!r} where score() now gives {stale[0][2]!r}: the "
                "policy changed a score without that node being offered again (see the "
                "rules in radix_evict.policies.lifecycle; a score that reads shared state "
                "needs volatile_score = True)"
            )

    def drain(self) -> None:
        """Unlock all, evict everything, and check every slot went back to the pool."""
        while self.locked:
            self.unlock(0)
        self.check()
        total = self.cache.total_size()
        if total:
            self.evict(total)
        assert self.cache.total_size() == 0, "unlocked tokens survived evicting everything"
        assert self.pool.available_size() == self.pool.size, "slots leaked after draining"


def check_cache_invariants(
    name: str,
    config: Any = None,
    *,
    page_size: int = 1,
    pool_tokens: int = 48,
    max_examples: int = DEFAULT_EXAMPLES,
    registry: Registry | None = None,
    hypothesis_settings: Mapping[str, Any] | None = None,
) -> None:
    """Random operation sequences through a real cache keep every invariant."""
    from hypothesis import given
    from hypothesis import strategies as st

    reg = _reg(registry)
    tokens = st.lists(st.integers(0, 4), min_size=1, max_size=12)
    amount = st.one_of(st.integers(1, 6), st.integers(1, pool_tokens + 8))
    insert = st.tuples(st.just("insert"), tokens, st.integers(-2, 3), st.booleans())
    op = st.one_of(
        insert,
        insert,  # inserts weigh double: they build the branchy trees eviction needs
        st.tuples(st.just("lock"), tokens),
        st.tuples(st.just("unlock"), st.integers(0, 50)),
        st.tuples(st.just("evict"), amount),
        st.tuples(st.just("match"), tokens),
    )

    @_settings(max_examples, hypothesis_settings)
    @given(st.lists(op, min_size=20, max_size=80))
    def run(ops: list[tuple[Any, ...]]) -> None:
        h = CacheHarness(reg.load_policy(name, config), pool_tokens, page_size)
        for kind, *args in ops:
            getattr(h, kind)(*args)
            h.check()
        h.drain()

    run()


def check_policy(
    name: str,
    config: Any = None,
    *,
    public: bool | None = None,
    max_examples: int = DEFAULT_EXAMPLES,
    registry: Registry | None = None,
    hypothesis_settings: Mapping[str, Any] | None = None,
) -> None:
    """Every check above, in order."""
    extra = hypothesis_settings
    check_registration(name, config, public=public, registry=registry)
    check_config_strict(name, config, registry=registry)
    check_score(name, config, max_examples=max_examples, registry=registry,
                hypothesis_settings=extra)
    for page in (1, 4):
        check_cache_invariants(name, config, page_size=page, max_examples=max_examples,
                               registry=registry, hypothesis_settings=extra)
