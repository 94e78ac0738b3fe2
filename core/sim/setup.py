"""What a simulation replays, built from what was asked: policy runs from ``--policy`` and
``--config``, workloads from ``--workload`` (chosen by :mod:`radix_evict.sim.workloads.select`),
a trace from ``--trace``.

Everything here is checked before any replay starts, so a typo in the last
``--config`` fails in milliseconds, with every problem listed, instead of
after minutes of simulation. Each problem is an
:class:`~radix_evict.errors.OptionError` naming the option.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from radix_evict.errors import ConfigProblem, OptionError, PolicyConfigError, problem_lines
from radix_evict.inputs import read_config_arg, split_named_config
from radix_evict.policies.contract import PolicyConfig
from radix_evict.policies.registry import registry
from radix_evict.sim.configs import PolicyRun
from radix_evict.sim.runs import as_runs, default_policies
from radix_evict.sim.workloads import Workload
from radix_evict.sim.workloads.select import (
    WorkloadParam,
    select_workloads,
    trace_params,
    workload_list,
)

__all__ = ["build_runs", "build_trace", "build_workloads", "pair_configs"]


def pair_configs(policies: Sequence[str], configs: Sequence[str]) -> list[tuple[str, str | None]]:
    """Give each policy its ``--config``: ``NAME=JSON`` by name, plain JSON by position
    (``@FILE`` read here)."""
    names = list(policies) or default_policies()
    named: dict[str, str | None] = {}
    plain: list[str | None] = []
    for raw in configs:
        name, text = split_named_config(raw)
        if name is None:
            plain.append(read_config_arg(text))
        elif name in named:
            raise OptionError(f"--config {name}=... given twice")
        else:
            named[name] = read_config_arg(text)
    if plain and not policies:
        raise OptionError("a plain --config needs --policy to say which policy it is for "
                          "(or write --config NAME=JSON)")
    if len(plain) > len(names):
        raise OptionError(f"{len(plain)} plain --config values for {len(names)} --policy "
                          "values; each --config goes with the --policy in the same position")
    stray = [n for n in named if n not in names]
    if stray:
        raise OptionError(f"--config for {', '.join(stray)}, which is not among the simulated "
                          f"policies ({', '.join(names)})")
    out: list[tuple[str, str | None]] = []
    for i, n in enumerate(names):
        if i < len(plain) and n in named:
            raise OptionError(f"policy {n!r} has both a positional --config and --config "
                              f"{n}=...")
        out.append((n, plain[i] if i < len(plain) else named.get(n)))
    return out


def build_runs(policies: Sequence[str], configs: Sequence[str]) -> list[PolicyRun]:
    """Validated policy runs; every problem of every policy is reported at once.

    Each ``--config`` string becomes its policy's config object here, once; the
    replays (and their workers) are built with that object. A policy given
    no config runs with its derived config if its spec has a deriver, else
    with its defaults (checked here too).
    """
    problems: dict[str, list[ConfigProblem]] = {}
    runs: list[PolicyRun] = []
    for name, text in pair_configs(policies, configs):
        try:
            spec = registry.check_choice(name)
        except PolicyConfigError as exc:
            problems.setdefault(name, []).extend(exc.problems)
            continue
        cfg: PolicyConfig | None = None
        if text is not None or spec.derive_config is None:
            try:
                value = registry.parse_config(name, text)
            except PolicyConfigError as exc:
                problems.setdefault(name, []).extend(exc.problems)
            else:
                cfg = value if text is not None else None
        runs.append(PolicyRun(name, cfg))
    if problems:
        lines = [line for n, ps in problems.items() for line in problem_lines(n, ps)]
        raise OptionError("\n".join(lines), invalid=True,
                          problems=[p for ps in problems.values() for p in ps])
    try:
        return as_runs(runs)
    except ValueError as exc:
        raise OptionError(f"{exc}; give repeated policies different configs") from None


def build_workloads(name: str, params: Sequence[WorkloadParam], seed: int) -> list[Workload]:
    """``--workload NAME``, ``--workload A,B`` or ``--workload all``."""
    names = workload_list(name)
    if not names:
        raise OptionError("--workload needs a workload name or 'all'")
    return select_workloads(names, params, seed)


def build_trace(path: Path, params: Sequence[WorkloadParam], fmt: str | None = None,
                block_size: int | None = None) -> Workload:
    """A trace in any installed format (detected unless ``fmt``); a missing file is an
    environment error, a bad line or an unrecognised format invalid input."""
    from radix_evict.sim.traces import TraceFormatError, open_trace

    if not path.exists():
        raise OptionError(f"{path}: no such file")
    if path.is_dir():
        raise OptionError(f"{path}: is a directory, expected a JSONL trace")
    kwargs = trace_params(params)
    if block_size is not None:
        if "block_size" in kwargs:
            raise OptionError("give --block-size or --param block_size=..., not both")
        kwargs["block_size"] = block_size
    try:
        return open_trace(path, fmt if fmt != "auto" else None, **kwargs)
    except TraceFormatError as exc:
        raise OptionError(str(exc), invalid=True) from None
