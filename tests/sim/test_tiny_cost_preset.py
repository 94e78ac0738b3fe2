"""The ``tiny-cpu`` cost preset and the script that measures it, without depending on speed.

The preset's numbers are machine-specific (``bench/check_tiny_cost_model.py``
checks them against the engine); what must hold everywhere is that the
preset loads, says where it comes from and times every step positively, and
that the measuring script writes a CSV ``radix-evict calibrate`` reads back
with the grid it was given.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

from radix_evict.sim.timed.calibrate import fit, read_points
from radix_evict.sim.timed.cost import attention_pairs, load_cost_model, preset_names

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "measure_tiny_costs.py"


def _script() -> ModuleType:
    """``bench/measure_tiny_costs.py`` as a module (bench/ is no package)."""
    name = "measure_tiny_costs_for_tests"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_preset_loads_with_its_source() -> None:
    assert "tiny-cpu" in preset_names()
    model = load_cost_model("tiny-cpu")
    assert model.name == "tiny-cpu"
    assert "bench/measure_tiny_costs.py" in model.source


def test_preset_coefficients_are_non_negative_and_steps_take_time() -> None:
    model = load_cost_model("tiny-cpu")
    coefs = {**model.prefill.model_dump(), **{f"decode.{k}": v for k, v in
                                              model.decode.model_dump().items()}}
    assert all(v >= 0 and math.isfinite(v) for v in coefs.values()), coefs
    for new, cached in ((1, 0), (32, 256), (300, 1000)):
        assert model.prefill_ms(new, attention_pairs(cached, new)) > 0
    for batch, context in ((1, 1), (4, 4000)):
        assert model.decode_ms(batch, context) > 0
    # more work never takes less time under non-negative coefficients
    assert model.prefill_ms(300, attention_pairs(1000, 300)) >= model.prefill_ms(
        1, attention_pairs(0, 1))
    assert model.decode_ms(4, 4000) >= model.decode_ms(1, 1)


@pytest.mark.parametrize("clock", ["cpu", "wall"])
def test_measured_csv_round_trips_through_calibrate(tmp_path: Path, clock: str) -> None:
    mod = _script()
    prefill = [(1, 0), (3, 0), (2, 5), (4, 9)]
    decode = [(1, 1), (2, 3), (3, 2)]
    points = mod.measure(prefill, decode, repeats=1, warmup=0, clock=clock)
    path = mod.write_csv(points, tmp_path / "sub" / "costs.csv")
    assert path.read_text().splitlines()[0] == "uncached,cached,batch,ms,kind"
    back = read_points(path)
    got = [(p.kind, p.uncached, p.cached, p.batch) for p in back]
    want = [("prefill", u, c, 1) for u, c in prefill]
    want += [("decode", 0, b * (n + 1), b) for b, n in decode]
    assert got == want
    assert all(p.ms > 0 and math.isfinite(p.ms) for p in back)
    assert [p.ms for p in back] == pytest.approx([p.ms for p in points], rel=1e-6)
    model, errors = fit(back, name="roundtrip")
    assert [e.kind for e in errors] == ["prefill", "decode"]
    assert model.prefill.base_ms >= 0 and model.decode.base_ms >= 0


def test_measure_rejects_an_empty_step() -> None:
    mod = _script()
    with pytest.raises(ValueError):
        mod.measure([(0, 4)], [], repeats=1, warmup=0)
    with pytest.raises(ValueError):
        mod.measure([], [(0, 4)], repeats=1, warmup=0)
    with pytest.raises(ValueError):
        mod.measure([(1, 0)], [], repeats=1, warmup=0, clock="gpu")
