"""A sweep resumes a cell only when its input files are the ones it measured (issue #36).

A cell's key holds the content digest of its trace and of every file its
config names (the learned policy's weights): a file rewritten in place is
new cells, the same bytes under the same name resume, and a cell that reads
no file keeps the key it always had.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.sweeps import write_trace

from radix_evict.sim.sweep import GridParts, local_executor, make_grid, plan_sweep, run_sweep
from radix_evict.sim.sweep.fingerprints import file_digest
from radix_evict.sim.workloads import TraceFileError


def _parts(trace: Path, **over: object) -> GridParts:
    base: dict[str, object] = {"policies": ["lru"], "traces": [str(trace)],
                               "page_sizes": [512], "pool_tokens": [8_192]}
    return GridParts(**{**base, **over})  # type: ignore[arg-type]


def _rewrite(path: Path, text: str) -> None:
    """New bytes under the same name, with the old modification time (a copy that kept it)."""
    info = path.stat()
    path.write_text(text)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_a_trace_rewritten_in_place_is_new_cells_not_a_resume(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "tr.jsonl", conversations=6, turns=3)
    out = tmp_path / "rows.jsonl"
    first = run_sweep(plan_sweep(make_grid(_parts(trace)), out), local_executor(1))
    assert first.ran == 1
    again = plan_sweep(make_grid(_parts(trace)), out, write=False)
    assert again.todo == [] and len(again.kept) == 1  # the same bytes: a resume
    lines = trace.read_text().splitlines()
    _rewrite(trace, "\n".join(reversed(lines)) + "\n")  # other requests, same size
    plan = plan_sweep(make_grid(_parts(trace)), out)
    assert plan.kept == {} and len(plan.todo) == 1, "the old figures reported as current"
    second = run_sweep(plan, local_executor(1))
    assert second.ran == 1 and second.rows[0]["cell"] != first.rows[0]["cell"]
    assert json.loads(second.rows[0]["cell"])["inputs"]["trace"] == file_digest(trace, "t")


def test_the_key_names_the_trace_by_content_and_built_in_workloads_keep_theirs(
        tmp_path: Path) -> None:
    a = write_trace(tmp_path / "a.jsonl", conversations=4, turns=2)
    b = tmp_path / "b.jsonl"
    b.write_bytes(a.read_bytes())
    (cell_a,) = make_grid(_parts(a)).cells()
    (cell_b,) = make_grid(_parts(b)).cells()
    assert cell_a.inputs == cell_b.inputs  # the content, whatever the name
    assert json.loads(cell_a.key)["inputs"] == {"trace": file_digest(a, "t")}
    (chat,) = make_grid(GridParts(policies=["lru"], workloads=["chat"])).cells()
    assert "inputs" not in json.loads(chat.key) and chat.inputs == {}


def test_a_missing_trace_is_named_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(TraceFileError, match="no such file"):
        make_grid(_parts(tmp_path / "gone.jsonl")).cells()


def test_a_weights_file_changed_in_place_is_new_cells(tmp_path: Path) -> None:
    pytest.importorskip("radix_evict_learned", reason="the learned example package")
    weights = tmp_path / "w.json"
    body = {"format": "radix-evict-learned-weights", "version": 1, "bias": 0.0}
    weights.write_text(json.dumps(body))
    parts = GridParts(policies=["learned"], workloads=["chat"], params=[("chat", "convs", 4)],
                      vary={"learned": {"weights": [str(weights)]}})
    (before,) = make_grid(parts).cells()
    assert json.loads(before.key)["inputs"] == {"config.weights": file_digest(weights, "w")}
    _rewrite(weights, json.dumps({**body, "bias": 0.5}))
    (after,) = make_grid(parts).cells()
    assert after.key != before.key and after.config_dict == before.config_dict
    (plain,) = make_grid(GridParts(policies=["learned"], workloads=["chat"])).cells()
    assert "inputs" not in json.loads(plain.key)  # no weights: the key it always had
