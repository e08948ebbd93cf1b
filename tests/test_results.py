"""Results folders (drakebots.results): atomic, marked, and `--force` never replaces what
drakebots did not make (issue 50)."""

import os
import subprocess
import sys

import pytest

from drakebots.errors import InputError
from drakebots.results import MARKER, CheckOutputFolder, ResultsFolder


def _Make(folder):
    with ResultsFolder(folder) as results:
        results.WriteText("a.txt", "a")
    return folder


def test_a_results_folder_is_marked_and_replaced_only_with_force(tmp_path):
    out = _Make(tmp_path / "run")
    assert (out / MARKER).is_file() and (out / "a.txt").read_text() == "a"
    with pytest.raises(InputError, match="--force"):
        ResultsFolder(out)
    with ResultsFolder(out, force=True) as results:
        results.WriteText("b.txt", "b")
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "b.txt"])


def test_force_never_replaces_a_users_folder_the_working_directory_or_an_input(
    tmp_path, monkeypatch
):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(InputError, match="drakebots made"):
        CheckOutputFolder(mine, force=True)
    made = _Make(tmp_path / "made")
    with pytest.raises(InputError, match="reads"):
        CheckOutputFolder(made, force=True, reads=[made / "a.txt"])
    monkeypatch.chdir(made)
    with pytest.raises(InputError, match="working directory"):
        CheckOutputFolder(".", force=True)
    with pytest.raises(InputError, match="working directory"):
        CheckOutputFolder(tmp_path, force=True)
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_a_failed_run_leaves_nothing_and_a_killed_runs_temporary_is_removed(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(RuntimeError), ResultsFolder(out) as results:
        results.WriteText("a.txt", "a")
        raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []
    # A run killed with SIGKILL mid-write leaves its hidden temporary folder behind.
    code = (
        "import os, signal, sys\n"
        "from drakebots.results import ResultsFolder\n"
        "r = ResultsFolder(sys.argv[1]).__enter__()\n"
        "r.WriteText('half.txt', 'half')\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(out)], check=False)
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".run.tmp-"), left
    _Make(out)  # the next run into the same parent removes it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    assert os.listdir(out) and (out / "a.txt").is_file()
