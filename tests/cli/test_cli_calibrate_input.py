"""CLI: what ``calibrate`` and ``--cost-model`` read: bounded files, BOMs, odd values and names.

Every refusal is exit 1 with a message naming the file (and the line and column where there
is one), never an internal error; a FIFO or ``/dev/zero`` is refused at once (each call runs
under :func:`~radix_evict.testing.call_bounded`, so a regression fails instead of hanging).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import Result
from helpers.rigs import run_cli

from radix_evict.sim.timed.cost import load_cost_model
from radix_evict.testing import call_bounded

HEADER = "uncached,cached,batch,ms"
# Three prefill and three decode steps: enough for a fit.
ROWS = ["100,0,1,5", "200,0,1,9", "400,0,2,15", "0,100,1,2", "0,200,2,3", "0,400,4,5"]

pytestmark = pytest.mark.usefixtures("only_builtin_plugins")


def calibrate(*args: str) -> Result:
    return call_bounded(lambda: run_cli("calibrate", *args), seconds=30)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_a_bom_csv_is_read(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join([HEADER, *ROWS]).encode() + b"\n")
    r = calibrate(str(path))
    assert r.exit_code == 0, r.output
    assert "fit prefill: 3 points" in r.output


def test_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "p.csv", f"{HEADER}\n100,0,1,5\n\n\n200,x,1,9\n")
    r = calibrate(str(path))
    assert r.exit_code == 1 and "p.csv:5: column 'cached': 'x' is not a number" in r.output, \
        r.output


def test_a_column_given_twice_is_refused_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path / "p.csv", f"{HEADER},ms\n" + "\n".join(r + ",7" for r in ROWS))
    r = calibrate(str(path))
    assert r.exit_code == 1 and "p.csv:1: column(s) ms given twice" in r.output, r.output


@pytest.mark.parametrize(("row", "needle"), [
    ("1e200,0,1,3", "p.csv:3: column 'uncached': '1e200' is over the limit of 1e+12"),
    ("100,0,1,1e300", "p.csv:3: column 'ms': '1e300' is over the limit"),
    ("100,0,1," + "9" * 140_000, "p.csv:3: column 'ms': a field of 140,000 characters"),
    ('100,0,1,"5\n' + "9\n" * 70_000 + '"', "not CSV: field larger than field limit"),
])
def test_values_the_fit_cannot_use_name_line_and_column(tmp_path: Path, row: str,
                                                         needle: str) -> None:
    path = write(tmp_path / "p.csv", f"{HEADER}\n100,0,1,5\n{row}\n")
    r = calibrate(str(path))
    assert r.exit_code == 1, r.output
    assert needle in r.output and "internal error" not in r.output, r.output[:500]


@pytest.mark.parametrize("kind", ["fifo", "zero"])
def test_a_csv_or_cost_model_that_never_ends_is_refused(tmp_path: Path, kind: str) -> None:
    csv_path, model = tmp_path / "p.csv", tmp_path / "m.toml"
    for path in (csv_path, model):
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    r = calibrate(str(csv_path))
    assert r.exit_code == 1 and f"{csv_path}: not a regular file" in r.output, r.output
    s = call_bounded(lambda: run_cli("simulate", "--timing", "--cost-model", str(model),
                                     "-p", "lru", "--param", "convs=5"))
    assert s.exit_code != 0 and f"{model}: not a regular file" in s.output, s.output


@pytest.mark.parametrize("name", ["tab\there", "bell\x07", "del\x7f", 'quote"back\\'])
def test_a_name_with_a_control_character_reads_back_as_written(tmp_path: Path,
                                                               name: str) -> None:
    points = write(tmp_path / "p.csv", "\n".join([HEADER, *ROWS]) + "\n")
    out = tmp_path / "m.toml"
    r = calibrate(str(points), "--name", name, "-o", str(out))
    assert r.exit_code == 0, r.output
    assert load_cost_model(str(out)).name == name


def test_a_file_name_with_a_control_character_reads_back(tmp_path: Path) -> None:
    points = write(tmp_path / "p\x01q.csv", "\n".join([HEADER, *ROWS]) + "\n")
    out = tmp_path / "m.toml"
    assert calibrate(str(points), "-o", str(out)).exit_code == 0
    model = load_cost_model(str(out))
    assert model.name == "p\x01q" and str(points) in model.source


def test_a_bom_cost_model_is_read(tmp_path: Path) -> None:
    points = write(tmp_path / "p.csv", "\n".join([HEADER, *ROWS]) + "\n")
    out = tmp_path / "m.toml"
    assert calibrate(str(points), "-o", str(out)).exit_code == 0
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbf" + out.read_bytes())
    assert load_cost_model(str(bom)) == load_cost_model(str(out))
