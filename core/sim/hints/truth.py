"""The true value of each hint, derived from a workload's own requests (the future included).

This is what a perfect client would send; :mod:`radix_evict.sim.hints.model`
then hands it to a share of sessions and makes a share of it wrong. Each
function returns, per request id, ``(session, value)``.

- **Session end.** A session workload knows its sessions' last turns; a
  Bailian-style trace links turns (a row no later row continues is the last);
  a Mooncake trace has no sessions, so they are found from the block-hash
  chains: request ``i``'s *new* blocks start where its prompt leaves every
  earlier prompt's prefix; a later request that shares its deepest full block
  (or its first new block, if deeper) continues ``i``'s conversation (the
  last, usually partial, block is rewritten by the next turn), and a
  conversation's last request ends it. A request nobody continues is its
  conversation's last turn (its prompt tail and reply are never reused), and a
  conversation is a chain of continued requests from its first.
- **Next request.** In a session workload, a turn that ends in a tool call is
  followed by the tool's result after the tool ran: the seconds from the turn's
  finish to the next turn's arrival (the agentic workload's tool durations).
  Human pauses are not hinted: an agent framework knows its tools, not its users.
"""

from __future__ import annotations

from typing import Any

from radix_evict.sim.traces.block_trace import BlockTrace
from radix_evict.sim.workloads import MooncakeTrace, Workload
from radix_evict.sim.workloads.base import SessionWorkload

Truth = dict[str, tuple[Any, Any]]  # rid -> (session, true value)


class HintUnavailable(ValueError):
    """The workload has nothing a hint could be derived from (says which and why)."""


def session_ends(workload: Workload) -> Truth:
    """Per request: its session and whether it is the session's last request."""
    if isinstance(workload, SessionWorkload):
        return {f"s{si}t{ti}": (si, ti == len(s.turns) - 1)
                for si, s in enumerate(workload.sessions) for ti in range(len(s.turns))}
    if isinstance(workload, BlockTrace):
        children = [0] * len(workload.rows)
        for r in workload.rows:
            if r.parent >= 0:
                children[r.parent] += 1
        if any(children):
            return {f"r{i}": (workload.session_of(i), children[i] == 0)
                    for i in range(len(workload.rows))}
        return _chains([r.hash_ids.tolist() for r in workload.rows])
    if isinstance(workload, MooncakeTrace):
        return _chains([r[3].tolist() for r in workload.rows])
    raise HintUnavailable(f"workload {workload.name!r}: session-end hints need sessions, "
                          "linked turns or block hashes")


def _chains(hash_ids: list[list[int]]) -> Truth:
    """Conversations and their last turns from block-hash chains (module docstring).

    Request ``i``'s *key* block is its deepest full prompt block (the last one
    is usually partial, rewritten by the next turn), or its first new block if
    that lies deeper: a later request through the key continues ``i``'s
    conversation, and its last request ends it: what a client that closes its
    chat knows. Another conversation may still read a block this one brought
    (the same document under another question): the chains cannot tell, and
    the policy must (``session`` demotes only nodes no other session touched).
    """
    ids: dict[tuple[int, int], int] = {}
    keys: list[int] = []
    paths: list[list[int]] = []
    for h in hash_ids:
        pid = 0
        path = []
        new = len(h)
        for depth, b in enumerate(h):
            key = (pid, b)
            nxt = ids.get(key)
            if nxt is None:
                nxt = ids[key] = len(ids) + 1
                new = min(new, depth)
            pid = nxt
            path.append(pid)
        paths.append(path)
        keys.append(path[max(min(new, len(path) - 1), len(path) - 2)] if path else 0)
    owner: dict[int, int] = {}  # key block -> the first request it was the key of
    root: list[int] = []
    last_req: dict[int, int] = {}  # conversation -> its last request
    for i, path in enumerate(paths):
        parent = next((owner[p] for p in reversed(path[:-1]) if p in owner), -1)
        r = root[parent] if parent >= 0 else i
        root.append(r)
        owner.setdefault(keys[i], i)
        last_req[r] = i
    return {f"r{i}": (root[i], last_req[root[i]] == i) for i in range(len(paths))}


def next_requests(workload: Workload) -> Truth:
    """Per tool-calling turn: its session and the seconds until the tool's result arrives."""
    if not isinstance(workload, SessionWorkload):
        raise HintUnavailable(f"workload {workload.name!r}: next-request hints need a session "
                              "workload whose turns call tools (e.g. agentic)")
    out: Truth = {}
    for si, s in enumerate(workload.sessions):
        for ti in range(len(s.turns) - 1):
            if s.turns[ti + 1].kind == "tool":
                out[f"s{si}t{ti}"] = (si, float(s.turns[ti].think))
    return out
