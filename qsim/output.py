"""Output files: checked before the work that fills them, written whole or not at all."""
import os
import tempfile
from pathlib import Path

from .errors import SimulationError

STDOUT = "-"


def check_writable(path) -> None:
    """Raise SimulationError now, before a long run, when `path` could not be written later:
    its folder missing or not writable, or the path itself a folder. '-' (stdout) and None pass."""
    if path is None or path == STDOUT:
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise SimulationError(f"output path {path} is a folder; give a file name")
    if not folder.is_dir():
        raise SimulationError(f"cannot write {path}: folder {folder} does not exist; create it or choose another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise SimulationError(f"cannot write {path}: no write permission; choose another path")


def write_atomically(path, write) -> None:
    """Call write(file_path) on a temporary file beside `path`, then rename it to `path`, so a
    failure never leaves a partial file (an existing file stays as it was)."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent or ".")
    os.close(handle)
    try:
        write(temporary)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text_atomically(path, text: str) -> None:
    write_atomically(path, lambda name: Path(name).write_text(text))
