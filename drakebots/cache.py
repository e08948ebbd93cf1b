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
    if root.exists() and not root.is_dir():
        raise InputError(
            f"{CACHE_ENV if explicit else 'cache folder'} {root}: exists and is not a folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    return root


def SafeName(name: str, *, default: str = "robot") -> str:
    """`name` as a single file-name component: path separators, '..' and characters outside
    [A-Za-z0-9._-] become '_' (a name read from a file is a name, never a path)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", str(name)).strip("._")
    return cleaned or default


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
