"""The command's exit codes (docs/cli and the spec), in a module that imports nothing.

``__main__`` needs them before the CLI (typer, torch) is imported, to turn a
Ctrl-C during that import into one line; ``errors`` maps exceptions to them.
"""

from __future__ import annotations

__all__ = ["EXIT_CLOSED_PIPE", "EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_OK", "EXIT_USAGE",
           "OUTCOME_CODES"]

EXIT_OK = 0
EXIT_INVALID = 1  # invalid input: bad policy, key, value, trace line, workload parameter
EXIT_USAGE = 2  # usage or environment error: unreadable file, a needed plugin that failed
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what shells report for Ctrl-C
# 128 + SIGPIPE, what shells report for a writer whose reader left (``| head``): not 1,
# which says the input was invalid, and silent, since the reader has what it wanted.
EXIT_CLOSED_PIPE = 141
# The library's outcomes (lint, sglang check, vllm check) as exit codes: refused is invalid
# input (1); could not be checked (unreadable, no SGLang, a broken plugin) an environment error.
OUTCOME_CODES = {"ok": EXIT_OK, "invalid": EXIT_INVALID, "error": EXIT_USAGE}
