"""The folding-region workflow (paper Fig. 17): `Bend(BendConfig)`, how far a torque-limited motor
bends the skin.

Makes the limb skin piece (lower leg and foot, paper section 6.2) twice, smooth and with a
gear-tooth folding region at the joint (Fig. 8), and drives the joint's motor, limited to
`torque_limit`, towards `target_deg` within `time` seconds, then holds it for `hold` seconds,
with skeleton and skin coupled (Eq. 2; drakebots.skinned.bend.RunBend). Each skin's small-strain
prediction comes first: the static condensation of its rest stiffness onto the joint (k,
N*m/rad; the angle tau/k) and the fold's relief k_smooth/k_folded; `linear_only` stops there.
The goal is the paper's: the folded skin lets the motor reach the target. `drakebots skin-bend`
is this call plus a results folder:

    from drakebots.skinned import Bend, BendConfig
    result = Bend(BendConfig(robot="beetle", linear_only=True))
    result.figures["fold_relief"], result.stiffness["folded"]
"""

from __future__ import annotations

import dataclasses

import numpy as np

from drakebots.errors import InputError
from drakebots.workflow import Reporter, WorkflowResult

# Marching-cubes cell of the folded piece, m: at 4 mm the folded piece came out 18 % stiffer
# than at 3 mm, which is within 3 % of 2.5 mm.
FOLDED_VOXEL = 0.003
# The smooth piece's cell, m (its stiffness moves 1 % between 6 and 3 mm).
SMOOTH_VOXEL = 0.006
# The most coupled steps one bend may take, (time + hold) / time_step, is drakebots.limits'
# "bend_steps" bound: a coupled step of a piece takes about a second (seven on the folded piece
# at 0.67 MPa), the default bend 125 steps.


@dataclasses.dataclass
class BendConfig:
    """The experiment (SI units but for the angle; each field is a `drakebots skin-bend` flag)."""

    # A skinned quad-robot (the paper uses the beetle).
    robot: str = "beetle"
    # The joint to bend.
    joint: str = "front_left_ankle"
    # Target angle, degrees (paper: 70).
    target_deg: float = 70.0
    # Time to reach the target, s (paper: 2).
    time: float = 2.0
    # Time the motor then holds the target, s: the reached angle is where it settles.
    hold: float = 0.5
    # Motor torque limit, N*m (MG995R: 1.96).
    torque_limit: float = 1.96
    # Skin Young's modulus, Pa (paper section 7: 0.09 GPa), and Poisson's ratio (paper: 0.46).
    youngs_modulus: float = 0.09e9
    poissons_ratio: float = 0.46
    # Coupled time step, s.
    time_step: float = 0.02
    # The folding teeth: depth, m (paper: 8 mm), count, and pitch along the limb, m.
    fold_depth: float = 0.008
    fold_teeth: int = 3
    fold_pitch: float = 0.014
    # Only the small-strain predictions (static condensation; about 35 s with meshing), no
    # coupled runs.
    linear_only: bool = False


def _Validate(config: BendConfig, robot) -> None:
    from drakebots.skinned.make_skin import ValidateFold
    from drakebots.skinned.skeleton import JointKinds

    kinds = JointKinds(robot.params)
    if config.joint not in kinds:
        raise InputError(
            f"--joint {config.joint}: '{robot.name}' has no such joint (joints: {', '.join(kinds)})"
        )
    if not 0.0 < abs(config.target_deg) <= 120.0:
        raise InputError(f"--target-deg must be in (0, 120] in magnitude, got {config.target_deg}")
    ValidateFold(config, voxel=FOLDED_VOXEL)
    for name in ("time", "torque_limit", "youngs_modulus", "time_step"):
        if not getattr(config, name) > 0.0:
            raise InputError(f"--{name.replace('_', '-')} must be > 0, got {getattr(config, name)}")
    from drakebots.skinned.make_skin import CheckYoungsModulus

    CheckYoungsModulus(config.youngs_modulus)  # 1e308 ran on, 1e-300 ran (issue 68)
    if not -1.0 < config.poissons_ratio < 0.5:
        raise InputError(
            f"--poissons-ratio must be in (-1, 0.5) (0.5 is incompressible), got "
            f"{config.poissons_ratio}"
        )
    if not config.hold >= 0.0:
        raise InputError(f"--hold must be >= 0, got {config.hold}")
    if config.time_step > config.time / 10:
        raise InputError(
            f"--time-step {config.time_step} s is too coarse for --time {config.time} s"
        )
    from drakebots.limits import CheckWork

    steps = (config.time + config.hold) / config.time_step
    CheckWork(
        "bend_steps",
        steps,
        f"--time-step {config.time_step} s (--time + --hold = {config.time + config.hold:g} s)",
    )


def CheckBendConfig(config: BendConfig):
    """The config's robot (drakebots.robots.GetRobot), the config checked: InputError naming the
    flag for a robot that is no skinned quad-robot or a value the experiment cannot use (before
    any work; `drakebots sweep` calls it for every case)."""
    from drakebots.config import CheckTypes
    from drakebots.limits import CheckSimulation
    from drakebots.robots import GetRobot

    CheckTypes(config)
    if config.time > 0 and config.hold >= 0:
        CheckSimulation(
            config.time + config.hold,
            config.time_step,
            names=("--time + --hold", "--time-step", ""),
        )

    robot = GetRobot(config.robot)
    if robot.family != "skinned_quadruped":
        raise InputError(f"'{config.robot}' is not a skinned quad-robot")
    _Validate(config, robot)
    return robot


@dataclasses.dataclass(eq=False)
class BendResult(WorkflowResult):
    """The experiment's outcome (`Bend`); `figures` are summary.json's "figures" (per skin
    "smooth"/"folded": stiffness_nm_per_rad, linear_deg, skin_vertices; fold_relief; with the
    coupled runs reached_deg, short_of_target_deg, motor_stalled, max_torque, ...).

    Attributes (beyond WorkflowResult's), each a dict by skin label ("smooth", "folded"):
        stiffness: the small-strain stiffness k, N*m/rad.
        skins: the skin pieces (Skin).
        runs: the coupled runs (drakebots.skinned.bend.BendRun: times, angle and target, rad,
            torque, N*m, glue_residual, skin_frames); empty with linear_only.
        robot: the robot (for the replays).
    """

    stiffness: dict = dataclasses.field(default_factory=dict)
    skins: dict = dataclasses.field(default_factory=dict)
    runs: dict = dataclasses.field(default_factory=dict)
    robot: object = None

    def _SummaryFields(self) -> dict:
        return {
            "robot": self.robot.name,
            "figures": self.figures,
            "paper": {"smooth_reached_deg": 20.0, "folded_reached_deg": 70.0},
        }

    def _Write(self, results) -> None:
        """Each skin piece (<label>/skin.*), and with the coupled runs each bent piece
        (<label>/bent.vtu), angle_torque.png, bent.png, a replay per skin and bend.npz."""
        from drakebots.fem.mesh import WriteVtu
        from drakebots.skinned.bend import CLEARANCE
        from drakebots.skinned.skin import WriteSkin

        for label, skin in self.skins.items():
            WriteSkin(results.directory / label, skin)
            if label not in self.runs:
                continue
            final = self.runs[label].skin_frames[-1].astype(float).reshape(-1, 3)
            final = final - [0, 0, CLEARANCE]
            WriteVtu(
                results.File(f"{label}/bent.vtu"),
                final,
                skin.mesh.tets,
                point_data={"displacement": final - skin.mesh.vertices},
            )
        if not self.runs:
            return
        results.SaveFigure(
            "angle_torque.png",
            PlotBend(self.runs, _RunConfig(self.config), self.config.youngs_modulus),
        )
        results.SaveFigure("bent.png", PlotBent(self.skins, self.runs))
        for label, run in self.runs.items():
            results.WriteText(
                f"replay_{label}.html",
                BendReplay(self.robot, self.skins[label], run, self.config.joint),
            )
        results.SaveNpz(
            "bend.npz",
            {
                f"{label}_{key}": getattr(run, key)
                for label, run in self.runs.items()
                for key in ("times", "angle", "target", "torque", "glue_residual")
            },
        )


def _RunConfig(config: BendConfig):
    from drakebots.skinned.bend import BendRunConfig

    return BendRunConfig(
        joint=config.joint,
        target=np.deg2rad(config.target_deg),
        duration=config.time,
        hold=config.hold,
        torque_limit=config.torque_limit,
        time_step=config.time_step,
    )


def _Piece(config: BendConfig, joint, folds, voxel):
    from drakebots.skinned.skin import SkinOptions

    return SkinOptions(
        links=(joint.parent, joint.child),
        folding_regions=folds,
        voxel=voxel,
        fold_depth=config.fold_depth,
        fold_pitch=config.fold_pitch,
        fold_teeth=config.fold_teeth,
        glue_per_link=20,
        mass_density=1100.0,  # silicone rubber; a piece is not the paper's whole skin
        youngs_modulus=config.youngs_modulus,
        poissons_ratio=config.poissons_ratio,
    )


def Bend(config: BendConfig, *, meshcat=None, progress=None) -> BendResult:
    """Runs the folding-region experiment (paper Fig. 17) on the smooth and the folded piece.

    Args:
        config: the joint, the motor and the skin (BendConfig).
        meshcat: unused (the replays are written by Save).
        progress: optional callback for ProgressEvents (meshing, each coupled run's steps).

    Returns:
        BendResult; `success` when the folded skin lets the motor reach the target (with
        linear_only: when the small-strain prediction says it does).

    Raises:
        InputError: for a bad config (before any work).
    """
    import time

    from drakebots.skinned.bend import LinearBendStiffness, RunBend
    from drakebots.skinned.skeleton import _Build
    from drakebots.skinned.skin import MakeSkin

    del meshcat
    report = Reporter(progress)
    robot = CheckBendConfig(config)
    params = robot.params
    joint = next(j for j in _Build(params).joints if j.name == config.joint)
    run_config = _RunConfig(config)
    skins, stiffness, runs, wall = {}, {}, {}, {}
    # Cells small enough for the teeth (FOLDED_VOXEL; the smooth piece: 1 % between 6 and 3 mm).
    for label, folds, voxel in (
        ("smooth", (), SMOOTH_VOXEL),
        ("folded", (config.joint,), FOLDED_VOXEL),
    ):
        report.Say(f"[{label}] skin piece of {joint.parent} + {joint.child}")
        options = _Piece(config, joint, folds, voxel)
        skin = MakeSkin(params, options, progress=lambda s: report.Say(f"    {s}"))
        skins[label] = skin
        stiffness[label], _ = LinearBendStiffness(params, skin, config.joint)
        report.Say(
            f"    {skin.mesh.num_vertices} vertices, {skin.mesh.num_tets} tets; small strain: "
            f"k = {stiffness[label]:.4g} N*m/rad, {config.torque_limit:g} N*m turns it "
            f"{np.rad2deg(config.torque_limit / stiffness[label]):.3g} deg"
        )
        if config.linear_only:
            continue
        report.Say("    bending...")
        start = time.perf_counter()
        task = f"bend {label}"
        runs[label] = RunBend(
            params, skin, run_config, progress=lambda f, t=task: report.Step(t, round(100 * f), 100)
        )
        wall[label] = time.perf_counter() - start
        r = runs[label]
        report.Say(
            f"    reached {np.rad2deg(r.reached):.2f} deg (target {config.target_deg:g}), max "
            f"torque {np.abs(r.torque).max():.3f} N*m, {wall[label]:.0f} s"
            + (f"; {r.failure}" if r.failure else "")
        )
    figures, reason = _Figures(config, params, run_config, skins, stiffness, runs, wall)
    return BendResult(
        verb="skin-bend",
        config=config,
        success=reason is None,
        reason=reason,
        figures=figures,
        stiffness=stiffness,
        skins=skins,
        runs=runs,
        robot=robot,
    )


def _Figures(config, params, run_config, skins, stiffness, runs, wall) -> tuple[dict, str | None]:
    """summary.json's figures and the reason the goal was missed (None: reached)."""
    linear = {label: config.torque_limit / k for label, k in stiffness.items()}
    figures = {
        f"{label}_{key}": value
        for label, k in stiffness.items()
        for key, value in (
            ("stiffness_nm_per_rad", k),
            ("linear_deg", float(np.rad2deg(linear[label]))),
            ("skin_vertices", int(skins[label].mesh.num_vertices)),
        )
    }
    figures["fold_relief"] = stiffness["smooth"] / stiffness["folded"]
    reason = None
    if config.linear_only:
        # The servo against a linear skin k: two springs in series, settling at
        # q = K_p q_d / (K_p + k) with torque k q; the skin stalls it where k q >= U_m.
        kp, k_folded = params.motor.kp, stiffness["folded"]
        if k_folded * kp * abs(run_config.target) / (kp + k_folded) >= config.torque_limit:
            reason = (
                f"at small strain the folded skin stops the motor at "
                f"{np.rad2deg(linear['folded']):.3g} deg, short of {config.target_deg:g} deg"
            )
        return figures, reason
    # The paper's goal: the folded skin lets the motor generate the rotation. A servo
    # tau = K_p (q_d - q) settles short of its target by tau / K_p; the skin has stopped it when
    # that gap is the whole proportional band, i.e. the motor is at its limit.
    folded = runs["folded"]
    figures["servo_band_deg"] = float(np.rad2deg(folded.servo_band))
    if folded.stalled:
        reason = (
            f"the folded skin stopped the motor at {np.rad2deg(folded.reached):.2f} deg, short "
            f"of {config.target_deg:g} deg by more than the servo's proportional band "
            f"({np.rad2deg(folded.servo_band):.2f} deg = {config.torque_limit:g} N*m / K_p)"
        )
    if any(r.failure for r in runs.values()):
        reason = "; ".join(f"{k}: {r.failure}" for k, r in runs.items() if r.failure)
    for label, r in runs.items():
        figures.update(
            {
                f"{label}_reached_deg": float(np.rad2deg(r.reached)),
                f"{label}_short_of_target_deg": float(
                    np.rad2deg(abs(run_config.target - r.reached))
                ),
                f"{label}_motor_stalled": r.stalled,
                f"{label}_max_torque": float(np.abs(r.torque).max()),
                f"{label}_glue_residual_max": float(np.nanmax(r.glue_residual)),
                f"{label}_wall_time_s": wall[label],
            }
        )
    return figures, reason


def PlotBend(runs: dict, config, youngs_modulus: float):
    """angle_torque.png: each skin's joint angle against the motor's target, and its torque."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    colors = {"smooth": "tab:orange", "folded": "tab:blue"}
    first = next(iter(runs.values()))
    a1.plot(first.times, np.rad2deg(first.target), "k--", lw=1, label="motor target")
    for label, r in runs.items():
        a1.plot(r.times, np.rad2deg(r.angle), color=colors[label], label=f"{label} skin")
        a2.plot(r.times, r.torque, color=colors[label], label=f"{label} skin")
    a2.axhline(config.torque_limit, color="tab:red", ls=":", lw=1, label="torque limit")
    a2.axhline(-config.torque_limit, color="tab:red", ls=":", lw=1)
    a1.set_xlabel("time [s]")
    a1.set_ylabel(f"{config.joint} angle [deg]")
    a2.set_xlabel("time [s]")
    a2.set_ylabel("motor torque [N*m]")
    a1.legend(fontsize=8)
    a2.legend(fontsize=8)
    fig.suptitle(
        f"skin bend (paper Fig. 17): E = {youngs_modulus:.3g} Pa, limit {config.torque_limit} N*m",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def PlotBent(skins: dict, runs: dict):
    """bent.png: each skin piece at the end of its run."""
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    from drakebots.skinned.bend import CLEARANCE
    from drakebots.skinned.plots import OuterSurface

    fig = plt.figure(figsize=(10, 5))
    for k, (label, skin) in enumerate(skins.items()):
        r = runs[label]
        X = r.skin_frames[-1].astype(float).reshape(-1, 3) - [0, 0, CLEARANCE]
        faces = OuterSurface(skin.mesh.tets, skin.outer)
        ax = fig.add_subplot(1, 2, k + 1, projection="3d")
        tri = X[faces]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
        shade = 0.35 + 0.65 * np.clip(n @ np.array([0.3, -0.6, 0.75]), 0, 1)
        ax.add_collection3d(
            Poly3DCollection(tri, facecolors=shade[:, None] * [0.93, 0.78, 0.35], edgecolors="none")
        )
        lo, hi = X.min(0), X.max(0)
        c, rad = 0.5 * (lo + hi), 0.5 * (hi - lo).max()
        for axis, cc in zip("xyz", c):
            getattr(ax, f"set_{axis}lim")(cc - rad, cc + rad)
        ax.set_box_aspect((1, 1, 1))
        ax.view_init(elev=5, azim=-50)
        ax.set_axis_off()
        ax.set_title(f"{label}: {np.rad2deg(r.reached):.1f} deg", fontsize=10, pad=12)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.94))
    return fig


def BendReplay(robot, skin, result, joint_name):
    """The robot at its home pose with the bent joint, and the skin piece, as replay.html."""
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.skinned.bend import CLEARANCE
    from drakebots.skinned.plots import SkinReplayDecorator
    from drakebots.visualization.replay import ReplayHtml

    plant = MultibodyPlant(0.0)
    robot.AddTo(plant)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    q0 = plant.GetPositions(context)
    start = plant.GetJointByName(joint_name).position_start()
    positions = np.repeat(q0[None, :], len(result.times), axis=0)
    positions[:, start] = result.angle
    frames = result.skin_frames.astype(float) - np.tile(
        [0.0, 0.0, CLEARANCE], skin.mesh.num_vertices
    )
    every = max(1, len(frames) // 40)
    index = np.arange(0, len(frames), every)
    decorator = SkinReplayDecorator(skin.mesh.tets, skin.outer, frames[index], index)
    return ReplayHtml(robot, result.times, positions, decorator=decorator)
