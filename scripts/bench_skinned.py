"""Benchmark of the skinned quad-robots' motion optimization (issue 6).

Space-time part (this file's `SpaceTimeSection`):
- evaluating the whole space-time program (all costs and constraints with Jacobians) through the
  MathematicalProgram's bindings (Drake AutoDiff, one binding at a time: what a generic SQP or
  SNOPT does) against the vectorised `SpaceTimeNlp` (ratio, same x, same run);
- one space-time step (kinematic warm start + the dynamic Gauss-Newton SQP) on the beetle's
  single-foot lift, wall time against the paper's "around 40 seconds" (section 7) and the goal of
  10 s, with the solver status and the independent constraint check.

The frame-by-frame (QPCC) part is `QpccSection`, filled in by the coupled-QPCC work
(qpcc_coupled.py): per-frame time per robot against Table 1, condensed against uncondensed, and
the factorisation lower bound.

Usage: python scripts/bench_skinned.py [--out runs/bench/skinned.json] [--knot-frames 8]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

PAPER_SPACE_TIME_S = 40.0  # section 7: "The space-time optimization step ... is around 40 seconds"


def SpaceTimeSection(args) -> dict:
    from pydrake.autodiffutils import InitializeAutoDiff

    from drakebots.optimization import motions
    from drakebots.optimization.motion import SampleMotion
    from drakebots.optimization.skeleton_model import SkeletonModel
    from drakebots.optimization.space_time import (
        InitialGuess,
        MakeSpaceTimeProgram,
        SolveSpaceTime,
        SpaceTimeConfig,
    )
    from drakebots.optimization.space_time_nlp import SpaceTimeNlp

    model = SkeletonModel("beetle")
    motion = SampleMotion(motions.SingleFootLift(model))
    config = SpaceTimeConfig(knot_frames=args.knot_frames, max_iterations=args.max_iterations)
    problem = MakeSpaceTimeProgram(model, motion, config)
    prog = problem.prog
    x = InitialGuess(model, problem)
    # Evaluation: bindings one by one (AutoDiff) vs vectorised.
    start = time.perf_counter()
    for b in list(prog.GetAllCosts()) + list(prog.GetAllConstraints()):
        idx = prog.FindDecisionVariableIndices(b.variables())
        b.evaluator().Eval(InitializeAutoDiff(x[idx]))
    per_binding = time.perf_counter() - start
    nlp = SpaceTimeNlp(problem)
    start = time.perf_counter()
    nlp.Evaluate(x, True)
    vectorised = time.perf_counter() - start
    # One space-time step: kinematic warm start, then the dynamic solve.
    start = time.perf_counter()
    kin = MakeSpaceTimeProgram(
        model, motion, SpaceTimeConfig(knot_frames=args.knot_frames, dynamics=False)
    )
    warm = SolveSpaceTime(model, kin, InitialGuess(model, kin))
    result = SolveSpaceTime(model, problem, InitialGuess(model, problem, warm.q_knots))
    step = time.perf_counter() - start
    return {
        "robot": "beetle",
        "motion": "single-foot-lift",
        "frames": motion.num_frames,
        "knots": len(problem.targets.times),
        "variables": prog.num_vars(),
        "evaluation_per_binding_s": per_binding,
        "evaluation_vectorised_s": vectorised,
        "evaluation_speedup": per_binding / vectorised,
        "kinematic_warm_start": {"status": warm.status, "time_s": warm.solve_time},
        "space_time_status": result.status,
        "space_time_violated_constraints": result.infeasible[:10],
        "space_time_step_s": step,
        "paper_space_time_step_s": PAPER_SPACE_TIME_S,
        "ratio_to_paper": step / PAPER_SPACE_TIME_S,
        "goal_s": 10.0,
        "load_average": os.getloadavg()[0],
        "max_torque_ratio": float(np.abs(result.joint_torques / model.effort_limits).max()),
    }


def QpccSection(args) -> dict:
    """Per-frame QPCC figures (Table 1, condensed vs uncondensed): added by the coupled-QPCC
    work (drakebots/optimization/qpcc_coupled.py)."""
    return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/bench/skinned.json")
    parser.add_argument("--knot-frames", type=int, default=8)
    parser.add_argument("--max-iterations", type=int, default=40)
    args = parser.parse_args()
    report = {"space_time": SpaceTimeSection(args), "qpcc": QpccSection(args)}
    st = report["space_time"]
    print(f"{'figure':<44}{'value':>14}")
    for key in (
        "knots",
        "variables",
        "evaluation_per_binding_s",
        "evaluation_vectorised_s",
        "evaluation_speedup",
        "space_time_step_s",
        "ratio_to_paper",
        "load_average",
    ):
        value = st[key]
        print(f"{key:<44}{value:>14.4g}" if isinstance(value, float) else f"{key:<44}{value:>14}")
    print(
        f"space-time status: {st['space_time_status']}; "
        f"violated: {st['space_time_violated_constraints']}"
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
