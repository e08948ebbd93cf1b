"""Benchmark of the skinned quad-robots' motion optimization (issue 6).

Space-time part (this file's `SpaceTimeSection`):
- evaluating the whole space-time program (all costs and constraints with Jacobians) through the
  MathematicalProgram's bindings (Drake AutoDiff, one binding at a time: what a generic SQP or
  SNOPT does) against the vectorised `SpaceTimeNlp` (ratio, same x, same run);
- one space-time step (kinematic warm start + the dynamic Gauss-Newton SQP) on the beetle's
  single-foot lift, wall time against the paper's "around 40 seconds" (section 7) and the goal of
  10 s, with the solver status and the independent constraint check.

Frame-by-frame part (`QpccSection`, the coupled QPCC of qpcc_coupled.py on each robot's
`drakebots skin` folder, runs/<robot>_skin):
- per-frame time (linearise + labelling QPs) per robot against Table 1 of the paper (4-core
  i7-7700; goal: 3x faster here), with its parts (assemble, reduce, factorise, condense, QPs);
- the lower bound of a frame: one factorisation of the coupled system (frame / factor ratio);
- condensed against uncondensed QPCC on the same frame and labels (paper: about 50x).

Design-frame part (`DesignFramesSection`, issues 49 and 52: like for like with a real design run):
- the first `--design-frames` walking frames of the monster's 0.06 m/s walk on its folded skin
  (the README's design command), run by the design workflow itself once per factorisation
  (`--design-solvers`, default PARDISO then SciPy's SuperLU, the reference), same process, same
  plan: seconds per frame (`design_frame_s`), the ratio to the reference, and the largest torque
  and state difference between the two (the same frames to solver tolerance);
- one numeric factorisation of that run's real reduced matrix K_red by each backend that loads
  (`factorization_s`: PARDISO's; SuperLU's and CHOLMOD's beside it, their ratios).

Usage: python scripts/bench_skinned.py [--out runs/bench/skinned.json] [--robots beetle,cow]
       [--frames 4] [--no-uncondensed] [--skip-space-time] [--skip-design]
       [--design-skin runs/monster_skin] [--design-frames 6]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

PAPER_SPACE_TIME_S = 40.0  # section 7: "The space-time optimization step ... is around 40 seconds"


def SpaceTimeSection(args) -> dict:
    from pydrake.autodiffutils import InitializeAutoDiff

    from drakebots.skinned import motions
    from drakebots.skinned.motion import SampleMotion
    from drakebots.skinned.skeleton_model import SkeletonModel
    from drakebots.skinned.space_time import (
        InitialGuess,
        KinematicWarmStart,
        MakeSpaceTimeProgram,
        SolveSpaceTime,
        SpaceTimeConfig,
    )
    from drakebots.skinned.space_time_nlp import SpaceTimeNlp

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
    warm = KinematicWarmStart(model, motion, config)
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


# Table 1 of the paper: average time per frame of the frame-by-frame QPCC (4-core i7-7700), s.
PAPER_FRAME_S = {"beetle": 3.2, "monster": 8.98, "lizard": 8.41, "cow": 6.56}
PAPER_CONDENSED_SPEEDUP = 50.0  # section 7: condensation makes a frame "about 50 times" faster


def _CoupledFrames(robot: str, skin, frames: int) -> dict:
    """Runs `frames` frames of the coupled QPCC on a standing robot asked to shift its torso
    1 cm sideways and roll 0.05 rad (all four feet planted), timing each part."""
    from drakebots.skinned.qpcc import FrameQpcc, QpccConfig
    from drakebots.skinned.qpcc_coupled import CoupledFrameDynamics
    from drakebots.skinned.skeleton_model import SkeletonModel, SkinLoad

    model = SkeletonModel(robot, skin_load=SkinLoad())
    start = time.perf_counter()
    dyn = CoupledFrameDynamics(model, skin, 0.005)
    setup = time.perf_counter() - start
    qpcc = FrameQpcc(model, dyn, model.effort_limits, 0.8, QpccConfig())
    q, v = dyn.q_stand.copy(), np.zeros(model.nv)
    target = q.copy()
    target[1] += 0.01
    target[5] += 0.05
    tau = np.zeros(model.nu)
    rows = []
    for _ in range(frames):
        t0 = time.perf_counter()
        lin = dyn.Linearize(q, v)
        t1 = time.perf_counter()
        r = qpcc.SolveFrame(
            q, v, target, v * 0.005, tau, flat_feet=range(4), support_feet=range(4), lin=lin
        )
        t2 = time.perf_counter()
        rows.append(
            {
                "frame_s": t2 - t0,
                "linearize_s": t1 - t0,
                "qp_loop_s": t2 - t1,
                "factor_s": lin.timings["factor"],
                "assemble_s": lin.timings["assemble"],
                "reduce_s": lin.timings["reduce"],
                "condense_s": lin.timings["condense"],
                "qps": int(r.iterations),
                "infeasible": list(r.infeasible),
                "max_torque_ratio": float(np.abs(r.tau / model.effort_limits).max()),
            }
        )
        q, v, tau = r.q_next, r.v_next, r.tau
    mean = {k: float(np.mean([row[k] for row in rows])) for k in rows[0] if k.endswith("_s")}
    return {
        "vertices": int(dyn.n),
        "setup_s": setup,
        "frames": frames,
        "per_frame": rows,
        "mean": mean,
        "dynamics": dyn,
        "qpcc": qpcc,
        "model": model,
    }


def QpccSection(args) -> dict:
    """Per-frame coupled QPCC time per robot against Table 1, the factorisation lower bound, and
    condensed against uncondensed QPCC on the same frame."""
    from drakebots.skinned.qpcc import BREAKAGE, STATIC
    from drakebots.skinned.qpcc_coupled import UncondensedQp
    from drakebots.skinned.skin import LoadSkin

    out = {"robots": {}, "load_average_start": os.getloadavg()[0]}
    for robot in args.robots:
        folder = Path(args.skins) / f"{robot}_skin"
        if not (folder / "skin.npz").is_file():
            out["robots"][robot] = {
                "skipped": f"no skin at {folder} (make it with: drakebots skin {robot} "
                f"--out {folder})"
            }
            continue
        print(f"[qpcc] {robot}: {args.frames} coupled frames ...", flush=True)
        try:
            run = _CoupledFrames(robot, LoadSkin(folder), args.frames)
        except (ValueError, RuntimeError) as e:  # e.g. a skin whose sole touches a glue vertex
            out["robots"][robot] = {"failed": f"{type(e).__name__}: {e}"}
            print(f"[qpcc] {robot}: FAILED ({e})", flush=True)
            continue
        # The first frame includes one-time work (CHOLMOD's symbolic analysis): report the rest.
        rows = run["per_frame"][1:] or run["per_frame"]
        frame = float(np.mean([r["frame_s"] for r in rows]))
        factor = float(np.mean([r["factor_s"] for r in rows]))
        out["robots"][robot] = {
            "vertices": run["vertices"],
            "setup_s": run["setup_s"],
            "frames_timed": len(rows),
            "frame_s": frame,
            "factor_s": factor,
            "frame_s_each": [r["frame_s"] for r in rows],
            "factor_s_each": [r["factor_s"] for r in rows],
            "frame_over_factor": frame / factor,
            "assemble_s": float(np.mean([r["assemble_s"] for r in rows])),
            "reduce_s": float(np.mean([r["reduce_s"] for r in rows])),
            "condense_s": float(np.mean([r["condense_s"] for r in rows])),
            "qp_loop_s": float(np.mean([r["qp_loop_s"] for r in rows])),
            "qps_per_frame": float(np.mean([r["qps"] for r in rows])),
            "paper_frame_s": PAPER_FRAME_S[robot],
            "speedup_vs_paper": PAPER_FRAME_S[robot] / frame,
            "goal_speedup": 3.0,
            "infeasible_frames": sum(bool(r["infeasible"]) for r in run["per_frame"]),
            "max_torque_ratio": max(r["max_torque_ratio"] for r in run["per_frame"]),
        }
        if robot == args.uncondensed_robot and not args.no_uncondensed:
            # Condensed vs uncondensed: the same labelled QP (all static but the rear right
            # foot, which may lift) on the same frame, built and solved both ways.
            dyn, qpcc, model = run["dynamics"], run["qpcc"], run["model"]
            if args.uncondensed_skin == "pad":
                # The tests' 8 mm foot-pad skin (~4.5k vertices): Clarabel solves the
                # uncondensed QP of a full skin (46k dofs) only after ~10 min, if at all.
                from drakebots.skinned.qpcc import FrameQpcc, QpccConfig
                from drakebots.skinned.qpcc_coupled import CoupledFrameDynamics

                sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root
                from tests.skinned._pad_skin import MakeFootPadSkin

                dyn = CoupledFrameDynamics(model, MakeFootPadSkin(model), 0.005)
                qpcc = FrameQpcc(model, dyn, model.effort_limits, 0.8, QpccConfig())
            dyn.Reset(dyn.initial)
            q, v = dyn.q_stand.copy(), np.zeros(model.nv)
            target = q.copy()
            target[1] += 0.01
            tau = np.zeros(model.nu)
            P = dyn.num_patches
            labels = [STATIC] * (P - 5) + [BREAKAGE] * 5
            print(f"[qpcc] {robot}: condensed vs uncondensed QP ...", flush=True)
            t0 = time.perf_counter()
            lin = dyn.Linearize(q, v)
            H, g, c = qpcc._Objective(q, lin, target, v * 0.005, tau, range(4), range(4))
            condensed = qpcc._SolveLabelled(lin, H, g, c, labels, {})
            t_condensed = time.perf_counter() - t0
            t0 = time.perf_counter()
            reference = UncondensedQp(
                qpcc,
                dyn,
                lin,
                labels,
                q,
                target,
                v * 0.005,
                tau,
                flat_feet=range(4),
                support_feet=range(4),
            )
            t_unc = time.perf_counter() - t0
            out["condensed_vs_uncondensed"] = {
                "robot": robot,
                "skin": args.uncondensed_skin,
                "skin_vertices": int(dyn.n),
                "condensed_frame_qp_s": t_condensed,
                "condensed_qp_only_s": t_condensed - lin.timings["total"],
                "uncondensed_qp_s": t_unc,
                "uncondensed_variables": int(reference["num_vars"]),
                "uncondensed_status": str(reference["status"]),
                "speedup_frame": t_unc / t_condensed,
                "speedup_qp": t_unc / max(t_condensed - lin.timings["total"], 1e-9),
                "paper_speedup": PAPER_CONDENSED_SPEEDUP,
                "max_torque_difference_nm": float(
                    np.abs(condensed["z"][: model.nu] - reference["z"][: model.nu]).max()
                ),
                "energy_relative_difference": float(
                    abs(condensed["energy"] - reference["energy"])
                    / max(abs(reference["energy"]), 1e-12)
                ),
            }
    out["load_average_end"] = os.getloadavg()[0]
    return out


class _StopAfterFrames(Exception):
    """Raised by the patched frame-by-frame pass once its frames are timed."""

    def __init__(self, frames, dynamics):
        super().__init__("frames timed")
        self.frames = frames
        self.dynamics = dynamics


def _DesignFrames(args, solver: str):
    """The first `args.design_frames` frames of the design run's first frame-by-frame pass, with
    the coupled frames factorised by `solver` (the design workflow runs them: same plan, same
    QPCC, same skin)."""
    from drakebots.skinned import alternating
    from drakebots.skinned.design import Design, DesignConfig

    original = alternating.RunFrameByFrame
    count = args.design_frames + 1

    def FirstFrames(model, dynamics, qpcc, q_plan, contact_plan, **kwargs):
        kwargs["progress"] = None
        frames = original(model, dynamics, qpcc, q_plan[:count], contact_plan[:, :count], **kwargs)
        raise _StopAfterFrames(frames, dynamics)

    config = DesignConfig(
        robot="monster",
        motion="walk",
        speed=0.06,
        motor_limit=5.9,
        skin=str(args.design_skin),
        linear_solver=solver,
        iterations=1,
        coupled_replay_seconds=0.0,
        replay=False,
    )
    alternating.RunFrameByFrame = FirstFrames
    try:
        Design(config)
    except _StopAfterFrames as stop:
        return stop.frames, stop.dynamics
    finally:
        alternating.RunFrameByFrame = original
    raise RuntimeError("the design run ended before its frame-by-frame pass")


def _FactorTimes(K, ordering) -> dict:
    """One numeric factorisation of K by each backend that loads (the symbolic analysis, done
    once per pattern in a run, is timed apart), seconds; SuperLU in `ordering` (the QPCC's:
    METIS on the skin's vertices, the skeleton's coordinates last)."""
    from drakebots.fem.solvers import (
        CholmodAvailable,
        CholmodFactor,
        OrderedSplu,
        PardisoAvailable,
        PardisoFactor,
    )

    out = {}
    makers = {"splu": lambda: OrderedSplu(ordering)}
    if PardisoAvailable():
        makers["pardiso"] = PardisoFactor
    if CholmodAvailable():
        makers["cholmod"] = lambda: CholmodFactor("nesdis")
    for name, make in makers.items():
        factor = make()
        t0 = time.perf_counter()
        factor.Factor(K)  # the analysis (and SuperLU's ordering) plus a first factorisation
        t1 = time.perf_counter()
        factor.Factor(K)  # the numeric factorisation alone
        t2 = time.perf_counter()
        out[name] = {"first_s": t1 - t0, "numeric_s": t2 - t1}
    return out


def DesignFramesSection(args) -> dict:
    """Seconds per walking frame of a real design run, each factorisation against SuperLU (see
    the module docstring)."""
    skin = Path(args.design_skin)
    if not (skin / "skin.npz").is_file():
        return {
            "skipped": f"no skin at {skin} (make it with the README's command: drakebots skin "
            "monster --pieces --youngs-modulus 6.7e5 --folding-regions knees,ankles --fold-depth "
            f"0.012 --fold-pitch 0.024 --voxel 0.008 --out {skin})"
        }
    out = {
        "workload": "monster walk 0.06 m/s at 5.9 N*m on its folded FEM skin (the README's "
        f"design command): the first {args.design_frames} frames of the first frame-by-frame "
        "pass, run by drakebots.skinned.Design",
        "load_average_start": os.getloadavg()[0],
        "solvers": {},
    }
    runs = {}
    for solver in args.design_solvers:
        print(f"[design] monster walk: {args.design_frames} frames with {solver} ...", flush=True)
        frames, dynamics = _DesignFrames(args, solver)
        runs[solver] = frames
        times = np.asarray(frames.frame_time, float)
        out["solvers"][solver] = {
            "resolved": dynamics.solver_name,
            "vertices": int(dynamics.n),
            "frames_done": int(frames.frames_done),
            "infeasible": [int(i) for i, _ in frames.infeasible],
            "frame_s_each": times.tolist(),
            # The first frame carries the one-time analysis and ordering: the median of the rest.
            "design_frame_s": float(np.median(times[1:] if len(times) > 1 else times)),
        }
        if solver == args.design_solvers[0]:
            K = dynamics._factor._factor._matrix  # the last frame's reduced matrix
            out["reduced_matrix"] = {"rows": int(K.shape[0]), "nonzeros": int(K.nnz)}
            out["factorizations"] = _FactorTimes(K, dynamics._factor._Ordering)
    reference = args.design_solvers[-1]
    first = args.design_solvers[0]
    if first != reference:
        a, b = runs[first], runs[reference]
        n = min(len(a.tau), len(b.tau))
        out["design_frame_s"] = out["solvers"][first]["design_frame_s"]
        out["reference_design_frame_s"] = out["solvers"][reference]["design_frame_s"]
        out["speedup_vs_reference"] = out["reference_design_frame_s"] / out["design_frame_s"]
        out["max_torque_difference_nm"] = float(np.abs(a.tau[:n] - b.tau[:n]).max())
        out["max_q_difference"] = float(np.abs(a.q[: n + 1] - b.q[: n + 1]).max())
        out["target_design_frame_s"] = 1.5
    factors = out.get("factorizations", {})
    if "pardiso" in factors:
        out["factorization_s"] = factors["pardiso"]["numeric_s"]
        for other in ("splu", "cholmod"):
            if other in factors:
                out[f"factorization_ratio_{other}"] = (
                    factors[other]["numeric_s"] / factors["pardiso"]["numeric_s"]
                )
    out["load_average_end"] = os.getloadavg()[0]
    return out


def _PrintDesign(d):
    if "skipped" in d:
        print(f"design frames: skipped ({d['skipped']})")
        return
    print(d["workload"])
    for solver, row in d["solvers"].items():
        print(
            f"  {solver:<8} ({row['resolved']}, {row['vertices']} vertices): "
            f"{row['design_frame_s']:.2f} s/frame (median), {row['frames_done']} frames, "
            f"infeasible {row['infeasible']}"
        )
    if "speedup_vs_reference" in d:
        print(
            f"  {d['speedup_vs_reference']:.1f}x the reference; max torque difference "
            f"{d['max_torque_difference_nm']:.2e} N*m, max q difference {d['max_q_difference']:.2e}"
        )
    for name, row in d.get("factorizations", {}).items():
        print(
            f"  factorisation of K_red {d['reduced_matrix']['rows']} rows, {name}: numeric "
            f"{row['numeric_s']:.3f} s (first, with analysis {row['first_s']:.3f} s)"
        )


def main():
    from drakebots.runtime import KeepFreedMemory

    KeepFreedMemory()  # as the `drakebots` command runs (opt-in: drakebots.runtime)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/bench/skinned.json")
    parser.add_argument("--knot-frames", type=int, default=8)
    parser.add_argument("--max-iterations", type=int, default=40)
    parser.add_argument(
        "--robots", default="beetle,monster,lizard,cow", help="robots for the QPCC section"
    )
    parser.add_argument("--skins", default="runs", help="folder holding <robot>_skin folders")
    parser.add_argument(
        "--frames",
        type=int,
        default=6,
        help="coupled frames run per robot (the first is not timed)",
    )
    parser.add_argument("--uncondensed-robot", default="beetle")
    parser.add_argument("--no-uncondensed", action="store_true")
    parser.add_argument(
        "--uncondensed-skin",
        choices=("pad", "full"),
        default="pad",
        help="skin of the condensed-vs-uncondensed frame: the tests' foot-pad skin or the robot's",
    )
    parser.add_argument("--skip-space-time", action="store_true")
    parser.add_argument("--skip-qpcc", action="store_true")
    parser.add_argument("--skip-design", action="store_true")
    parser.add_argument("--design-skin", default="runs/monster_skin")
    parser.add_argument("--design-frames", type=int, default=6)
    parser.add_argument(
        "--design-solvers",
        default="auto,splu",
        help="factorisations timed on the design frames; the last is the reference",
    )
    args = parser.parse_args()
    args.robots = [r for r in args.robots.split(",") if r]
    args.design_solvers = [s for s in args.design_solvers.split(",") if s]
    report = {}
    if not args.skip_design:
        report["design_frames"] = DesignFramesSection(args)
        _PrintDesign(report["design_frames"])
        for key in ("design_frame_s", "factorization_s"):
            if key in report["design_frames"]:
                report[key] = report["design_frames"][key]
    report["qpcc"] = {} if args.skip_qpcc else QpccSection(args)
    if report["qpcc"]:
        _PrintQpcc(report["qpcc"])
    if not args.skip_space_time:
        report["space_time"] = SpaceTimeSection(args)
        _PrintSpaceTime(report["space_time"], report["qpcc"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {out}")


def _PrintQpcc(qp):
    print(
        f"{'robot':<9}{'vertices':>9}{'frame s':>9}{'factor s':>9}{'frame/factor':>13}"
        f"{'paper s':>9}{'speedup':>9}{'QPs':>6}"
    )
    for robot, row in qp["robots"].items():
        if "skipped" in row or "failed" in row:
            print(f"{robot:<9} {row.get('skipped') or 'failed: ' + row['failed']}")
            continue
        print(
            f"{robot:<9}{row['vertices']:>9}{row['frame_s']:>9.3f}{row['factor_s']:>9.3f}"
            f"{row['frame_over_factor']:>13.2f}{row['paper_frame_s']:>9.2f}"
            f"{row['speedup_vs_paper']:>9.2f}{row['qps_per_frame']:>6.1f}"
        )
    cu = qp.get("condensed_vs_uncondensed")
    if cu:
        print(
            f"condensed vs uncondensed ({cu['robot']}, {cu['skin']} skin, {cu['skin_vertices']} "
            f"vertices, one labelled QP): condensed "
            f"{cu['condensed_frame_qp_s']:.3f} s (QP alone {cu['condensed_qp_only_s']:.3f} s), "
            f"uncondensed {cu['uncondensed_qp_s']:.1f} s ({cu['uncondensed_variables']} "
            f"variables): {cu['speedup_frame']:.0f}x per frame, {cu['speedup_qp']:.0f}x per QP "
            f"(paper ~50x); max tau difference {cu['max_torque_difference_nm']:.2e} N*m"
        )


def _PrintSpaceTime(st, _qp):
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


if __name__ == "__main__":
    main()
