"""Say which configs ``simulate`` derived from the workload, and report them in JSON.

A run without a --config whose policy's spec has a ``derive_config`` takes
the config derived from each workload (:mod:`radix_evict.sim.configs`);
simulate says so on stderr before replaying. JSON output has a
``NAME_derived`` object for every policy that derives its config (empty when
the config was given or the policy did not run), keyed by workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from radix_evict.sim.configs import derived_for
from radix_evict.sim.runs import PolicyRun
from radix_evict.sim.workloads import Workload

from . import output


def derived_notes(workloads: Sequence[Workload], runs: Sequence[PolicyRun]) -> dict[str, Any]:
    """Note every derived config on stderr; return ``{NAME_derived: {workload: ...}}``."""
    out: dict[str, Any] = {}
    for policy, found in derived_for(workloads, runs).items():
        if len(found) == 1:
            (name, d), = found.items()
            text = (f"{policy}: no --config given, so simulate derives it from {name}: "
                    f"{d.config}.")
            output.note(f"{text} {d.derivation}" if d.derivation else text)
        elif found:
            rule = next(iter(found.values())).rule
            each = "; ".join(f"{n} {d.config}" for n, d in found.items())
            output.note(f"{policy}: no --config given, so simulate derives one per workload"
                        f"{f' ({rule})' if rule else ''}: {each}")
        out[f"{policy}_derived"] = {n: d.to_dict() for n, d in found.items()}
    return out
