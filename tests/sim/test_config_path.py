"""One config path (issue #37): a (policy, config) is parsed once into a PolicyRun, and what is
below it (runs, replays, the engine's comparison, simulate's report) takes that object."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.rigs import run_cli

from radix_evict.builtin_policies.frequency import SLRUConfig
from radix_evict.errors import PolicyConfigError
from radix_evict.sim import recommend as recommend_mod
from radix_evict.sim.configs import DERIVED, GIVEN, NONE, PolicyRun
from radix_evict.sim.recommend import recommend_timed
from radix_evict.sim.replay import replay
from radix_evict.sim.report import SimulateReport
from radix_evict.sim.runs import as_runs, policy_matrix, replay_policies
from radix_evict.sim.winner import NothingServedError
from radix_evict.sim.workloads import WorkloadError, get_workload
from radix_evict.sim.workloads.select import (
    params_for,
    select_workloads,
    trace_params,
    workload_list,
)


def test_a_policy_run_is_validated_when_built_and_carries_its_config_object() -> None:
    run = PolicyRun("slru", '{"protected_threshold": 3}')
    assert isinstance(run.config, SLRUConfig) and run.config.protected_threshold == 3
    assert PolicyRun.parse("slru", {"protected_threshold": 3}).config == run.config
    with pytest.raises(PolicyConfigError):
        PolicyRun("slru", '{"protected_threshold": "many"}')
    with pytest.raises(PolicyConfigError):
        PolicyRun.parse("tlru", "{}")


def test_as_runs_passes_policy_runs_as_they_are() -> None:
    runs = [PolicyRun("lru"), PolicyRun("slru", {"protected_threshold": 2})]
    out = as_runs(runs)
    assert all(a is b for a, b in zip(out, runs, strict=True))
    assert as_runs(out) == out


def test_on_resolves_given_derived_and_none_per_workload() -> None:
    w = get_workload("chat", convs=10)
    assert PolicyRun("slru", {"protected_threshold": 2}).on(w).source == GIVEN
    derived = PolicyRun("tlru").on(w)
    assert derived.source == DERIVED and derived.config is not None
    assert PolicyRun("tlru").on(w) is derived  # derived once per workload
    assert PolicyRun("lru").on(w).source == NONE


def test_replay_takes_a_policy_run_and_labels_the_result_with_it() -> None:
    w = get_workload("chat", convs=6)
    run = PolicyRun("slru", {"protected_threshold": 2}, label="mine")
    by_run = replay(w, run, pool_tokens=4000)
    by_name = replay(w, "slru", {"protected_threshold": 2}, pool_tokens=4000)
    assert by_run.label == "mine" and by_run.policy_config == {"protected_threshold": 2}
    assert by_run.hit_rate == by_name.hit_rate


def test_simulate_report_json_one_workload_and_matrix() -> None:
    w = get_workload("chat", convs=6)
    runs = as_runs(["lru", "lfu"])
    results = replay_policies(w, runs, pool_tokens=4000)
    from radix_evict.sim.recommend import recommend

    rep = SimulateReport([w], [r.name for r in runs], results,
                         {w.name: recommend(results)}, 0, 1, 4000)
    data = rep.to_json()
    assert data["mode"] == "workload" and data["policies"] == ["lru", "lfu"]
    assert data["recommendation"]["policy"] in {"lru", "lfu"}
    m = policy_matrix([w], runs, pool_tokens=4000)
    mrep = SimulateReport([w], m.policies, m.results, {w.name: recommend(m.results)}, 0, 1,
                          4000, matrix=m)
    mdata = mrep.to_json()
    assert mdata["mode"] == "matrix" and mdata["winners"] == m.winners
    assert [r.label for r in mrep.cells(w.name)] == m.policies


def test_the_timed_recommendation_is_the_library_s() -> None:
    with pytest.raises(NothingServedError):
        recommend_timed([], "ttft-p99")


@dataclass(frozen=True)
class _P:
    workload: str | None
    key: str
    value: Any


def test_workload_choice_and_params() -> None:
    assert workload_list("chat, agentic") == ["chat", "agentic"]
    assert params_for("chat", [_P(None, "convs", 3), _P("agentic", "sessions", 2)],
                      all_mode=False) == {"convs": 3}
    [w] = select_workloads(["chat"], [_P(None, "convs", 3)], 0)
    assert w.name == "chat"
    with pytest.raises(WorkloadError, match="unknown workload 'nope'"):
        select_workloads(["chat"], [_P("nope", "x", 1)], 0)
    with pytest.raises(WorkloadError, match="a trace takes only"):
        trace_params([_P(None, "convs", 3)])


def test_the_matrix_recommendation_uses_the_core_s_winners(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The recommendation lives in sim.recommend now: it must not choose a winner again."""
    def again(*_: object) -> None:
        raise AssertionError("the recommendation chose a winner the core had chosen")

    monkeypatch.setattr(recommend_mod, "choose_winner", again)
    r = run_cli("simulate", "-w", "chat,agentic", "-P", "chat.convs=8", "-P", "sessions=4",
                "-p", "lru", "-p", "lfu", "--json", "--jobs", "1")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["winners"] == {w: x["policy"] for w, x in data["recommendations"].items()}


def test_recommend_workloads_one_and_matrix() -> None:
    from radix_evict.sim.recommend import recommend_workloads

    w = get_workload("chat", convs=6)
    results = replay_policies(w, ["lru", "lfu"], pool_tokens=4000)
    [(name, rec)] = recommend_workloads([w.name], results).items()
    assert name == w.name and rec.policy in {"lru", "lfu"}
    m = policy_matrix([w], ["lru", "lfu"], pool_tokens=4000)
    recs = recommend_workloads([w.name], m.results, m)
    assert recs[w.name].policy == m.winners[w.name]
