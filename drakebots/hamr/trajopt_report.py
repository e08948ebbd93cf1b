"""Figures of merit, arrays, plots and the replay of a HAMR-VI trajectory optimization.

Used by the OptimizeGait and OptimizeJump workflows (drakebots.hamr.workflows, `drakebots
optimize`). Metrics follow the paper: distance per stride, the normalized slip of Eq. 23, the apex
height of the jump; the solution is re-checked independently of the solver (every binding
evaluated; the TRUE complementarity, not the relaxed one).
"""

from __future__ import annotations

import numpy as np

from drakebots.analysis.locomotion import (
    ContactSchedule,
    DutyFactors,
    LoadedSlide,
    NormalizedSlip,
)

CONTACT_TOLERANCE_MM = 1e-3  # a foot within 1 um of the ground counts as touching in plots


def Evaluate(model, problem, outcome, kind: str, *, settings, frequency=None) -> dict:
    """Checks the solution and computes the summary's figures of merit.

    Returns a dict with "failure" (None or the reason), "figures", "trajectory" (a
    HamrTrajectory), "check" (SolutionCheck) and "dynamics_evaluations".
    """
    from drakebots.hamr.trajopt import (
        COMPLEMENTARITY_TARGET,
        FEASIBILITY_TARGET,
        HamrKnotTrajectory,
    )
    from drakebots.optimization.contact_implicit import (
        CheckContactImplicitSolution,
        ReconstructTrajectory,
    )

    x = outcome.result.get_x_val()
    check = CheckContactImplicitSolution(problem, x, tolerance=1e-6)
    raw = ReconstructTrajectory(problem, x)
    traj = HamrKnotTrajectory(model, raw.q, raw.u, raw.h, raw.contact_forces)
    ix = model.index["base_x"]
    iz = model.index["base_z"]
    figures = {
        "max_complementarity_violation": check.max_complementarity_violation,
        "complementarity": check.complementarity,
        "max_dynamics_residual": check.max_dynamics_residual,
        "max_loop_residual_mm": check.max_loop_residual,
        "max_constraint_violation": check.max_violation,
        "min_foot_height_mm": check.min_signed_distance,
        "max_slack": check.max_slack,
        "time_step_ms": raw.h,
        "duration_ms": float(raw.times[-1]),
        "most_violated_constraints": check.MostViolated(10),
        "stages": [list(stage) for stage in getattr(outcome, "stages", [])],
        "max_voltage_v": float(np.max(raw.u)) if raw.u.size else None,
        "min_voltage_v": float(np.min(raw.u)) if raw.u.size else None,
    }
    figures["objective"] = Objective(problem, x)
    modes = getattr(outcome, "modes", None)
    if modes is not None:
        figures["fixed_contact_modes"] = modes.Counts()
    first = getattr(outcome, "first_stage", None)
    if first is not None and first is not outcome:
        figures["first_stage_objective"] = Objective(problem, first.result.get_x_val())
        figures["first_stage_max_violation"] = CheckContactImplicitSolution(
            problem, first.result.get_x_val(), tolerance=1e-6
        ).max_violation
    heights = raw.phi
    touching = ContactSchedule(heights, CONTACT_TOLERANCE_MM)
    figures["duty_factors"] = dict(
        zip(
            [c.name for c in model.dynamics.contacts],
            DutyFactors(touching[1:]).tolist(),
            strict=True,
        )
    )
    if kind == "hamr-gait":
        distance = float(raw.q[-1, ix] - raw.q[0, ix])
        figures["velocity_mm_per_cycle"] = distance
        figures["stride_time_ms"] = float(raw.times[-1])
        figures["speed_mm_per_s"] = distance / (raw.times[-1] * 1e-3)
        figures["slip"] = NormalizedSlip(raw.q[:, ix], traj.feet_world[:, :, 0])
        # Loaded feet skidding in any direction (Eq. 23 counts backward motion only), mm per
        # stride summed over the feet; a foot counts as loaded above 1 % of the weight.
        figures["loaded_slide_mm_per_cycle"] = LoadedSlide(
            traj.feet_world, traj.contact_forces[:, :, 2], 0.01 * model.weight
        )
        figures["frequency_hz"] = frequency
        figures["realized_frequency_hz"] = 1000.0 / float(raw.times[-1])
    else:
        height = raw.q[:, iz] - model.home[iz]
        # The apex: the highest knot, or, if the body still rises at the last knot, where its
        # ballistic flight from there peaks (z + v^2 / 2g).
        v_end = float(raw.qdot[-1, iz])
        ballistic = float(height[-1] + max(v_end, 0.0) ** 2 / (2 * ht_gravity()))
        figures["max_knot_height_mm"] = float(np.max(height))
        figures["final_vertical_velocity_mm_per_ms"] = v_end
        figures["apex_height_mm"] = max(float(np.max(height)), ballistic)
        figures["apex_time_ms"] = float(raw.times[int(np.argmax(height))])
        figures["final_height_mm"] = float(height[-1])
        figures["goal_height_mm"] = settings.height
        figures["final_rpy_deg"] = np.degrees(traj.rpy[-1]).tolist()
        figures["final_xy_mm"] = traj.base_position[-1, :2].tolist()
    failure = None
    if not outcome.success:
        failure = f"the solver did not converge ({outcome.status})"
    elif check.max_violation > FEASIBILITY_TARGET:
        failure = (
            f"constraints violated by up to {check.max_violation:.3g} "
            f"(worst: {check.MostViolated(1)[0][0]})"
        )
    elif check.max_complementarity_violation > COMPLEMENTARITY_TARGET:
        failure = (
            f"true complementarity {check.max_complementarity_violation:.3g} above "
            f"{COMPLEMENTARITY_TARGET:g}"
        )
    return {
        "failure": failure,
        "figures": figures,
        "trajectory": traj,
        "raw": raw,
        "check": check,
        "dynamics_evaluations": int(model.dynamics.evaluation_counts["interval"]),
    }


def SolverLog(outcome) -> str:
    """The solver's own log of every stage of a SolveHamrProblem outcome (IPOPT's iterations
    and timing, SNOPT's print file), each under a header with the stage's status and seconds."""
    parts = [
        f"===== stage {i + 1}: {name} ({seconds:.1f} s) =====\n{log}"
        for i, ((name, seconds), log) in enumerate(
            zip(outcome.stages, outcome.stage_logs, strict=False)
        )
        if log
    ]
    return "\n".join(parts)


def Objective(problem, x) -> float:
    """The program's cost (Eq. 16 or 17 plus the slack penalty) at the decision vector x."""
    prog = problem.prog
    return float(
        sum(
            b.evaluator().Eval(x[prog.FindDecisionVariableIndices(b.variables())])[0]
            for b in prog.GetAllCosts()
        )
    )


def ht_gravity() -> float:
    """Gravity in HAMR-VI's units, mm/ms^2."""
    from drakebots.hamr.robot import GRAVITY

    return GRAVITY


def SolutionArrays(model, problem, outcome, report) -> dict:
    """solution.npz: every decision variable group, the trajectory and what `track` needs."""
    x = outcome.result.get_x_val()
    arrays = {}
    for name, variables in problem.vars.Groups().items():
        v = np.asarray(variables)
        arrays[f"var_{name}"] = (
            x[problem.prog.FindDecisionVariableIndices(v.ravel())].reshape(v.shape)
            if v.size
            else np.zeros(v.shape)
        )
    traj = report["trajectory"]
    raw = report["raw"]
    arrays.update(
        times=traj.times,
        q=traj.q,
        u=traj.u,
        h=np.array(traj.h),
        base_position=traj.base_position,
        rpy=traj.rpy,
        feet_world=traj.feet_world,
        feet_body=traj.feet_body,
        contact_forces=traj.contact_forces,
        foot_heights=raw.phi,
        decision_vector=x,
        position_names=np.array(model.plant.GetPositionNames(add_model_instance_prefix=False)),
        actuator_names=np.array(model.actuator_names),
        surface=np.array(model.surface),
        friction=np.array(model.friction),
    )
    return arrays


def SolutionFigures(model, report, kind: str, *, title_prefix: str = "") -> dict:
    """feet.png, legs.png, inputs.png, forces.png, body.png."""
    from drakebots.visualization.trajopt_plots import (
        PlotBodyPose,
        PlotContactForces,
        PlotFeetInBodyFrame,
        PlotInputs,
        PlotLegHeights,
    )

    traj = report["trajectory"]
    raw = report["raw"]
    legs = [c.name for c in model.dynamics.contacts]
    touching = ContactSchedule(raw.phi, CONTACT_TOLERANCE_MM)
    prefix = title_prefix or ("optimized gait" if kind == "hamr-gait" else "optimized jump")
    return {
        "feet.png": PlotFeetInBodyFrame(
            traj.feet_body, touching, legs, title=f"{prefix}: feet in the body frame"
        ),
        "legs.png": PlotLegHeights(
            traj.times,
            raw.phi,
            legs,
            in_contact=touching,
            title=f"{prefix}: leg heights and contact timing",
        ),
        "inputs.png": PlotInputs(
            traj.times,
            traj.u,
            list(model.actuator_names),
            bounds=(0.0, 225.0),
            title=f"{prefix}: drive voltages",
        ),
        "forces.png": PlotContactForces(
            traj.times[1:],
            traj.contact_forces,
            legs,
            friction=model.friction,
            weight=model.weight,
            title=f"{prefix}: contact forces",
        ),
        "body.png": PlotBodyPose(
            traj.times, traj.base_position, traj.rpy, title=f"{prefix}: body pose"
        ),
    }


def SolutionReplay(model, report, kind: str, *, seconds_per_stride: float = 2.0) -> str:
    """replay.html: a slowed-down Meshcat recording (3 strides of a gait; the jump once)."""
    from drakebots.hamr.replay import HamrReplayDecorator
    from drakebots.robots import GetRobot
    from drakebots.visualization.replay import ReplayHtml

    traj = report["trajectory"]
    q, times = traj.q, traj.times
    if kind == "hamr-gait":
        from drakebots.optimization.contact_implicit import RepeatCycles

        q, times = RepeatCycles(q, times, model.index["base_x"], 3)
        scale = seconds_per_stride / max(traj.times[-1], 1e-9)
    else:
        scale = 3.0 / max(traj.times[-1], 1e-9)  # the jump in 3 s
    # Linear interpolation between knots for a smooth recording.
    fine = np.linspace(times[0], times[-1], 4 * (len(times) - 1) + 1)
    q_fine = np.column_stack([np.interp(fine, times, q[:, i]) for i in range(q.shape[1])])
    return ReplayHtml(GetRobot("hamr_vi"), fine * scale, q_fine, decorator=HamrReplayDecorator())
