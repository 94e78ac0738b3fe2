"""Writing the files radix-evict produces: never over an input, never over another's file.

One rule for every output (``simulate --enable-metrics`` and ``--plot``,
``calibrate --out``, ``sweep --out`` and ``--plot``, the docs generator):

- never a file the same run reads (its trace, grid file, cost model, measured
  points, weights, config files): compared as files (device and inode), so
  the same file under another name, a hard link or a symlink is caught too;
- never over an existing file that is not ours without :data:`FORCE_FLAG`:
  each output says what "ours" is (a file that starts with the header its
  writer writes, one that carries its marker); a directory, a device or a
  FIFO is never written, forced or not;
- written whole or not at all: into a temporary file beside it, then
  ``os.replace``\\d over the name, so a crash or a full disk leaves the old
  file or the new one, never half of either.

A sweep's ``.jsonl``/``.csv`` result file follows the first two points and
is appended to, a row at a time as cells finish (that is how a crash keeps
them), only once it has been read back as a result file
(:mod:`radix_evict.sim.sweep.store`); its Parquet form is rewritten through
:func:`replacing`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .errors import OptionError, RadixEvictError

__all__ = [
    "FORCE_FLAG",
    "Input",
    "Ours",
    "OutputFile",
    "OutputFileError",
    "check_output",
    "contains",
    "refuse_inputs",
    "replacing",
    "same_file",
    "starts_with",
]

FORCE_FLAG = "--force"  # the one flag, on every command, that lets an output replace a file
OURS_SCAN_BYTES = 64 * 2**20  # how much of an existing output :func:`contains` looks through

Ours = Callable[[Path], bool]  # whether an existing file at this path is one we wrote


class OutputFileError(RadixEvictError, ValueError):
    """An output radix-evict will not write; the message names the option and the path."""

    def __init__(self, option: str, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{option} {os.fspath(path)}: {reason}")
        self.option = option
        self.path = os.fspath(path)
        self.reason = reason


@dataclass(frozen=True)
class Input:
    """A file the run reads, and how messages name it (``--trace``, ``the grid file``)."""

    label: str
    path: Path


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two names are one file (device and inode); a name that is not there is not."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def refuse_inputs(option: str, path: str | os.PathLike[str], what: str,
                  inputs: Iterable[Input]) -> None:
    """OutputFileError if ``path`` is one of ``inputs`` (the same file, by any name)."""
    for each in inputs:
        if same_file(path, each.path):
            named = "" if os.fspath(each.path) == os.fspath(path) else f" ({each.path})"
            raise OutputFileError(option, path, f"is an input of this run: {each.label}{named}; "
                                                f"writing the {what} there would destroy it: "
                                                "give another file name")


def _head(path: Path, size: int) -> bytes:
    """Up to ``size`` bytes of a regular file (O_NONBLOCK: a FIFO cannot hang us); b"" if not."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def starts_with(prefix: bytes) -> Ours:
    """"Ours" for a writer whose files always begin with ``prefix`` (a header, a comment)."""
    return lambda path: _head(path, len(prefix)) == prefix


def contains(marker: bytes) -> Ours:
    """"Ours" for a writer that puts ``marker`` in every file (a plot's metadata)."""
    return lambda path: marker in _head(path, OURS_SCAN_BYTES)


def _never(path: Path) -> bool:
    return False


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _new_file_mode() -> int:
    """What ``open(path, "w")`` would give a new file: 0o666 less the umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary path beside ``path`` (same suffix, for writers that go by it); when the
    block ends without an error it replaces ``path`` in one step, otherwise it is removed.

    The new file keeps the old one's permission bits (a new name gets the umask's).
    An OSError says what failed; ``path`` is then exactly as it was.
    """
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}",
                                    dir=parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = _new_file_mode()
        os.chmod(tmp, mode)
        with open(tmp, "rb") as f:  # on disk before the name points at it
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@dataclass(frozen=True)
class OutputFile:
    """One file a run writes: the option that names it, what counts as ours, what it reads.

    ``ours`` None: no existing file is ours (only :data:`FORCE_FLAG` replaces
    one). ``what`` names the kind of file in messages ("metrics file"). Check
    before the run (:meth:`check`), write after it (:meth:`write_text`,
    :meth:`write_bytes`, :meth:`writing`): the write checks again, with the
    inputs only known by then (a config's weights file).
    """

    option: str
    path: Path
    what: str
    ours: Ours | None = None
    force: bool = False
    inputs: tuple[Input, ...] = ()

    @property
    def target(self) -> Path:
        """The file written: a symlink's target (the link stays a link)."""
        return Path(os.path.realpath(self.path)) if self.path.is_symlink() else self.path

    def reading(self, inputs: Iterable[Input]) -> OutputFile:
        """This output, checked now against ``inputs`` too (known once configs are parsed)."""
        out = replace(self, inputs=(*self.inputs, *inputs))
        out.check()
        return out

    def _refuse(self, reason: str) -> OutputFileError:
        return OutputFileError(self.option, self.path, reason)

    def check(self, inputs: Iterable[Input] = ()) -> None:
        """Raise OutputFileError unless this output may be written (nothing is changed)."""
        target = self.target
        parent = target.parent if str(target.parent) else Path(".")
        if not parent.is_dir():
            raise self._refuse(f"directory {parent} does not exist")
        try:
            info = os.stat(target)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise self._refuse(f"cannot write there: {exc.strerror or exc}") from None
        if info is not None:
            self._check_existing(target, info, (*self.inputs, *inputs))
        try:
            with tempfile.NamedTemporaryFile(dir=parent, prefix=".radix-evict-probe-"):
                pass
        except OSError as exc:
            raise self._refuse(f"cannot write there: {exc.strerror or exc}") from None

    def _check_existing(self, target: Path, info: os.stat_result,
                        inputs: Iterable[Input]) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise self._refuse(f"is {_kind(info.st_mode)}; the {self.what} must be a "
                               "regular file")
        refuse_inputs(self.option, self.path, self.what, inputs)
        if not os.access(target, os.W_OK):
            raise self._refuse("is read-only; give another file name")
        if not self.force and not (self.ours or _never)(target):
            raise self._refuse(f"exists and is not a {self.what} radix-evict wrote; give "
                               f"{FORCE_FLAG} to replace it, or another file name")

    @contextlib.contextmanager
    def writing(self, inputs: Iterable[Input] = ()) -> Iterator[Path]:
        """:meth:`check`, then a temporary path to write; it replaces the output at the end."""
        self.check(inputs)
        try:
            with replacing(self.target) as tmp:
                yield tmp
        except OSError as exc:
            raise self._refuse(f"cannot write: {exc.strerror or exc}") from None

    def write_bytes(self, data: bytes, inputs: Iterable[Input] = ()) -> None:
        """Write ``data`` as the whole file, by the rule above."""
        with self.writing(inputs) as tmp:
            tmp.write_bytes(data)

    def write_text(self, text: str, inputs: Iterable[Input] = ()) -> None:
        """Write ``text`` (UTF-8) as the whole file, by the rule above."""
        self.write_bytes(text.encode("utf-8"), inputs)


def check_output(path: Path | None, option: str, what: str, ours: Ours | None = None, *,
                 force: bool = False, inputs: Iterable[Input] = (),
                 suffixes: tuple[str, ...] = ()) -> OutputFile | None:
    """The output ``option`` names, checked before minutes of work, not after (None: not
    asked for): a name ending in one of ``suffixes`` (an OptionError otherwise), then the
    rule above (OutputFileError). Write it once the work is done."""
    if path is None:
        return None
    if suffixes and path.suffix.lower() not in suffixes:
        raise OptionError(f"{option} {path}: use a file name ending in {', '.join(suffixes)}")
    out = OutputFile(option, path, what, ours, force, tuple(inputs))
    out.check()
    return out
