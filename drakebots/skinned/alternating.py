"""The alternating motion-plan optimization of the skinned quad-robots (paper section 5, Fig. 2).

`RunAlternating` is the paper's loop:

1. Initialization (section 5.4): a space-time step *without* the trajectory-following term E_F,
   the skin's weight carried by the links (the `SkeletonModel`'s skin load), no coupling forces.
   We start it from a kinematic-only solve (the same program with `dynamics=False`), which puts
   the feet where the contact plan says in a few iterations; the dynamic solve then only has to
   add forces and the momentum constraint.
2. Frame-by-frame (sections 5.2-5.3): the per-frame QPCC tracks the space-time plan q̄ (cubic
   spline through the knots, sampled at every frame Δt) with the full dynamics, under the motor
   limits, the COP constraint and the contact complementarity: the motion q̃ it produces is
   physically feasible by construction.
3. If q̃ and q̄ agree (`AlternatingConfig.agreement`), stop. Otherwise the space-time step runs
   again with E_F pulling toward q̃, its weight raised by 10 % per iteration ("the algorithm leans
   toward physical plausibility"), and with the skin's coupling forces of the last pass as
   external loads (when the frame dynamics provides them: `CouplingLoads(knot_times)`), and the
   loop goes back to 2.

The frame dynamics is a *factory* `make_dynamics(model, dt) -> FrameDynamics`: the rigid-foot
`qpcc.RigidFrameDynamics` (skeleton only) or the coupled skin-skeleton one
(`qpcc_coupled.CoupledFrameDynamics`, the condensation of Eq. 10). The loop does not change.

Agreement is measured like the QPCC's E_F term: joint and torso angles in units of
`QpccConfig.angle_scale`, torso translation in units of `length_scale`; the motions agree when the
RMS of that scaled difference over all frames is at most `agreement` (1: within about one scale
unit, 0.05 rad / 1 cm by default) and the pass reached the last frame with every constraint held.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from drakebots.skinned.motion import SampledMotion
from drakebots.skinned.qpcc import FrameQpcc, QpccConfig, RunFrameByFrame
from drakebots.skinned.skeleton_model import NUM_BASE, SkeletonModel
from drakebots.skinned.space_time import (
    InitialGuess,
    InterpolateToFrames,
    KinematicWarmStart,
    MakeSpaceTimeProgram,
    SolveSpaceTime,
    SpaceTimeConfig,
    SpaceTimeResult,
)


@dataclasses.dataclass
class AlternatingConfig:
    """Options of the alternating loop (section 5)."""

    space_time: SpaceTimeConfig = dataclasses.field(default_factory=SpaceTimeConfig)
    qpcc: QpccConfig = dataclasses.field(default_factory=QpccConfig)
    # Space-time <-> frame-by-frame iterations at most; the loop stops at the first that agrees
    # (the paper runs it "until the convergence"; its walks agree in one, its trot in two, our
    # monster 0.11 m/s walk on the folded FEM skin in four).
    max_iterations: int = 5
    # E_F's weight grows by this factor per iteration (paper: 10 %).
    follow_growth: float = 1.1
    # The motions agree when the RMS scaled difference q̃ - q̄ is at most this (see module doc).
    agreement: float = 1.0
    # Start the dynamic space-time solve from a kinematic-only solve.
    kinematic_warm_start: bool = True
    # Kinematic-only baseline (section 7): no forces or momentum in the space-time step, one
    # frame-by-frame pass (the inverse dynamics of the kinematic plan: the joints follow it, the
    # root is left to the dynamics, `QpccConfig.joints_only`), no alternation.
    kinematic_only: bool = False
    # Hand the skin's coupling loads of each pass to the next space-time step (section 5.1). False
    # leaves the skin's effect out of every plan, not only the first: the condition of the
    # paper's Fig. 13c ("when the skin deformation is not considered in the space-time
    # optimization") held over the whole loop, so the E_F pull toward the last pass is all the
    # plan learns from the skin.
    skin_loads: bool = True


@dataclasses.dataclass
class IterationRecord:
    """One space-time + frame-by-frame iteration."""

    iteration: int
    follow_weight: float
    space_time: SpaceTimeResult
    q_plan: np.ndarray  # (N, nq) q̄ at frames
    frames: object  # qpcc.FrameByFrameResult
    difference_rms: float  # scaled RMS of q̃ - q̄ (see the module docstring)
    difference_max_joint: float  # max |joint angle difference|, rad
    difference_max_base: float  # max |torso translation difference|, m
    agreed: bool
    time_space_time: float
    time_frames: float
    # The state the pass started from, when its dynamics has more than the skeleton's (a FEM
    # skin: qpcc_coupled.CoupledFrameDynamics.initial), for replaying the pass; else None.
    start_state: object = None


@dataclasses.dataclass
class AlternatingResult:
    """The loop's iterations, and which one it keeps (`best`).

    `final` is the kept iteration: the agreeing one when the loop converged, otherwise the best
    so far (a complete feasible pass before an incomplete one, then the smaller q̃ - q̄
    difference). A later iteration that is worse than the best ends the loop.
    """

    iterations: list
    converged: bool
    reason: str
    best: int = -1

    @property
    def final(self) -> IterationRecord:
        return self.iterations[self.best]


def _StartState(dynamics):
    """A copy of the coupled state a pass started from (None for skeleton-only dynamics)."""
    initial = getattr(dynamics, "initial", None)
    return initial.copy() if initial is not None else None


def _Score(record: IterationRecord) -> tuple:
    """Larger is better: (complete feasible pass, frames done, -RMS difference)."""
    fr = record.frames
    feasible = not fr.infeasible and not fr.fell and fr.frames_done == len(record.q_plan) - 1
    return (feasible, int(fr.frames_done), -record.difference_rms)


def MotionDifference(model: SkeletonModel, q_a, q_b, config: QpccConfig):
    """(scaled RMS, max joint difference rad, max base translation difference m) over frames."""
    n = min(len(q_a), len(q_b))
    d = np.asarray(q_a[:n]) - np.asarray(q_b[:n])
    scale = np.full(model.nq, 1.0 / config.angle_scale)
    scale[:3] = 1.0 / config.length_scale
    rms = float(np.sqrt(np.mean((d * scale) ** 2)))
    return rms, float(np.abs(d[:, NUM_BASE:]).max()), float(np.abs(d[:, :3]).max())


def _SpaceTime(model, motion, config, *, q_follow, follow_weight, loads, limits, q_init, log):
    cfg = config.space_time
    start = time.perf_counter()
    if q_init is None and config.kinematic_warm_start and cfg.dynamics:
        result = KinematicWarmStart(model, motion, cfg, effort_limits=limits)
        log(f"  kinematic warm start: {result.status} ({result.solve_time:.1f} s)")
        q_init = result.q_knots
    problem = MakeSpaceTimeProgram(
        model,
        motion,
        cfg,
        q_follow=q_follow,
        follow_weight=follow_weight,
        loads=loads,
        effort_limits=limits,
    )
    result = SolveSpaceTime(model, problem, InitialGuess(model, problem, q_init))
    log(
        f"  space-time: {result.status}, cost {result.cost:.4g}, "
        f"{len(result.infeasible)} constraints violated ({time.perf_counter() - start:.1f} s)"
    )
    return result, time.perf_counter() - start


def RunAlternating(
    model: SkeletonModel,
    motion: SampledMotion,
    *,
    make_dynamics,
    config: AlternatingConfig | None = None,
    effort_limits: np.ndarray | None = None,
    log=print,
    frame_progress=None,
) -> AlternatingResult:
    """Runs the alternating optimization of Fig. 2 (see the module docstring).

    Args:
        model: the skeleton (with the skin's weight on its links for the space-time step).
        motion: the user's plan sampled at frames.
        make_dynamics: factory (model, dt) -> FrameDynamics for the frame-by-frame passes.
        config: loop options.
        effort_limits: U_m per motor, N·m (default: the skeleton's motors).
        log: callable(str) for progress lines.
        frame_progress: optional callable(frame, total) during frame-by-frame passes.
    """
    config = config or AlternatingConfig()
    if config.kinematic_only:
        # The plan without forces or momentum, then the paper's inverse dynamics: torques that
        # make the joints follow it, the root left to the dynamics, no COP constraint.
        config = dataclasses.replace(
            config,
            space_time=dataclasses.replace(config.space_time, dynamics=False),
            qpcc=dataclasses.replace(config.qpcc, joints_only=True, cop_constraint=False),
            max_iterations=1,
        )
    limits = model.effort_limits if effort_limits is None else np.asarray(effort_limits, float)
    records = []
    q_follow = None
    follow_weight = config.space_time.weights.follow
    loads = None
    q_init = None
    converged, reason = False, "iteration limit"
    best = -1
    for iteration in range(1, config.max_iterations + 1):
        log(
            f"iteration {iteration}: space-time"
            + (" (initialization, no E_F)" if q_follow is None else f" (α_f {follow_weight:.3g})")
        )
        st, t_st = _SpaceTime(
            model,
            motion,
            config,
            q_follow=q_follow,
            follow_weight=follow_weight,
            loads=loads,
            limits=limits,
            q_init=q_init,
            log=log,
        )
        q_plan = InterpolateToFrames(st.knot_times, st.q_knots, motion.times)
        dynamics = make_dynamics(model, motion.dt)
        qpcc = FrameQpcc(model, dynamics, limits, motion.spec.friction, config.qpcc)
        # A skinned robot stands on its skin's soles, above the skeleton's (the plan's) soles:
        # the frames track the plan raised by that much, and are lowered back for comparison.
        offset = np.zeros(model.nq)
        offset[2] = float(getattr(dynamics, "lift", 0.0))
        start = time.perf_counter()
        frames = RunFrameByFrame(
            model, dynamics, qpcc, q_plan + offset, motion.contact, progress=frame_progress
        )
        if offset[2]:
            frames.q = frames.q - offset
        t_fb = time.perf_counter() - start
        rms, max_joint, max_base = MotionDifference(model, frames.q, q_plan, config.qpcc)
        complete = frames.frames_done == motion.num_frames - 1 and not frames.fell
        feasible = complete and not frames.infeasible
        agreed = bool(feasible and rms <= config.agreement)
        log(
            f"  frame-by-frame: {frames.frames_done}/{motion.num_frames - 1} frames "
            f"({1e3 * np.mean(frames.frame_time) if len(frames.frame_time) else 0:.0f} ms/frame)"
            f", {len(frames.infeasible)} infeasible, q̃ - q̄: RMS {rms:.3g} scaled, "
            f"max joint {np.degrees(max_joint):.2f} deg, max torso {1e3 * max_base:.1f} mm"
        )
        records.append(
            IterationRecord(
                iteration=iteration,
                follow_weight=follow_weight if q_follow is not None else 0.0,
                space_time=st,
                q_plan=q_plan,
                frames=frames,
                difference_rms=rms,
                difference_max_joint=max_joint,
                difference_max_base=max_base,
                agreed=agreed,
                time_space_time=t_st,
                time_frames=t_fb,
                start_state=_StartState(dynamics),
            )
        )
        best = max(range(len(records)), key=lambda i: _Score(records[i]))
        if config.kinematic_only:
            converged = feasible
            reason = "kinematic-only baseline (one pass)" + (
                "" if feasible else f": {_FailureText(frames)}"
            )
            break
        if agreed:
            converged, reason = True, f"motions agree after {iteration} iteration(s)"
            best = len(records) - 1
            break
        if best != len(records) - 1:
            # Worse than an earlier iteration: E_F toward this pass would pull further from a
            # physically feasible motion (measured: the loop diverged after iteration 1).
            log(
                f"  iteration {iteration} is worse than iteration {best + 1}: stopping, "
                f"keeping iteration {best + 1}"
            )
            break
        # E_F toward the frame-by-frame motion (at the knots; frames after a failed pass's last
        # frame keep the plan), weight +10 %.
        q_tilde = q_plan.copy()
        q_tilde[: len(frames.q)] = frames.q
        knots = np.searchsorted(motion.times, st.knot_times - 1e-9)
        if q_follow is not None:
            follow_weight *= config.follow_growth
        q_follow = q_tilde[np.clip(knots, 0, len(q_tilde) - 1)]
        q_init = st.q_knots
        coupling = getattr(dynamics, "CouplingLoads", None) if config.skin_loads else None
        loads = coupling(st.knot_times) if coupling is not None else None
    if not converged and records:
        kept = records[best]
        reason = (
            f"not converged after {len(records)} iteration(s) (kept iteration {kept.iteration}): "
            + _FailureText(kept.frames, kept)
        )
    return AlternatingResult(iterations=records, converged=converged, reason=reason, best=best)


def _FailureText(frames, record=None) -> str:
    if frames.infeasible:
        frame, names = frames.infeasible[0]
        return f"frame {frame} infeasible ({', '.join(names)})"
    if frames.fell:
        return f"the robot fell at frame {frames.frames_done}"
    if record is not None:
        return f"motions differ (RMS {record.difference_rms:.3g} scaled > agreement)"
    return "incomplete pass"
