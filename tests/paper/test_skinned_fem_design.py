"""Paper-level check of the skinned quad-robots' design loop on a real FEM skin (marker `paper`:
.ci/run runs it, on the default install, before the optional CHOLMOD extra is installed).

The README's headline skinned-robot run: the monster's 0.06 m/s walk on its folded 44.4k-vertex
skin agrees with its plan in one iteration (the paper's slow walks converge in one, section 7),
200 of 200 frames, every motor within its 5.9 N·m, the COP inside the support polygon
(measured 2026-11-29: COP 27.9 mm inside at least, 47 frames at the limit, 0.0590 m/s; on the
42.9k skin whose torso's sides the grid clipped, 24.9 mm, 46 frames and 0.0585 m/s). From the
default install (SciPy's SuperLU) it diverged within four frames until the factorisations were
made to refuse an indefinite matrix (issue 53). Checked from the saved frames, not from the
run's own success flag alone.
"""

import json

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.fem.solvers import AutoBackend

MOTOR_LIMIT = 5.9  # N·m


@pytest.mark.paper
def test_monster_walk_on_its_folded_fem_skin_agrees_with_its_plan(tmp_path):
    skin = tmp_path / "monster_skin"
    out = tmp_path / "monster_walk006"
    assert (
        main(
            [
                "skin", "monster", "--pieces", "--youngs-modulus", "6.7e5",
                "--folding-regions", "knees,ankles", "--fold-depth", "0.012",
                "--fold-pitch", "0.024", "--voxel", "0.008", "--out", str(skin),
            ]
        )
        == 0
    )  # fmt: skip
    code = main(
        [
            "design", "monster", "--motion", "walk", "--speed", "0.06",
            "--motor-limit", str(MOTOR_LIMIT), "--skin", str(skin),
            "--coupled-replay-seconds", "0", "--no-replay", "--no-progress", "--out", str(out),
        ]
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    figures = summary["figures"] if "figures" in summary else summary
    assert figures["linear_solver"] == AutoBackend()
    assert code == 0, figures.get("violated_constraints")
    # 201 frames of the motion (its first is the start), 200 steps of the QPCC, all done.
    assert figures["frames"] == 201 and figures["frames_done"] == 200
    assert figures["infeasible_frame"] is None
    # From the saved frames: every torque within the motors, the COP inside at every frame.
    log = np.load(out / "log.npz")
    tau = log["tau"]
    assert tau.shape[0] == 200 and np.abs(tau).max() <= MOTOR_LIMIT * (1 + 1e-6)
    assert np.nanmin(log["cop_margin"]) >= -1e-6
    # The distance walked: 0.0585-0.0590 of 0.06 m/s measured (README).
    q = log["q_frames"]
    speed = (q[-1, 0] - q[0, 0]) / (0.005 * (len(q) - 1))
    assert speed == pytest.approx(0.06, rel=0.05)
