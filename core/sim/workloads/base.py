"""Workload types and the event stream that a replay consumes.

A workload is a seed-deterministic list of *sessions* (a conversation, an agent
run, or a single request). A session has a fixed prefix (system prompt or
document) and turns; a turn's prompt is the prefix, every earlier turn's user
and assistant tokens, then its own user tokens. That is how chat histories
grow, and a one-turn session is simply a standalone request.

Time is simulated: a request finishes after a service time that does not
depend on the cache (``0.05 s + prompt / prefill_rate + output / decode_rate``),
and a session's next turn arrives ``think`` seconds after its previous turn
finished. The order of cache operations is therefore the same for every policy,
which is what makes policies comparable. The event loop is the one of the
side-by-side harness (``../peer/sglang_bench.py``), tie-breaking included.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from radix_evict.cache.args import check_int, check_number
from radix_evict.cache.context import RequestContext
from radix_evict.errors import RadixEvictError
from radix_evict.policies.derive import WorkloadStats

Tokens = npt.NDArray[np.int64]

# Chat-template-like fixed tokens, as in the harness: they make the tree split at
# turn borders the way a real chat template does. Content tokens are >= 100.
USER_HDR: tuple[int, ...] = (1, 2, 3)
ASSIST_HDR: tuple[int, ...] = (4, 5)
TOOL_HDR: tuple[int, ...] = (6, 7)
FIRST_CONTENT_TOKEN = 100

EventKind = Literal["arrive", "finish"]


class WorkloadError(RadixEvictError, ValueError):
    """An unknown workload name, an unknown parameter, or a bad parameter value."""


class WorkloadTypeError(WorkloadError, TypeError):
    """A workload parameter of the wrong type (still a :class:`WorkloadError`)."""


# The shared argument checks, raising the workload's own errors.
_ERRORS: dict[str, Any] = {"type_error": WorkloadTypeError, "value_error": WorkloadError}


@dataclass(frozen=True, kw_only=True)
class WorkloadParams:
    """Parameters every workload shares: the cache-independent service time."""

    prefill_rate: float = field(
        default=20000.0, metadata={"doc": "prompt tokens per simulated second (service time only)"}
    )
    decode_rate: float = field(
        default=100.0, metadata={"doc": "output tokens per simulated second (service time only)"}
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise WorkloadError naming the first bad field. Subclasses extend this."""
        check_positive(self, "prefill_rate", "decode_rate")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_positive(params: object, *names: str) -> None:
    """Every named field must be a finite number > 0."""
    for name in names:
        check_number(name, getattr(params, name), 0, above=True, **_ERRORS)


def check_non_negative(params: object, *names: str) -> None:
    """Every named field must be a finite number >= 0."""
    for name in names:
        check_number(name, getattr(params, name), 0, **_ERRORS)


def check_integers(params: object, *names: str) -> None:
    """Every named field must be an int (not a bool)."""
    for name in names:
        check_int(name, getattr(params, name), **_ERRORS)


def check_ordered(params: object, low: str, high: str) -> None:
    """Field ``low`` must not exceed field ``high``."""
    if getattr(params, low) > getattr(params, high):
        raise WorkloadError(
            f"{low} ({getattr(params, low)}) must not exceed {high} ({getattr(params, high)})"
        )


def check_fraction(params: object, *names: str) -> None:
    """Every named field must be a probability in [0, 1]."""
    for name in names:
        check_number(name, getattr(params, name), 0, high=1, **_ERRORS)


@dataclass(frozen=True, slots=True)
class Request:
    """One request as the replay sees it: prompt and output tokens, priority."""

    rid: str
    prompt: Tokens
    output: Tokens
    priority: int
    arrival: float
    session: int
    turn: int
    kind: str = "user"
    full: Tokens | None = None  # prompt + output in one array, prompt and output views of it

    def tokens(self) -> Tokens:
        """Prompt then output, without a copy when the workload built them together."""
        return self.full if self.full is not None else np.concatenate([self.prompt, self.output])


class Event(NamedTuple):
    """A request arriving or finishing at simulated time ``time`` (seconds)."""

    time: float
    kind: EventKind
    request: Request


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a session: new user tokens, the reply, the pause after it."""

    user: Tokens
    output: Tokens
    think: float
    kind: str = "user"


@dataclass(frozen=True, slots=True)
class Session:
    """A conversation (or a one-off request): prefix, turns, priority, start time."""

    start: float
    prefix: Tokens
    turns: list[Turn]
    priority: int = 0


def service_time(prompt_len: int, output_len: int, params: WorkloadParams) -> float:
    """Cache-independent service time, as in the harness: keeps the op order fixed."""
    return 0.05 + prompt_len / params.prefill_rate + output_len / params.decode_rate


def tokens(values: Sequence[int] | npt.NDArray[np.integer[Any]]) -> Tokens:
    """An int64 token array (the type the replay hands to the cache)."""
    return np.asarray(values, dtype=np.int64)


def param_docs(params_type: type[WorkloadParams]) -> list[dict[str, Any]]:
    """name, default and doc of every parameter, for ``--help`` style listings."""
    out = []
    for f in fields(params_type):
        out.append(
            {
                "name": f.name,
                "type": f.type
                if isinstance(f.type, str)
                else getattr(f.type, "__name__", str(f.type)),
                "default": f.default,
                "doc": f.metadata.get("doc", ""),
            }
        )
    return out


class Workload(ABC):
    """A replayable, seed-deterministic request stream.

    Subclasses provide ``events()``; everything a report needs about the
    workload (parameters, default pool, measured statistics) lives here too,
    so the CLI can print it next to the figures.
    """

    name: str
    seed: int | None
    params: WorkloadParams
    default_pool_tokens: int

    @abstractmethod
    def events(self) -> Iterator[Event]:
        """Arrivals and finishes in simulated-time order (fresh iterator each call)."""

    @property
    @abstractmethod
    def num_requests(self) -> int:
        """How many requests arrive."""

    @abstractmethod
    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        """Per-request next-turn growth in tokens, and what the samples are."""

    def service_time(self, prompt_len: int, output_len: int) -> float:
        return service_time(prompt_len, output_len, self.params)

    def stats(self) -> WorkloadStats:
        """What a policy's config deriver is told about this workload (measured once)."""
        cached: WorkloadStats | None = getattr(self, "_stats", None)
        if cached is None:
            growth, what = self.growth_samples()
            cached = WorkloadStats(self.name, self.num_requests,
                                   np.asarray(growth, dtype=np.int64), what)
            self._stats = cached
        return cached

    def context_of(self, req: Request) -> RequestContext:
        """What ``req`` tells a policy about itself (``node.context``), as far as it is known.

        The default fills everything a built-in workload knows: its session,
        the turn before it, its turn, kind, priority, arrival and output
        length. A trace format overrides it to give what its records carry.
        """
        parent = f"s{req.session}t{req.turn - 1}" if req.turn > 0 else None
        return RequestContext(session=req.session, parent=parent, turn=req.turn,
                              kind=req.kind, priority=req.priority, arrival=req.arrival,
                              output_len=len(req.output), rid=req.rid)

    def requests(self) -> Iterator[Request]:
        """Just the arriving requests, in arrival order."""
        for ev in self.events():
            if ev.kind == "arrive":
                yield ev.request

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable summary: name, seed, parameters, sizes, defaults."""
        return {
            "name": self.name,
            "seed": self.seed,
            "params": self.params.to_dict(),
            "requests": self.num_requests,
            "default_pool_tokens": self.default_pool_tokens,
        }


class SessionWorkload(Workload):
    """A workload made of sessions; events follow the harness's event loop.

    All first turns are queued up front in session order, then every finish
    queues the session's next turn ``think`` seconds later. Heap entries are
    ``(time, seq, ...)``, so ties go to whatever was queued first, exactly as
    in ``sglang_bench.Workload.events``.
    """

    def __init__(
        self,
        name: str,
        sessions: list[Session],
        params: WorkloadParams,
        *,
        seed: int | None,
        default_pool_tokens: int,
        info: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.sessions = sessions
        self.params = params
        self.seed = seed
        self.default_pool_tokens = int(default_pool_tokens)
        self.info = dict(info or {})
        self._num_requests = sum(len(s.turns) for s in sessions)

    @property
    def num_requests(self) -> int:
        return self._num_requests

    def events(self) -> Iterator[Event]:
        heap: list[tuple[float, int, int, int, int]] = []  # time, seq, is_finish, session, turn
        seq = 0
        for si, s in enumerate(self.sessions):
            heap.append((s.start, seq, 0, si, 0))
            seq += 1
        heapq.heapify(heap)
        history: dict[int, Tokens] = {}
        live: dict[tuple[int, int], Request] = {}
        while heap:
            t, _, is_finish, si, ti = heapq.heappop(heap)
            s = self.sessions[si]
            turn = s.turns[ti]
            if not is_finish:
                req = self.turn_request(si, ti, history[si] if ti else s.prefix, t)
                live[(si, ti)] = req
                yield Event(t, "arrive", req)
                done = t + self.service_time(len(req.prompt), len(turn.output))
                heapq.heappush(heap, (done, seq, 1, si, ti))
                seq += 1
            else:
                req = live.pop((si, ti))
                yield Event(t, "finish", req)
                if ti + 1 < len(s.turns):
                    history[si] = req.tokens()
                    heapq.heappush(heap, (t + turn.think, seq, 0, si, ti + 1))
                    seq += 1
                else:
                    history.pop(si, None)

    def turn_request(self, si: int, ti: int, history: Tokens, t: float) -> Request:
        """Turn ``ti`` of session ``si``, arriving at ``t`` after ``history``.

        ``history`` is the session's prefix for the first turn, else the previous
        turn's ``tokens()``. One array holds prompt and output: the finish needs
        both together, and the next turn's history is exactly that array.
        """
        s = self.sessions[si]
        turn = s.turns[ti]
        full = np.concatenate([history, turn.user, turn.output])
        plen = len(history) + len(turn.user)
        return Request(f"s{si}t{ti}", full[:plen], full[plen:], s.priority, t, si, ti,
                       turn.kind, full)

    def growth_samples(self) -> tuple[npt.NDArray[np.int64], str]:
        """Follow-up turns' new user tokens; one-turn sessions' non-prefix tokens."""
        follow = [len(t.user) for s in self.sessions for t in s.turns[1:]]
        if follow:
            return np.asarray(follow, dtype=np.int64), "follow-up turns (new user/tool tokens)"
        first = [len(s.turns[0].user) for s in self.sessions if s.turns]
        return np.asarray(first, dtype=np.int64), "requests (tokens after the shared prefix)"

    def token_totals(self) -> tuple[int, int]:
        """(prompt tokens, output tokens) over all requests, without building prompts."""
        prompt_total = 0
        output_total = 0
        for s in self.sessions:
            hist = len(s.prefix)
            for t in s.turns:
                prompt_total += hist + len(t.user)
                output_total += len(t.output)
                hist += len(t.user) + len(t.output)
        return prompt_total, output_total

    def describe(self) -> dict[str, Any]:
        prompt_total, output_total = self.token_totals()
        priorities = sorted({s.priority for s in self.sessions})
        return {
            **super().describe(),
            "sessions": len(self.sessions),
            "prompt_tokens": prompt_total,
            "output_tokens": output_total,
            "priorities": priorities,
            **self.info,
        }
