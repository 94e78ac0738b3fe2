"""`chat`: multi-turn chat with shared system prompts, priorities and a few tool loops.

The conversation part draws its random numbers in exactly the order of the
side-by-side harness's synthetic workload (``sglang_bench.Workload``), so with
``tool_loop_prob=0`` and the harness's parameters (``convs=2000``) it is the
harness's workload, request for request. Tool loops come from a second,
independent random stream, so switching them on never changes the
conversations themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from radix_evict.sim.workloads.base import (
    ASSIST_HDR,
    FIRST_CONTENT_TOKEN,
    TOOL_HDR,
    USER_HDR,
    Session,
    SessionWorkload,
    Tokens,
    Turn,
    WorkloadError,
    WorkloadParams,
    check_fraction,
    check_integers,
    check_non_negative,
    check_ordered,
    check_positive,
)

NAME = "chat"
SUMMARY = (
    "multi-turn chat: Zipf-popular shared system prompts, growing conversations, "
    "priorities 0..2, a few agentic tool loops (the default simulate workload)"
)
DEFAULT_POOL_TOKENS = 200_000
TOOL_STREAM = 0x7001  # second seed word of the tool-loop random stream


@dataclass(frozen=True, kw_only=True)
class ChatParams(WorkloadParams):
    """Parameters of `chat` (names and meanings as in the harness's synthetic workload)."""

    convs: int = field(default=1000, metadata={"doc": "conversations"})
    max_turns: int = field(
        default=8, metadata={"doc": "turns per conversation: uniform 1..max_turns"}
    )
    num_sys: int = field(default=16, metadata={"doc": "distinct shared system prompts"})
    sys_min: int = field(default=300, metadata={"doc": "shortest system prompt (tokens)"})
    sys_max: int = field(default=2000, metadata={"doc": "longest system prompt (tokens)"})
    zipf: float = field(default=1.1, metadata={"doc": "Zipf exponent of system-prompt popularity"})
    user_median: float = field(
        default=120.0, metadata={"doc": "median user message (tokens, lognormal)"}
    )
    out_median: float = field(
        default=200.0, metadata={"doc": "median assistant reply (tokens, lognormal)"}
    )
    conv_rate: float = field(
        default=2.0, metadata={"doc": "new conversations per simulated second"}
    )
    think_mean: float = field(
        default=30.0, metadata={"doc": "mean pause between turns (s, exponential)"}
    )
    priorities: int = field(
        default=3, metadata={"doc": "request priorities drawn uniformly from 0..priorities-1"}
    )
    vocab: int = field(
        default=50000, metadata={"doc": "content tokens are drawn from 100..vocab-1"}
    )
    tool_loop_prob: float = field(
        default=0.1, metadata={"doc": "share of conversations that run one agentic tool loop"}
    )
    tool_calls_min: int = field(default=2, metadata={"doc": "fewest tool calls in a loop"})
    tool_calls_max: int = field(default=6, metadata={"doc": "most tool calls in a loop"})
    tool_result_median: float = field(
        default=300.0, metadata={"doc": "median tool result fed back as the next prompt (tokens)"}
    )
    tool_call_median: float = field(
        default=60.0, metadata={"doc": "median tool-call output (tokens)"}
    )
    tool_think_mean: float = field(
        default=2.0, metadata={"doc": "mean time a tool runs before its result arrives (s)"}
    )

    def validate(self) -> None:
        super().validate()
        check_integers(
            self,
            "convs",
            "max_turns",
            "num_sys",
            "sys_min",
            "sys_max",
            "priorities",
            "vocab",
            "tool_calls_min",
            "tool_calls_max",
        )
        check_positive(
            self,
            "convs",
            "max_turns",
            "num_sys",
            "sys_min",
            "user_median",
            "out_median",
            "conv_rate",
            "priorities",
            "tool_calls_min",
            "tool_result_median",
            "tool_call_median",
        )
        check_non_negative(self, "zipf", "think_mean", "tool_think_mean")
        check_fraction(self, "tool_loop_prob")
        check_ordered(self, "sys_min", "sys_max")
        check_ordered(self, "tool_calls_min", "tool_calls_max")
        if self.vocab <= FIRST_CONTENT_TOKEN:
            raise WorkloadError(f"vocab must be > {FIRST_CONTENT_TOKEN}, got {self.vocab}")


def _message(rng: np.random.Generator, hdr: tuple[int, ...], n: int, vocab: int) -> Tokens:
    return np.concatenate([hdr, rng.integers(FIRST_CONTENT_TOKEN, vocab, size=n)]).astype(np.int64)


def _conversations(rng: np.random.Generator, p: ChatParams) -> tuple[list[Tokens], list[Session]]:
    """System prompts and conversations, in the harness's draw order."""
    sys_prompts = [
        rng.integers(
            FIRST_CONTENT_TOKEN,
            p.vocab,
            size=int(rng.integers(p.sys_min, p.sys_max + 1)),
            dtype=np.int64,
        )
        for _ in range(p.num_sys)
    ]
    ranks = np.arange(1, p.num_sys + 1)
    pz = 1.0 / ranks**p.zipf
    pz /= pz.sum()
    sessions = []
    t = 0.0
    for _ in range(p.convs):
        t += rng.exponential(1.0 / p.conv_rate)
        n_turns = int(rng.integers(1, p.max_turns + 1))
        turns = []
        for _ in range(n_turns):
            ul = int(np.clip(rng.lognormal(np.log(p.user_median), 0.8), 4, 4000))
            ol = int(np.clip(rng.lognormal(np.log(p.out_median), 0.7), 2, 2000))
            user = _message(rng, USER_HDR, ul, p.vocab)
            out = _message(rng, ASSIST_HDR, ol, p.vocab)
            think = float(rng.exponential(p.think_mean))
            turns.append(Turn(user, out, think))
        sys_id = int(rng.choice(p.num_sys, p=pz))
        prio = int(rng.integers(0, p.priorities))
        sessions.append(Session(t, sys_prompts[sys_id], turns, prio))
    return sys_prompts, sessions


def _with_tool_loop(rng: np.random.Generator, s: Session, p: ChatParams) -> Session:
    """Insert one tool loop after a random turn: results arrive seconds apart."""
    after = int(rng.integers(0, len(s.turns)))
    calls = int(rng.integers(p.tool_calls_min, p.tool_calls_max + 1))
    gaps = [float(rng.exponential(p.tool_think_mean)) for _ in range(calls)]
    loop = []
    for c in range(calls):
        rl = int(np.clip(rng.lognormal(np.log(p.tool_result_median), 0.8), 4, 8000))
        cl = int(np.clip(rng.lognormal(np.log(p.tool_call_median), 0.7), 2, 2000))
        think = gaps[c + 1] if c + 1 < calls else s.turns[after].think
        loop.append(
            Turn(
                _message(rng, TOOL_HDR, rl, p.vocab),
                _message(rng, ASSIST_HDR, cl, p.vocab),
                think,
                "tool",
            )
        )
    head = s.turns[after]
    turns = [
        *s.turns[:after],
        Turn(head.user, head.output, gaps[0], head.kind),
        *loop,
        *s.turns[after + 1 :],
    ]
    return Session(s.start, s.prefix, turns, s.priority)


def build_chat(seed: int = 0, params: ChatParams | None = None) -> SessionWorkload:
    """Generate the `chat` workload for ``seed``."""
    p = params or ChatParams()
    rng = np.random.default_rng(seed)
    _, sessions = _conversations(rng, p)
    tool_rng = np.random.default_rng([seed, TOOL_STREAM])
    loops = 0
    for i, s in enumerate(sessions):
        if tool_rng.random() < p.tool_loop_prob:
            sessions[i] = _with_tool_loop(tool_rng, s, p)
            loops += 1
    return SessionWorkload(
        NAME,
        sessions,
        p,
        seed=seed,
        default_pool_tokens=DEFAULT_POOL_TOKENS,
        info={"tool_loops": loops},
    )
