"""The policy contract: a policy only scores; the eviction driver does the rest.

A policy sees one evictable leaf at a time and returns a score. The driver
evicts the lowest score first and breaks equal scores by
``last_access_time`` (least recently used first), for every policy.

This module is all the cache knows of policies: the base classes (with a
config's optional :meth:`PolicyConfig.config_warnings`), the lifecycle
callbacks a stateful policy may define (their rules are in
:mod:`radix_evict.policies.lifecycle`) and :data:`DEFAULT_POLICY`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Final,
    Generic,
    NamedTuple,
    TypeVar,
    cast,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from radix_evict.cache.tree import TreeNode

Score = float | int | tuple[Any, ...]

# The policy a cache, a simulation or a command runs when none is named (SGLang's default).
DEFAULT_POLICY: Final = "lru"


class PolicyConfig(BaseModel):
    """Base class of every policy's config: unknown keys and coercion are errors.

    ``strict`` refuses ``"4"``, ``4.5`` and ``true`` for an int field, and
    ``allow_inf_nan=False`` refuses NaN and infinities, so a serving config
    means exactly what it says.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    def config_warnings(self) -> list[ConfigWarning]:
        """Optional, for the policy to override: what is valid here but defeats the policy.

        Called on a config that passed validation (``radix-evict lint`` asks
        it through ``registry.config_warnings``, never by the policy's name);
        returns a :class:`ConfigWarning` for each setting that makes the policy
        pointless or something other than it seems (slru with
        ``protected_threshold`` 0 is plain LRU). The default finds nothing.
        It must be cheap and must not open files; if it raises, the caller
        reports that as one warning naming the policy.
        """
        return []


class ConfigWarning(NamedTuple):
    """A valid setting that defeats its policy (:meth:`PolicyConfig.config_warnings`).

    ``loc`` is the path of the key in the config (``("protected_threshold",)``;
    empty for the config as a whole); ``type`` a short stable code
    (``plain_lru``) that tools may filter on; ``msg`` what happens;
    ``hint`` what to set instead.
    """

    loc: tuple[str | int, ...]
    type: str
    msg: str
    hint: str | None = None


class NoConfig(PolicyConfig):
    """The config of a policy that takes no keys: any key is an error."""


ConfigT = TypeVar("ConfigT", bound=PolicyConfig)


class EvictionPolicy(Generic[ConfigT]):
    """Scores evictable leaves; the lowest score is evicted first.

    Subclasses set ``name`` and, if they take keys, name their config model
    as the type parameter, ``class SLRU(EvictionPolicy[SLRUConfig])``:
    ``self.config`` is then an ``SLRUConfig`` to the type checker, and
    ``Config`` (the model the registry validates against) is derived from it.
    Setting ``Config = SLRUConfig`` instead, or as well, works too. ``score`` must
    be a pure function of the node's fields (and the policy's config). A score
    that can change while the node is untouched (it reads the clock, other
    nodes, or outside state) must set ``volatile_score = True``: the driver
    then re-scores every candidate on each ``evict`` call instead of keeping
    them in its incremental heap.

    A stateful policy may also define lifecycle callbacks (``on_insert``,
    ``on_hit``, ``on_split``, ``on_evict``); :mod:`radix_evict.policies.lifecycle`
    says when each is called and the rules that keep the heap exact.
    """

    name: ClassVar[str] = ""
    Config: ClassVar[type[PolicyConfig]] = NoConfig
    volatile_score: ClassVar[bool] = False
    # True for a policy that orders by request priority (node.priority): on a workload
    # whose requests all share one priority, its only difference from recency then
    # comes from the replay's prompt checkpoint insert at priority + 1, so the
    # simulator's winner rule passes it over (radix_evict.sim.winner).
    orders_by_priority: ClassVar[bool] = False
    # True for a policy that reads ``node.context`` (a RequestContext: the request's
    # session, turn, kind, arrival, output length): callers that know their requests
    # (the simulator, the serving integrations) build and pass one only then, so a
    # policy that ignores it costs nothing more.
    uses_context: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        model = _config_parameter(cls)
        if model is None:
            return
        own = cls.__dict__.get("Config")
        if own is None:
            cls.Config = model
        elif own is not model:
            raise TypeError(
                f"{cls.__name__}: Config = {own.__name__} but the class is "
                f"EvictionPolicy[{model.__name__}]; name one config model"
            )

    def __init__(self, config: ConfigT | None = None) -> None:
        self.config: ConfigT = config if config is not None else cast(ConfigT, self.Config())

    def score(self, node: TreeNode) -> Score:
        """Return this leaf's eviction score: lower goes first.

        A number, or a tuple compared item by item; a policy's tuples all have
        one length (the driver splices them into its heap entries).
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        keys = self.config.model_dump()
        args = ", ".join(f"{k}={v!r}" for k, v in keys.items())
        return f"{type(self).__name__}({args})"


def _config_parameter(cls: type) -> type[PolicyConfig] | None:
    """``X`` when ``cls`` subclasses ``EvictionPolicy[X]`` directly with a concrete model."""
    for base in getattr(cls, "__orig_bases__", ()):
        origin = get_origin(base)
        if isinstance(origin, type) and issubclass(origin, EvictionPolicy):
            args = get_args(base)
            if args and isinstance(args[0], type) and issubclass(args[0], PolicyConfig):
                return args[0]
    return None


# --------------------------------------------------------------------------- lifecycle callbacks
# What each callback means and the rules that keep the driver exact: radix_evict.policies.lifecycle.

NodeCallback = Callable[["TreeNode"], Any]
SplitCallback = Callable[["TreeNode", "TreeNode"], Any]

CALLBACKS = ("on_insert", "on_hit", "on_split", "on_evict")


class Callbacks(NamedTuple):
    """The callbacks a policy defines (None for each it does not)."""

    on_insert: NodeCallback | None
    on_hit: NodeCallback | None
    on_split: SplitCallback | None
    on_evict: NodeCallback | None


def callbacks_of(policy: object) -> Callbacks:
    """The policy's callbacks, looked up once (the cache keeps them for its life)."""
    found = []
    for name in CALLBACKS:
        fn = getattr(policy, name, None)
        if fn is not None and not callable(fn):
            raise TypeError(f"policy {getattr(policy, 'name', policy)!r}: {name} must be a "
                            f"method, got {type(fn).__name__}")
        found.append(fn)
    return Callbacks(*found)
