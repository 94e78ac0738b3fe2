"""A fleet: N timed servers on one virtual clock behind a router, and the capacity plan.

``router`` (the contract a router implements), ``hookspecs`` (the plugin
hook), ``registry`` (the routers every plugin registered, strict configs),
``routers`` (the built-in routers), ``server`` (a timed server stepped from
outside, and the router's view of it), ``replay``
(:func:`~radix_evict.sim.fleet.replay.replay_fleet`), ``figures`` (what a
fleet replay reports), ``errors`` (what goes wrong, named), ``simulate``,
``tables`` and ``draw`` (``simulate --replicas``'s steps, tables and plot);
the ``plan_*`` modules search for the fewest replicas that meet an SLO.
"""

__all__ = ["draw", "errors", "figures", "hookspecs", "registry", "replay", "router", "routers",
           "server", "simulate", "tables"]
