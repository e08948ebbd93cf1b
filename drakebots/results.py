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
import re
import shutil
import socket
import tempfile
from pathlib import Path

import numpy as np

from drakebots.errors import InputError

# Written into every results folder: `--force` replaces only a folder that holds it.
MARKER = ".drakebots-results"


# Written into every temporary folder (and a replaced folder on its way out): who made it, so that
# a later run removes it only when that process is dead on this host (issue 68).
OWNER = ".drakebots-owner"
# The longest results-folder name: its temporary sibling adds ~30 characters to it and a file
# system allows 255 bytes per name.
_MAX_NAME_BYTES = 200
# How far CheckOutputFolder follows the files an input names (scenario -> robot file -> URDF ->
# meshes), and how much it reads doing so.
_MAX_READ_DEPTH = 6
_MAX_READ_FILES = 2000
_MAX_SCAN_BYTES = 4_000_000
_SCANNED_SUFFIXES = {".yaml", ".yml", ".urdf", ".sdf", ".xml", ".json", ".dmd", ".xacro", ".txt"}


def CheckOutputFolder(out: str | Path, force: bool, *, reads=()) -> Path:
    """Validates a destination before any work starts (InputError, exit 2, otherwise).

    The destination must be a name a folder can be made at: not a symlink loop or a dangling
    symlink, not under a file, in a folder that exists or can be made and is writable, with a
    name short enough for its temporary sibling. An existing folder is replaced only with
    `force`, and only if drakebots made it (it holds `MARKER`) and holds nothing drakebots did
    not write there; never the working directory or a folder above it, and never a folder any
    input lives under: `reads` (config files, robot files, plans, skins) and, followed from
    them, the files they name (a scenario's robot file, its URDF, the meshes that names).
    """
    path = Path(out)
    _CheckWritableName(path, str(out))
    if path.is_symlink():
        try:
            path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InputError(
                f"--out {out}: a symlink that leads nowhere (dangling or a loop)"
            ) from None
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
    for read in InputFiles([*reads, *_COMMAND_INPUTS]):
        if read == resolved or resolved in read.parents:
            raise InputError(f"--out {out}: --force would replace {read}, which this run reads")
    if not (path / MARKER).is_file():
        raise InputError(
            f"--out {out}: --force replaces only a results folder drakebots made (no {MARKER} "
            "in it); move or remove it yourself"
        )
    foreign = _ForeignFiles(path)
    if foreign:
        raise InputError(
            f"--out {out}: --force would replace {foreign[0]}, which drakebots did not write "
            "there; move it or remove the folder yourself"
        )
    return path


# The paths the command line names (set by drakebots.cli.main): inputs of every verb, whether or
# not the verb lists them in its `reads`.
_COMMAND_INPUTS: list[Path] = []


def NoteCommandInputs(paths) -> None:
    """Records paths the command line names as inputs of this run (CheckOutputFolder then never
    lets --force replace a folder any of them, or a file they name, lives under)."""
    _COMMAND_INPUTS[:] = [Path(p) for p in paths]


def _CheckWritableName(path: Path, label: str) -> None:
    """InputError unless a folder can be made at `path`: its nearest existing ancestor is a
    writable folder (not a file, not a symlink loop) and its name is not too long."""
    if len(path.name.encode(errors="surrogateescape")) > _MAX_NAME_BYTES:
        raise InputError(f"--out {label}: the name is longer than {_MAX_NAME_BYTES} bytes")
    if path.name in ("", ".", ".."):
        parent = path
    else:
        parent = path.parent
    probe = parent
    while True:
        try:
            info = os.stat(probe)
        except FileNotFoundError:
            if probe == probe.parent:
                break
            probe = probe.parent
            continue
        except NotADirectoryError:
            raise InputError(f"--out {label}: a file stands where a folder is needed") from None
        except OSError as e:
            raise InputError(f"--out {label}: {probe}: {e.strerror}") from None
        import stat

        if not stat.S_ISDIR(info.st_mode):
            raise InputError(f"--out {label}: {probe} is a file, not a folder")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise InputError(f"--out {label}: cannot write into {probe} (permission denied)")
        # os.access answers yes for root, and on a read-only mount or /proc: make (and remove)
        # an empty folder there, so that the run does not do its work first and then fail.
        trial = Path(probe) / f".drakebots-trial-{os.getpid()}"
        try:
            os.mkdir(trial)
        except FileExistsError:
            return
        except OSError as e:
            raise InputError(
                f"--out {label}: cannot make a folder in {probe} ({e.strerror})"
            ) from None
        os.rmdir(trial)
        return


def _Manifest(folder: Path) -> set[str] | None:
    """The files a results folder's MARKER lists as written by drakebots (None: an older marker
    without the list)."""
    try:
        text = (folder / MARKER).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    if "files:" not in lines:
        return None
    return set(lines[lines.index("files:") + 1 :])


def _ForeignFiles(folder: Path) -> list[str]:
    """Files and links in `folder` that its marker does not list (a user put them there after
    drakebots wrote it), relative; [] for an older marker without a list."""
    manifest = _Manifest(folder)
    if manifest is None:
        return []
    foreign = []
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            relative = os.path.relpath(os.path.join(root, name), folder)
            if relative not in manifest and relative not in (MARKER, OWNER):
                foreign.append(relative)
    return sorted(foreign)


def InputFiles(reads) -> list[Path]:
    """The resolved paths of `reads` and of every file they name, followed through text inputs
    (a scenario's robot file, the robot file's URDF or skeleton, the meshes a URDF names): a word
    of a YAML/URDF/SDF/JSON file is a file it names when a file of that name exists relative to
    it (or absolute). Used so that `--force` never replaces a folder any input lives under."""
    found: list[Path] = []
    seen: set[Path] = set()
    queue = [(Path(r), 0) for r in reads if r]
    while queue and len(seen) < _MAX_READ_FILES:
        path, depth = queue.pop()
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved in seen:
            continue
        seen.add(resolved)
        found.append(resolved)
        if depth >= _MAX_READ_DEPTH or resolved.suffix.lower() not in _SCANNED_SUFFIXES:
            continue
        try:
            if not resolved.is_file() or resolved.stat().st_size > _MAX_SCAN_BYTES:
                continue
            text = resolved.read_text(errors="replace")
        except OSError:
            continue
        for word in set(_PATH_WORDS.findall(text)):
            word = word.removeprefix("file://")
            candidate = Path(word).expanduser()
            if not candidate.is_absolute():
                candidate = resolved.parent / candidate
            try:
                if candidate.is_file() or candidate.is_dir():
                    queue.append((candidate, depth + 1))
            except OSError:
                continue
    return found


# Words that may name a file: runs of path characters holding a dot or a slash.
_PATH_WORDS = re.compile(r"(?:file://)?[~\w./+-]*[./][~\w./+-]*")


def _ThisHost() -> str:
    return socket.gethostname()


def _BootId() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _StartTime(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot (Linux's /proc/PID/stat field
    22), "" where unknown: with the pid it names one process, so a reused pid is told apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def _Alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def OwnerRecord() -> dict:
    """This process as the owner of a temporary folder: pid, host, start time and boot."""
    return {
        "pid": os.getpid(),
        "host": _ThisHost(),
        "start": _StartTime(os.getpid()),
        "boot": _BootId(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def WriteOwner(folder: Path) -> None:
    """Marks `folder` as this process's temporary folder (OWNER)."""
    (Path(folder) / OWNER).write_text(json.dumps(OwnerRecord()) + "\n")


def MakeOwnedTemporary(parent: Path, name: str, kind: str) -> Path:
    """A new hidden folder `.NAME.KIND-PID-XXXX` in `parent` that holds its OWNER file from the
    moment it has that name: it is made and marked as `.NAME.new-PID-XXXX`, then renamed (a
    run killed between the two, as a kill the moment the folder appears did, left a `.tmp-`
    folder without an owner, which no later run may remove)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.new-{os.getpid()}-", dir=parent))
    try:
        WriteOwner(staging)
        folder = staging.with_name(staging.name.replace(".new-", f".{kind}-", 1))
        os.rename(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return folder


def OwnerIsDead(folder: Path) -> bool:
    """Whether the process that made temporary `folder` is known to be gone: its OWNER names
    this host and either its pid no longer runs, the machine rebooted since, or the pid now
    belongs to a process started at another time. False for a folder without a readable OWNER
    or made on another host (it is left alone)."""
    try:
        owner = json.loads((Path(folder) / OWNER).read_text())
        pid = int(owner["pid"])
        host = str(owner["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if host != _ThisHost():
        return False
    boot = str(owner.get("boot", ""))
    if boot and _BootId() and boot != _BootId():
        return True
    if pid <= 0 or not _Alive(pid):
        return True
    start = str(owner.get("start", ""))
    return bool(start) and bool(_StartTime(pid)) and start != _StartTime(pid)


def RemoveStaleTemporaries(final: Path) -> list[Path]:
    """Removes the hidden `.NAME.tmp-*` and `.NAME.old-*` folders that killed runs left beside
    `final` (into it or into a sibling: a killed `demo` wrote to a name no later run repeats),
    each only when its OWNER file says its process is dead on this host. Names are compared as
    strings, never used as a glob (a `--out 'x/*'` matches nothing else). Returns what was
    removed."""
    final = Path(final)
    removed = []
    if not final.parent.is_dir():
        return removed
    try:
        entries = list(os.scandir(final.parent))
    except OSError:
        return removed
    for entry in entries:
        kinds = (".tmp-", ".old-", ".new-")
        if not entry.name.startswith(".") or not any(kind in entry.name for kind in kinds):
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        if OwnerIsDead(path):
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
        _CheckWritableName(self.final, str(self.final))
        self.final.parent.mkdir(parents=True, exist_ok=True)
        RemoveStaleTemporaries(self.final)
        self._tmp = MakeOwnedTemporary(self.final.parent, self.final.name, "tmp")
        try:
            (self._tmp / MARKER).write_text("a results folder written by drakebots\n")
        except BaseException:
            self.Abort()
            raise
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
        """Moves the finished folder into place (replacing an old one only with --force).

        A folder that appeared at the destination during the run (a concurrent run's, a user's)
        is never replaced without --force nor when drakebots did not make it: the results are
        kept under a visible name beside it (`NAME.kept-TIME-PID`), and InputError says where.
        """
        if self.committed:
            return self.final
        self._WriteManifest()
        os.chmod(self._tmp, 0o755)  # mkdtemp makes it private; a results folder is not.
        trash = None
        if os.path.lexists(self.final):
            if (
                not self.force
                or not self.final.is_dir()
                or not (self.final / MARKER).is_file()
                or _ForeignFiles(self.final)
            ):
                kept = self._Keep()
                raise InputError(
                    f"--out {self.final}: a folder appeared there during the run; the results "
                    f"are kept in {kept}"
                )
            trash = MakeOwnedTemporary(self._tmp.parent, self.final.name, "old")
            os.replace(self.final, trash / "old")
        (self._tmp / OWNER).unlink(missing_ok=True)
        os.replace(self._tmp, self.final)
        self.committed = True
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)
        return self.final

    def _WriteManifest(self) -> None:
        """Lists in MARKER every file written, so that a later --force can tell a file a user
        put into the folder (which it refuses to delete)."""
        files = []
        for root, dirs, names in os.walk(self._tmp):
            for name in names + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                relative = os.path.relpath(os.path.join(root, name), self._tmp)
                if relative not in (MARKER, OWNER):
                    files.append(relative)
        (self._tmp / MARKER).write_text(
            "a results folder written by drakebots\nfiles:\n"
            + "".join(f + "\n" for f in sorted(files))
        )

    def _Keep(self) -> Path:
        """Renames the finished temporary folder to a visible name beside the destination (a run
        that lost a race to the destination keeps its results) and returns it."""
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        kept = self.final.with_name(f"{self.final.name}.kept-{stamp}-{os.getpid()}")
        (self._tmp / OWNER).unlink(missing_ok=True)
        os.replace(self._tmp, kept)
        self._tmp = None
        return kept

    def Abort(self) -> None:
        """Removes the temporary folder (a failed or interrupted run leaves nothing)."""
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
