"""Finding and loading policy plugins (entry-point group ``radix_evict.policies``).

Finding (which entry points exist, from which distribution and version, and
which the ``RADIX_EVICT_PLUGINS`` allow-list admits) is kept apart from
loading (importing the module and calling its hooks), as flake8's plugin
finder does, so ``radix-evict list`` can name a plugin that never imported.

Each plugin's hooks run in their own pluggy plugin manager, one plugin at a
time in a stable order (radix-evict's own entry points first), and what one
plugin registers is kept only if the whole plugin loaded: a plugin that fails
to import or raises in a hook is recorded, with its distribution, version and
entry point, and the others are unaffected.

"Its own faults" include any ``BaseException`` a plugin raises (``SystemExit``,
a custom ``BaseException`` subclass, even ``KeyboardInterrupt``): one broken
package must not stop ``radix-evict validate -h``. The one exception is a
real Ctrl-C: while plugins load, :func:`watch_interrupts` notes every SIGINT that
arrives, and a ``KeyboardInterrupt`` raised after one is re-raised (the user
wants to stop); one raised with no SIGINT behind it is the plugin's own doing
and is recorded like any other failure.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from radix_evict.policies import hookspecs

GROUP = "radix_evict.policies"
ENV_VAR = "RADIX_EVICT_PLUGINS"
CORE_DISTRIBUTION = "radix-evict"
IN_PROCESS = "<in-process>"


def normalize_dist_name(name: str) -> str:
    """PEP 503 normalization, so ``Radix_Evict`` and ``radix-evict`` compare equal."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class PluginSource:
    """A plugin found but not yet loaded: where it comes from and how to load it."""

    entry_point: str
    distribution: str
    version: str | None
    value: str
    builtin: bool
    loader: Callable[[], Any] = field(compare=False, repr=False)

    @property
    def label(self) -> str:
        """``dist version (entry point 'ep')``: how messages name this plugin."""
        ver = f" {self.version}" if self.version else ""
        return f"{self.distribution}{ver} (entry point {self.entry_point!r})"


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that failed to import, or raised in one of its hooks."""

    entry_point: str
    distribution: str
    version: str | None
    value: str
    phase: str  # "import", "register", "extend_choices" or "hooks"
    error: str  # "ExceptionType: message"
    traceback: str = field(repr=False, default="")
    policies: tuple[str, ...] = ()  # names it registered before failing (discarded)

    @property
    def label(self) -> str:
        ver = f" {self.version}" if self.version else ""
        return f"{self.distribution}{ver} (entry point {self.entry_point!r})"

    def __str__(self) -> str:
        return f"{self.label} failed to load ({self.phase}): {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry_point": self.entry_point,
            "distribution": self.distribution,
            "version": self.version,
            "value": self.value,
            "phase": self.phase,
            "error": self.error,
            "policies": list(self.policies),
        }


@dataclass(frozen=True)
class LoadedPlugin:
    """What one plugin contributed: registrations (spec objects) and choice-list names."""

    source: PluginSource
    specs: tuple[Any, ...]
    choices: tuple[str, ...]


def allow_list(environ: Mapping[str, str] | None = None) -> frozenset[str] | None:
    """Parse ``RADIX_EVICT_PLUGINS``: None when unset (all), else the allowed names.

    An empty (or blank) value allows no third-party plugin; built-ins always load.
    """
    env = os.environ if environ is None else environ
    raw = env.get(ENV_VAR)
    if raw is None:
        return None
    return frozenset(part.strip() for part in raw.split(",") if part.strip())


def _dist_of(ep: metadata.EntryPoint) -> tuple[str, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "<unknown distribution>", None
    try:
        return str(dist.metadata["Name"] or dist.name), dist.version
    except Exception:  # broken metadata must not stop discovery
        return str(getattr(dist, "name", "<unknown distribution>")), None


def find_plugins(group: str = GROUP) -> list[PluginSource]:
    """Every entry point in ``group``, built-ins (radix-evict's own) first, then sorted.

    The same entry point seen twice (a distribution on ``sys.path`` twice)
    counts once. Nothing is imported here.
    """
    seen: set[tuple[str, str, str]] = set()
    found: list[PluginSource] = []
    for ep in metadata.entry_points(group=group):
        dist, version = _dist_of(ep)
        ident = (normalize_dist_name(dist), ep.name, ep.value)
        if ident in seen:
            continue
        seen.add(ident)
        found.append(
            PluginSource(
                entry_point=ep.name,
                distribution=dist,
                version=version,
                value=ep.value,
                builtin=normalize_dist_name(dist) == CORE_DISTRIBUTION,
                loader=ep.load,
            )
        )
    found.sort(key=lambda s: (not s.builtin, normalize_dist_name(s.distribution), s.entry_point))
    return found


def select_plugins(
    sources: Iterable[PluginSource], allowed: frozenset[str] | None
) -> tuple[list[PluginSource], list[PluginSource]]:
    """Split ``sources`` into (to load, skipped by the allow-list). Built-ins always load."""
    load: list[PluginSource] = []
    skipped: list[PluginSource] = []
    for src in sources:
        if src.builtin or allowed is None or src.entry_point in allowed:
            load.append(src)
        else:
            skipped.append(src)
    return load, skipped


def _flatten_names(args: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for arg in args:
        if isinstance(arg, str):
            names.append(arg)
        elif isinstance(arg, Iterable):
            names.extend(_flatten_names(list(arg)))
        else:
            raise TypeError(f"extend() takes policy names (str), got {type(arg).__name__}")
    return names


def plugin_failure(
    src: PluginSource, phase: str, exc: BaseException, specs: Sequence[Any]
) -> PluginFailure:
    return PluginFailure(
        entry_point=src.entry_point,
        distribution=src.distribution,
        version=src.version,
        value=src.value,
        phase=phase,
        error=f"{type(exc).__name__}: {exc}",
        traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
        policies=tuple(str(getattr(s, "name", s)) for s in specs),
    )


class InterruptWatch:
    """Counts the SIGINTs delivered while plugins load (see :func:`watch_interrupts`)."""

    def __init__(self) -> None:
        self.signals = 0

    @property
    def interrupted(self) -> bool:
        """Whether the user pressed Ctrl-C (a SIGINT arrived) since the watch began."""
        return self.signals > 0


@contextlib.contextmanager
def watch_interrupts() -> Iterator[InterruptWatch]:
    """Note each SIGINT (then handle it as before) for the duration of the block.

    Only the main thread receives signals, so elsewhere nothing is installed
    and no ``KeyboardInterrupt`` can be the user's.
    """
    watch = InterruptWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN or SIG_DFL: no KeyboardInterrupt from a signal
        yield watch
        return

    def noted(signum: int, frame: Any) -> Any:
        watch.signals += 1
        return previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)


def load_plugin(
    src: PluginSource,
    register_check: Callable[[Any, PluginSource], Any],
    watch: InterruptWatch | None = None,
) -> LoadedPlugin | PluginFailure:
    """Import one plugin and call its hooks; never raises for the plugin's own faults.

    ``register_check`` turns what the plugin passes to ``register`` into a
    spec (stamping its source) or raises, which fails this plugin only. A
    ``KeyboardInterrupt`` propagates only if ``watch`` saw a real SIGINT.
    """
    specs: list[Any] = []
    choices: list[str] = []
    phase = "import"
    try:
        obj = src.loader()
        phase = "hooks"
        pm = pluggy.PluginManager(hookspecs.PROJECT)
        pm.add_hookspecs(hookspecs)
        pm.register(obj, name=f"{src.distribution}:{src.entry_point}")
        pm.check_pending()  # a misspelt radix_evict_* hook is a failure, not a silent no-op
        phase = "register"

        def register(spec: Any) -> None:
            specs.append(register_check(spec, src))

        def extend(*names: Any) -> None:
            choices.extend(_flatten_names(names))

        pm.hook.radix_evict_register_policies(register=register)
        phase = "extend_choices"
        pm.hook.radix_evict_extend_choices(extend=extend)
    except KeyboardInterrupt as exc:
        if watch is not None and watch.interrupted:
            raise  # the user pressed Ctrl-C: stop, whatever was loading
        return plugin_failure(src, phase, exc, specs)
    except BaseException as exc:  # the plugin's fault (SystemExit too): record it, load others
        return plugin_failure(src, phase, exc, specs)
    return LoadedPlugin(source=src, specs=tuple(specs), choices=tuple(choices))


def in_process_source(
    plugin: Any, *, name: str, distribution: str = IN_PROCESS, version: str | None = None
) -> PluginSource:
    """A source for a plugin object given directly (tests, embedding applications)."""
    value = getattr(plugin, "__name__", type(plugin).__name__)
    return PluginSource(
        entry_point=name,
        distribution=distribution,
        version=version,
        value=str(value),
        builtin=False,
        loader=lambda: plugin,
    )
