"""drakebots' own cache folder (DESIGN.md, "Files drakebots writes").

Everything drakebots generates outside a results folder (a skinned robot's SDF made from its
skeleton file, meshes converted to a format Drake reads) goes here, never beside a user's files.
The folder is `$DRAKEBOTS_CACHE_DIR` where set, else `$XDG_CACHE_HOME/drakebots`, else
`~/.cache/drakebots` (the XDG base-directory convention that pip, Numba and Matplotlib follow).

Entries are content-addressed: `CacheEntry(kind, key_parts, name)` is a folder named by a hash of
what the entry is made from, so two different inputs never share a name, and the same input finds
its earlier entry. Names read from files are used as names only (`SafeName`), never as paths.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from drakebots.errors import InputError

CACHE_ENV = "DRAKEBOTS_CACHE_DIR"


def CacheDirectory() -> Path:
    """The cache folder (created on first use), as the module docstring says."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        root = Path(explicit).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "drakebots"
    label = CACHE_ENV if explicit else "cache folder"
    if any(ord(c) < 32 or ord(c) == 127 for c in str(root)):
        raise InputError(f"{label} {str(root)!r}: holds a control character")
    if root.exists() and not root.is_dir():
        raise InputError(f"{label} {root}: exists and is not a folder")
    resolved = Path(os.path.realpath(root))
    for what, inside in ShippedFolders():
        if resolved == inside or inside in resolved.parents:
            # Entries written there changed the package every later run loads (issue 68).
            raise InputError(f"{label} {root}: inside drakebots' own {what} ({inside})")
    root.mkdir(parents=True, exist_ok=True)
    return root


def ShippedFolders() -> list[tuple[str, Path]]:
    """(what, folder) of the folders drakebots ships, which nothing it writes may go into: its
    package and its models."""
    import drakebots
    from drakebots.models import ModelsDirectory

    folders = [("package", Path(drakebots.__file__).resolve().parent)]
    try:
        folders.append(("models", ModelsDirectory().resolve()))
    except FileNotFoundError:
        pass
    return folders


def SafeName(name: str, *, default: str = "robot") -> str:
    """`name` as a single file-name component: path separators, '..' and characters outside
    [A-Za-z0-9._-] become '_' (a name read from a file is a name, never a path)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", str(name)).strip("._")
    # At most 100 characters: a 300-character name made a file name the file system refuses.
    return cleaned[:100].rstrip("._") or default


def CacheEntry(kind: str, key_parts, name: str = "") -> Path:
    """A folder of the cache for one generated thing, made on first use.

    Args:
        kind: the sub-folder by purpose ("skinned_sdf", "meshes", ...).
        key_parts: what the entry is made from (strings or bytes: file contents, versions,
            parameters); their hash names the folder, so different inputs never collide.
        name: a readable prefix for the folder (passed through SafeName).
    """
    digest = hashlib.sha256()
    for part in key_parts:
        data = part if isinstance(part, bytes) else str(part).encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    prefix = SafeName(name, default="entry")
    folder = CacheDirectory() / SafeName(kind) / f"{prefix}-{digest.hexdigest()[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def WriteCacheFile(path: Path, data: str | bytes) -> None:
    """Writes `data` to the cache file `path` unless it already holds it.

    The cache is shared by every process of the user's (a Dask sweep's workers load the same
    robot at once; CI runs the suite and the paper checks side by side), so the entry is written
    whole through a temporary file of this call's own (drakebots.files.WriteWhole): a reader sees
    the old file or the whole new one, and two writers of the same entry never write into one
    file.
    """
    from drakebots.files import WriteWhole

    raw = data.encode() if isinstance(data, str) else bytes(data)
    try:
        if path.is_file() and path.read_bytes() == raw:
            return
    except OSError:  # Renamed away or replaced between the two calls: write it again.
        pass
    WriteWhole(path, raw)
