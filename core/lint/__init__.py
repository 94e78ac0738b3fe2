"""``radix_evict.lint``: check SGLang launch configs for the eviction settings SGLang refuses.

The engine behind ``radix-evict lint``, as a library: it reads every shape of
file deployments put SGLang's arguments in (Kubernetes/compose/Helm YAML,
JSON, TOML, SGLang ``--config`` files, shell scripts, Dockerfiles), finds
``--radix-eviction-policy`` and ``--radix-eviction-policy-config`` (and
HiCache's host-tier flags, :mod:`.hicache`) as SGLang 0.5.23 would read them,
and gives SGLang's verdict (and radix-evict's, as warnings), each problem at
``file:line:column``. It prints nothing and knows
no exit codes: a :class:`LintReport` says the outcome (``ok``, ``invalid``,
``error``), and :mod:`radix_evict.lint.formats` renders it as text, JSON,
GitHub annotations or SARIF.

    >>> from radix_evict.lint import lint_text
    >>> lint_text("python -m sglang.launch_server --radix-eviction-policy lfuu",
    ...           "serve.sh").outcome
    'invalid'
"""

from __future__ import annotations

from .engine import KINDS, PATTERNS, lint_paths, lint_text
from .model import (
    ERROR,
    INVALID,
    NOTE,
    OK,
    OUTCOMES,
    SEVERITIES,
    UNCHECKED,
    WARNING,
    LintProblem,
    LintReport,
)

__all__ = [
    "ERROR",
    "INVALID",
    "KINDS",
    "NOTE",
    "OK",
    "OUTCOMES",
    "PATTERNS",
    "SEVERITIES",
    "UNCHECKED",
    "WARNING",
    "LintProblem",
    "LintReport",
    "lint_paths",
    "lint_text",
]
