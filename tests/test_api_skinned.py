"""The skinned wing's workflows called from Python (issue 46, "Every workflow a Python call"):
`Design`, `MakeSkin` and `Bend` on their smallest settings, each checked against what the
command line writes into summary.json for the same config (same numbers) and against a fact
computed here independently."""

import json
import re

import numpy as np
import pytest

from drakebots.cli import main
from drakebots.errors import InputError
from drakebots.results import ToJson
from drakebots.skinned import (
    Bend,
    BendConfig,
    Design,
    DesignConfig,
    MakeSkin,
    MakeSkinConfig,
)

# summary.json's head (written by MakeSummary) and the result's own verdict.
HEAD = {"verb", "command", "inputs", "versions", "created", "success", "reason"}
# Wall-clock seconds differ from run to run; everything else is the same computation.
WALL_CLOCK = re.compile(r"(time.*_s|^seconds)$")


def _Same(a, b, path="figures"):
    """Asserts two JSON trees are equal, floats to 1e-9 relative, wall-clock times left out."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for key in a:
            if not WALL_CLOCK.search(str(key)):
                _Same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _Same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def _Json(value):
    """A value as summary.json holds it (numpy to lists, tuples to lists, NaN to null)."""
    return json.loads(ToJson(value))


def test_design_of_the_beetles_lift_on_rigid_feet_is_the_command_lines(tmp_path):
    """The beetle's single-foot lift without a FEM skin (rigid feet, the skin's weight on the
    links): the figures of `Design` are those `drakebots design` writes for the same config,
    and every torque of the kept pass is within the model's motor limits (read from the
    result's arrays, the limits from the skeleton itself), the COP inside its support polygon."""
    from drakebots.skinned.skeleton_model import SkeletonModel

    config = DesignConfig(robot="beetle", motion="single-foot-lift", replay=False)
    result = Design(config)
    out = tmp_path / "lift"
    code = main(
        ["design", "beetle", "--motion", "single-foot-lift", "--no-replay"]
        + ["--no-progress", "--out", str(out)]
    )
    summary = json.loads((out / "summary.json").read_text())
    assert code == 0  # the lift is within 1.96 N*m with the COP inside (result.success below)
    assert summary["success"] == result.success and summary["reason"] == result.reason
    _Same(_Json(result.figures), {k: v for k, v in summary.items() if k not in HEAD})
    _Same(_Json(result.Summary()["inputs"]), summary["inputs"], "inputs")
    # The facts: the model's motor limits hold at every frame; the arrays are log.npz's.
    limits = SkeletonModel("beetle").effort_limits
    np.testing.assert_array_equal(result.effort_limits, limits)
    assert result.tau.shape == (result.figures["frames_done"], limits.size)
    assert np.all(np.abs(result.tau) <= limits * (1 + 1e-6))
    assert np.max(np.abs(result.tau) / limits) == pytest.approx(
        result.figures["max_torque_ratio"], rel=1e-12
    )
    assert np.nanmin(result.cop_margin) >= -1e-6
    log = np.load(out / "log.npz")
    np.testing.assert_allclose(log["tau"], result.tau, rtol=0, atol=1e-10)
    assert result.success  # the demo's claim: within 1.96 N*m, COP inside


def test_design_refuses_bad_input_before_any_work():
    for config, name in (
        (DesignConfig(motor_limit=0.0), "--motor-limit"),
        (DesignConfig(motion="hop"), "motion"),
        (DesignConfig(robot="gecko"), "not a skinned quad-robot"),
        (DesignConfig(skin_collisions=False), "--skin"),
    ):
        with pytest.raises(InputError, match=re.escape(name)):
            Design(config)


def test_the_design_verb_reads_a_config_file_and_its_flags_override_it(tmp_path, monkeypatch):
    """`drakebots design --config FILE`: the file's fields, then only the flags given."""
    from drakebots.skinned import alternating

    seen = {}

    class Stop(Exception):
        pass

    def Capture(model, motion, *, config, **kwargs):
        seen["config"], seen["frames"] = config, motion.num_frames
        raise Stop

    monkeypatch.setattr(alternating, "RunAlternating", Capture)
    file = tmp_path / "design.yaml"
    file.write_text("motion: single-foot-lift\nduration: 0.5\nframe_cop: false\niterations: 3\n")
    with pytest.raises(Stop):
        main(["design", "beetle", "--config", str(file), "--iterations", "2"])
    assert seen["frames"] == 101  # 0.5 s at 5 ms, from the file
    assert seen["config"].max_iterations == 2  # the flag over the file's 3
    assert seen["config"].qpcc.cop_constraint is False  # the file's, no flag given
    file.write_text("motion: walk\nspeed: fast\n")
    assert main(["design", "beetle", "--config", str(file)]) == 2


def test_make_skin_on_a_coarse_grid_is_the_command_lines(tmp_path):
    """The beetle's skin on a 16 mm grid: the figures of `MakeSkin` are those `drakebots skin`
    writes, its mesh the one the command line saved, and its mass the density times the tets'
    volume computed here."""
    from drakebots.skinned.skin import LoadSkin

    result = MakeSkin(MakeSkinConfig(robot="beetle", voxel=0.016))
    out = tmp_path / "skin"
    assert main(["skin", "beetle", "--voxel", "0.016", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["success"] and result.success
    _Same(_Json(result.figures), summary["figures"])
    _Same(_Json(result.Summary()["inputs"]), summary["inputs"], "inputs")
    saved = LoadSkin(out)
    np.testing.assert_allclose(saved.mesh.vertices, result.skin.mesh.vertices, atol=1e-12)
    np.testing.assert_array_equal(saved.mesh.tets, result.skin.mesh.tets)
    X, T = result.skin.mesh.vertices, result.skin.mesh.tets
    edges = np.stack([X[T[:, k]] - X[T[:, 0]] for k in (1, 2, 3)], axis=2)
    volume = np.abs(np.linalg.det(edges)).sum() / 6.0
    mass = result.skin.mass_density * volume
    assert mass == pytest.approx(result.figures["mass_kg"], rel=1e-3)
    assert result.figures["vertices"] == len(X) and result.figures["tets"] == len(T)
    # Saved by Save too, into a folder of its own.
    folder = result.Save(tmp_path / "again")
    assert (folder / "skin.vtk").is_file() and (folder / "skin.png").is_file()


def test_write_skin_creates_its_folder(tmp_path):
    from drakebots.skinned.skin import LoadSkin, MakeShellMesh, Skin, WriteSkin

    mesh = MakeShellMesh(
        lambda P: np.linalg.norm(P, axis=-1) - 0.05, [-0.06] * 3, [0.06] * 3, 0.004, 0.01
    )
    n = mesh.num_vertices
    skin = Skin(
        robot="beetle",
        mesh=mesh,
        glue_vertices=np.arange(5),
        glue_links=["torso"] * 5,
        glue_points=mesh.vertices[:5],
        skin_links=["torso"],
        weights=np.ones((n, 1)),
        thickness=np.full(n, 0.004),
        outer=np.zeros(n, dtype=bool),
        fold=np.zeros(mesh.num_tets, dtype=bool),
        mass_density=1000.0,
        youngs_modulus=1e6,
        poissons_ratio=0.45,
        info={},
    )
    folder = tmp_path / "not" / "yet"
    WriteSkin(folder, skin)
    # What is read back is the skin that was written, field by field (the vertices to the 10
    # decimals, 0.1 nm, the VTK file keeps).
    back = LoadSkin(folder)
    np.testing.assert_allclose(back.mesh.vertices, mesh.vertices, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(back.mesh.tets, mesh.tets)
    np.testing.assert_array_equal(back.glue_vertices, skin.glue_vertices)
    assert list(back.glue_links) == skin.glue_links and list(back.skin_links) == skin.skin_links
    np.testing.assert_allclose(back.glue_points, skin.glue_points, rtol=0, atol=1e-10)
    for name in ("weights", "thickness", "outer", "fold"):
        np.testing.assert_array_equal(getattr(back, name), getattr(skin, name), err_msg=name)
    assert (back.robot, back.mass_density, back.youngs_modulus, back.poissons_ratio) == (
        "beetle",
        1000.0,
        1e6,
        0.45,
    )


def test_bend_at_small_strain_is_the_command_lines(tmp_path):
    """`Bend` with linear_only (its smallest setting: both pieces meshed, their small-strain
    stiffness, no coupled run) has the figures `drakebots skin-bend --linear-only` writes; each
    small-strain angle is the motor's limit over the stiffness, the grooves make the tube easier
    to bend (measured relief 2.18), and no skin of ours lets 1.96 N*m reach 70 deg at 0.09 GPa."""
    result = Bend(BendConfig(robot="beetle", linear_only=True))
    out = tmp_path / "bend"
    assert main(["skin-bend", "beetle", "--linear-only", "--out", str(out)]) == 1
    summary = json.loads((out / "summary.json").read_text())
    assert not result.success and summary["reason"] == result.reason
    assert "short of 70 deg" in result.reason
    _Same(_Json(result.figures), summary["figures"])
    assert summary["inputs"] == _Json(result.Summary()["inputs"])
    for label in ("smooth", "folded"):
        k = result.stiffness[label]
        assert result.figures[f"{label}_linear_deg"] == pytest.approx(np.rad2deg(1.96 / k))
        assert (out / label / "skin.vtk").is_file()
    assert result.figures["fold_relief"] == pytest.approx(
        result.stiffness["smooth"] / result.stiffness["folded"]
    )
    assert result.figures["fold_relief"] > 1.5
    assert result.skins["folded"].fold.any() and not result.skins["smooth"].fold.any()
    assert result.runs == {}


def test_a_design_run_again_resumes_its_coupled_replay_from_the_cache(tmp_path, monkeypatch):
    """`DesignConfig.coupled_replay_resume` (`drakebots design --coupled-replay-resume`): the
    coupled replay keeps its progress in drakebots' cache, and the same design run again takes
    it up instead of replaying from frame 0, although the two runs' plans differ in round-off
    (the design's threads sum in varying order); the verdict is the first run's."""
    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path / "cache"))
    made = MakeSkin(MakeSkinConfig(robot="beetle", voxel=0.016))
    made.Save(tmp_path / "skin")
    config = DesignConfig(
        robot="beetle",
        motion="single-foot-lift",
        duration=0.3,
        skin=str(tmp_path / "skin"),
        iterations=1,
        replay=False,
        coupled_replay_resume=True,
    )
    said = []
    designed = Design(config, progress=lambda e: said.append(e.message))
    first = designed.figures["playback_coupled_open_loop"]
    # The line a user reads gives the whole torso pose: its angles beside its distance.
    (line,) = [m for m in said if m and "coupled open loop: torso within" in m]
    yaw, pitch, roll = first["max_torso_angle_error_deg"]
    assert f"yaw/pitch/roll within [{yaw:.1f}, {pitch:.1f}, {roll:.1f}] deg" in line, line
    assert first["frames_run"] == first["frames_planned"] == 60 and first["failure"] is None
    kept = first["checkpoint"]
    assert kept.startswith(str(tmp_path / "cache" / "coupled_replays"))
    # The angles are the replayed path's against the plan (both kept in the checkpoint).
    with np.load(kept) as saved:
        sim, plan = saved["sim_q"], saved["plan_q"][: len(saved["sim_q"])]
    turned = np.degrees(np.abs((sim[:, 3:6] - plan[:, 3:6] + np.pi) % (2 * np.pi) - np.pi))
    off = turned.max(axis=0)
    assert off.max() > 0.01
    assert first["max_torso_angle_error_deg"] == pytest.approx(off, abs=1e-3)
    # The held time is the whole pose's: the first frame over 2 cm or 5 deg (or the whole 0.3 s).
    strayed = np.linalg.norm(sim[:, :3] - plan[:, :3], axis=1) > 0.02
    strayed = np.flatnonzero(strayed | (turned.max(axis=1) > 5.0))
    held = 0.005 * strayed[0] if len(strayed) else 0.3
    assert first["torso_pose_held_s"] == pytest.approx(held)
    assert first["torso_pose_held_s"] <= first["torso_within_2cm_s"]
    assert "torso within 2 cm and 5 deg " in line, line
    # The design's verdict items on the replay (issue 69): the ground's COP against the plan's
    # support polygons, which the line gives as the figures hold them.
    (ground,) = [m for m in said if m and "coupled open loop's ground: " in m]
    margin = first["cop_margin_m"]
    judged = int(np.isfinite(margin).sum())
    # Against the frame-by-frame pass's own COP (its QPCC's patch forces, an independent
    # contact model; frame i's step gives the replay's frame i + 1): a few mm apart once the
    # skin has landed (measured: median 3.3 mm; up to 54 mm in the landing's first frames).
    apart = np.linalg.norm(first["cop_m"][1:] - designed.cop[:, :2], axis=1)
    assert np.median(apart) < 0.005, apart
    assert f"in {judged - first['frames_cop_outside']} of {judged} loaded frames" in ground
    again = Design(config).figures["playback_coupled_open_loop"]
    assert again["checkpoint"] == kept
    assert again["resumed_from_frame"] == 60 and again["frames_run"] == 0
    # (The same path, measured against this run's plan: equal within the plans' round-off.)
    for key in ("max_torso_position_error_m", "torso_pose_held_s", "max_joint_error_deg"):
        assert again[key] == pytest.approx(first[key], rel=1e-6, abs=1e-9), key
