"""Policy runs that raised during ``simulate``: the others' figures stand, these are named.

A replay job that raises (a plugin's ``score()`` dividing by zero, say)
comes back as a :class:`~radix_evict.sim.failures.RunFailure`; simulate
prints the remaining results as usual, then one error line per failed run
naming the policy, its distribution and the exception, and exits 2 (a
broken policy package is an environment error). With ``-v`` the policy's
traceback follows each line.
"""

from __future__ import annotations

from collections.abc import Sequence

import typer

from radix_evict.sim.failures import RunFailure

from . import output
from .errors import EXIT_INVALID, EXIT_USAGE, CliError


def all_failed(failures: Sequence[RunFailure]) -> CliError:
    """Nothing to show: every run raised. An input every run refused is invalid input (exit
    1), said once; a policy's or radix-evict's own failure is an environment error (exit 2)."""
    if failures and all(f.blame == "input" for f in failures):
        reasons = dict.fromkeys(f.error.split(": input refused: ", 1)[-1] for f in failures)
        return CliError("input refused: " + "; ".join(reasons), EXIT_INVALID,
                        [f.to_dict() for f in failures])
    return CliError("every policy run failed:\n" + "\n".join(f"  - {f}" for f in failures),
                    EXIT_USAGE, [f.to_dict() for f in failures])


def finish(failures: Sequence[RunFailure], verbose: bool) -> None:
    """After the results: name each failed run on stderr and exit 2 (nothing if none failed)."""
    if not failures:
        return
    for f in failures:
        output.error(f"{f}; its results are left out")
        if verbose and f.traceback:
            output.stderr().print(f.traceback, markup=False, highlight=False)
    raise typer.Exit(EXIT_USAGE)
