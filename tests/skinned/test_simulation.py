"""The beetle in its generated FEM skin, standing for 1 s with skeleton and skin coupled (slow:
skin generation ~20 s, then ~200 coupled steps of 5 ms on the 15k-vertex skin), with each of
the skin's contact formulations."""

import numpy as np
import pytest


@pytest.mark.paper
@pytest.mark.parametrize("contact", ["active_set", "convex"])
def test_skinned_beetle_stands_one_second(contact):
    """Either skin contact (SkinnedConfig.contact, `drakebots simulate --skin-contact`): the
    same statics, the ground carrying the robot's weight."""
    from drakebots.robots import GetRobot
    from drakebots.skinned.simulation import SimulateSkinned, SkinnedConfig
    from drakebots.skinned.skin import MakeSkin

    robot = GetRobot("beetle")
    skin = MakeSkin(robot.params)
    config = SkinnedConfig(duration=1.0, contact=contact)
    run = SimulateSkinned(robot, skin, config, progress=False)
    assert run.stepper.config.contact == contact
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


def test_the_skin_contact_option_reaches_the_coupled_step(monkeypatch):
    """SkinnedConfig.contact (`drakebots simulate --skin-contact`): "convex" steps through the
    convex contact step, "active_set" never does; a name that is neither is refused before
    anything runs."""
    from drakebots.robots import GetRobot
    from drakebots.skinned import convex_contact
    from drakebots.skinned.simulation import SimulateSkinned, SkinnedConfig
    from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad
    from tests.skinned._pad_skin import MakeFootPadSkin

    robot = GetRobot("beetle")
    skin = MakeFootPadSkin(SkeletonModel("beetle", skin_load=SkinLoad()))
    calls = []
    step = convex_contact.ConvexStep

    def Counted(*args, **kwargs):
        calls.append(1)
        return step(*args, **kwargs)

    monkeypatch.setattr(convex_contact, "ConvexStep", Counted)
    for contact, steps in (("convex", 2), ("active_set", 0)):
        calls.clear()
        config = SkinnedConfig(duration=0.01, contact=contact)
        run = SimulateSkinned(robot, skin, config, progress=False)
        assert run.failure is None
        assert len(calls) == steps
    with pytest.raises(ValueError, match="contact"):
        SimulateSkinned(robot, skin, SkinnedConfig(contact="penalty"), progress=False)
    # `drakebots simulate --skin-contact` takes the same names (and "" for the default).
    from types import SimpleNamespace

    from drakebots.errors import InputError
    from drakebots.skinned.simulate_skin import SkinContact
    from drakebots.skinned.skin_coupling import CONTACTS

    for name in CONTACTS:
        assert SkinContact(SimpleNamespace(skin="DIR", skin_contact=name)) == name
    assert SkinContact(SimpleNamespace(skin="DIR", skin_contact="")) == "active_set"
    with pytest.raises(InputError, match="--skin-contact"):
        SkinContact(SimpleNamespace(skin="DIR", skin_contact="penalty"))
