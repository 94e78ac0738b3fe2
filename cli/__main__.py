"""``python -m radix_evict.cli`` and the ``radix-evict`` console script.

The command's imports (torch, typer, rich) take seconds on a loaded
machine; a Ctrl-C meanwhile must be one line, not the import machinery's
traceback. This module imports nothing heavy itself (nor does the
``radix_evict.cli`` package, whose names load lazily), so it can catch it.
"""

from __future__ import annotations

import os

from radix_evict.cli.codes import EXIT_INTERRUPTED

STARTING = b"error: interrupted (Ctrl-C) while starting; nothing was done\n"


def main() -> None:
    """Import the CLI under a Ctrl-C guard, then run it."""
    try:
        from radix_evict.cli import main as run
    except KeyboardInterrupt:
        os.write(2, STARTING)
        os._exit(EXIT_INTERRUPTED)
    run()


if __name__ == "__main__":
    main()
