"""Request lists for the engine: a small built-in chat mix and adapters from token workloads.

The engine takes requests; it does not choose a workload (the simulator
does: ``radix_evict.sim.workloads.tiny``), and it imports nothing of the
simulator. The adapters read any object with the request fields they name.
The built-in mix is sized for a CPU replay of seconds: shared system prompts,
multi-turn conversations whose later turns quote earlier outputs, turns of
different conversations interleaved so a small pool has to evict.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from radix_evict.engine.loop import EngineRequest


def tiny_chat_requests(
    conversations: int = 12, turns: int = 3, systems: int = 3, system_len: int = 48,
    user_len: tuple[int, int] = (12, 40), output_len: tuple[int, int] = (6, 14),
    vocab_size: int = 512, seed: int = 0, forced_output: bool = True,
) -> list[EngineRequest]:
    """Interleaved multi-turn chats; turn k's prompt = system + earlier turns + new message.

    With ``forced_output`` each turn carries the output that the next turn
    quotes, so cache hits do not depend on what the random model generates.
    """
    rng = random.Random(seed)

    def tokens(n: int) -> list[int]:
        return [rng.randrange(vocab_size) for _ in range(n)]

    system_prompts = [tokens(system_len) for _ in range(systems)]
    history = [list(system_prompts[c % systems]) for c in range(conversations)]
    priority = [rng.randrange(3) for _ in range(conversations)]
    out: list[EngineRequest] = []
    for _ in range(turns):
        for c in range(conversations):
            prompt = history[c] + tokens(rng.randint(*user_len))
            n_out = rng.randint(*output_len)
            answer = tokens(n_out)
            out.append(EngineRequest(
                prompt=tuple(prompt), max_new_tokens=n_out, priority=priority[c],
                output=tuple(answer) if forced_output else None, session=c,
            ))
            history[c] = prompt + answer
    return out


def _field(req: Any, *names: str) -> Any:
    for name in names:
        if isinstance(req, Mapping) and name in req:
            return req[name]
        if hasattr(req, name):
            return getattr(req, name)
    return None


def requests_from_workload(
    requests: Iterable[Any], vocab_size: int, forced_output: bool = True,
    max_prompt: int | None = None,
) -> list[EngineRequest]:
    """Map a token workload's requests into the tiny model's vocabulary (token % vocab).

    Accepts objects or mappings with ``prompt`` (or ``tokens``/``input_ids``),
    ``output`` (or ``out``/``output_ids``) or ``max_new_tokens``/``output_len``,
    ``priority`` (or ``prio``) and ``session``. ``max_prompt`` truncates long prompts.
    """
    converted: list[EngineRequest] = []
    for req in requests:
        prompt = _field(req, "prompt", "tokens", "input_ids", "prompt_tokens")
        if prompt is None:
            raise ValueError(f"workload request without a prompt: {req!r}")
        toks = [int(t) % vocab_size for t in prompt][: max_prompt or None]
        outs = _field(req, "output", "out", "output_ids", "output_tokens")
        n_new = _field(req, "max_new_tokens", "output_len", "max_tokens")
        answer = [int(t) % vocab_size for t in outs] if outs is not None else None
        n = len(answer) if answer is not None else int(n_new or 1)
        if not toks or n < 1:
            continue
        prio = _field(req, "priority", "prio")
        session = _field(req, "session")
        converted.append(EngineRequest(
            prompt=tuple(toks), max_new_tokens=n, priority=int(prio or 0),
            output=tuple(answer) if forced_output and answer is not None else None,
            session=None if session is None else int(session),
        ))
    return converted


def default_pool_tokens(requests: Sequence[EngineRequest]) -> int:
    """A fifth of the prompt tokens, and at least twice the largest request:
    small enough that the policies have to choose, large enough to admit."""
    biggest = max((len(r.prompt) + r.max_new_tokens for r in requests), default=1)
    total = sum(len(r.prompt) for r in requests)
    return -(-max(2 * biggest, total // 5, 64) // 64) * 64


TRACE_REQUESTS = 48  # arrivals of a trace that --model tiny replays by default
TOKENS_PER_BLOCK = 8  # a trace's hash block shrunk to this many tokens


def _spread(tokens: Any, vocab_size: int) -> list[int]:
    """Token ids into the vocabulary by a multiplicative hash, not ``% vocab``.

    Trace token ids are ``block * block_size + offset``; with a vocabulary
    that divides the block size, ``% vocab`` would map every block to the same
    tokens and make unrelated prompts share prefixes.
    """
    return [(int(t) * 0x9E3779B97F4A7C15 >> 17) % vocab_size for t in tokens]


def tiny_trace_requests(
    workload: Any, vocab_size: int, requests: int = TRACE_REQUESTS,
    tokens_per_block: int = TOKENS_PER_BLOCK,
) -> list[EngineRequest]:
    """A trace's first ``requests`` arrivals shrunk to CPU size, prefix structure kept.

    Every request keeps one token in ``block_size // tokens_per_block`` (the
    same positions in every request), so two prompts that share ``k`` blocks
    share ``k * tokens_per_block`` tokens, and a linked turn still starts with
    its parent's (shrunk) prompt and reply.
    """
    stride = max(1, int(getattr(workload, "block", 1)) // tokens_per_block)
    out: list[EngineRequest] = []
    for req in workload.requests():
        if len(out) >= requests:
            break
        prompt = _spread(req.prompt[::stride], vocab_size)
        answer = _spread(req.output[::stride], vocab_size) or [0]
        if not prompt:
            continue
        out.append(EngineRequest(prompt=tuple(prompt), max_new_tokens=len(answer),
                                 priority=int(req.priority), output=tuple(answer),
                                 session=int(req.session)))
    return out
