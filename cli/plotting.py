"""matplotlib for the commands that draw (``--plot``): imported late, headless, optional."""

from __future__ import annotations

from typing import Any

from radix_evict.outputs import OutputFile

from .errors import EXIT_USAGE, CliError

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
# In every plot's metadata: how a rerun knows an existing plot file is one radix-evict drew.
PLOT_MARKER = "radix-evict --plot"
_MARKER_KEY = {".png": "Software", ".svg": "Creator", ".pdf": "Creator"}  # matplotlib's names


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


def save_figure(fig: Any, out: OutputFile, dpi: int) -> None:
    """Write ``fig`` to ``out`` by radix_evict.outputs' rule, marked as ours."""
    key = _MARKER_KEY[out.path.suffix.lower()]
    with out.writing() as tmp:
        fig.savefig(tmp, dpi=dpi, format=out.path.suffix.lower()[1:],
                    metadata={key: PLOT_MARKER})
