"""Every Python snippet in README.md runs as written (issue 48), from the repository's root (the
snippets name files relative to it), each in a fresh interpreter."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, len(lines)
    assert len(SNIPPETS) >= 4
    text = "\n".join(lines)
    assert 'pip install -e ".[test]" && python -m pytest -q' in text
    assert "pip install -e . && drakebots demo" in text


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_a_readme_snippet_runs_as_written(index, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", SNIPPETS[index]],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), "a snippet prints what it computed"
    snippet, printed = SNIPPETS[index], result.stdout.split()
    checked = [check for key, check in PRINTED.items() if key in snippet]
    assert len(checked) == 1, "each snippet's printout has its check below"
    checked[0](printed)


def _NoGroundFreeFall(printed):
    """The hopper with no ground for 0.1 s at 1 ms steps: uniform gravity moves every body
    alike, so the joints keep their home angles (hip 0.3, knee -0.6 rad), x and pitch stay 0,
    and the base falls g t^2 / 2 from its home height (0.05 + 0.5 cos 0.3 + 0.02 m, the URDF's
    foot radius, leg and offset) to the first-order step's error g h t / 2."""
    x, z, pitch, hip, knee = (float(v.strip("[]")) for v in printed if v.strip("[]"))
    g, t, h = 9.81, 0.1, 1e-3
    home = 0.05 + 0.5 * np.cos(0.3) + 0.02
    assert abs(z - (home - 0.5 * g * t**2)) <= 0.5 * g * h * t + 1e-9, z
    np.testing.assert_allclose([x, pitch, hip, knee], [0.0, 0.0, 0.3, -0.6], atol=1e-9)


def _LiftWithinTheMotors(printed):
    """The README's claim for the beetle's lift: done, every motor within its 1.96 N*m (ratio
    at most 1), the COP inside the support polygon (a positive margin, m)."""
    success, ratio, margin = printed
    assert success == "True" and 0.0 < float(ratio) <= 1.0 and float(margin) > 0.0


def _WalkerResimulated(printed):
    """The walker's gait: solved, truly complementary (the solver's 1e-4), and Drake's
    closed-loop run within 25 % of the 0.3 m stride it was asked for."""
    success, complementarity, planned, resimulated = printed
    assert success == "True" and float(complementarity) <= 1e-4
    assert float(planned) == pytest.approx(0.3, abs=1e-6)
    assert float(resimulated) == pytest.approx(0.3, rel=0.25)


def _LatticeNodes(printed):
    """A 2x2x1 lattice: 4 octahedra of 6 nodes sharing 4 faces' nodes, 20 nodes of 3 numbers;
    a 2 mm stroke stores strain energy (Clapeyron's check is in tests/test_api_voxel.py)."""
    energy, shape = float(printed[0]), " ".join(printed[1:])
    assert shape == "(20, 3)" and energy > 0.0


PRINTED = {
    "hopper.yaml": _NoGroundFreeFall,
    "single-foot-lift": _LiftWithinTheMotors,
    "walker.yaml": _WalkerResimulated,
    "lattice=": _LatticeNodes,
}
