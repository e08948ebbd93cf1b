"""Results folders' temporaries name their owner, and only a dead owner's are removed (issue 68).

drakebots.results: each hidden temporary folder holds OWNER (pid, host, the process's start time
and the boot id); a later run removes it only when that process is gone on this host (or the pid
now belongs to a process started at another time); names are compared, never globbed; a run
that loses the race to its destination keeps its results under a visible name.
"""

import json
import os
import socket
import subprocess
import sys

import pytest

from drakebots.errors import InputError
from drakebots.results import MARKER, OWNER, OwnerRecord, RemoveStaleTemporaries, ResultsFolder


def _Temporary(parent, name, owner):
    folder = parent / name
    folder.mkdir()
    (folder / "half.txt").write_text("half")
    if owner is not None:
        (folder / OWNER).write_text(json.dumps(owner))
    return folder


def _DeadPid():
    """A pid that no longer runs (a child that exited and was reaped)."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)


def test_only_a_dead_owners_temporaries_are_removed(tmp_path):
    me = OwnerRecord()
    dead = dict(me, pid=_DeadPid())
    reused = dict(me, start=str(int(me["start"] or 0) + 12345))  # my pid, another process
    cases = {
        ".run.tmp-1-dead": (dead, True),
        ".run.old-1-dead": (dead, True),
        ".other.tmp-1-dead": (dead, True),  # a sibling's (a killed demo's) too
        ".run.tmp-2-pid-reused": (reused, True),
        ".run.tmp-3-alive": (me, False),
        ".run.tmp-4-other-host": (dict(dead, host=socket.gethostname() + "-other"), False),
        ".run.tmp-5-no-owner": (None, False),
        ".run.tmp-6-bad-owner": ("not json", False),
        "run.tmp-7-not-hidden": (dead, False),
        ".run.kept-8": (dead, False),
    }
    for name, (owner, _) in cases.items():
        folder = _Temporary(tmp_path, name, owner if isinstance(owner, dict) else None)
        if isinstance(owner, str):
            (folder / OWNER).write_text(owner)
    removed = {p.name for p in RemoveStaleTemporaries(tmp_path / "run")}
    assert removed == {name for name, (_, gone) in cases.items() if gone}
    assert {p.name for p in tmp_path.iterdir()} == set(cases) - removed


def test_a_glob_in_the_name_matches_nothing_else(tmp_path):
    dead = dict(OwnerRecord(), pid=_DeadPid())
    keep = _Temporary(tmp_path, ".keep", None)
    # A name with glob characters: `.*.tmp-*` would have matched every sibling's temporary.
    with ResultsFolder(tmp_path / "*") as results:
        results.WriteText("a.txt", "a")
    assert (tmp_path / "*" / "a.txt").read_text() == "a"
    assert keep.is_dir() and (keep / "half.txt").read_text() == "half"
    # A live run's temporary beside it is left alone whatever its name.
    live = _Temporary(tmp_path, ".x.tmp-1-live", OwnerRecord())
    gone = _Temporary(tmp_path, ".x.tmp-1-gone", dead)
    with ResultsFolder(tmp_path / "[x]") as results:
        results.WriteText("b.txt", "b")
    assert live.is_dir() and not gone.exists()


def test_a_killed_runs_temporary_names_its_owner_and_goes_with_the_next_run(tmp_path):
    code = (
        "import os, signal, sys\n"
        "from drakebots.results import ResultsFolder\n"
        "r = ResultsFolder(sys.argv[1]).__enter__()\n"
        "r.WriteText('half.txt', 'half')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], check=False)
    (left,) = tmp_path.iterdir()
    owner = json.loads((left / OWNER).read_text())
    assert owner["host"] == socket.gethostname() and owner["pid"] > 0
    with ResultsFolder(tmp_path / "run") as results:
        results.WriteText("a.txt", "a")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert not (tmp_path / "run" / OWNER).exists()  # the finished folder names no owner


def test_a_run_that_loses_the_race_keeps_its_results_visibly(tmp_path):
    out = tmp_path / "run"
    results = ResultsFolder(out).__enter__()
    results.WriteText("mine.txt", "mine")
    out.mkdir()  # another run (or the user) made the destination meanwhile
    (out / "theirs.txt").write_text("theirs")
    with pytest.raises(InputError, match="kept in") as error:
        results.__exit__(None, None, None)
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("run.kept-")]
    assert len(kept) == 1 and str(kept[0]) in str(error.value)
    assert (kept[0] / "mine.txt").read_text() == "mine" and not (kept[0] / OWNER).exists()
    assert (out / "theirs.txt").read_text() == "theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run", kept[0].name])


def test_force_never_replaces_files_drakebots_did_not_write(tmp_path):
    out = tmp_path / "run"
    with ResultsFolder(out) as results:
        results.WriteText("sub/a.txt", "a")
    assert (out / MARKER).read_text().splitlines()[-1] == os.path.join("sub", "a.txt")
    with ResultsFolder(out, force=True) as results:  # only its own files: replaced
        results.WriteText("b.txt", "b")
    (out / "robot.yaml").write_text("the user's")
    with pytest.raises(InputError, match="robot.yaml"):
        ResultsFolder(out, force=True)
    assert (out / "robot.yaml").read_text() == "the user's"


def test_an_interrupted_run_leaves_nothing(tmp_path):
    with pytest.raises(KeyboardInterrupt), ResultsFolder(tmp_path / "run") as results:
        results.WriteText("a.txt", "a")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_folder_never_has_its_name_without_its_owner(tmp_path, monkeypatch):
    """A run killed the moment its `.tmp-` folder appeared (SIGKILL, under load) left a folder
    without an OWNER, which no later run may remove. The folder is made and marked under a
    staging name, then renamed: whenever a `.tmp-` or `.old-` name exists, its OWNER does."""
    import tempfile
    from pathlib import Path

    from drakebots import results

    made, renamed = [], []
    real_mkdtemp, real_rename = tempfile.mkdtemp, os.rename

    def Mkdtemp(*args, **kwargs):
        path = real_mkdtemp(*args, **kwargs)
        made.append(os.path.basename(path))
        return path

    def Rename(source, target):
        assert (Path(source) / results.OWNER).is_file(), "renamed before its owner was written"
        renamed.append(os.path.basename(target))
        return real_rename(source, target)

    monkeypatch.setattr(tempfile, "mkdtemp", Mkdtemp)
    monkeypatch.setattr(os, "rename", Rename)
    with results.ResultsFolder(tmp_path / "out") as folder:
        folder.WriteJson("summary.json", {"a": 1})
    assert made and all(".new-" in name for name in made), made
    assert any(".tmp-" in name for name in renamed), renamed
