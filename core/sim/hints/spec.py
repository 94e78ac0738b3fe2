"""What a ``--hints`` option asks for: which hint, for what share of sessions, how often wrong.

A hint model answers "what if clients sent this": no trace in the repository
records hints, so :mod:`radix_evict.sim.hints.model` derives each from the
trace itself and hands it to a share of sessions (``coverage``), wrong on a
share of requests (``error``), both drawn from ``seed`` so a run repeats.

The text form is ``KIND[:KEY=VALUE,...]``, e.g. ``session-end:coverage=0.5,error=0.05``;
several hints are joined by ``;`` (or given as separate options).
"""

from __future__ import annotations

from dataclasses import dataclass

from radix_evict.errors import RadixEvictError
from radix_evict.suggest import did_you_mean

SESSION_END = "session-end"  # this request is its session's last (RequestContext.session_end)
NEXT_REQUEST = "next-request"  # seconds until the session's next request, after a tool call
HINT_KINDS = (SESSION_END, NEXT_REQUEST)
KEYS = ("coverage", "error", "seed")


class HintSpecError(RadixEvictError, ValueError):
    """A hint specification that cannot be read; the message names the bad part."""


def _near(word: str, candidates: tuple[str, ...]) -> str:
    hint = did_you_mean(word, candidates)
    return f"; {hint}" if hint else ""


@dataclass(frozen=True)
class HintSpec:
    """One hint model: ``kind`` for ``coverage`` of the sessions, wrong on ``error`` of requests."""

    kind: str
    coverage: float = 1.0
    error: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in HINT_KINDS:
            raise HintSpecError(f"hint {self.kind!r} is not one of {', '.join(HINT_KINDS)}"
                                f"{_near(self.kind, HINT_KINDS)}")
        for name in ("coverage", "error"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise HintSpecError(f"hint {self.kind}: {name} must be a number from 0 to 1, "
                                    f"got {v!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise HintSpecError(f"hint {self.kind}: seed must be an integer >= 0, "
                                f"got {self.seed!r}")

    def text(self) -> str:
        """The spec as the option takes it (round-trips through :func:`parse_hint`)."""
        return f"{self.kind}:coverage={self.coverage:g},error={self.error:g},seed={self.seed}"


def parse_hint(text: str) -> HintSpec:
    """One ``KIND[:KEY=VALUE,...]``; HintSpecError names the part that is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise HintSpecError(f"hint spec {text!r} is empty: give e.g. "
                            "'session-end:coverage=0.5,error=0.05'")
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip()
    if kind not in HINT_KINDS:
        raise HintSpecError(f"hint spec {text!r}: {kind!r} is not a hint (one of "
                            f"{', '.join(HINT_KINDS)}){_near(kind, HINT_KINDS)}")
    values: dict[str, float | int] = {}
    for part in (p.strip() for p in rest.split(",")) if rest.strip() else ():
        key, eq, raw = (x.strip() for x in part.partition("="))
        if not eq or not key or not raw:
            raise HintSpecError(f"hint spec {text!r}: {part!r} is not KEY=VALUE")
        if key not in KEYS:
            raise HintSpecError(f"hint spec {text!r}: unknown key {key!r} (keys: "
                                f"{', '.join(KEYS)}){_near(key, KEYS)}")
        if key in values:
            raise HintSpecError(f"hint spec {text!r}: {key} given twice")
        try:
            values[key] = int(raw) if key == "seed" else float(raw)
        except ValueError:
            what = "an integer" if key == "seed" else "a number"
            raise HintSpecError(f"hint spec {text!r}: {key}={raw!r} is not {what}") from None
    try:
        return HintSpec(kind, **values)  # type: ignore[arg-type]
    except HintSpecError as e:
        raise HintSpecError(f"hint spec {text!r}: {e}") from None


def parse_hints(texts: str | list[str] | tuple[str, ...]) -> tuple[HintSpec, ...]:
    """Every hint in ``texts`` (``;``-joined or a list); one kind at most once."""
    items = [texts] if isinstance(texts, str) else list(texts)
    specs = [parse_hint(p) for t in items for p in t.split(";") if p.strip()]
    kinds = [s.kind for s in specs]
    for k in set(kinds):
        if kinds.count(k) > 1:
            raise HintSpecError(f"hint {k!r} given more than once")
    return tuple(specs)
