"""What OptimizeGait and OptimizeJump report (drakebots.optimization.legged): the plan tracked
in closed loop in Drake, the figures of summary.json, and the results folder's files.

The tracking run is the acceptance's independent half: the plan's knots were checked against
the transcription's own discrete dynamics; Drake's discrete MultibodyPlant (SAP, point contact,
the robot file's contacts as collision spheres, systems.simulate_user.MakeUserDiagram) is
another integrator and another contact model. The plan runs under the whole-body tracking
controller (systems.whole_body: one QP per 2 ms tick, inverse dynamics with the plan's stance
feet and contact forces, a task-space PD on the whole base pose, a joint PD), closed loop,
from the plan's first state ON THE GROUND: where the plan's lowest contact (over all its knots:
a plan may start in flight) is not at z = 0, the base is shifted vertically so that it is
(`tracked_start_shift` says by how much), and the plan compared is shifted with it. A gait
runs at least TRACKED_CYCLES cycles, each shifted by the distance D in x.

Accepted (besides the plan's feasibility and true complementarity) when the run follows the plan:
    - the base position (x, y, z) within `0.25 |D| + 0.1 z_home` (a jump: 0.25 H + 0.1 z_home)
      of the plan's at every cycle end (a jump: at the plan's end), and the yaw within 0.25 rad;
    - no fall: the base above half the plan's base height at the same time, and its roll and
      pitch within 1 rad of the plan's, at every logged sample (a body on the ground is a base
      that low or tilted);
    - the distance per cycle (its mean over the cycles; a jump: the apex above home) within
      25 % of the plan's (or the config's resimulation_tolerance, if tighter); of a tenth of
      the home height where the plan's is smaller (a gait in place).
"""

from __future__ import annotations

import numpy as np

# Cycles of a gait tracked at least (the config's resimulation_cycles may ask for more).
TRACKED_CYCLES = 3
# The base position tolerance at a cycle end: this fraction of |D| (or H) plus ...
TRACKED_POSITION_OF_GOAL = 0.25
# ... this fraction of the home height.
TRACKED_POSITION_OF_HOME = 0.1
# Yaw tolerance at a cycle end, rad.
TRACKED_YAW_TOLERANCE = 0.25
# Distance per cycle (or apex) relative tolerance.
TRACKED_GOAL_TOLERANCE = 0.25
# A fall: the base below this fraction of the plan's base height at the same time (a plan may
# crouch: Solo-12's pronk takes its base from 0.27 to 0.085 m, half its home height, on purpose),
# or roll / pitch off the plan's by more than FALL_TILT rad.
FALL_HEIGHT_FRACTION = 0.5
FALL_TILT = 1.0
# A knot of flight: every contact higher than this fraction of the home height.
FLIGHT_HEIGHT_FRACTION = 1e-3


def _Repeated(kind: str, times, q, u, qdot, cycles: int, x_index: int):
    """(times, q, u, qdot) of the plan repeated `cycles` times (a gait; x shifted by the
    distance each cycle, contact_implicit.RepeatCycles) or once (a jump); u and qdot have one
    row per interval."""
    if kind != "gait" or cycles == 1:
        return times, q, u, qdot
    from drakebots.optimization.contact_implicit import RepeatCycles

    q_all, times_all = RepeatCycles(q, times, x_index, cycles)
    return times_all, q_all, np.tile(u, (cycles, 1)), np.tile(qdot, (cycles, 1))


def _BasePose(model, q: np.ndarray) -> np.ndarray:
    """(T, 6) base [x, y, z, roll, pitch, yaw] from positions (planar: y, roll, yaw zero)."""
    q = np.atleast_2d(q)
    pose = np.zeros((len(q), 6))
    pose[:, 0] = q[:, model.x_index]
    pose[:, 2] = q[:, model.z_index]
    if len(model.orientation_indices) == 3:
        start = model.orientation_indices[0]
        pose[:, 1] = q[:, start + 4]
        pose[:, 3:6] = q[:, model.orientation_indices]
    else:
        pose[:, 4] = q[:, model.orientation_indices[0]]
    return pose


def _IsFloating(model) -> bool:
    return getattr(model.robot, "base", None) == "floating_rpy"


def _Wrap(angle):
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def Resimulate(model, kind: str, traj, config, *, meshcat=None) -> dict:
    """Runs the plan in Drake's simulator in closed loop (the module docstring); returns times,
    q (robot units) of the run, plan_times and plan_q (the plan as repeated and shifted, the
    reference the run is compared with), and the measures of Figures."""
    from drakebots.systems.whole_body import PlanReference, RunTracking

    robot = model.robot
    cycles = (
        max(TRACKED_CYCLES, int(getattr(config, "resimulation_cycles", 1))) if kind == "gait" else 1
    )
    home_z = float(model.home[model.z_index])
    # The plan's ground is where its lowest contact is over all its knots (0 for a plan on the
    # ground; a plan may start in flight).
    shift = -float(np.min(traj.phi))
    if abs(shift) <= 1e-9 * max(abs(home_z), 1e-9):
        shift = 0.0
    q_plan = np.array(traj.q, float)
    q_plan[:, model.z_index] += shift
    reference = PlanReference.FromPlan(
        model.plant,
        traj.times,
        q_plan,
        traj.contact_forces,
        traj.phi,
        weight=model.weight,
        home_height=home_z,
        cycles=cycles,
        x_index=model.x_index,
    )
    run = RunTracking(
        robot,
        reference,
        q0=reference.q[0],
        v0=reference.v[0],
        duration=float(reference.times[-1]),
        friction=config.friction,
        meshcat=meshcat,
    )
    out = dict(
        times=run.times,
        q=run.q,
        v=run.v,
        actuation=run.actuation,
        contact=run.contact,
        plan_times=reference.times,
        plan_q=reference.q,
        cycles=cycles,
        start_shift=shift,
        ms_per_tick=run.ms_per_tick,
        ticks=run.ticks,
        qp_failures=run.qp_failures,
        qp_fallbacks=run.qp_fallbacks,
        wall_time_s=run.wall_time_s,
    )
    out.update(_Compare(model, kind, traj, config, reference, run, cycles, shift))
    return out


def _Compare(model, kind, traj, config, reference, run, cycles, shift) -> dict:
    """The tracking figures (module docstring) of a run against its reference."""
    home_z = float(model.home[model.z_index])
    period = float(traj.times[-1] - traj.times[0])
    if kind == "gait":
        goal = float(traj.q[-1, model.x_index] - traj.q[0, model.x_index])
        ends = traj.times[0] + period * np.arange(1, cycles + 1)
    else:
        goal = _PlannedApex(model, traj)
        ends = np.array([float(traj.times[-1])])
    run_pose = _BasePose(model, run.q)
    ref_at = np.array([np.interp(run.times, reference.times, c) for c in reference.q.T]).T
    ref_pose = _BasePose(model, ref_at)
    # Cycle ends: the run's pose interpolated at each end, the plan's knot there.
    run_end = np.array([[np.interp(t, run.times, c) for c in run_pose.T] for t in ends])
    ref_end = _BasePose(
        model, np.array([[np.interp(t, reference.times, c) for c in reference.q.T] for t in ends])
    )
    position_error = np.linalg.norm(run_end[:, :3] - ref_end[:, :3], axis=1)
    yaw_error = np.abs(_Wrap(run_end[:, 5] - ref_end[:, 5]))
    tolerance = TRACKED_POSITION_OF_GOAL * abs(goal) + TRACKED_POSITION_OF_HOME * abs(home_z)
    low = float(np.min(run_pose[:, 2]))
    sunk = run_pose[:, 2] - FALL_HEIGHT_FRACTION * ref_pose[:, 2]
    tilt = float(np.max(np.abs(_Wrap(run_pose[:, 3:5] - ref_pose[:, 3:5]))))
    fell = bool(np.min(sunk) < 0.0 or tilt > FALL_TILT)
    out = dict(
        goal=goal,
        home_height=home_z,
        base_error=position_error,
        base_error_max=float(np.max(position_error)),
        yaw_error_max=float(np.max(yaw_error)),
        position_tolerance=tolerance,
        lowest_base_height=low,
        # Where the run came closest to the fall floor: its base height and the plan's there.
        height_at_floor=float(run_pose[int(np.argmin(sunk)), 2]),
        plan_height_at_floor=float(ref_pose[int(np.argmin(sunk)), 2]),
        tilt_error_max=tilt,
        fell=fell,
    )
    if kind == "gait":
        x0 = float(np.interp(traj.times[0], run.times, run_pose[:, 0]))
        out["distance_per_cycle"] = (float(run_end[-1, 0]) - x0) / cycles
        out["planned"] = goal
    else:
        out["apex_height"] = float(np.max(run_pose[:, 2]) - (home_z + shift))
        out["planned"] = goal
    return out


def _PlannedApex(model, traj) -> float:
    """The plan's apex above home: the last knot's height plus the ballistic rise of its
    final vertical velocity (v^2 / 2g, zero when falling)."""
    vz = float(traj.qdot[-1, model.z_index])
    rise = max(vz, 0.0) ** 2 / (2.0 * model.robot.gravity)
    return float(traj.q[-1, model.z_index] - model.home[model.z_index]) + rise


def Figures(kind, model, config, problem, x, outcome, check, stages, traj, resim):
    """(figures, reason): summary.json's figures and None or why the plan is not accepted."""
    robot = model.robot
    limits = model.effort_limits
    finite = np.isfinite(limits) & (limits > 0)
    effort = float(np.max(np.abs(traj.u[:, finite]) / limits[finite])) if np.any(finite) else None
    figures = dict(
        robot=robot.name,
        robot_file=getattr(robot, "source", None),
        problem=kind,
        units=dict(robot.units),
        solver=outcome.solver,
        solver_requested=config.solver.solver,
        solver_status=outcome.status,
        solver_success=bool(outcome.success),
        stages=[dict(stage=s, status=st, seconds=t) for s, st, t in stages],
        solve_time_s=outcome.solve_time_s,
        solve_cpu_time_s=outcome.cpu_time_s,
        iterations=outcome.iterations,
        num_variables=outcome.num_variables,
        num_constraints=outcome.num_constraints,
        num_knots=int(config.knots),
        time_step=traj.h,
        max_violation=check.max_violation,
        true_complementarity=check.max_complementarity_violation,
        complementarity=check.complementarity,
        dynamics_residual=check.max_dynamics_residual,
        min_signed_distance=check.min_signed_distance,
        max_slack=check.max_slack,
        most_violated_constraints=[[n, v] for n, v in check.MostViolated(10)],
        peak_effort_ratio=effort,
        weight=model.weight,
    )
    if kind == "gait":
        distance = float(traj.q[-1, model.x_index] - traj.q[0, model.x_index])
        figures.update(
            period=float(config.period),
            distance_goal=float(config.distance),
            distance_per_cycle=distance,
            speed=distance / traj.times[-1],
        )
    else:
        figures.update(height_goal=float(config.height), apex_height=_PlannedApex(model, traj))
    reasons = []
    solver = config.solver
    if check.max_violation > solver.feasibility_tolerance:
        worst = ", ".join(f"{n} {v:.2e}" for n, v in check.MostViolated(5))
        reasons.append(
            f"constraints violated by up to {check.max_violation:.2e} "
            f"(> {solver.feasibility_tolerance:g}): {worst}"
        )
    if check.max_complementarity_violation > solver.complementarity_tolerance:
        reasons.append(
            f"true complementarity {check.max_complementarity_violation:.2e} "
            f"> {solver.complementarity_tolerance:g}"
        )
    if kind == "jump":
        above = traj.phi > FLIGHT_HEIGHT_FRACTION * abs(model.home[model.z_index])
        figures["flight_knots"] = int(np.sum(above.all(axis=1)))
        # A floating base's jump is planned with config.flight_knots knots of flight
        # (legged.MakeJumpProblem); a plan with fewer has no flight phase to speak of.
        wanted = int(getattr(config, "flight_knots", 0)) if _IsFloating(model) else 0
        if figures["flight_knots"] < wanted:
            reasons.append(
                f"flight phase: {figures['flight_knots']} knots with every contact off the "
                f"ground, fewer than the {wanted} asked (flight_knots)"
            )
    figures["solve_time_s"] = float(sum(seconds for _, _, seconds in stages))
    if resim is not None:
        reasons += TrackingChecks(kind, figures, resim, config.solver)
    if reasons:
        reasons.insert(0, f"solver {outcome.solver}: {outcome.status}")
    return figures, ("; ".join(reasons) if reasons else None)


def TrackingChecks(kind, figures, resim, solver) -> list:
    """summary.json's tracked_* figures from a run (Resimulate); returns the failed checks."""
    name = "distance_per_cycle" if kind == "gait" else "apex_height"
    planned, got = resim["planned"], resim[name]
    # Relative to the plan's, or to a tenth of the home height for a plan in place (D ~ 0).
    scale = max(abs(planned), TRACKED_POSITION_OF_HOME * abs(resim["home_height"]), 1e-12)
    error = abs(got - planned) / scale
    figures.update(
        tracked_cycles=int(resim["cycles"]),
        tracked_base_error_max=resim["base_error_max"],
        tracked_base_error_tolerance=resim["position_tolerance"],
        tracked_yaw_error_max=resim["yaw_error_max"],
        tracked_fell=bool(resim["fell"]),
        tracked_lowest_base_height=resim["lowest_base_height"],
        tracked_start_shift=resim["start_shift"],
        tracking_ms_per_tick=resim["ms_per_tick"],
        tracking_qp_failures=int(resim["qp_failures"]),
        tracking_qp_fallbacks=int(resim.get("qp_fallbacks", 0)),
        tracking_wall_time_s=resim["wall_time_s"],
        resimulation_cycles=int(resim["cycles"]),
        resimulation_error=error,
    )
    figures[f"resimulated_{name}"] = got
    figures["tracked_distance_per_cycle" if kind == "gait" else "tracked_apex"] = got
    reasons = []
    ends = "cycle end" if kind == "gait" else "the plan's end"
    if resim["base_error_max"] > resim["position_tolerance"]:
        worst = int(np.argmax(resim["base_error"]))
        reasons.append(
            f"closed-loop run: base position {resim['base_error_max']:.4g} from the plan at "
            f"{ends} {worst + 1} (tolerance {resim['position_tolerance']:.4g})"
        )
    if resim["yaw_error_max"] > TRACKED_YAW_TOLERANCE:
        reasons.append(
            f"closed-loop run: base yaw {resim['yaw_error_max']:.3g} rad off the plan "
            f"(tolerance {TRACKED_YAW_TOLERANCE:g} rad)"
        )
    if resim["fell"]:
        at = resim.get("height_at_floor", resim["lowest_base_height"])
        plan = resim.get("plan_height_at_floor")
        floor = f", the plan's {plan:.4g} there" if plan is not None else ""
        reasons.append(
            f"closed-loop run fell: base as low as {at:.4g} (floor {FALL_HEIGHT_FRACTION:g} of "
            f"the plan's base height{floor}), roll/pitch up to "
            f"{resim['tilt_error_max']:.3g} rad off the plan (limit {FALL_TILT:g})"
        )
    tolerance = min(TRACKED_GOAL_TOLERANCE, solver.resimulation_tolerance)
    if error > tolerance:
        reasons.append(
            f"closed-loop run reaches {name.replace('_', ' ')} {got:.4g} against the plan's "
            f"{planned:.4g} ({100 * error:.0f} % off, tolerance {100 * tolerance:.0f} %)"
        )
    return reasons


def WriteMotionFiles(results, result) -> None:
    """solution.npz (the plan; Drake's closed-loop run and the plan it tracked as
    resimulation_* and plan_*), plan.png (plan and run overlaid), replay.html and log.npz
    (Drake's run, the plan beside it as a ghost; without a run, the plan, a gait cycled three
    times; `drakebots view FOLDER` replays it)."""
    from drakebots.visualization.replay import ReplayHtml

    model, kind = result.model, result.figures["problem"]
    arrays = dict(
        times=result.times,
        q=result.q,
        u=result.u,
        contact_forces=result.contact_forces,
        phi=result.phi,
        position_names=np.array(result.position_names),
        input_names=np.array(result.input_names),
        contact_names=np.array(result.contact_names),
    )
    run = result.resimulation
    if run is not None:
        arrays["resimulation_times"] = run["times"]
        arrays["resimulation_q"] = run["q"]
        arrays["plan_times"] = run["plan_times"]
        arrays["plan_q"] = run["plan_q"]
    results.SaveNpz("solution.npz", arrays)
    figure = PlotMotion(result)
    results.SaveFigure("plan.png", figure)
    if run is not None:
        ghost = (run["plan_times"], run["plan_q"])
        results.WriteText(
            "replay.html", ReplayHtml(model.robot, run["times"], run["q"], ghost=ghost)
        )
        results.SaveNpz("log.npz", RunLog(result).ArraysForNpz())
        return
    cycles = 3 if kind == "gait" else 1
    qdot = np.diff(result.q, axis=0) / np.diff(result.times)[:, None]
    times, q, u, qdot = _Repeated(
        kind, result.times, result.q, result.u, qdot, cycles, model.x_index
    )
    results.WriteText("replay.html", ReplayHtml(model.robot, times, q))
    results.SaveNpz("log.npz", PlanLog(result, times, q, u, qdot).ArraysForNpz())


def RunLog(result):
    """Drake's closed-loop run of the plan as a SimulationLog (`drakebots view` replays it, the
    plan beside it as a ghost from solution.npz's plan_times and plan_q)."""
    from drakebots.systems.simulation import SimulationLog

    model, run = result.model, result.resimulation
    return SimulationLog(
        robot=model.robot.name,
        times=run["times"],
        positions=run["q"],
        velocities=run["v"],
        actuation=run["actuation"],
        effort_limits=model.effort_limits,
        position_names=list(result.position_names),
        actuator_names=list(result.input_names),
        contact=run["contact"],
        base_height=run["q"][:, model.z_index],
        wall_time=float(run["wall_time_s"]),
    )


def PlanLog(result, times, q, u, qdot):
    """The plan (a gait cycled) as a SimulationLog, so `drakebots view` replays the folder as it
    replays a simulation's: velocities and inputs per knot (the interval's, the last repeated),
    the contact summary [deepest penetration, contacts loaded, total normal force]."""
    from drakebots.systems.simulation import SimulationLog

    model = result.model
    cycles = (len(times) - 1) // (len(result.times) - 1)
    forces = np.tile(result.contact_forces[:, :, 2], (cycles, 1))
    phi = np.tile(result.phi[1:], (cycles, 1))
    contact = np.column_stack(
        [np.maximum(-phi.min(axis=1), 0.0), (forces > 0).sum(axis=1), forces.sum(axis=1)]
    )
    return SimulationLog(
        robot=model.robot.name,
        times=times,
        positions=q,
        velocities=np.vstack([qdot, qdot[-1:]]),
        actuation=np.vstack([u, u[-1:]]),
        effort_limits=model.effort_limits,
        position_names=list(result.position_names),
        actuator_names=list(result.input_names),
        contact=np.vstack([contact[:1], contact]),
        base_height=q[:, model.z_index],
        wall_time=0.0,
    )


def PlotMotion(result):
    """The base's position (x, y, z) and angles (pitch; or roll, pitch, yaw) of the plan and of
    Drake's closed-loop run over the cycles tracked, then over the plan's own time its contact
    heights and forces, and its inputs against their limits."""
    import matplotlib.pyplot as plt

    model = result.model
    units = model.robot.units
    length, force, time_unit = (
        units.get("length", "m"),
        units.get("force", "N"),
        units.get("time", "s"),
    )
    fig, axes = plt.subplots(5, 1, figsize=(8, 12))
    t, q = result.times, result.q
    run = result.resimulation
    # The base: the plan (repeated as tracked; dashed) and Drake's closed-loop run (solid).
    plan_t, plan_q = (run["plan_times"], run["plan_q"]) if run is not None else (t, q)
    plan_pose = _BasePose(model, plan_q)
    run_pose = _BasePose(model, run["q"]) if run is not None else None
    labels = ("x", "y", "z", "roll", "pitch", "yaw")
    shown = [0, 2, 4] if len(model.orientation_indices) == 1 else [0, 1, 2, 5]
    for ax, group, unit in ((axes[0], (0, 1, 2), length), (axes[1], (3, 4, 5), "rad")):
        for n, index in enumerate(i for i in shown if i in group):
            color = f"C{n}"
            ax.plot(
                plan_t,
                plan_pose[:, index],
                color=color,
                ls="--",
                lw=1.0,
                label=f"base {labels[index]} (plan)",
            )
            if run_pose is not None:
                ax.plot(
                    run["times"],
                    run_pose[:, index],
                    color=color,
                    label=f"base {labels[index]} (Drake, closed loop)",
                )
        ax.set_ylabel(f"base {'position' if unit == length else 'angle'} ({unit})")
        ax.set_xlabel(f"time ({time_unit})")
        ax.legend(fontsize=7, ncol=2)
    axes = axes[1:]
    ax = axes[1]
    for i, name in enumerate(result.contact_names):
        ax.plot(t, result.phi[:, i], label=name)
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_ylabel(f"contact height ({length})")
    ax.legend(fontsize=7, ncol=4)
    ax = axes[2]
    mid = 0.5 * (t[:-1] + t[1:])
    for i, name in enumerate(result.contact_names):
        ax.plot(mid, result.contact_forces[:, i, 2], label=name)
    ax.axhline(model.weight, color="k", ls=":", lw=0.8, label="weight")
    ax.set_ylabel(f"normal force ({force})")
    ax.legend(fontsize=7, ncol=4)
    ax = axes[3]
    for i, name in enumerate(result.input_names):
        line = ax.step(t, np.append(result.u[:, i], result.u[-1, i]), where="post", label=name)
        limit = model.effort_limits[i]
        if np.isfinite(limit):
            for sign in (-1, 1):
                ax.axhline(sign * limit, color=line[0].get_color(), ls=":", lw=0.8)
    ax.set_ylabel(f"input ({units.get('torque', force + '*' + length)})")
    ax.set_xlabel(f"time ({time_unit})")
    ax.legend(fontsize=7, ncol=4)
    for ax in fig.axes:
        ax.grid(alpha=0.3)
    f = result.figures
    gait = getattr(result.config, "gait", "") if result.config is not None else ""
    title = f"{f['robot']}: {gait + ' ' if gait else ''}{f['problem']}"
    if f["problem"] == "gait":
        title += f", {f['distance_per_cycle']:.3g} {length} per {f['period']:g} {time_unit}"
    else:
        title += f", apex {f['apex_height']:.3g} {length}"
    fig.suptitle(f"{title} ({'accepted' if result.success else 'not accepted'})")
    fig.tight_layout()
    return fig
