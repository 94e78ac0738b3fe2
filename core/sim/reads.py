"""The files a run reads, named for :mod:`radix_evict.outputs`' rule (no output is written
over one): ``--trace`` and ``--grid`` files, ``--cost-model`` files, ``@FILE`` configs, and
the files a validated policy config names (a learned policy's weights)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from radix_evict.inputs import split_named_config
from radix_evict.outputs import Input
from radix_evict.policies.config import named_files
from radix_evict.policies.contract import PolicyConfig

__all__ = ["at_files", "config_files", "cost_model_files", "path_inputs"]


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
