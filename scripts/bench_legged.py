"""Benchmark: contact-implicit trots and jumps of published quadrupeds (issue 67, part 2).

Workload (the issue's, on the robots as users have them: scripts/examples/published/*.yaml):
for Solo-12 at its real 2.7 N m, A1 and ANYmal C at their URDF effort limits, a trot (0.4 s
period, 0.1 m per cycle, `gait: trot`, its left-right symmetry and foot sequence as constraints)
and a 0.1 m jump with a flight phase, each planned by drakebots.optimization.legged
(MakeGaitProblem / MakeJumpProblem, SolveMotion: IPOPT on the fast path's Gauss-Newton
Hessian, the slack homotopy, the proximal repair) from its gait-shaped warm start, no tuning
per robot.

For each robot and motion it records the solve's wall and CPU time, IPOPT iterations, status,
the largest constraint violation, the true complementarity (force x length, the robot's units),
whether the PLAN meets the acceptance tolerances (1e-4 each: `plan_accepted`), what the plan
reaches (distance per cycle, apex height, knots with every foot off the ground before the apex,
the lowest guard point) and the limits it holds. The closed-loop tracking acceptance is the
track helper's (drakebots.optimization.legged_report) and is not run here.

Speed is also stated as a ratio against a reference measured in the same run on the same
machine: the 21-knot trot of the 3 kg test quadruped of tests/optimization/data/quad12 (the
machine's load moves both alike). Targets (issue 67): each solve <= 120 s, median <= 30 s on a
2-core machine.

    python3 scripts/bench_legged.py --out bench_legged.json           # all three robots
    python3 scripts/bench_legged.py --quick --out bench_legged.json   # Solo-12 only
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PUBLISHED = ROOT / "scripts" / "examples" / "published"
ROBOTS = {
    "solo12": PUBLISHED / "solo12.yaml",
    "a1": PUBLISHED / "a1.yaml",
    "anymal_c": PUBLISHED / "anymal_c.yaml",
}
REFERENCE = ROOT / "tests" / "optimization" / "data" / "quad12" / "quad12.yaml"
PERIOD_S, DISTANCE_M, JUMP_M = 0.4, 0.1, 0.1


def Plan(robot_file: Path, motion: str, knots: int, say) -> dict:
    """One plan of `motion` ("trot" or "jump") for the robot file; its figures."""
    from drakebots.optimization.contact_implicit import ReconstructTrajectory
    from drakebots.optimization.legged import (
        GaitConfig,
        GuardPoints,
        JumpConfig,
        MakeGaitProblem,
        MakeJumpProblem,
        MakeRobotTrajoptModel,
        SolveMotion,
    )
    from drakebots.robots import GetRobot
    from drakebots.workflow import Reporter

    model = MakeRobotTrajoptModel(GetRobot(str(robot_file)))
    if motion == "trot":
        config = GaitConfig(
            robot=str(robot_file), period=PERIOD_S, distance=DISTANCE_M, knots=knots, gait="trot"
        )
        make = MakeGaitProblem
    else:
        config = JumpConfig(robot=str(robot_file), height=JUMP_M, knots=knots)
        make = MakeJumpProblem
    start = time.perf_counter()
    problem = make(model, config)
    build_s = time.perf_counter() - start
    cpu = time.process_time()
    wall = time.perf_counter()
    outcome, check, stages = SolveMotion(
        problem, config.solver, Reporter(lambda e: say(e.message) if e.message else None)
    )
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    traj = ReconstructTrajectory(problem, outcome.result.get_x_val())
    q, names = traj.q, model.position_names
    z = model.z_index
    bodies, points, _ = GuardPoints(model)
    plant = model.plant
    context = plant.CreateDefaultContext()
    lowest = np.inf
    for qk in q:
        plant.SetPositions(context, qk)
        for b in bodies:
            body = plant.get_body(_Index(b))
            lowest = min(lowest, float(plant.EvalBodyPoseInWorld(context, body).translation()[2]))
    lower, upper = plant.GetPositionLowerLimits(), plant.GetPositionUpperLimits()
    row = {
        "robot_file": str(
            robot_file.relative_to(ROOT) if robot_file.is_relative_to(ROOT) else robot_file
        ),
        "motion": motion,
        "workload": (
            f"trot, {PERIOD_S} s period, {DISTANCE_M} m per cycle"
            if motion == "trot"
            else f"jump, {JUMP_M} m apex with a flight phase"
        ),
        "knots": knots,
        "variables": int(problem.prog.num_vars()),
        "build_s": build_s,
        "solve_s": wall,
        "solve_cpu_s": cpu,
        "iterations": outcome.iterations,
        "status": outcome.status,
        "stages": [[name, status, seconds] for name, status, seconds in stages],
        "max_violation": float(check.max_violation),
        "complementarity": float(check.max_complementarity_violation),
        "plan_accepted": bool(
            check.max_violation <= config.solver.feasibility_tolerance
            and check.max_complementarity_violation <= config.solver.complementarity_tolerance
        ),
        "effort_limit_max": float(np.max(model.effort_limits)),
        "effort_used_max": float(np.max(np.abs(traj.u) / model.effort_limits)),
        "joint_limit_margin": float(np.min(np.minimum(q - lower, upper - q)[:, 6:])),
        "lowest_guard_m": lowest,
        # IPOPT's time split (evaluation, linear algebra, the rest) of the last IPOPT call.
        "profile": {
            k: v
            for k, v in (getattr(outcome, "profile", None) or {}).items()
            if isinstance(v, (int, float, str))
        },
    }
    if motion == "trot":
        row["distance_per_cycle_m"] = float(q[-1, model.x_index] - q[0, model.x_index])
        row["base_y_range_m"] = float(np.ptp(q[:, names.index("base_y")]))
        # Each foot's sequence over the knots: "#" on the ground (within 0.1 mm), "." above.
        row["feet_down"] = {
            name: "".join("#" if h < 1e-4 else "." for h in traj.phi[:, c])
            for c, name in enumerate(model.contact_names)
        }
    else:
        row["apex_m"] = float(q[-1, z] - model.home[z])
        airborne = np.all(traj.phi > 0.005 * model.home[z], axis=1)
        count = 0
        for flag in airborne[::-1]:
            if not flag:
                break
            count += 1
        row["airborne_knots_to_apex"] = count
    return row


def _Index(i):
    from pydrake.multibody.tree import BodyIndex

    return BodyIndex(int(i))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="JSON file to write")
    parser.add_argument("--quick", action="store_true", help="Solo-12 only")
    parser.add_argument("--knots", type=int, default=21, help="knots of each plan (21)")
    parser.add_argument("--motions", default="trot,jump", help="trot,jump (default both)")
    parser.add_argument("--quiet", action="store_true", help="no IPOPT progress lines")
    parser.add_argument(
        "--robot-file",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="use this robot file for solo12, a1 or anymal_c (repeatable)",
    )
    args = parser.parse_args(argv)
    for item in args.robot_file:
        name, _, path = item.partition("=")
        if name not in ROBOTS or not path:
            parser.error(f"--robot-file: NAME=PATH with NAME one of {', '.join(ROBOTS)}")
        ROBOTS[name] = Path(path).resolve()

    def Say(message):
        if not args.quiet:
            print(f"    {message}", flush=True)

    robots = {"solo12": ROBOTS["solo12"]} if args.quick else ROBOTS
    motions = [m for m in args.motions.split(",") if m]
    print(f"reference: quad12 trot, {args.knots} knots", flush=True)
    reference = Plan(REFERENCE, "trot", args.knots, Say)
    print(f"  {reference['solve_s']:.1f} s ({reference['solve_cpu_s']:.1f} s CPU)", flush=True)
    rows = []
    for name, path in robots.items():
        for motion in motions:
            print(f"{name} {motion}", flush=True)
            if not path.exists():
                rows.append({"robot": name, "motion": motion, "status": f"missing {path}"})
                print(f"  missing {path}", flush=True)
                continue
            row = {"robot": name, **Plan(path, motion, args.knots, Say)}
            row["solve_over_reference"] = row["solve_s"] / reference["solve_s"]
            rows.append(row)
            print(
                f"  {row['solve_s']:.1f} s ({row['solve_cpu_s']:.1f} s CPU), {row['iterations']} "
                f"iterations, {row['status']}; violation {row['max_violation']:.1e}, "
                f"complementarity {row['complementarity']:.1e}, plan accepted "
                f"{row['plan_accepted']}",
                flush=True,
            )
    times = [r["solve_s"] for r in rows if "solve_s" in r]
    import drakebots

    summary = {
        "benchmark": "bench_legged: published quadrupeds' trots and jumps (issue 67)",
        "machine": platform.platform(),
        "python": platform.python_version(),
        "drakebots": getattr(drakebots, "__version__", ""),
        "reference": {"robot": "quad12", **reference},
        "rows": rows,
        "max_solve_s": max(times) if times else None,
        "median_solve_s": float(np.median(times)) if times else None,
        "targets": {"max_solve_s": 120.0, "median_solve_s": 30.0},
    }
    print(
        f"median {summary['median_solve_s']} s, max {summary['max_solve_s']} s over {len(times)} "
        "solves",
        flush=True,
    )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2, default=str))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
