"""The policy framework: the contract a policy implements and how policies are found.

The policy base class, config model, lifecycle callbacks and default policy
(``contract``; ``lifecycle`` documents the callbacks), the seam through which
the cache resolves a policy name (``resolve``), the spec the registry keeps per
policy (``spec``), the pluggy hook specifications (``hookspecs``), finding and
loading plugins (``plugins``, ``loading``), the registry (``registry``, with its
messages and JSON Schema in ``messages`` and ``schema``), strict config
validation (``config``), the strictness a config model needs to be registered
(``strictness``), describing its keys (``describe``), config derivers
(``derive``) and prefix fingerprints (``fingerprint``). ``__all__`` lists the
modules; ``radix_evict`` re-exports the API's names.
"""

__all__ = [
    "catalog",
    "config",
    "contract",
    "derive",
    "describe",
    "fingerprint",
    "hookspecs",
    "lifecycle",
    "loading",
    "messages",
    "plugins",
    "registry",
    "resolve",
    "schema",
    "spec",
    "strictness",
]
