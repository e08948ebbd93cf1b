"""What OptimizeGait and OptimizeJump report (drakebots.optimization.legged): the plan
re-simulated in Drake, the figures of summary.json, and the results folder's files.

The re-simulation is the acceptance's independent half: the plan's knots were checked against
the transcription's own discrete dynamics; Drake's discrete MultibodyPlant (SAP, point contact,
the robot file's contacts as collision spheres, systems.simulate_user.MakeUserDiagram) is
another integrator and another contact model. It runs the plan's inputs as feedforward, held over
each interval as the transcription holds them, with the actuators' PD (SAP's implicit PD, gains
as `drakebots simulate` sets them) tracking the planned joint positions and velocities, from the
plan's first knot and velocity. Under a gait it repeats the cycle `resimulation_cycles` times;
the base is never commanded.
"""

from __future__ import annotations

import numpy as np

# Drake's step, as a fraction of the plan's knot interval, and at most 1 ms.
RESIMULATION_STEPS_PER_KNOT = 10
RESIMULATION_MAX_STEP_S = 1e-3


def _Repeated(kind: str, times, q, u, qdot, cycles: int, x_index: int):
    """(times, q, u, qdot) of the plan repeated `cycles` times (a gait; x shifted by the
    distance each cycle, contact_implicit.RepeatCycles) or once (a jump); u and qdot have one
    row per interval."""
    if kind != "gait" or cycles == 1:
        return times, q, u, qdot
    from drakebots.optimization.contact_implicit import RepeatCycles

    q_all, times_all = RepeatCycles(q, times, x_index, cycles)
    return times_all, q_all, np.tile(u, (cycles, 1)), np.tile(qdot, (cycles, 1))


def Resimulate(model, kind: str, traj, config, *, meshcat=None) -> dict:
    """Runs the plan in Drake's simulator (the module docstring); returns times, q (robot
    units), and the figure compared: "distance_per_cycle" (gait) or "apex_height" (jump)."""
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.primitives import TrajectorySource
    from pydrake.trajectories import PiecewisePolynomial

    from drakebots.systems.simulate_user import MakeUserDiagram, _TimeScale

    robot = model.robot
    cycles = int(getattr(config, "resimulation_cycles", 1)) if kind == "gait" else 1
    times, q, u, qdot = _Repeated(
        kind, traj.times, traj.q, traj.u, traj.qdot, cycles, model.x_index
    )
    time_scale = _TimeScale(robot)
    step = min(traj.h / RESIMULATION_STEPS_PER_KNOT, RESIMULATION_MAX_STEP_S * time_scale)
    plant0 = model.plant
    actuators = [plant0.get_joint_actuator(i) for i in plant0.GetJointActuatorIndices()]
    q_index = [a.joint().position_start() for a in actuators]
    # Desired joint velocities: the interval velocities, at the knots (the last one repeated).
    v_knots = np.vstack([qdot, qdot[-1:]])[:, q_index]
    desired = PiecewisePolynomial.FirstOrderHold(times, np.hstack([q[:, q_index], v_knots]).T)
    feedforward = PiecewisePolynomial.ZeroOrderHold(times, np.vstack([u, u[-1:]]).T)

    def Command(builder, plant, instance):
        if not actuators:
            return
        source = builder.AddSystem(TrajectorySource(desired))
        source.set_name("planned_joint_state")
        builder.Connect(source.get_output_port(), plant.get_desired_state_input_port(instance))
        torque = builder.AddSystem(TrajectorySource(feedforward))
        torque.set_name("planned_inputs")
        builder.Connect(torque.get_output_port(), plant.get_actuation_input_port(instance))

    handles = MakeUserDiagram(
        robot,
        time_step=step,
        log_period=step,
        ground_friction=config.friction,
        meshcat=meshcat,
        command=Command,
    )
    plant = handles.plant
    if plant.num_positions() != plant0.num_positions():
        raise RuntimeError("the simulated plant's positions differ from the planned model's")
    simulator = Simulator(handles.diagram)
    context = simulator.get_mutable_context()
    plant_context = plant.GetMyMutableContextFromRoot(context)
    plant.SetPositions(plant_context, q[0])
    plant.SetVelocities(plant_context, plant.MapQDotToVelocity(plant_context, qdot[0]))
    simulator.Initialize()
    simulator.AdvanceTo(float(times[-1]))
    sim_times, x, _, _ = handles.logs.Read(context)
    sim_q = x[:, : plant.num_positions()]
    out = {"times": sim_times, "q": sim_q, "time_step": step, "cycles": cycles}
    if kind == "gait":
        out["distance_per_cycle"] = (
            float(sim_q[-1, model.x_index] - sim_q[0, model.x_index]) / cycles
        )
        out["planned"] = float(traj.q[-1, model.x_index] - traj.q[0, model.x_index])
    else:
        out["apex_height"] = float(np.max(sim_q[:, model.z_index]) - model.home[model.z_index])
        out["planned"] = _PlannedApex(model, traj)
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
    if resim is not None:
        name = "distance_per_cycle" if kind == "gait" else "apex_height"
        planned, got = resim["planned"], resim[name]
        error = abs(got - planned) / max(abs(planned), 1e-12)
        figures[f"resimulated_{name}"] = got
        figures["resimulation_error"] = error
        figures["resimulation_cycles"] = resim["cycles"]
        if error > solver.resimulation_tolerance:
            reasons.append(
                f"Drake's re-simulation reaches {name.replace('_', ' ')} {got:.4g} against the "
                f"plan's {planned:.4g} ({100 * error:.0f} % off, tolerance "
                f"{100 * solver.resimulation_tolerance:.0f} %)"
            )
    if reasons:
        reasons.insert(0, f"solver {outcome.solver}: {outcome.status}")
    return figures, ("; ".join(reasons) if reasons else None)


def WriteMotionFiles(results, result) -> None:
    """solution.npz, plan.png (Drake's re-simulation in it), replay.html and log.npz (the plan,
    a gait cycled three times; `drakebots view FOLDER` replays it)."""
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
    if result.resimulation is not None:
        arrays["resimulation_times"] = result.resimulation["times"]
        arrays["resimulation_q"] = result.resimulation["q"]
    results.SaveNpz("solution.npz", arrays)
    figure = PlotMotion(result)
    results.SaveFigure("plan.png", figure)

    cycles = 3 if kind == "gait" else 1
    qdot = np.diff(result.q, axis=0) / np.diff(result.times)[:, None]
    times, q, u, qdot = _Repeated(
        kind, result.times, result.q, result.u, qdot, cycles, model.x_index
    )
    results.WriteText("replay.html", ReplayHtml(model.robot, times, q))
    results.SaveNpz("log.npz", PlanLog(result, times, q, u, qdot).ArraysForNpz())


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
    """Base x and z (plan and Drake's re-simulation), contact heights and forces, and inputs
    against their limits, over the plan's time."""
    import matplotlib.pyplot as plt

    model = result.model
    units = model.robot.units
    length, force, time_unit = (
        units.get("length", "m"),
        units.get("force", "N"),
        units.get("time", "s"),
    )
    fig, axes = plt.subplots(4, 1, figsize=(8, 10), sharex=True)
    t, q = result.times, result.q
    ax = axes[0]
    for index, label, color in ((model.x_index, "x", "C0"), (model.z_index, "z", "C1")):
        ax.plot(t, q[:, index], color=color, label=f"base {label} (plan)")
        if result.resimulation is not None:
            rs = result.resimulation
            ax.plot(
                rs["times"],
                rs["q"][:, index],
                color=color,
                ls="--",
                lw=1.0,
                label=f"base {label} (Drake)",
            )
    ax.set_ylabel(f"position ({length})")
    ax.legend(fontsize=7, ncol=2)
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
    for ax in axes:
        ax.grid(alpha=0.3)
    f = result.figures
    title = f"{f['robot']}: {f['problem']}"
    if f["problem"] == "gait":
        title += f", {f['distance_per_cycle']:.3g} {length} per {f['period']:g} {time_unit}"
    else:
        title += f", apex {f['apex_height']:.3g} {length}"
    fig.suptitle(f"{title} ({'accepted' if result.success else 'not accepted'})")
    fig.tight_layout()
    return fig
