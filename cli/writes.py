"""The files a command writes, checked by radix_evict.outputs' one rule against what it reads.

Each command names its inputs here (``--trace``, ``--cost-model`` files,
``@FILE`` configs, grid files, the files a policy config names) and gets an
:class:`~radix_evict.outputs.OutputFile` per output option, checked before
the run and written after it; ``--force`` is the one flag that lets an
output replace an existing file radix-evict did not write.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from radix_evict.outputs import FORCE_FLAG, Input
from radix_evict.policies.config import named_files
from radix_evict.policies.contract import PolicyConfig

from .options import split_named_config

__all__ = ["ForceOpt", "at_files", "config_files", "cost_model_files", "path_inputs"]

ForceOpt = Annotated[bool, typer.Option(
    FORCE_FLAG, help="Let an output option replace an existing file radix-evict did not "
                     "write (never a file the run reads).")]


def path_inputs(option: str, paths: Iterable[str | Path | None]) -> list[Input]:
    """Files given to ``option`` (``--trace``, ``--grid``, calibrate's POINTS.csv)."""
    return [Input(option, Path(p)) for p in paths if p is not None]


def at_files(option: str, values: Iterable[str | None]) -> list[Input]:
    """The ``@FILE`` values of a JSON option (``--config @c.json``, ``NAME=@c.json``)."""
    out = []
    for v in values:
        if v is not None:
            text = split_named_config(v)[1]
            if text.startswith("@"):
                out.append(Input(f"{option} {v}", Path(text[1:])))
    return out


def cost_model_files(option: str, specs: Iterable[str | Path | None]) -> list[Input]:
    """``--cost-model`` values that name a file (a preset's name is not one)."""
    return [Input(f"{option} {s}", Path(s)) for s in specs
            if s is not None and Path(s).suffix in (".toml", ".json")]


def config_files(configs: Iterable[tuple[str, object]]) -> list[Input]:
    """The files the policies' validated configs name (the learned policy's weights)."""
    return [Input(f"{policy}'s {key}", Path(path)) for policy, config in configs
            if isinstance(config, PolicyConfig) for key, path in named_files(config).items()]
