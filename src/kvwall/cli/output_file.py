"""The file a command was asked to write: refused where it would overwrite an input or a file under version control,
or cannot be written at all; written whole or not at all."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterable

from kvwall.inputs.loader import SpecError
from kvwall.render import replace_atomically


def tracked(path: Path) -> bool:
    """Whether git tracks ``path`` in the repository that holds it (False outside one, or without git)."""
    try:
        done = subprocess.run(["git", "-C", str(path.parent), "ls-files", "--error-unmatch", "--", path.name],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def checked_output(path: str | Path, option: str, inputs: Iterable[str | Path] = ()) -> Path:
    """``path`` as an output of ``option``: a file in an existing folder, none of ``inputs``, not tracked by git."""
    path = Path(path)
    try:
        return _checked(path, option, inputs)
    except OSError as err:  # a name longer than the file system takes, a folder that cannot be searched
        raise SpecError(path, option, f"cannot be written ({err.strerror})") from None


def _checked(path: Path, option: str, inputs: Iterable[str | Path]) -> Path:
    if path.is_dir():
        raise SpecError(path, option, "is a folder: name a file to write")
    if path.exists() and not path.is_file():
        raise SpecError(path, option, "is not a regular file (a device, FIFO or socket is never replaced)")
    if not path.parent.is_dir():
        raise SpecError(path, option, f"folder {str(path.parent)!r} does not exist")
    for given in inputs:
        if path.resolve() == Path(given).resolve():
            raise SpecError(path, option, "is an input of this command: name another file to write")
    if path.exists() and tracked(path):
        raise SpecError(path, option, "is a file under version control: name a file outside the project's own")
    return path


def write_output(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it: never half written."""
    try:
        replace_atomically(path, lambda temporary: temporary.write_text(text, encoding="utf-8", newline="\n"))
    except OSError as err:
        raise SpecError(path, "", f"cannot be written ({err.strerror})") from None
