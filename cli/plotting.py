"""matplotlib for the commands that draw (``--plot``): imported late, headless, optional."""

from __future__ import annotations

from typing import Any

from .errors import EXIT_USAGE, CliError

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def pyplot(option: str = "--plot") -> Any:
    """pyplot on the Agg backend, or a clear environment error when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        raise CliError(f"{option} needs matplotlib: pip install 'radix-evict[plot]'",
                       EXIT_USAGE) from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt
