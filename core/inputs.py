"""Reading what users hand radix-evict: files within bounds, JSON within limits.

Every file radix-evict reads (``@FILE`` configs, sweep result and grid files,
traces, lint targets) goes through :func:`read_text` or :func:`open_lines`:
regular files only (a FIFO or ``/dev/zero`` would block or never end), a size
cap per kind of file, UTF-8, and one error type that names the file and says
what is wrong. Every JSON config goes through :func:`load_json`, which refuses
nesting and numbers that would otherwise surface as a ``RecursionError`` or
Python's integer-digits ``ValueError``.

A file a *config* names (a policy's weights file) is opened only where the
config is being used: a check made while linting (:func:`named_files_closed`)
judges the launch of another machine, so :func:`may_open_named_files` is False
there and a validator checks only the path's form.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from .errors import OptionError, RadixEvictError

__all__ = [
    "CONFIG_BYTES",
    "CSV_BYTES",
    "JSON_MAX_DEPTH",
    "JSON_MAX_DIGITS",
    "LINT_BYTES",
    "RESULT_BYTES",
    "TRACE_BYTES",
    "InputError",
    "InputFileError",
    "decode_utf8",
    "json_depth",
    "load_json",
    "may_open_named_files",
    "named_files_closed",
    "open_lines",
    "read_bytes",
    "read_config_arg",
    "read_json_file",
    "read_text",
    "split_named_config",
]

MIB = 2**20
CONFIG_BYTES = 1 * MIB  # a policy config or a grid file: real ones are a few hundred bytes
LINT_BYTES = 8 * MIB  # a serving config lint reads
CSV_BYTES = 64 * MIB  # measured points for calibrate (a row is a few dozen bytes)
RESULT_BYTES = 1024 * MIB  # a sweep's result file (a row is about 1 KiB)
TRACE_BYTES = 16 * 1024 * MIB  # a request trace (Mooncake's are a few MB, production ones GBs)
JSON_MAX_DEPTH = 200  # nesting levels; real configs use a handful
JSON_MAX_DIGITS = 4000  # under Python's 4,300-digit integer conversion limit


class InputError(RadixEvictError, ValueError):
    """Input radix-evict will not read; ``type`` is a stable code, ``str()`` says why."""

    def __init__(self, type_: str, msg: str) -> None:
        super().__init__(msg)
        self.type = type_


class InputFileError(InputError):
    """A file that cannot be read within bounds; ``path`` names it."""

    def __init__(self, path: str | os.PathLike[str], type_: str, msg: str) -> None:
        super().__init__(type_, f"{os.fspath(path)}: {msg}")
        self.path = os.fspath(path)
        self.reason = msg


# False inside named_files_closed(): a lint-time check opens no file a config names.
_NAMED_FILES: ContextVar[bool] = ContextVar("radix_evict_named_files", default=True)


def may_open_named_files() -> bool:
    """Whether a config check may open the files the config names (a policy's weights).

    False inside :func:`named_files_closed`: a validator then checks only the
    value's form (a non-empty path), and a policy built there starts without the
    file. Everywhere else (a run, ``validate``, the SGLang and vLLM adapters) True.
    """
    return _NAMED_FILES.get()


@contextmanager
def named_files_closed(closed: bool = True) -> Iterator[None]:
    """Within: :func:`may_open_named_files` is ``not closed`` (lint's checks; per thread)."""
    token = _NAMED_FILES.set(not closed)
    try:
        yield
    finally:
        _NAMED_FILES.reset(token)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _too_large(size: int, limit: int, what: str) -> str:
    return (f"{size / MIB:.1f} MiB is over the {limit / MIB:g} MiB limit for {what}")


def _open_regular(path: str | os.PathLike[str], limit: int, what: str) -> int:
    """An fd on a regular file no larger than ``limit``; O_NONBLOCK so a FIFO cannot hang us."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputFileError(path, "file_unreadable",
                             f"cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputFileError(path, "not_regular_file",
                                 f"not a regular file ({_kind(info.st_mode)}); {what} must be one")
        if info.st_size > limit:
            raise InputFileError(path, "file_too_large", _too_large(info.st_size, limit, what))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | os.PathLike[str], *, limit: int, what: str) -> bytes:
    """The whole file, refusing what is not a regular file or is over ``limit`` bytes."""
    fd = _open_regular(path, limit, what)
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise InputFileError(path, "file_unreadable",
                             f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > limit:  # it grew after the check
        raise InputFileError(path, "file_too_large", _too_large(len(raw), limit, what))
    return raw


def decode_utf8(path: str | os.PathLike[str], raw: bytes, what: str) -> str:
    """UTF-8 text (a BOM is dropped); anything else names the first bad byte."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputFileError(path, "not_utf8",
                             f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                             f"{what} is text") from None


def read_text(path: str | os.PathLike[str], *, limit: int, what: str) -> str:
    """:func:`read_bytes` decoded as UTF-8."""
    return decode_utf8(path, read_bytes(path, limit=limit, what=what), what)


def open_lines(path: str | os.PathLike[str], *, limit: int, what: str) -> Iterator[str]:
    """The file's lines (newline kept), streamed: for traces too large to hold at once.

    The same checks as :func:`read_text`, applied before the first line; a file
    that grows past ``limit`` while it is read stops with the same error.
    """
    fd = _open_regular(path, limit, what)
    read = 0
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            for lineno, raw in enumerate(f, 1):
                read += len(raw)
                if read > limit:
                    raise InputFileError(path, "file_too_large", _too_large(read, limit, what))
                try:
                    yield raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise InputFileError(path, "not_utf8",
                                         f"line {lineno}: not UTF-8 text (byte "
                                         f"0x{raw[exc.start]:02x}); {what} is text") from None
    except OSError as exc:
        raise InputFileError(path, "file_unreadable",
                             f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


# Strings (with escapes) or a bracket: what nesting depth is counted over.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_LONG_NUMBER = re.compile(r"-?\d{" + str(JSON_MAX_DIGITS + 1) + ",}")


def json_depth(text: str) -> int:
    """How deeply ``text``'s arrays and objects nest (brackets inside strings do not count)."""
    depth = deepest = 0
    for m in _JSON_TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif tok in "]}":
            depth -= 1
    return deepest


def load_json(text: str, *, what: str,
              object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
              max_depth: int = JSON_MAX_DEPTH) -> Any:
    """``json.loads`` within limits: nesting over ``max_depth`` or a number longer than
    JSON_MAX_DIGITS digits is an :class:`InputError` naming ``what``.

    A malformed document raises ``json.JSONDecodeError`` as ``json.loads`` does, so
    callers keep reporting line and column.
    """
    if len(text) > CONFIG_BYTES:
        raise InputError("too_large", f"{what}: {_too_large(len(text), CONFIG_BYTES, what)}")
    depth = json_depth(text)
    if depth > max_depth:
        raise InputError("too_deep", f"{what}: nested {depth} levels deep, over the limit of "
                                     f"{max_depth} (a config nests a few levels)")
    try:
        return json.loads(text, object_pairs_hook=object_pairs_hook)
    except json.JSONDecodeError:
        raise
    except RecursionError:  # depth counting missed a case: still a clean refusal
        raise InputError("too_deep", f"{what}: nested too deeply to read") from None
    except ValueError as exc:
        long = _LONG_NUMBER.search(text)
        if long is None:
            raise
        raise InputError("number_too_long",
                         f"{what}: a number of {len(long.group().lstrip('-'))} digits is over "
                         f"the limit of {JSON_MAX_DIGITS} digits") from exc


def read_json_file(path: str | os.PathLike[str], *, what: str) -> Any:
    """A JSON config file: :func:`read_text` with the config cap, then :func:`load_json`."""
    return load_json(read_text(path, limit=CONFIG_BYTES, what=what), what=f"{Path(path)}")


NAME_SEP = "="  # --config NAME=JSON


def read_config_arg(value: str | None, option: str = "--config") -> str | None:
    """A JSON option as given: the JSON text, or ``@FILE`` to read it from a file.

    The file is read through :func:`read_text`: a regular file of at most
    CONFIG_BYTES, UTF-8; anything else is an OptionError naming ``option`` and
    the file (invalid input for a file that is not UTF-8 text).
    """
    if value is None or not value.startswith("@"):
        return value
    try:
        return read_text(value[1:], limit=CONFIG_BYTES, what="a config file")
    except InputFileError as exc:
        if exc.type == "not_utf8":  # there is a file, and it is not a config: invalid input
            raise OptionError(f"{option} {value}: {exc.path} is {exc.reason}",
                              invalid=True) from None
        raise OptionError(f"{option} {value}: {exc}") from None


def split_named_config(value: str) -> tuple[str | None, str]:
    """``NAME=JSON`` -> (NAME, JSON); plain JSON (or @FILE) -> (None, value)."""
    head, sep, rest = value.partition(NAME_SEP)
    if sep and head and not head.lstrip().startswith(("{", "@", "[", '"')) and " " not in head:
        return head.strip(), rest
    return None, value
