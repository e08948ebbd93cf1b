"""Writing a file whole: a reader, a crash or Ctrl-C never leaves half of one.

Every file drakebots writes outside a results folder's staging (cache entries, a sweep's case
records and tables, a coupled replay's checkpoint) goes through `WriteWhole`: the data goes into a
temporary file of this call's own (`mkstemp`, in the same folder, so the rename stays on one file
system) that is then renamed over the target. Why its own name: a fixed temporary name let a
second writer of the same file (two processes loading one robot into the shared cache) truncate
the first's temporary file and find it renamed away (FileNotFoundError, issue 69's CI run). The
temporary file is removed again on any exception, KeyboardInterrupt included.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def WriteWhole(path: str | os.PathLike, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8) to `path`, replacing the file there, all or nothing; the
    file is readable by all, as a file the user makes (mode 0644)."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(raw)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
