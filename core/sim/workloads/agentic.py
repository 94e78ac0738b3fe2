"""`agentic`: long agent sessions whose tool-call loops come back seconds apart.

A session is a shared agent system prompt followed by episodes. An episode
starts with a human message; the agent then calls tools: each tool result
comes back ``tool_gap_mean`` seconds later as the next prompt (about
``next_turn_tokens`` new tokens), until a final answer. Between episodes the
human pauses for ``think_mean`` seconds, which is when the session's history
is at risk. Histories grow to tens of thousands of tokens.

The next-turn size is what tlru is configured with: its config deriver takes
the mean growth of the generated follow-up turns (tool results and human
messages, ``Workload.stats()``) as ``next_prompt_estimate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    ASSIST_HDR,
    TOOL_HDR,
    USER_HDR,
    Session,
    SessionWorkload,
    Turn,
    WorkloadParams,
    check_integers,
    check_non_negative,
    check_ordered,
    check_positive,
)
from radix_evict.sim.workloads.common import content, documents, length, round_pool, zipf_probs

NAME = "agentic"
SUMMARY = "long agent sessions with tool-call loops seconds apart and long human pauses"


@dataclass(frozen=True, kw_only=True)
class AgenticParams(WorkloadParams):
    """Parameters of `agentic`."""

    sessions: int = field(default=80, metadata={"doc": "agent sessions"})
    session_rate: float = field(default=0.5, metadata={"doc": "new sessions per simulated second"})
    agents: int = field(default=4, metadata={"doc": "distinct agent system prompts (shared)"})
    sys_min: int = field(default=1000, metadata={"doc": "shortest agent system prompt (tokens)"})
    sys_max: int = field(default=3000, metadata={"doc": "longest agent system prompt (tokens)"})
    episodes_min: int = field(default=2, metadata={"doc": "fewest human messages per session"})
    episodes_max: int = field(default=6, metadata={"doc": "most human messages per session"})
    tool_calls_min: int = field(default=1, metadata={"doc": "fewest tool calls per episode"})
    tool_calls_max: int = field(default=8, metadata={"doc": "most tool calls per episode"})
    user_median: float = field(default=150.0, metadata={"doc": "median human message (tokens)"})
    next_turn_tokens: float = field(
        default=400.0,
        metadata={"doc": "median tool result, i.e. the usual next-turn growth (tokens)"},
    )
    tool_call_median: float = field(
        default=80.0, metadata={"doc": "median tool-call output (tokens)"}
    )
    answer_median: float = field(default=300.0, metadata={"doc": "median final answer (tokens)"})
    tool_gap_mean: float = field(
        default=3.0, metadata={"doc": "mean seconds a tool runs (exponential)"}
    )
    think_mean: float = field(
        default=60.0, metadata={"doc": "mean human pause between episodes (s)"}
    )
    priority: int = field(default=0, metadata={"doc": "request priority of every session"})
    vocab: int = field(
        default=50000, metadata={"doc": "content tokens are drawn from 100..vocab-1"}
    )
    pool_factor: float = field(
        default=0.25,
        metadata={"doc": "default pool = pool_factor x all sessions' final history tokens"},
    )

    def validate(self) -> None:
        super().validate()
        check_integers(
            self,
            "sessions",
            "agents",
            "sys_min",
            "sys_max",
            "episodes_min",
            "episodes_max",
            "tool_calls_min",
            "tool_calls_max",
            "priority",
            "vocab",
        )
        check_positive(
            self,
            "sessions",
            "session_rate",
            "agents",
            "sys_min",
            "episodes_min",
            "user_median",
            "next_turn_tokens",
            "tool_call_median",
            "answer_median",
            "pool_factor",
        )
        check_non_negative(self, "tool_calls_min", "tool_gap_mean", "think_mean", "priority")
        check_ordered(self, "sys_min", "sys_max")
        check_ordered(self, "episodes_min", "episodes_max")
        check_ordered(self, "tool_calls_min", "tool_calls_max")


def _episode(rng: np.random.Generator, p: AgenticParams) -> list[Turn]:
    """A human message, its tool loop, the final answer, then the human pause."""
    calls = int(rng.integers(p.tool_calls_min, p.tool_calls_max + 1))
    user = content(rng, length(rng, p.user_median, 0.8, 4, 4000), p.vocab, USER_HDR)
    prompts = [(user, "user")]
    for _ in range(calls):
        result = content(rng, length(rng, p.next_turn_tokens, 0.5, 4, 8000), p.vocab, TOOL_HDR)
        prompts.append((result, "tool"))
    turns = []
    for i, (prompt, kind) in enumerate(prompts):
        last = i == len(prompts) - 1
        median = p.answer_median if last else p.tool_call_median
        out = content(rng, length(rng, median, 0.7, 2, 4000), p.vocab, ASSIST_HDR)
        think = float(rng.exponential(p.think_mean if last else p.tool_gap_mean))
        turns.append(Turn(prompt, out, think, kind))
    return turns


def build_agentic(seed: int = 0, params: AgenticParams | None = None) -> SessionWorkload:
    """Generate `agentic` for ``seed``."""
    p = params or AgenticParams()
    rng = np.random.default_rng(seed)
    prompts = documents(rng, p.agents, p.sys_min, p.sys_max, p.vocab)
    probs = zipf_probs(p.agents, 1.0)
    sessions: list[Session] = []
    t = 0.0
    final_tokens = 0
    for _ in range(p.sessions):
        t += rng.exponential(1.0 / p.session_rate)
        agent = int(rng.choice(p.agents, p=probs))
        turns: list[Turn] = []
        for _ in range(int(rng.integers(p.episodes_min, p.episodes_max + 1))):
            turns.extend(_episode(rng, p))
        sessions.append(Session(t, prompts[agent], turns, p.priority))
        final_tokens += len(prompts[agent]) + sum(len(x.user) + len(x.output) for x in turns)
    return SessionWorkload(
        NAME,
        sessions,
        p,
        seed=seed,
        default_pool_tokens=round_pool(p.pool_factor * final_tokens),
        info={"final_history_tokens": final_tokens},
    )
