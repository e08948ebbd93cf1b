"""The beetle in its generated FEM skin, standing for 1 s with skeleton and skin coupled (slow:
skin generation ~20 s, then ~200 coupled steps of 5 ms on the 15k-vertex skin)."""

import numpy as np
import pytest


@pytest.mark.paper
def test_skinned_beetle_stands_one_second():
    from drakebots.robots import GetRobot
    from drakebots.skinned.simulation import SimulateSkinned, SkinnedConfig
    from drakebots.skinned.skin import MakeSkin

    robot = GetRobot("beetle")
    skin = MakeSkin(robot.params)
    run = SimulateSkinned(robot, skin, SkinnedConfig(duration=1.0), progress=False)
    assert run.failure is None
    log = run.log
    assert np.all(np.isfinite(log.positions)) and np.all(np.isfinite(log.velocities))
    # Glue residual after every coupled step (Eq. 1).
    assert run.stats[:, 2].max() <= 1e-8
    # No sinking: skin penetration of the ground <= 1 mm at every step.
    assert run.stats[:, 3].max() <= 1e-3
    # No drift or explosion: the torso stays within 2 mm of its start, and comes to rest.
    base = log.positions[:, 4:7]
    assert np.abs(base - base[0]).max() <= 2e-3
    assert np.abs(log.velocities[-1]).max() <= 0.05
    # The ground carries the robot: skeleton 2.8 kg + skin 1.1 kg (the paper's weights).
    weight = (robot.params.skeleton_mass + robot.params.skin_mass) * 9.81
    assert log.contact[-1, 2] == pytest.approx(weight, rel=0.03)
