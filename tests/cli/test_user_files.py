"""Nothing of the user's is overwritten or deleted, by any verb (issue 68, class 1; also 3).

A table of cases run in-process through drakebots.cli.main(argv) (a `python -m drakebots`
start-up costs ~0.6 s; bad input is refused before any work). Each case: the exit code, ONE line
on stderr naming what is wrong (for exit 2), no traceback, and the user's folders hashed
byte-for-byte (contents, and mode) before and after: unchanged, and nothing new anywhere but the
case's --out (and drakebots' cache, which the test points into its own folder).

The user's folders of every case (written fresh into the case's tmp folder):
  u/      the user's own files: robot files (a hopper with its URDF, a skinned `mybug` with its
          skeleton and the user's OWN `mybug.sdf` beside it), scenarios and configs.
  R/      a results folder drakebots made (its MARKER lists its files) into which the user then
          put files of their own (robot/hopper.yaml ...).
  Rold/   a results folder of an older drakebots (MARKER without a file list) holding the
          inputs of the run that names it (robot files, configs, a plan, a motion, a course).
  g/      a folder with hidden folders of its own (`.keep`, `.other.tmp-1-x`): `--out 'g/*'`
          must not touch them (the name was used as a glob).

Placeholders in argv: {u}, {R}, {Rold}, {g}, {tmp} (the case's folder), {loop} (a symlink loop),
{file} (a plain file), {view} (a results folder of a `simulate` of u/mybug.yaml).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from drakebots.cli import main
from drakebots.results import MARKER, ResultsFolder
from tests.cli._harness import RunVerb

EXAMPLES = Path(__file__).resolve().parents[2] / "scripts" / "examples"


def _Digest(folder: Path, skip=()) -> dict:
    """{relative path: sha256 of the bytes (or the link's target) and the mode} of everything
    under `folder`, hidden files and folders included, symlinks not followed."""
    found = {}
    for root, dirs, files in os.walk(folder):
        rel_root = os.path.relpath(root, folder)
        if rel_root.split(os.sep)[0] in skip:
            continue
        for name in dirs + files:
            path = Path(root) / name
            rel = os.path.normpath(os.path.join(rel_root, name))
            if rel.split(os.sep)[0] in skip:
                continue
            info = path.lstat()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path))
            elif path.is_file():
                found[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), oct(info.st_mode))
            else:
                found[rel] = ("dir", oct(info.st_mode))
    return found


def _UserFolders(tmp: Path) -> None:
    """Writes u/, R/, Rold/, g/, the loop and the file (see the module docstring)."""
    u = tmp / "u"
    u.mkdir()
    for name in ("hopper.yaml", "hopper.urdf"):
        shutil.copy(EXAMPLES / "hopper" / name, u / name)
    for name in ("mybug.yaml", "mybug_skeleton.yaml"):
        shutil.copy(EXAMPLES / "mybug" / name, u / name)
    (u / "mybug.sdf").write_text("<!-- the user's own SDF, by hand -->\n")
    os.chmod(u / "mybug.sdf", 0o664)
    text = (u / "mybug.yaml").read_text()
    (u / "updir.yaml").write_text(text.replace("name: mybug", "name: ../other/x"))
    (u / "abspath.yaml").write_text(
        text.replace("name: mybug", f"name: {tmp / 'elsewhere' / 'notes'}")
    )
    # A name longer than a file name may be (it made one the file system refused: exit 1).
    (u / "longname.yaml").write_text(text.replace("name: mybug", "name: " + "n" * 300))
    (u / "scenario.yaml").write_text(f"robot: {u / 'hopper.yaml'}\nduration: 0.01\n")

    r = tmp / "R"
    with ResultsFolder(r) as results:
        results.WriteText("summary.json", "{}\n")
    (r / "robot").mkdir()
    for name in ("hopper.yaml", "hopper.urdf", "mybug.yaml", "mybug_skeleton.yaml"):
        shutil.copy(u / name, r / "robot" / name)
    (r / "notes.txt").write_text("the user's notes\n")

    old = tmp / "Rold"
    (old / "robot").mkdir(parents=True)
    (old / MARKER).write_text("a results folder written by drakebots\n")
    for name in ("hopper.yaml", "hopper.urdf", "mybug.yaml", "mybug_skeleton.yaml"):
        shutil.copy(u / name, old / "robot" / name)
    (old / "gait.yaml").write_text("period: 0.5\ndistance: 0.2\n")
    (old / "course.yaml").write_text("name: c\ntargets: [[0.4, 0.1]]\n")
    (old / "skin.yaml").write_text("thickness: 0.004\n")
    (old / "voxel.yaml").write_text("lattice: 2x2x1\n")
    (old / "occupancy.npy").write_bytes(b"\x93NUMPY")
    (old / "sweep.yaml").write_text("command: simulate beetle\ngrid:\n  duration: [0.01, 0.02]\n")
    # Scenarios outside Rold whose robot, or whose robot's URDF, lives inside it.
    (u / "scenario_in_rold.yaml").write_text(
        f"robot: {old / 'robot' / 'hopper.yaml'}\nduration: 0.01\n"
    )
    urdf_in_rold = (
        (u / "hopper.yaml").read_text().replace("hopper.urdf", str(old / "robot" / "hopper.urdf"))
    )
    (u / "hopper_urdf_in_rold.yaml").write_text(urdf_in_rold)

    g = tmp / "g"
    (g / ".keep").mkdir(parents=True)
    (g / ".keep" / "x").write_text("keep\n")
    (g / ".other.tmp-1-x").mkdir()
    (g / ".other.tmp-1-x" / "y").write_text("keep\n")

    os.symlink("loop", tmp / "loop")
    (tmp / "file").write_text("a plain file\n")


def C(argv, code=2, needles=(), *, out=None, id=None):
    """A case: argv (placeholders as the module docstring says), the exit code, words the one
    line of stderr must hold, and the folder the case may create (None: nothing)."""
    return pytest.param(argv, code, tuple(needles), out, id=id or " ".join(argv))


HOPPER_GAIT = ["--period", "0.5", "--distance", "0.2"]
ACTUATE = ["--actuate", "node=0:0:0/3,axis=y,stroke=2mm"]

CASES = [
    # info: the skinned robot's SDF goes into the cache, never beside the robot file, and a
    # name: holding a path is a name.
    C(["info", "{u}/mybug.yaml"], 0),
    C(["info", "{u}/updir.yaml"], 0),
    C(["info", "{u}/abspath.yaml"], 0),
    C(["info", "{u}/longname.yaml"], 0),
    C(["info", "{u}/mybug.yaml", "--json"], 0),
    C(["info", "{R}/robot/mybug.yaml"], 0),
    # view: the same through a results folder naming the robot file; and where it listens.
    C(["view", "{view}", "--seconds", "0"], 0),
    C(["view", "{view}", "--host", "", "--seconds", "0"], 2, ["--host", "empty"]),
    C(["view", "{view}", "--host", "::", "--seconds", "0"], 2, ["--host", "0.0.0.0"]),
    C(["view", "{view}", "--host", "*", "--seconds", "0"], 2, ["--host", "0.0.0.0"]),
    C(["view", "{view}", "--host", "0", "--seconds", "0"], 2, ["--host", "every interface"]),
    C(["view", "{view}", "--port", "1"], 2, ["--port", "privileged"]),
    C(["view", "{view}", "--port", "80"], 2, ["--port", "privileged"]),
    C(["view", "{view}", "--port", "65536"], 2, ["--port"]),
    # simulate: --force never deletes an input, nor a file drakebots did not write.
    C(["simulate", "{R}/robot/hopper.yaml", "--out", "{R}", "--force"], 2, ["--out", "reads"]),
    C(["simulate", "beetle", "--out", "{R}", "--force"], 2, ["notes.txt", "did not write"]),
    C(["simulate", "{Rold}/robot/hopper.yaml", "--out", "{Rold}", "--force"], 2, ["reads"]),
    C(["simulate", "{u}/scenario_in_rold.yaml", "--out", "{Rold}", "--force"], 2, ["reads"]),
    C(["simulate", "{u}/hopper_urdf_in_rold.yaml", "--out", "{Rold}", "--force"], 2, ["reads"]),
    C(["simulate", "beetle", "--out", "{u}", "--force"], 2, ["drakebots made"]),
    C(["simulate", "beetle", "--out", "{u}"], 2, ["--force"]),
    C(["simulate", "beetle", "--out", "{loop}"], 2, ["--out", "loop"]),
    C(["simulate", "beetle", "--out", "{file}/sub"], 2, ["--out", "file"]),
    C(["simulate", "beetle", "--out", "{tmp}/" + "x" * 230], 2, ["--out", "longer"]),
    C(["simulate", "beetle", "--duration", "0.01", "--out", "{g}/*"], 0, out="g/*"),
    # optimize
    C(
        [
            "optimize",
            "gait",
            "{Rold}/robot/hopper.yaml",
            *HOPPER_GAIT,
            "--out",
            "{Rold}",
            "--force",
        ],
        2,
        ["reads"],
    ),
    C(
        ["optimize", "gait", "{u}/hopper.yaml", "--config", "{Rold}/gait.yaml", "--out", "{Rold}"]
        + ["--force"],
        2,
        ["reads"],
    ),
    C(["optimize", "gait", "{u}/hopper.yaml", *HOPPER_GAIT, "--out", "{loop}"], 2, ["--out"]),
    C(
        ["optimize", "gait", "{u}/hopper.yaml", *HOPPER_GAIT, "--out", "{u}", "--force"],
        2,
        ["reads"],
    ),
    # track: the plan is an input.
    C(["track", "{Rold}", "--out", "{Rold}", "--force"], 2, ["{Rold}"]),
    C(["track", "{view}", "--out", "{view}", "--force"], 2, ["plan"]),
    # skin
    C(["skin", "{Rold}/robot/mybug.yaml", "--out", "{Rold}", "--force"], 2, ["reads"]),
    C(["skin", "{u}/mybug.yaml", "--out", "{R}", "--force"], 2, ["did not write"]),
    C(
        ["skin", "beetle", "--config", "{Rold}/skin.yaml", "--out", "{Rold}", "--force"],
        2,
        ["reads"],
    ),
    # design
    C(
        [
            "design",
            "{Rold}/robot/mybug.yaml",
            "--motion",
            "single-foot-lift",
            "--out",
            "{Rold}",
            "--force",
        ],
        2,
        ["reads"],
    ),
    C(["design", "beetle", "--motion", "single-foot-lift", "--out", "{file}/x"], 2, ["file"]),
    # voxel
    C(
        ["voxel", "fem", "--config", "{Rold}/voxel.yaml", *ACTUATE, "--out", "{Rold}", "--force"],
        2,
        ["{Rold}"],
    ),
    C(["voxel", "fem", "--lattice", "2x2x1", *ACTUATE, "--out", "{R}", "--force"], 2, ["did not"]),
    # gecko
    C(
        ["gecko", "navigate", "--course", "{Rold}/course.yaml", "--out", "{Rold}", "--force"],
        2,
        ["{Rold}"],
    ),
    C(["gecko", "velocity-space", "--out", "{loop}"], 2, ["--out"]),
    # sweep
    # (`sweep NAME --out FILE/x` is exit 1 "Not a directory", before work: the sweep's own
    # folder handling, drakebots.sweeps, does not go through CheckOutputFolder.)
    C(["sweep", "{Rold}/sweep.yaml", "--out", "{Rold}", "--force", "--dry-run"], 0),
    # demo
    C(["demo", "--out", "{R}", "--force"], 2, ["did not write"]),
    C(["demo", "--out", "{u}", "--force"], 2, ["drakebots made"]),
    C(["demo", "--out", "{loop}"], 2, ["--out"]),
    C(["demo", "--out", "{file}/demo"], 2, ["file"]),
]


@pytest.fixture(scope="module")
def view_folder(tmp_path_factory):
    """A results folder of `simulate u/mybug.yaml` (a skinned robot file), made once."""
    tmp = tmp_path_factory.mktemp("view")
    _UserFolders(tmp)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp / "cache"))
        code = main(
            [
                "simulate",
                str(tmp / "u" / "mybug.yaml"),
                "--duration",
                "0.01",
                "--no-progress",
                "--out",
                str(tmp / "sim"),
            ]
        )
    assert code == 0
    return tmp / "sim", tmp / "u" / "mybug.yaml"


def _Fill(text: str, tmp: Path, view: Path) -> str:
    for name in ("Rold", "R", "u", "g", "loop", "file"):
        text = text.replace("{" + name + "}", str(tmp / name))
    return text.replace("{tmp}", str(tmp)).replace("{view}", str(view))


@pytest.mark.parametrize("argv, code, needles, out", CASES)
def test_no_verb_overwrites_or_deletes_the_users_files(
    tmp_path, capsys, monkeypatch, view_folder, argv, code, needles, out
):
    _UserFolders(tmp_path)
    view, view_robot = view_folder
    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # a default runs/ folder would land here (and fail the test)
    # The view folder's robot file is the module fixture's: its folder is hashed too.
    before, before_view = _Digest(tmp_path, skip=("cache",)), _Digest(view_robot.parent)
    filled = [_Fill(a, tmp_path, view) for a in argv]
    got, stdout, err, seconds = RunVerb(filled, capsys, 60)
    assert got == code, f"exit {got}, expected {code}\n{stdout}\n{err}"
    assert "Traceback" not in err + stdout
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one line:\n{err}"
        for needle in needles:
            assert _Fill(needle, tmp_path, view) in lines[0], f"{needle!r} not in: {lines[0]}"
        assert seconds < 20.0, f"{seconds:.1f} s: bad input must be refused before any work"
    after = _Digest(tmp_path, skip=("cache",))
    if out is not None:
        made = {k for k in after if k == out or k.startswith(out + os.sep)}
        assert made and (tmp_path / out / "summary.json").is_file()
        after = {k: v for k, v in after.items() if k not in made}
    assert after == before, f"written, changed or deleted: {set(after) ^ set(before)}"
    assert _Digest(view_robot.parent) == before_view


def test_demo_prints_the_final_paths_and_leaves_no_temporary(tmp_path, capsys, monkeypatch):
    """`drakebots demo` printed each step's temporary results path (gone when it ends): every
    path it prints now is the final one. One tiny step stands in for the showcase."""
    from drakebots.cli import demo

    monkeypatch.setattr(
        demo, "STEPS", [("tiny", "a tiny step", ["simulate", "beetle", "--duration", "0.01"])]
    )
    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "d"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert ".tmp-" not in text, text
    assert f"-> {out / 'tiny'}" in text and f"results: {(out / 'tiny').resolve()}" in text
    assert (out / "tiny" / "summary.json").is_file() and (out / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["d"]
