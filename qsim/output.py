"""Output files: checked before the work that fills them, written atomically.

check_output_path runs when a command starts, so a missing or read-only directory ends it at
once instead of after a long run that then loses its results. The writers put the content in a
temporary file beside the target and rename it over the target (os.replace, atomic within one
file system) only once it is complete, so a failure never leaves half a file behind.
"""
import contextlib
import json
import os
import secrets
import stat
import sys

from .errors import SimulationError

#: The path that means standard output for --json.
STDOUT = "-"


def check_output_path(path, what: str) -> None:
    """Raise SimulationError (one line naming `what`, e.g. '--json') unless a file can be written
    at `path` (str or os.PathLike): it is not a directory, a device or a pipe, and its directory
    exists and takes a new file. The test creates and removes a temporary file there, which also
    catches read-only file systems that permission bits do not show. A symbolic link is checked
    (and later written) as the file it names."""
    path = _file_name(path, what)
    if os.path.isdir(path):
        raise SimulationError(f"{what} {path!r} is a directory; give a file name")
    if os.path.exists(path) and not os.path.isfile(path):
        raise SimulationError(f"{what} {path!r} is not a regular file (a device or a pipe), which writing the "
                              "file would replace; give a file name")
    directory = _directory(path)
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise SimulationError(f"{what} {path!r}: {directory!r} is not a directory")
    if not os.path.isdir(directory):
        raise SimulationError(f"{what} {path!r}: the directory {directory!r} does not exist; create it first")
    try:
        descriptor, temporary = _create_temporary(path)
    except OSError as exc:
        raise SimulationError(f"{what} {path!r}: cannot create a file in {directory!r} ({exc.strerror})") from None
    os.close(descriptor)
    os.unlink(temporary)


def check_output_path_or_exit(path, what: str, program: str) -> None:
    """check_output_path for scripts: one line on stderr and exit code 2 when it fails."""
    try:
        check_output_path(path, what)
    except SimulationError as exc:
        print(f"{program}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


@contextlib.contextmanager
def atomic_output(path, binary: bool = False):
    """A file handle (text UTF-8, or binary) on a temporary file beside `path`; when the block
    ends without an exception the data is flushed to disk and the file renamed to `path`,
    otherwise it is removed. OSError (disk full, ...) becomes a one-line SimulationError. A file
    replaced keeps its permissions; a symbolic link stays a link, the file it names is replaced."""
    path = os.path.realpath(_file_name(path, "output"))
    try:
        descriptor, temporary = _create_temporary(path)
    except OSError as exc:
        raise SimulationError(f"cannot write {path!r}: {exc.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(path):
            os.chmod(temporary, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(temporary, path)
    except OSError as exc:
        _remove(temporary)
        raise SimulationError(f"cannot write {path!r}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(temporary)
        raise


def write_json(path, payload, indent: int = 2) -> None:
    """payload as JSON: to standard output when path is '-', else atomically to the file.
    numpy scalars become numbers and complex values {"re": ..., "im": ...}."""
    text = json.dumps(payload, indent=indent, default=_json_default)  # before the file is touched
    if path == STDOUT:
        print(text)
        return
    with atomic_output(path) as handle:
        handle.write(text + "\n")


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, complex):
        return {"re": value.real, "im": value.imag}
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _file_name(path, what: str) -> str:
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise SimulationError(f"{what} needs a file name, got {path!r}")
    return os.fspath(path)


def _directory(path: str) -> str:
    """The directory the file `path` names will be in (through symbolic links)."""
    return os.path.dirname(os.path.realpath(path))


def _create_temporary(path: str) -> tuple:
    """(descriptor, name) of a new file beside `path`, readable as a normal new file would be
    (mode 0o666 less the umask; os.open applies the umask)."""
    name = f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp"
    temporary = os.path.join(_directory(path), name)
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary


def _remove(temporary: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
