"""``simulate``'s host tier (SGLang's HiCache): its options, the spec they make, its table.

The model is core's (:mod:`radix_evict.cache.host_tier`, docs/hicache.md); this
module checks the options (each error names its option), validates the host
policy's config with the registry's messages, and prints where each policy's
hits came from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from radix_evict.cache.host_tier import WRITE_POLICIES, HostTierSpec
from radix_evict.errors import PolicyConfigError
from radix_evict.policies.registry import registry
from radix_evict.sim.timed.cost import CostModel

from .errors import EXIT_INVALID, EXIT_USAGE, CliError
from .options import problem_lines, problems_code, read_config_arg
from .preflight import check_fits

# What a host tier costs per token (its KVPool(layers=0) and the host ledgers; measured:
# about 27 bytes a token), for the memory rule --pool-tokens is checked by.
HOST_BYTES_PER_TOKEN = 27

# The options' help, shared with ``sweep`` (cli/sweep_host.py), whose options take lists.
HOST_TOKENS_HELP = "Add a host tier (SGLang's HiCache) of N tokens; 0 = none (the one-tier replay)."
HICACHE_RATIO_HELP = ("Add a host tier sized as SGLang sizes --hicache-ratio R (a number above "
                      "0): floor(pool x R) rounded down to pages, plus one page.")
WRITE_POLICY_HELP = ("With a host tier: write_through (default; back up every new node), "
                     "write_through_selective (on its second insert) or write_back (on device "
                     "eviction).")
WRITE_THRESHOLD_HELP = ("With a host tier: the insert count that backs a node up (default: the "
                        "write policy's, 1 or 2).")
HOST_POLICY_HELP = ("With a host tier: the policy that ranks host-only nodes for host eviction "
                    "(default: the device policy, as SGLang does).")
HOST_CONFIG_HELP = "With --host-policy: its config (JSON or @FILE), checked strictly."

HostTokensOpt = Annotated[int | None, typer.Option(
    "--host-tokens", min=0, help=HOST_TOKENS_HELP)]
HicacheRatioOpt = Annotated[float | None, typer.Option(  # R > 0: build_host says so
    "--hicache-ratio", help=HICACHE_RATIO_HELP)]
# simulate's own: the help above without its "(default ...)", the default as typer shows it.
WritePolicyOpt = Annotated[str | None, typer.Option(
    "--write-policy", show_default="write_through",
    help=WRITE_POLICY_HELP.replace("write_through (default; ", "write_through ("))]
WriteThresholdOpt = Annotated[int | None, typer.Option(
    "--write-threshold", min=1, show_default="the write policy's, 1 or 2",
    help=WRITE_THRESHOLD_HELP.replace(" (default: the write policy's, 1 or 2)", ""))]
HostPolicyOpt = Annotated[str | None, typer.Option(
    "--host-policy", show_default="the device policy, as SGLang does",
    help=HOST_POLICY_HELP.replace(" (default: the device policy, as SGLang does)", ""))]
HostConfigOpt = Annotated[str | None, typer.Option("--host-config", help=HOST_CONFIG_HELP)]


def build_host(*, host_tokens: int | None, hicache_ratio: float | None,
               write_policy: str | None, write_threshold: int | None,
               host_policy: str | None, host_config: str | None) -> HostTierSpec | None:
    """The HostTierSpec the options ask for (None: no host tier); errors name the option."""
    if host_tokens is not None and hicache_ratio is not None:
        raise CliError("give --host-tokens or --hicache-ratio, not both (SGLang: --hicache-size "
                       "overrides the ratio; here one size is one option)", EXIT_USAGE)
    if host_tokens is None and hicache_ratio is None:
        given = [name for name, v in (("--write-policy", write_policy),
                                      ("--write-threshold", write_threshold),
                                      ("--host-policy", host_policy),
                                      ("--host-config", host_config)) if v is not None]
        if given:
            raise CliError(f"{', '.join(given)}: host-tier options; add --host-tokens N or "
                           "--hicache-ratio R", EXIT_USAGE)
        return None
    if hicache_ratio is not None and not (math.isfinite(hicache_ratio) and hicache_ratio > 0):
        raise CliError(f"--hicache-ratio must be above 0 and finite, got {hicache_ratio}",
                       EXIT_USAGE)
    policy = write_policy or WRITE_POLICIES[0]
    if policy not in WRITE_POLICIES:
        from radix_evict.suggest import did_you_mean

        near = did_you_mean(policy, list(WRITE_POLICIES))
        raise CliError(f"--write-policy {policy!r}: use {', '.join(WRITE_POLICIES)}"
                       + (f"; {near}" if near else ""), EXIT_USAGE)
    if write_threshold is not None and policy == "write_back":
        raise CliError("--write-threshold is for write_through and write_through_selective "
                       "(write_back writes on device eviction)", EXIT_USAGE)
    if host_config is not None and host_policy is None:
        raise CliError("--host-config goes with --host-policy", EXIT_USAGE)
    config: Any = None
    if host_policy is not None:
        try:
            registry.check_choice(host_policy)
            if host_config is not None:
                config = registry.parse_config(
                    host_policy, read_config_arg(host_config, "--host-config"))
        except PolicyConfigError as exc:
            lines = ["--host-policy:", *problem_lines(host_policy, exc.problems)]
            raise CliError("\n".join(lines), problems_code(exc.problems),
                           [p.to_dict() for p in exc.problems]) from None
    return HostTierSpec(
        tokens=host_tokens, ratio=hicache_ratio, write_policy=policy,
        write_threshold=write_threshold, policy=host_policy, policy_config=config,
    )


def check_host_fits(host: HostTierSpec | None, pools: Iterable[int] = (), *,
                    memory: int | None = None) -> None:
    """The host tier must fit in memory, by ``--pool-tokens``' own rule (before any replay):
    ``--host-tokens`` as given, ``--hicache-ratio`` for each device pool in ``pools``."""
    if host is None:
        return
    if host.tokens is not None:
        check_fits(f"--host-tokens {host.tokens:,}", "a host tier that size", host.tokens,
                   HOST_BYTES_PER_TOKEN, memory=memory)
        return
    assert host.ratio is not None
    for pool in pools:
        check_fits(f"--hicache-ratio {host.ratio:g}", f"a host tier of {host.ratio:g} x the "
                   f"{pool:,}-token pool", pool * host.ratio, HOST_BYTES_PER_TOKEN,
                   memory=memory)


def check_transfer(host: HostTierSpec | None, model: CostModel) -> None:
    """A timed replay with a host tier times its copies: the cost model needs [transfer]."""
    if host is not None and model.transfer is None:
        raise CliError(f"--cost-model {model.name}: no [transfer] table "
                       "(kv_bytes_per_token, host_gbps); a timed replay with a host tier "
                       "needs one to time its copies", EXIT_INVALID)


# The host table's reference row: what it is, not what it would bound.
