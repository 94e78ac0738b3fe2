"""What goes wrong with a router, each error naming the router (and the key, the request)."""

from __future__ import annotations

from collections.abc import Sequence

from radix_evict.errors import ConfigProblem, RadixEvictError

__all__ = ["FleetRouterError", "RouterConfigError", "RouterPluginError", "UnknownRouterError"]


class RouterConfigError(RadixEvictError, ValueError):
    """A router config that does not validate; ``problems`` names each key."""

    def __init__(self, message: str, *, router: str,
                 problems: Sequence[ConfigProblem] = ()) -> None:
        super().__init__(message)
        self.router = router
        self.problems = list(problems)
        self.key = self.problems[0].key if self.problems else None


class UnknownRouterError(RouterConfigError):
    """A router name nobody registered (the message lists the known ones)."""


class RouterPluginError(RouterConfigError):
    """The router asked for comes from a plugin that failed to load (named by package and
    entry point)."""


class FleetRouterError(RadixEvictError, RuntimeError):
    """A router raised, or chose a replica that does not exist, during a fleet replay."""
