"""Issue 69's verdict check: the design's verdict on its coupled open-loop replay (the ground's
COP inside the plan's support polygons, Eq. 5; no foot planned down left airborne; the torques
within the motors) is the same whether the skin's contact is the convex step
(`CouplingConfig.contact="convex"`, SAP's convex problem on the condensed system) or today's
active set (the reference, pinned / sliding / free labels inside Newton).

Two independent contact models stepping the same FEM skin and skeleton under the same torques,
judged frame by frame against the same polygons: a contact step that carried the robot
differently (a foot slipping where the other holds, the COP leaving the polygon) fails here.

- The beetle's single-foot lift (60 frames; `paper`: .ci/run runs it, 2 minutes on an idle
  2-core machine).
- The monster's 0.06 m/s walk on its folded 44.4k-vertex skin, the whole 200 frames (`slow`: the
  active set's replay alone takes one to several hours on a 2-core machine, its frames 10-100 s;
  run it with `pytest -m slow tests/paper/test_skinned_replay_contacts.py`). Its replays keep
  their progress in drakebots' cache (`coupled_replay_resume`): a run stopped part way goes on
  where it was when the skin it makes again is the same one (the checkpoint names what the
  replay depends on; another skin's replay starts over).
  Measured on the bench's inputs of this walk (the same skin and design settings, replayed by
  the same `PlaybackFramesCoupled`): docs/reproductions/skinned.md, Findings 35-36.
"""

import dataclasses

import numpy as np
import pytest

from drakebots.skinned.design import Design, DesignConfig
from drakebots.skinned.make_skin import MakeSkin, MakeSkinConfig
from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad
from drakebots.skinned.skin import LoadSkin

CONTACTS = ("active_set", "convex")  # the reference first


def _Replays(config: DesignConfig) -> dict:
    """The design's coupled open-loop replay with each contact (the same design run twice)."""
    return {
        contact: Design(dataclasses.replace(config, coupled_replay_contact=contact)).figures[
            "playback_coupled_open_loop"
        ]
        for contact in CONTACTS
    }


def _Weight(robot: str, skin_dir) -> float:
    """The whole robot's weight, N: the bare skeleton's mass (Drake's CalcTotalMass) and the
    skin's (its tetrahedra's volume times its density), independent of either contact."""
    skin = LoadSkin(skin_dir)
    x, tets = skin.mesh.vertices, skin.mesh.tets
    a, b, c, d = (x[tets[:, k]] for k in range(4))
    volume = np.abs(np.einsum("ij,ij->i", np.cross(b - a, c - a), d - a)).sum() / 6.0
    model = SkeletonModel(robot, skin_load=SkinLoad())  # the bare skeleton, no paper skin mass
    return (model.total_mass + skin.mass_density * volume) * model.gravity


def _AssertVerdictUnchanged(replays: dict, frames: int, weight: float) -> None:
    """Both replays ran all `frames` frames, and every item of the design's verdict agrees frame
    by frame (a frame's COP is judged where both replays' ground carries load)."""
    for contact, replay in replays.items():
        assert "skipped" not in replay, (contact, replay.get("skipped"))
        assert replay["failure"] is None and replay["stopped"] is None, (contact, replay)
        assert replay["frames_replayed"] == frames, contact
    reference, convex = (np.asarray(replays[c]["cop_margin_m"], float) for c in CONTACTS)
    assert reference.shape == convex.shape == (frames + 1,)
    judged = np.isfinite(reference) & np.isfinite(convex)
    # A frame loaded in one replay and not the other would be a verdict the other cannot give.
    np.testing.assert_array_equal(np.isfinite(reference), np.isfinite(convex))
    assert judged.sum() >= frames - 1  # the plan keeps a foot down in every frame
    differs = np.flatnonzero(judged & ((reference < 0.0) != (convex < 0.0)))
    assert differs.size == 0, (
        f"the COP verdict differs in frames {differs.tolist()}: margins "
        f"{reference[differs]} (active set) against {convex[differs]} (convex) m"
    )
    for key in ("frames_cop_outside", "frames_without_ground_contact", "frames_torque_clamped"):
        assert replays["convex"][key] == replays["active_set"][key], key
    for contact in CONTACTS:
        assert replays[contact]["max_torque_ratio"] <= 1.0 + 1e-9, contact
    # Each replay carries the robot's weight through the ground (its median frame within 2 %:
    # the plan's accelerations are small): a contact step that lost load would pass the COP
    # test on forces that do not hold the robot up.
    for contact in CONTACTS:
        force = np.nanmedian(np.asarray(replays[contact]["ground_force_n"], float)[1:])
        assert force == pytest.approx(weight, rel=0.02), (contact, force, weight)


@pytest.mark.paper
def test_the_beetles_lift_keeps_its_verdict_with_the_convex_contact(tmp_path):
    """The beetle lifts one foot for 0.3 s on its 16 mm skin: the same verdict, frame by frame,
    with either contact (the active set's: COP inside in 60 of 60 loaded frames)."""
    MakeSkin(MakeSkinConfig(robot="beetle", voxel=0.016)).Save(tmp_path / "skin")
    config = DesignConfig(
        robot="beetle",
        motion="single-foot-lift",
        duration=0.3,
        skin=str(tmp_path / "skin"),
        iterations=1,
        replay=False,
    )
    replays = _Replays(config)
    _AssertVerdictUnchanged(replays, frames=60, weight=_Weight("beetle", tmp_path / "skin"))
    assert replays["active_set"]["frames_cop_outside"] == 0


@pytest.mark.slow
def test_the_monsters_whole_walk_keeps_its_verdict_with_the_convex_contact(tmp_path):
    """The README's monster walk (0.06 m/s on its folded skin, 200 frames), replayed whole with
    each contact: the design's verdict unchanged in every frame (issue 69)."""
    skin = tmp_path / "monster_skin"
    MakeSkin(
        MakeSkinConfig(
            robot="monster",
            pieces=True,
            youngs_modulus=6.7e5,
            folding_regions=("knees", "ankles"),
            fold_depth=0.012,
            fold_pitch=0.024,
            voxel=0.008,
        )
    ).Save(skin)
    config = DesignConfig(
        robot="monster",
        motion="walk",
        speed=0.06,
        motor_limit=5.9,
        skin=str(skin),
        iterations=1,
        replay=False,
        coupled_replay_seconds=6 * 3600.0,
        coupled_replay_resume=True,
    )
    _AssertVerdictUnchanged(_Replays(config), frames=200, weight=_Weight("monster", skin))
