"""``sweep``'s command-line axes, read into the same GridParts a grid file gives."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from radix_evict.sim.sweep import GridParts, SweepValueError, parse_values
from radix_evict.sim.sweep.values import parse_counts, split_top_level

from .errors import EXIT_USAGE, CliError
from .options import parse_params


def parse_vary(values: Sequence[str]) -> dict[str, dict[str, list[object]]]:
    """``-g POLICY.KEY=V1,V2,...`` options -> {policy: {key: values}}; a key given twice fails."""
    out: dict[str, dict[str, list[object]]] = {}
    for raw in values:
        head, sep, text = raw.partition("=")
        policy, dot, key = head.strip().partition(".")
        if not sep or not dot or not policy or not key or not text.strip():
            raise CliError(f"-g {raw!r}: expected POLICY.KEY=V1,V2,... "
                           "(e.g. slru.protected_threshold=1,2,4 or tlru.threshold=512..4096*2)",
                           EXIT_USAGE)
        if key in out.get(policy, {}):
            raise CliError(f"-g {policy}.{key} given twice; list every value in one -g",
                           EXIT_USAGE)
        try:
            out.setdefault(policy, {})[key] = parse_values(text.strip(), f"-g {policy}.{key}")
        except SweepValueError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
    return out


def count_values(values: Sequence[str], option: str) -> list[int] | None:
    """Every ``N1,N2`` / range value of a repeatable count option; usage errors name it."""
    if not values:
        return None
    try:
        return [n for v in values for n in parse_counts(v, option)]
    except SweepValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None


def _names(values: Sequence[str]) -> list[str] | None:
    names = [n for v in values for n in split_top_level(v) if n]
    return names or None


def parts_from_options(
    *,
    policies: Sequence[str],
    vary: Sequence[str],
    pool_tokens: Sequence[str],
    page_sizes: Sequence[str],
    workloads: Sequence[str],
    traces: Sequence[Path],
    params: Sequence[str],
    seeds: Sequence[str],
    oracle: bool = False,
    hidden: bool = False,
) -> GridParts:
    """The axes the command line gives (None where it gives none)."""
    return GridParts(
        policies=_names(policies),
        vary=parse_vary(vary),
        pool_tokens=count_values(pool_tokens, "--pool-tokens"),
        page_sizes=count_values(page_sizes, "--page-size"),
        workloads=_names(workloads),
        traces=[str(t) for t in traces] or None,
        params=[(p.workload, p.key, p.value) for p in parse_params(params)] or None,
        seeds=count_values(seeds, "--seeds"),
        references=True if oracle else None,
        hidden=True if hidden else None,
    )
