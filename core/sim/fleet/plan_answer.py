"""The capacity plan's one-line answers: how many GPUs a policy, a router or a host tier saves.

Settings differ along three axes (policy, router, host tier). For each axis
with more than one value, the settings that agree on the other two are
compared: ``tlru needs 12 replicas, lru 14: tlru saves 2 GPUs (14%)`` (the
saving as a share of the most replicas any of them needs), or that none of
them changes the count, or that none meets the SLO within the maximum (with
the best figure reached). A line is prefixed by what its settings share
when the plan has several such groups (``cache_aware: ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from radix_evict.sim.fleet.plan import CapacityPlan, PlanSetting, SettingPlan

__all__ = ["answer_lines", "compare_line", "replicas_text"]

AXES: tuple[tuple[str, Callable[[PlanSetting], str]], ...] = (
    ("policy", lambda s: s.run.name),
    ("router", lambda s: s.router_label),
    ("host tier", lambda s: s.host_label if s.host is not None else "no host tier"),
)


def replicas_text(n: int) -> str:
    """``1 replica``, ``12 replicas``."""
    return f"{n} replica{'s' * (n != 1)}"


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def compare_line(items: Sequence[tuple[str, SettingPlan]], noun: str, plan: CapacityPlan) -> str:
    """One answer over ``items`` (name, its search), which differ only in ``noun``."""
    from radix_evict.sim.fleet.plan import ms_text

    slo, cap = plan.slo_text, plan.max_replicas
    p = f"p{plan.percentile}"
    met = sorted(((name, sp) for name, sp in items if sp.replicas is not None),
                 key=lambda x: x[1].replicas or 0)
    missed = [(name, sp) for name, sp in items if sp.replicas is None]
    if len(items) == 1:
        name, sp = items[0]
        if sp.answer is not None:
            return (f"{name} needs {replicas_text(sp.replicas or 0)} "
                    f"({p} TTFT {ms_text(sp.answer.ttft_ms)}; SLO {slo})")
        return f"{name} does not meet {slo} within {cap} replicas{_best_text(sp)}"
    if not met:
        best = min(missed, key=lambda x: (x[1].best.ttft_ms if x[1].best else float("inf")))
        return (f"no {noun} meets {slo} within {cap} replicas (best reached: "
                f"{best[0]}{_best_text(best[1], bare=True)})")
    counts = [sp.replicas or 0 for _, sp in met]
    if not missed and len(set(counts)) == 1:
        both = "both" if len(met) == 2 else "all"
        return (f"{_and([n for n, _ in met])} {both} need {replicas_text(counts[0])}: no {noun} "
                "changes the count")
    first, fewest = met[0][0], counts[0]
    parts = [f"{first} needs {replicas_text(fewest)}"]
    parts += [f"{name} {sp.replicas}" for name, sp in met[1:]]
    parts += [f"{name} more than {cap}" for name, _ in missed]
    if missed:
        saved = f"{first} saves more than {cap - fewest} GPUs"
    else:
        most = counts[-1]
        saved = f"{first} saves {most - fewest} GPUs ({round(100 * (most - fewest) / most)}%)"
    return f"{', '.join(parts)}: {saved}"


def _best_text(sp: SettingPlan, *, bare: bool = False) -> str:
    """`` (best reached: 6.10 s at 256)``: the lowest percentile any probe reached."""
    from radix_evict.sim.fleet.plan import ms_text

    b = sp.best
    if b is None:
        return ""
    text = f"{ms_text(b.ttft_ms)} at {b.replicas}"
    return f", {text}" if bare else f" (best reached: {text})"


def answer_lines(plan: CapacityPlan) -> list[str]:
    """Every answer the plan gives: one per group of settings along each axis that varies."""
    sps = plan.settings
    if not sps:
        return []
    varying = [i for i, (_, key) in enumerate(AXES) if len({key(sp.setting) for sp in sps}) > 1]
    if not varying:  # one setting (or one per name): say its count
        name = AXES[0][1](sps[0].setting)
        return [compare_line([(name, sp)], AXES[0][0], plan) for sp in sps[:1]]
    lines = []
    for axis in varying:
        noun, key = AXES[axis]
        others = [a for a in varying if a != axis]
        groups: dict[tuple[str, ...], list[tuple[str, SettingPlan]]] = {}
        for sp in sps:
            shared = tuple(AXES[a][1](sp.setting) for a in others)
            groups.setdefault(shared, []).append((key(sp.setting), sp))
        for shared, items in groups.items():
            prefix = f"{', '.join(shared)}: " if shared else ""
            lines.append(prefix + compare_line(items, noun, plan))
    return lines
