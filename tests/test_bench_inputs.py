"""scripts/bench_fem.py --coupled keeps the monster's skin and design it makes (issue 69) out of
the checkout's tracked files: the default folder, checked against git's own ignore rules."""

import argparse
import importlib.util
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _Bench():
    spec = importlib.util.spec_from_file_location("bench_fem", REPO / "scripts" / "bench_fem.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _Ignored(path: Path) -> bool:
    """git's answer: is `path` (in this checkout) ignored?"""
    done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "-q", str(path)], check=False)
    return done.returncode == 0


def test_the_monster_inputs_never_land_in_the_checkouts_tracked_files(tmp_path):
    bench = _Bench()
    # --out in the checkout (the bench JSON saved into docs/): the inputs go where git ignores.
    inside = argparse.Namespace(inputs=None, out=str(REPO / "docs/reproductions/bench/x.json"))
    folder = bench._InputsFolder(inside)
    assert folder.is_relative_to(REPO)
    assert _Ignored(folder / "monster_walk006" / "log.npz")
    # --out elsewhere: beside it; --inputs: as given.
    outside = argparse.Namespace(inputs=None, out=str(tmp_path / "bench" / "x.json"))
    assert bench._InputsFolder(outside) == (tmp_path / "bench" / "bench_fem_inputs").resolve()
    given = argparse.Namespace(inputs=str(tmp_path / "mine"), out=str(tmp_path / "x.json"))
    assert bench._InputsFolder(given) == tmp_path / "mine"
