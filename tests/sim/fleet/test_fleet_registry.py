"""The router registry: the entry point, unknown names, strict configs, broken plugins."""

from __future__ import annotations

import pytest

from radix_evict.policies.plugins import PluginSource, find_plugins
from radix_evict.sim.fleet import registry as reg
from radix_evict.sim.fleet.errors import RouterConfigError, RouterPluginError, UnknownRouterError
from radix_evict.sim.fleet.hookspecs import GROUP, hookimpl
from radix_evict.sim.fleet.router import Router, RouterConfig, RouterSpec

BUILTIN = ("round_robin", "random", "least_load", "session", "cache_aware", "kv_events")


def test_the_builtins_come_through_the_entry_point_group():
    sources = find_plugins(GROUP)
    builtin = [s for s in sources if s.builtin]
    assert [(s.entry_point, s.value) for s in builtin] == [
        ("builtin", "radix_evict.sim.fleet.routers")]
    assert tuple(reg.routers())[:6] == BUILTIN
    for name in BUILTIN:
        spec = reg.router_spec(name)
        assert spec.name == name and spec.router_class.name == name and spec.summary


def test_an_unknown_router_is_named_with_the_known_ones():
    with pytest.raises(UnknownRouterError) as e:
        reg.build_router("round-robin", None, replicas=2)
    msg = str(e.value)
    assert "'round-robin'" in msg
    for name in BUILTIN:
        assert name in msg


@pytest.mark.parametrize("config", ['{"bogus": 1}', {"bogus": 1}])
def test_a_bad_config_key_is_named(config):
    with pytest.raises(RouterConfigError) as e:
        reg.build_router("round_robin", config, replicas=2)
    assert e.value.key == "bogus" and "'bogus'" in str(e.value)
    assert "round_robin" in str(e.value)


def test_a_bad_config_value_is_named_with_the_valid_keys():
    with pytest.raises(RouterConfigError) as e:
        reg.build_router("cache_aware", {"cache_threshold": "high"}, replicas=2)
    assert e.value.key == "cache_threshold"
    assert "balance_abs_threshold" in str(e.value)  # the valid keys are listed


def test_a_config_is_validated_once_into_the_routers_model():
    r = reg.build_router("cache_aware", '{"cache_threshold": 0.5}', replicas=3, seed=4)
    assert r.config.cache_threshold == 0.5 and r.replicas == 3 and r.seed == 4


def test_no_replicas_is_refused():
    with pytest.raises(ValueError, match="at least 1 replica"):
        reg.build_router("round_robin", None, replicas=0)


def _source(name: str, loader, dist: str = "broken-routers") -> PluginSource:
    return PluginSource(entry_point=name, distribution=dist, version="1.0", value=f"{dist}:x",
                        builtin=False, loader=loader)


def _builtin_only(group: str) -> list[PluginSource]:
    return [s for s in find_plugins(group) if s.builtin]


def test_a_broken_plugin_is_named_by_package_and_entry_point():
    def boom():
        raise ImportError("no module named broken_routers")

    r = reg.RouterRegistry(find=lambda g: [*_builtin_only(g), _source("mine", boom)])
    assert "round_robin" in r.routers()  # the others load
    (failure,) = r.failures
    assert failure.distribution == "broken-routers" and failure.entry_point == "mine"
    with pytest.raises(RouterPluginError) as e:
        r.router_spec("fancy")
    msg = str(e.value)
    assert "broken-routers" in msg and "'mine'" in msg and "ImportError" in msg


class _LaxConfig(RouterConfig):
    model_config = {"extra": "allow", "frozen": True, "strict": True}


class _Zero(Router):
    name = "zero"
    config_model = RouterConfig

    def route(self, request, replicas):
        return 0


class _Plugin:
    @hookimpl
    def radix_evict_register_routers(self, register):
        register(RouterSpec("zero", _Zero, RouterConfig, "always replica 0"))


class _LaxPlugin:
    @hookimpl
    def radix_evict_register_routers(self, register):
        register(RouterSpec("lax", _Zero, _LaxConfig, "lets keys through"))


def test_a_plugin_registers_and_a_lax_config_model_fails_its_plugin():
    r = reg.RouterRegistry(find=_builtin_only)
    r.add_plugin(_Plugin(), name="zero-plugin")
    r.add_plugin(_LaxPlugin(), name="lax-plugin")
    assert r.router_spec("zero").summary == "always replica 0"
    assert isinstance(r.build_router("zero", None, replicas=2), _Zero)
    (failure,) = r.failures
    assert failure.entry_point == "lax-plugin" and "strict" in failure.error
    assert "lax" not in r.routers()


def test_a_name_registered_twice_keeps_the_first():
    class Again:
        @hookimpl
        def radix_evict_register_routers(self, register):
            register(RouterSpec("round_robin", _Zero, RouterConfig, "impostor"))

    r = reg.RouterRegistry(find=_builtin_only)
    r.add_plugin(Again(), name="again")
    assert r.router_spec("round_robin").router_class is not _Zero
    assert any("round_robin" in c and "again" in c for c in r.conflicts)
