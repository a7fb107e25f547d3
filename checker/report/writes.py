"""Writing a command's output files: a failed write (a full disk, a directory in the way)
is one clear error naming the file and the reason, and the other outputs are still written
- a job summary that cannot be written does not keep the PR comment from being posted.
At the end ``check()`` turns the failures into one InputError (exit status 2)."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..safety.output import clean, say


def say_error(message: str) -> None:
    say(f"evalcheck: error: {clean(message)}", err=True)


class OutputFiles:
    """``report`` is told of each failure as it happens (the Action: an error annotation);
    without it the failures are reported once, by ``check()``."""

    def __init__(self, report: Callable[[str], None] | None = None):
        self.report = report
        self.failed: list[str] = []

    def attempt(self, what: str, path: Path | str, write: Callable[[], object]) -> bool:
        """Run ``write`` (which writes ``path``); an OSError is reported, not raised."""
        try:
            write()
            return True
        except OSError as exc:
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0) or str(exc)
            message = f"could not write the {what} {path}: {reason}"
            self.failed.append(message)
            if self.report is not None:
                self.report(message)
            return False

    def write(self, path: Path, text: str | Iterable[bytes], what: str) -> bool:
        """``text`` (or UTF-8 pieces, written as they come) into ``path``, atomically:
        a new file, renamed into place. No one reads half a file (a full disk leaves the old
        one or none), and a descriptor of the old file that a process still holds (a
        survivor of the agent's) reaches nothing."""
        return self.attempt(what, path, lambda: write_fresh(path, text))

    def check(self) -> None:
        if self.failed:
            raise InputError("; ".join(self.failed),
                             fix="free disk space or choose another path; the other outputs were written")


def write_fresh(path: Path, text: str | Iterable[bytes]) -> None:
    """Write ``text`` (or UTF-8 pieces: a large file is not copied to be joined or encoded)
    to a new file beside ``path`` and rename it over ``path`` (a new inode).
    Only a regular file (or none) is replaced so: a device (``/dev/stdout``), a FIFO or a
    symlink the caller named is written through, as before (the Action clears its outputs'
    paths of those first: checker/safety/confine.py)."""
    import os
    import stat
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        try:
            with path.open(*_mode(text)) as fh:
                _put(fh, text)
        except OSError:
            if path.is_file():
                path.unlink(missing_ok=True)
            raise
        return
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, *_mode(text)) as fh:
            _put(fh, text)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _mode(text: str | Iterable[bytes]) -> tuple[Any, ...]:
    return ("w", -1, "utf-8") if isinstance(text, str) else ("wb",)


def _put(fh: IO[Any], text: str | Iterable[bytes]) -> None:
    for piece in [text] if isinstance(text, str) else text:
        fh.write(piece)


Named = tuple[str, "Path | None"]  # (what the user calls it: "--results", "the replay file (--replay)", path)


def _identity(path: Path) -> tuple[Path, tuple[int, int] | None]:
    """The file a path names: its resolved path, and its inode when it exists (a hard link
    or a symlinked folder is the same file under another name)."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: compared as written
        resolved = path.absolute()
    try:
        st = path.stat()
        return resolved, (st.st_dev, st.st_ino)
    except OSError:
        return resolved, None


def _same(a: tuple[Path, tuple[int, int] | None], b: tuple[Path, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def check_outputs(outputs: Sequence[Named], inputs: Sequence[Named]) -> None:
    """An output file that is also one of the command's inputs (the replay file, a shard's
    file being merged, the baseline ...) would be destroyed by writing it, and two outputs
    naming one file would leave only the last: bad input, found before anything is written."""
    read = [(what, _identity(path)) for what, path in inputs if path is not None]
    written: list[tuple[str, tuple[Path, tuple[int, int] | None]]] = []
    for option, path in outputs:
        if path is None:
            continue
        it = _identity(path)
        for what, other in read:
            if _same(it, other):
                raise InputError(f"{option} would overwrite {what}", file=str(path),
                                 fix=f"give {option} another file")
        for earlier, other in written:
            if _same(it, other):
                raise InputError(f"{option} and {earlier} name the same file", file=str(path),
                                 fix="give each output its own file")
        written.append((option, it))
