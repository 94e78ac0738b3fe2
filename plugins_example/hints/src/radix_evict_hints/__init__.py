"""radix-evict-hints: eviction policies that read client hints from ``RequestContext``.

``session`` (an ended session's private tail first) and ``retain`` (keep what a
client or an agent says it will come back for, within a budget). Both measure
whether their hints prove right and fall back to lru when they do not.
Importing this package registers nothing: radix-evict finds the plugin through
the ``radix_evict.policies`` entry point ``hints``.
"""

from __future__ import annotations

from .retain import RetainConfig, RetainPolicy
from .session import SessionConfig, SessionPolicy
from .trust import Trust, branch_key

__all__ = ["RetainConfig", "RetainPolicy", "SessionConfig", "SessionPolicy", "Trust",
           "branch_key"]
__version__ = "0.1.0"
