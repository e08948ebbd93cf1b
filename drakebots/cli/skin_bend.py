"""The folding-region experiment (paper Fig. 17): how far a torque-limited motor bends the skin.

Makes the limb skin piece (lower leg and foot, paper section 6.2) twice, smooth and with a
gear-tooth folding region at the joint (Fig. 8, 8 mm deep), and drives the joint's motor, limited
to --torque-limit, towards --target-deg within --time seconds, then holds it for --hold
seconds, with skeleton and skin coupled (Eq. 2). Reports the angle each skin lets the motor
reach, with a plot of angle and torque over time (angle_torque.png), the bent skins (bent.png,
ParaView .vtu) and a replay per skin. The goal is the paper's: the folded skin lets the motor
reach the target (exit 1 if it does not). The servo tau = K_p (q_d - q) + K_d (v_d - v), clamped
at the limit, settles short of its target by tau / K_p; a skin stops the motor when that gap
fills the servo's proportional band (limit / K_p, 3.7 deg for the beetle's 1.96 N*m and
K_p = 30 N*m/rad), where the motor is at its limit.

Each skin's small-strain prediction comes first: the static condensation of its rest stiffness
onto the joint (k, N*m/rad; the angle tau/k) and the fold's relief k_smooth/k_folded.
--linear-only stops there (about 35 s with meshing: a quick way to compare folding-region
shapes); the coupled runs at large angles can take many minutes on a soft skin (the folded piece
at 0.67 MPa: about 15 minutes here).

Examples:
  drakebots skin-bend beetle --joint front_left_ankle --target-deg 70 --time 2 \\
      --torque-limit 1.96 --out runs/bend
  drakebots skin-bend beetle --youngs-modulus 1e6 --out runs/bend_soft   # a softer silicone
  # Fig. 17 at the modulus where the smooth skin's small-strain angle is the paper's 20 deg, with
  # 12 mm teeth (our limb needs > 10.5 mm for the paper's relief): smooth stalls, folded reaches.
  drakebots skin-bend beetle --youngs-modulus 6.7e5 --fold-depth 0.012 --fold-pitch 0.024 \\
      --out runs/bend_fig17
  drakebots skin-bend beetle --linear-only --fold-teeth 7 --out runs/bend_7teeth
"""

from drakebots.cli import AddOutputArguments, AddVerb
from drakebots.cli.skin import AddFoldArguments, ValidateFold
from drakebots.errors import InputError

# Marching-cubes cell of the folded piece, m: at 4 mm the folded piece came out 18 % stiffer
# than at 3 mm, which is within 3 % of 2.5 mm.
FOLDED_VOXEL = 0.003


def register(subparsers):
    parser = AddVerb(subparsers, "skin-bend", __doc__)
    parser.add_argument("robot", help="a skinned quad-robot (the paper uses the beetle)")
    parser.add_argument("--joint", default="front_left_ankle", help="the joint to bend")
    parser.add_argument("--target-deg", type=float, default=70.0, help="target angle, degrees")
    parser.add_argument("--time", type=float, default=2.0, help="time to reach the target, s")
    parser.add_argument(
        "--hold",
        type=float,
        default=0.5,
        help="time the motor then holds the target, s: the reached angle is where it settles",
    )
    parser.add_argument(
        "--torque-limit", type=float, default=1.96, help="motor torque limit, N*m (MG995R: 1.96)"
    )
    parser.add_argument(
        "--youngs-modulus",
        type=float,
        default=0.09e9,
        help="skin Young's modulus, Pa (paper section 7: 0.09 GPa)",
    )
    parser.add_argument("--poissons-ratio", type=float, default=0.46, help="(paper: 0.46)")
    parser.add_argument("--time-step", type=float, default=0.02, help="coupled time step, s")
    AddFoldArguments(parser)
    parser.add_argument(
        "--linear-only",
        action="store_true",
        help="only the small-strain predictions (static condensation; about 35 s with meshing), no "
        "coupled runs",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    AddOutputArguments(parser)
    parser.set_defaults(func=Run)
    return parser


def _Validate(args, robot):
    from drakebots.skinned.skeleton import JointKinds

    kinds = JointKinds(robot.params)
    if args.joint not in kinds:
        raise InputError(
            f"--joint {args.joint}: '{robot.name}' has no such joint (joints: {', '.join(kinds)})"
        )
    if not 0.0 < abs(args.target_deg) <= 120.0:
        raise InputError(f"--target-deg must be in (0, 120] in magnitude, got {args.target_deg}")
    ValidateFold(args, voxel=FOLDED_VOXEL)
    for name in ("time", "torque_limit", "youngs_modulus", "time_step"):
        if not getattr(args, name) > 0.0:
            raise InputError(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if not -1.0 < args.poissons_ratio < 0.5:
        raise InputError(
            f"--poissons-ratio must be in (-1, 0.5) (0.5 is incompressible), got "
            f"{args.poissons_ratio}"
        )
    if not args.hold >= 0.0:
        raise InputError(f"--hold must be >= 0, got {args.hold}")
    if args.time_step > args.time / 10:
        raise InputError(f"--time-step {args.time_step} s is too coarse for --time {args.time} s")


def Run(args) -> int:
    import sys
    import time

    import numpy as np

    from drakebots.cli import Summary
    from drakebots.fem.mesh import WriteVtu
    from drakebots.results import DefaultOutput, ResultsFolder
    from drakebots.robots import GetRobot
    from drakebots.skinned.bend import CLEARANCE, BendConfig, LinearBendStiffness, RunBend
    from drakebots.skinned.skeleton import _Build
    from drakebots.skinned.skin import MakeSkin, SkinOptions, WriteSkin

    robot = GetRobot(args.robot)
    if robot.family != "skinned_quadruped":
        raise InputError(f"'{args.robot}' is not a skinned quad-robot")
    _Validate(args, robot)
    params = robot.params
    joint = next(j for j in _Build(params).joints if j.name == args.joint)
    config = BendConfig(
        joint=args.joint,
        target=np.deg2rad(args.target_deg),
        duration=args.time,
        hold=args.hold,
        torque_limit=args.torque_limit,
        time_step=args.time_step,
    )
    show = not args.no_progress and sys.stderr.isatty()
    out = args.out or DefaultOutput("skin-bend", robot.name)
    results_by_skin, skins, stiffness = {}, {}, {}
    with ResultsFolder(out, force=args.force) as results:
        # Cells small enough for the teeth (FOLDED_VOXEL; the smooth piece: 1 % between 6 and
        # 3 mm).
        for label, folds, voxel in (("smooth", (), 0.006), ("folded", (args.joint,), FOLDED_VOXEL)):
            print(f"[{label}] skin piece of {joint.parent} + {joint.child}", flush=True)
            options = SkinOptions(
                links=(joint.parent, joint.child),
                folding_regions=folds,
                voxel=voxel,
                fold_depth=args.fold_depth,
                fold_pitch=args.fold_pitch,
                fold_teeth=args.fold_teeth,
                glue_per_link=20,
                mass_density=1100.0,  # silicone rubber; a piece is not the paper's whole skin
                youngs_modulus=args.youngs_modulus,
                poissons_ratio=args.poissons_ratio,
            )
            skin = MakeSkin(params, options, progress=lambda s: print(f"    {s}", flush=True))
            skins[label] = skin
            results.File(f"{label}/skin.vtk")
            WriteSkin(results.directory / label, skin)
            stiffness[label], _ = LinearBendStiffness(params, skin, args.joint)
            print(
                f"    {skin.mesh.num_vertices} vertices, {skin.mesh.num_tets} tets; small strain: "
                f"k = {stiffness[label]:.4g} N*m/rad, {args.torque_limit:g} N*m turns it "
                f"{np.rad2deg(args.torque_limit / stiffness[label]):.3g} deg",
                flush=True,
            )
            if args.linear_only:
                continue
            print("    bending...", flush=True)
            start = time.perf_counter()
            bar = None
            if show:
                from tqdm import tqdm

                bar = tqdm(total=100, desc=f"bend {label}", leave=False)
            result = RunBend(
                params,
                skin,
                config,
                progress=(lambda f, b=bar: b.update(round(100 * f) - b.n)) if bar else None,
            )
            if bar is not None:
                bar.close()
            result.wall = time.perf_counter() - start
            results_by_skin[label] = result
            final = result.skin_frames[-1].astype(float).reshape(-1, 3) - [0, 0, CLEARANCE]
            WriteVtu(
                results.File(f"{label}/bent.vtu"),
                final,
                skin.mesh.tets,
                point_data={"displacement": final - skin.mesh.vertices},
            )
            print(
                f"    reached {np.rad2deg(result.reached):.2f} deg (target "
                f"{args.target_deg:g}), max torque {np.abs(result.torque).max():.3f} N*m, "
                f"{result.wall:.0f} s" + (f"; {result.failure}" if result.failure else ""),
                flush=True,
            )
        linear = {label: args.torque_limit / k for label, k in stiffness.items()}
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
        if args.linear_only:
            # The servo against a linear skin k: two springs in series, settling at
            # q = K_p q_d / (K_p + k) with torque k q; the skin stalls it where k q >= U_m.
            kp, k_folded = params.motor.kp, stiffness["folded"]
            if k_folded * kp * abs(config.target) / (kp + k_folded) >= args.torque_limit:
                reason = (
                    f"at small strain the folded skin stops the motor at "
                    f"{np.rad2deg(linear['folded']):.3g} deg, short of {args.target_deg:g} deg"
                )
        else:
            results.SaveFigure("angle_torque.png", _PlotBend(results_by_skin, config, args))
            results.SaveFigure("bent.png", _PlotBent(skins, results_by_skin))
            for label in results_by_skin:
                results.WriteText(
                    f"replay_{label}.html",
                    _Replay(robot, skins[label], results_by_skin[label], args.joint),
                )
            results.SaveNpz(
                "bend.npz",
                {
                    f"{label}_{key}": getattr(r, key)
                    for label, r in results_by_skin.items()
                    for key in ("times", "angle", "target", "torque", "glue_residual")
                },
            )
            # The paper's goal: the folded skin lets the motor generate the rotation. A servo
            # tau = K_p (q_d - q) settles short of its target by tau / K_p; the skin has stopped
            # it when that gap is the whole proportional band, i.e. the motor is at its limit.
            folded = results_by_skin["folded"]
            figures["servo_band_deg"] = float(np.rad2deg(folded.servo_band))
            if folded.stalled:
                reason = (
                    f"the folded skin stopped the motor at {np.rad2deg(folded.reached):.2f} deg, "
                    f"short of {args.target_deg:g} deg by more than the servo's proportional band "
                    f"({np.rad2deg(folded.servo_band):.2f} deg = {args.torque_limit:g} N*m / K_p)"
                )
            if any(r.failure for r in results_by_skin.values()):
                reason = "; ".join(
                    f"{k}: {r.failure}" for k, r in results_by_skin.items() if r.failure
                )
            for label, r in results_by_skin.items():
                figures.update(
                    {
                        f"{label}_reached_deg": float(np.rad2deg(r.reached)),
                        f"{label}_short_of_target_deg": float(
                            np.rad2deg(abs(config.target - r.reached))
                        ),
                        f"{label}_motor_stalled": r.stalled,
                        f"{label}_max_torque": float(np.abs(r.torque).max()),
                        f"{label}_glue_residual_max": float(np.nanmax(r.glue_residual)),
                        f"{label}_wall_time_s": r.wall,
                    }
                )
        summary = Summary(
            "skin-bend",
            {
                k: getattr(args, k)
                for k in (
                    "robot",
                    "joint",
                    "target_deg",
                    "time",
                    "hold",
                    "torque_limit",
                    "youngs_modulus",
                    "poissons_ratio",
                    "time_step",
                    "fold_depth",
                    "fold_teeth",
                    "fold_pitch",
                    "linear_only",
                )
            },
            robot=robot.name,
            success=reason is None,
            reason=reason,
            figures=figures,
            paper={"smooth_reached_deg": 20.0, "folded_reached_deg": 70.0},
        )
        results.WriteJson("summary.json", summary)
        results.Commit()
    print(f"results: {results.final}")
    for label in stiffness:
        reached = results_by_skin[label].reached if label in results_by_skin else None
        print(
            f"  {label:<7} small strain {np.rad2deg(linear[label]):6.3g} deg"
            + (f", reached {np.rad2deg(reached):6.2f} deg" if reached is not None else "")
            + f" (paper: {'~20' if label == 'smooth' else '70'} deg)"
        )
    print(f"  fold relief k_smooth / k_folded = {figures['fold_relief']:.3g}")
    if reason:
        print(f"  did not reach the goal: {reason}")
    return 0 if reason is None else 1


def _PlotBend(results_by_skin, config, args):
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.8))
    colors = {"smooth": "tab:orange", "folded": "tab:blue"}
    first = next(iter(results_by_skin.values()))
    a1.plot(first.times, np.rad2deg(first.target), "k--", lw=1, label="motor target")
    for label, r in results_by_skin.items():
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
        f"skin bend (paper Fig. 17): E = {args.youngs_modulus:.3g} Pa, limit "
        f"{config.torque_limit} N*m",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def _PlotBent(skins, results_by_skin):
    import matplotlib.pyplot as plt
    import numpy as np
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    from drakebots.skinned.bend import CLEARANCE
    from drakebots.skinned.plots import OuterSurface

    fig = plt.figure(figsize=(10, 5))
    for k, (label, skin) in enumerate(skins.items()):
        r = results_by_skin[label]
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


def _Replay(robot, skin, result, joint_name):
    """The robot at its home pose with the bent joint, and the skin piece, as replay.html."""
    import numpy as np
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
