"""Results folders (DESIGN.md, "The user's interface"): written atomically, never half written.

A foundation: every workflow's `WorkflowResult.Save` (drakebots.workflow) and the command line
write through it.

A run writes into a hidden temporary folder next to its destination and renames it into place
when it finishes (also when it finishes without reaching its goal: exit 1 keeps everything). If
the run crashes, the temporary folder is removed and the destination is untouched. An existing
destination is replaced only with `--force`.
"""

import datetime
import json
import os
import platform
import shutil
import tempfile
from pathlib import Path

import numpy as np

from drakebots.errors import InputError

# Written into every results folder: `--force` replaces only a folder that holds it.
MARKER = ".drakebots-results"


def CheckOutputFolder(out: str | Path, force: bool, *, reads=()) -> Path:
    """Validates a destination before any work starts (InputError, exit 2, otherwise).

    An existing folder is replaced only with `force`, and only if drakebots made it (it holds
    `MARKER`); never the working directory or a folder above it, and never a folder the run
    reads from (`reads`: the input paths, e.g. the plan a `track` reads).
    """
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    if not path.exists():
        return path
    if not force:
        raise InputError(f"--out {out}: folder exists; pass --force to replace it")
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise InputError(f"--out {out}: --force would replace the working directory")
    for read in reads:
        read = Path(read).resolve()
        if read == resolved or resolved in read.parents:
            raise InputError(f"--out {out}: --force would replace {read}, which this run reads")
    if not (path / MARKER).is_file():
        raise InputError(
            f"--out {out}: --force replaces only a results folder drakebots made (no {MARKER} "
            "in it); move or remove it yourself"
        )
    return path


def _Alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def RemoveStaleTemporaries(final: Path) -> list[Path]:
    """Removes the hidden `.NAME.tmp-PID-*` and `.NAME.old-PID` folders that killed runs into
    `final` left beside it (their process no longer runs). Returns what was removed."""
    removed = []
    if not final.parent.is_dir():
        return removed
    for pattern in (f".{final.name}.tmp-*", f".{final.name}.old-*"):
        for path in final.parent.glob(pattern):
            tail = path.name.rsplit(".tmp-" if ".tmp-" in path.name else ".old-", 1)[1]
            pid = tail.split("-", 1)[0]
            if pid.isdigit() and not _Alive(int(pid)) and path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def Versions() -> dict:
    """Versions of the packages that produced a result."""
    import drakebots

    versions = {
        "drakebots": drakebots.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    for module in ("pydrake", "scipy", "matplotlib"):
        try:
            if module == "pydrake":
                from importlib.metadata import version

                versions["drake"] = version("drake")
            else:
                versions[module] = __import__(module).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is just not listed.
            pass
    return versions


def _JsonDefault(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def ToJson(data) -> str:
    """JSON text with numpy values converted and NaN/inf written as null (strict JSON)."""

    def clean(value):
        if isinstance(value, dict):
            return {str(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, np.ndarray):
            return clean(value.tolist())
        if isinstance(value, (float, np.floating)):
            value = float(value)
            return value if np.isfinite(value) else None
        if isinstance(value, (np.integer, np.bool_)):
            return value.item()
        return value

    return json.dumps(clean(data), indent=2, default=_JsonDefault) + "\n"


class ResultsFolder:
    """A results folder written to a temporary sibling and renamed into place on success.

    Use as a context manager:

        with ResultsFolder(out, force=args.force) as results:
            results.WriteJson("summary.json", summary)
        # renamed into place here; on an exception the temporary folder is deleted.

    Call `Commit()` early to finalise before raising `RunFailure` (exit 1 keeps the results).
    """

    def __init__(self, out: str | Path, *, force: bool = False, reads=()):
        self.final = CheckOutputFolder(out, force, reads=reads)
        self.force = force
        self._tmp: Path | None = None
        self.committed = False

    def __enter__(self) -> "ResultsFolder":
        self.final.parent.mkdir(parents=True, exist_ok=True)
        RemoveStaleTemporaries(self.final)
        self._tmp = Path(
            tempfile.mkdtemp(prefix=f".{self.final.name}.tmp-{os.getpid()}-", dir=self.final.parent)
        )
        (self._tmp / MARKER).write_text("a results folder written by drakebots\n")
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None and not self.committed:
            self.Commit()
        elif not self.committed:
            self.Abort()
        return False

    @property
    def directory(self) -> Path:
        """The temporary folder being written (the final one after Commit)."""
        return self.final if self.committed else self._tmp

    def File(self, name: str) -> Path:
        """A path inside the folder (subfolders are created)."""
        path = self.directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def WriteText(self, name: str, text: str) -> Path:
        path = self.File(name)
        path.write_text(text)
        return path

    def WriteJson(self, name: str, data) -> Path:
        return self.WriteText(name, ToJson(data))

    def SaveNpz(self, name: str, arrays: dict) -> Path:
        path = self.File(name)
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)
        return path

    def SaveFigure(self, name: str, figure, dpi: int = 110) -> Path:
        import matplotlib.pyplot as plt

        path = self.File(name)
        figure.savefig(path, dpi=dpi)
        plt.close(figure)
        return path

    def Commit(self) -> Path:
        """Moves the finished folder into place (replacing an old one only with --force)."""
        if self.committed:
            return self.final
        trash = None
        if self.final.exists():
            if not self.force or not (self.final / MARKER).is_file():
                raise InputError(
                    f"--out {self.final}: a folder appeared there during the run; the results "
                    f"are kept in {self._tmp}"
                )
            trash = self.final.with_name(f".{self.final.name}.old-{os.getpid()}")
            os.replace(self.final, trash)
        os.chmod(self._tmp, 0o755)  # mkdtemp makes it private; a results folder is not.
        os.replace(self._tmp, self.final)
        self.committed = True
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        return self.final

    def Abort(self) -> None:
        if self._tmp is not None and self._tmp.exists():
            shutil.rmtree(self._tmp, ignore_errors=True)


def MakeSummary(verb: str, inputs: dict, command: str | None = None, **fields) -> dict:
    """The common head of every summary.json: verb, command line, inputs, versions, time.

    Args:
        command: the command line that made the run (the CLI passes `drakebots.cli.
            CommandLine()`); None from a script: "" (a library call reads no argv).
    """
    summary = {
        "verb": verb,
        "command": command or "",
        "inputs": inputs,
        "versions": Versions(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    summary.update(fields)
    return summary


def DefaultOutput(*parts: str) -> Path:
    """runs/<parts>-<timestamp>: a fresh folder name when the user gives no --out."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / ("-".join(parts + (stamp,)))


def ReadJson(path: str | Path, *, what: str = "", required: tuple[str, ...] = ()) -> dict:
    """A JSON object from a file the run reads (a summary.json, a marker), or InputError naming
    the file: missing, unreadable, not JSON, not an object, or without one of `required` keys
    (issue 50: a corrupt input exits 2 before any work)."""
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    if not path.is_file():
        raise InputError(f"{label}: file not found")
    try:
        data = json.loads(path.read_bytes())
    except (UnicodeDecodeError, ValueError) as e:
        raise InputError(f"{label}: not valid JSON ({e})") from None
    except OSError as e:
        raise InputError(f"{label}: cannot be read ({e.strerror})") from None
    if not isinstance(data, dict):
        raise InputError(f"{label}: not a JSON object (got {type(data).__name__})")
    missing = [key for key in required if key not in data]
    if missing:
        raise InputError(f"{label}: has no key {', '.join(map(repr, missing))}")
    return data


def ReadNpz(path: str | Path, *, what: str = "", required: tuple[str, ...] = ()) -> dict:
    """Every array of an .npz file the run reads (no pickles), or InputError naming the file:
    missing, not an .npz archive, cut short, or without one of `required` arrays."""
    import zipfile

    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    if not path.is_file():
        raise InputError(f"{label}: file not found")
    try:
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise InputError(f"{label}: a single .npy array, not an .npz archive")
            arrays = {name: data[name] for name in data.files}
    except InputError:
        raise
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError, OSError) as e:
        if isinstance(e, OSError) and not isinstance(e, zipfile.BadZipFile) and e.errno:
            raise InputError(f"{label}: cannot be read ({e.strerror})") from None
        raise InputError(f"{label}: not a readable .npz archive ({e})") from None
    missing = [key for key in required if key not in arrays]
    if missing:
        raise InputError(f"{label}: has no array {', '.join(map(repr, missing))}")
    return arrays
