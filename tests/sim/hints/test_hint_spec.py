"""``--hints`` text: parsed in the library, every bad part named."""

from __future__ import annotations

import pytest

from radix_evict.sim.hints import HintSpec, HintSpecError, parse_hint, parse_hints


def test_parse_full_spec() -> None:
    spec = parse_hint("session-end:coverage=0.5,error=0.05")
    assert spec == HintSpec("session-end", 0.5, 0.05, 0)
    assert parse_hint(spec.text()) == spec


def test_defaults_and_several() -> None:
    a, b = parse_hints("session-end; next-request:seed=3,coverage=1")
    assert (a.coverage, a.error, a.seed) == (1.0, 0.0, 0)
    assert (b.kind, b.seed) == ("next-request", 3)


@pytest.mark.parametrize(("text", "named"), [
    ("sesion-end", "did you mean 'session-end'"),
    ("session-end:coverage=1.5", "coverage must be a number from 0 to 1"),
    ("session-end:error=-0.1", "error must be a number from 0 to 1"),
    ("session-end:coverage=half", "coverage='half' is not a number"),
    ("session-end:covrage=0.5", "did you mean 'coverage'"),
    ("session-end:coverage", "'coverage' is not KEY=VALUE"),
    ("session-end:seed=1.5", "seed='1.5' is not an integer"),
    ("session-end:error=0.1,error=0.2", "error given twice"),
    ("", "is empty"),
])
def test_bad_spec_names_the_part(text: str, named: str) -> None:
    with pytest.raises(HintSpecError, match=named.replace("(", r"\(")) as e:
        parse_hint(text)
    assert isinstance(e.value, ValueError)


def test_a_kind_twice_is_refused() -> None:
    with pytest.raises(HintSpecError, match="more than once"):
        parse_hints(["session-end", "session-end:coverage=0.5"])
