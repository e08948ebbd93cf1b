"""HAMR-VI analyses: `drakebots hamr modes` (body natural frequencies of the standing robot).

`modes` finds the standing equilibrium (actuators at the mid voltage, gravity, every loop closed,
feet held by the ground), linearises the constrained dynamics there and reports the natural
frequencies, damping ratios and mode shapes, labelling the body modes (vertical, pitch, roll,
...) against the paper's ~10 Hz vertical and ~30 Hz roll modes (section III-A). Cases:
  sliding        feet kept on the ground, free to slide (frictionless): the body modes
  pinned         feet stuck at their home points (sticking friction)
  lift_x0.1      sliding, with the lift actuator springs scaled by 0.1, as the authors' own
                 simulation scripts do (their `stiffness_mult`): a sensitivity study

Examples:
  drakebots hamr modes --out runs/hamr_modes
  drakebots hamr modes --amplitude 0.5 --force --out runs/hamr_modes

Writes summary.json (every case: equilibrium height, ground reactions, each mode's frequency,
damping, chassis energy share and body motion; the comparison with the paper), modes.csv,
modes.npz (shapes), modes.png, mode_shapes.png and replay.html (the body modes animated).
"""

from drakebots.cli import AddOutputArguments, AddVerb, PositiveFloat

PAPER_FREQUENCIES_HZ = {"vertical (z)": 10.0, "roll": 30.0}
"""The paper's body natural frequencies (section III-A: "near the z-natural frequency (10 Hz)",
"near the roll natural frequency (30 Hz)"; "the body natural frequencies are between 10-30 Hz")."""

CASES = {
    "sliding": {"feet": "sliding", "stiffness_scale": None},
    "pinned": {"feet": "pinned", "stiffness_scale": None},
    "lift_x0.1": {"feet": "sliding", "stiffness_scale": {"lift_actuator": 0.1}},
}


CASE_LABELS = {
    "sliding": "model, feet sliding",
    "pinned": "model, feet pinned",
    "lift_x0.1": "model, sliding, lift springs x0.1",
}


def register(subparsers):
    parser = AddVerb(subparsers, "hamr", __doc__)
    commands = parser.add_subparsers(dest="hamr_command", metavar="COMMAND")
    commands.required = True
    modes = commands.add_parser(
        "modes",
        help="body natural frequencies and mode shapes of the standing robot",
        description=__doc__,
        formatter_class=parser.formatter_class,
    )
    modes.add_argument(
        "--amplitude",
        type=PositiveFloat,
        default=1.0,
        help="largest chassis displacement in the mode-shape plots and replay, mm (default 1)",
    )
    modes.add_argument(
        "--body-threshold",
        type=float,
        default=0.3,
        help="share of a mode's kinetic energy in the chassis that makes it a body mode (0.3)",
    )
    AddOutputArguments(modes)
    modes.set_defaults(func=RunModes)
    return parser


def _ModeRecords(result) -> list[dict]:
    records = []
    for k, frequency in enumerate(result.frequencies_hz):
        records.append(
            {
                "index": k,
                "frequency_hz": float(frequency),
                "damping_ratio": float(result.damping_ratio[k]),
                "label": result.labels[k],
                "chassis_energy_fraction": float(result.chassis_energy_fraction[k]),
                "body_motion_xyz_rpy": [float(v) for v in result.body_motion[k]],
            }
        )
    return records


def _BodyFrequencies(result) -> dict:
    """Lowest frequency of each body-motion label."""
    found = {}
    for frequency, label in zip(result.frequencies_hz, result.labels):
        if label in ("leg", "free") or label in found:
            continue
        found[label] = float(frequency)
    return found


def _Explanation(body: dict, scaled: dict) -> str:
    vertical, roll = body.get("vertical (z)"), body.get("roll")
    text = [
        f"With the authors' nominal springs and the feet free to slide, the model's vertical "
        f"mode is {vertical:.1f} Hz and its roll mode {roll:.1f} Hz, against the paper's ~10 and "
        f"~30 Hz: {vertical / 10.0:.1f}x and {roll / 30.0:.1f}x higher, with nearly the paper's "
        f"ratio between them ({roll / vertical:.1f} vs 3). The body's vertical compliance is the "
        "lift actuators' spring (1.69 N/mm plus the bender's 0.39 N/mm) seen through the lift "
        "transmission (about 12.7 mm of foot height per mm of actuator travel): a stiffer path "
        "than the physical robot, whose 'unmodeled serial compliance in the transmissions' the "
        "paper itself names (section VI-C). The pseudo-rigid-body model has only the flexures' "
        "bending compliance; the real laminate also stretches and twists at each flexure and the "
        "actuators are clamped compliantly. The gap is the authors' model's, not a transcription "
        "error: their URDF, parsed by Drake with the same springs and the feet sliding, gives the "
        "same 28.66 (vertical), 40.35 (pitch) and 74.12 Hz (roll); with its URDF springs alone "
        "(no bender stiffness) 25.8, 36.3 and 67.5 Hz (models/hamr_vi/README.md)."
    ]
    if scaled:
        scaled_vertical = scaled.get("vertical (z)", float("nan"))
        scaled_roll = scaled.get("roll", float("nan"))
        text.append(
            " Scaling the lift actuator springs by 0.1, as the authors' own simulation scripts do "
            f"(stiffness_mult), brings the vertical mode to {scaled_vertical:.1f} Hz and roll to "
            f"{scaled_roll:.1f} Hz."
        )
    text.append(
        " With the feet stuck (pinned), the pseudo-rigid mechanism locks vertically: each leg "
        "moves its foot only in the x direction (swing) and in its y-z lift plane, so with all "
        "four feet fixed the chassis keeps just two motions (surge, and sway coupled with roll). "
        "That sway/roll mode (about 28 Hz) is the one close to the paper's ~30 Hz roll: on a "
        "surface with friction the feet stick, as they do in the pinned case."
    )
    return "".join(text)


def RunModes(args) -> int:
    import numpy as np

    from drakebots.cli import Summary
    from drakebots.errors import InputError
    from drakebots.results import CheckOutputFolder, DefaultOutput, ResultsFolder

    if not 0.0 < args.body_threshold < 1.0:
        raise InputError(f"--body-threshold {args.body_threshold}: must be in (0, 1)")
    out = args.out or DefaultOutput("hamr", "modes")
    CheckOutputFolder(out, args.force)

    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.hamr.modes import AnalyseHamrModes
    from drakebots.hamr.plots import (
        ModeScale,
        PlotModeFrequencies,
        PlotModeShapes,
    )
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.hamr.robot import AddHamr
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    results = {}
    for name, case in CASES.items():
        results[name] = AnalyseHamrModes(
            case["feet"],
            body_threshold=args.body_threshold,
            stiffness_scale=case["stiffness_scale"],
        )
    body = {name: _BodyFrequencies(result) for name, result in results.items()}
    nominal = body["sliding"]
    comparison = {}
    for motion, paper in PAPER_FREQUENCIES_HZ.items():
        model = nominal.get(motion)
        comparison[motion] = {
            "paper_hz": paper,
            "model_hz": model,
            "ratio_model_to_paper": None if model is None else model / paper,
            "model_hz_lift_x0.1": body["lift_x0.1"].get(motion),
        }
    explanation = _Explanation(nominal, body["lift_x0.1"])
    summary_cases = {}
    for name, result in results.items():
        summary_cases[name] = {
            "feet": result.feet,
            "stiffness_scale": CASES[name]["stiffness_scale"],
            "equilibrium_body_height_mm": result.body_height,
            "sag_from_home_mm": 12.69 - result.body_height,
            "ground_reaction_n": {
                leg: [float(v) for v in result.foot_forces[j]]
                for j, leg in enumerate(("FL", "RL", "FR", "RR"))
            },
            "total_vertical_reaction_n": float(result.foot_forces[:, 2].sum()),
            "constraint_rank": result.constraint_rank,
            "degrees_of_freedom": int(result.shapes.shape[1]),
            "equilibrium_residual": result.gradient_residual,
            "body_mode_frequencies_hz": body[name],
            "modes": _ModeRecords(result),
        }
    with ResultsFolder(out, force=args.force) as folder:
        summary = Summary(
            "hamr modes",
            {"amplitude": args.amplitude, "body_threshold": args.body_threshold},
            robot="hamr_vi",
            success=True,
            reason=None,
            units={"frequency": "Hz", "length": "mm", "force": "N"},
            paper_comparison=comparison,
            explanation=explanation,
            cases=summary_cases,
        )
        folder.WriteJson("summary.json", summary)
        rows = ["case,index,frequency_hz,damping_ratio,label,chassis_energy_fraction"]
        for name, result in results.items():
            for record in _ModeRecords(result):
                rows.append(
                    f"{name},{record['index']},{record['frequency_hz']:.6g},"
                    f"{record['damping_ratio']:.4g},{record['label']},"
                    f"{record['chassis_energy_fraction']:.4f}"
                )
        folder.WriteText("modes.csv", "\n".join(rows) + "\n")
        folder.SaveNpz(
            "modes.npz",
            {
                f"{name}_{key}": value
                for name, result in results.items()
                for key, value in (
                    ("q_equilibrium", result.q_equilibrium),
                    ("frequencies_hz", result.frequencies_hz),
                    ("shapes", result.shapes),
                    ("damping_ratio", result.damping_ratio),
                )
            },
        )
        folder.SaveFigure(
            "modes.png",
            PlotModeFrequencies(
                {CASE_LABELS[name]: values for name, values in body.items()},
                PAPER_FREQUENCIES_HZ,
            ),
        )
        plant = MultibodyPlant(time_step=0.0)
        AddHamr(plant)
        plant.Finalize()
        sliding = results["sliding"]
        shown = []
        for motion in ("vertical (z)", "pitch", "roll"):
            k = sliding.BodyMode(motion)
            if k is not None:
                shown.append((motion, sliding.frequencies_hz[k], sliding.shapes[:, k]))
        leg = sliding.BodyMode("leg")
        if leg is not None:
            shown.append(("first leg mode", sliding.frequencies_hz[leg], sliding.shapes[:, leg]))
        folder.SaveFigure(
            "mode_shapes.png",
            PlotModeShapes(
                plant,
                sliding.q_equilibrium,
                shown,
                amplitude_mm=args.amplitude,
                title="HAMR-VI standing, feet sliding: body modes (solid +, dashed -)",
            ),
        )
        # The replay: each shown mode for three cycles, slowed to one cycle per second.
        times, positions = [], []
        context = plant.CreateDefaultContext()
        for _, _, shape in shown:
            scale = ModeScale(plant, context, sliding.q_equilibrium, shape, args.amplitude)
            t = np.linspace(0.0, 3.0, 91)[:-1]
            start = len(times) and times[-1][-1] + 1.0 / 30.0
            times.append(start + t)
            positions.append(sliding.q_equilibrium + scale * np.outer(np.sin(2 * np.pi * t), shape))
        robot = GetRobot("hamr_vi")
        html = ReplayHtml(
            robot, np.concatenate(times), np.vstack(positions), decorator=HamrReplayDecorator()
        )
        folder.WriteText("replay.html", html)
    print(f"results: {folder.final}")
    for name in results:
        values = ", ".join(f"{m} {f:.1f} Hz" for m, f in body[name].items())
        print(f"  {name:10s} body height {results[name].body_height:.3f} mm; {values}")
    for motion, row in comparison.items():
        model = row["model_hz"]
        print(
            f"  {motion}: model {model:.1f} Hz vs paper ~{row['paper_hz']:.0f} Hz "
            f"(x{row['ratio_model_to_paper']:.2f}); lift springs x0.1: "
            f"{row['model_hz_lift_x0.1']:.1f} Hz"
        )
    return 0
