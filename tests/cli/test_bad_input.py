"""Bad input to every verb (issue 50): ONE line naming what is wrong and where (the option or key,
and the file), exit 2, no traceback, nothing written to --out; an interrupted run leaves no
temporary folder and the next run into the same folder succeeds.

The table runs each case in-process through drakebots.cli.main(argv) (a `python -m drakebots`
start-up costs ~0.6 s, the drake imports in-process are paid once): bad input must be refused
before any work, so every case takes well under a second or two (an alarm fails a case that
starts working instead).

Placeholders in a case's argv: {out} the --out folder (must not exist afterwards), {tmp} the
case's folder, {NAME} a file or folder of FILES / FOLDERS written there first.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.cli._harness import RunVerb


def _Npz(**arrays) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


GOOD_LOG = _Npz(times=np.zeros(2), positions=np.zeros((2, 3)))
PLAN_SUMMARY = json.dumps({"problem": "hamr-gait", "velocity_mm_per_cycle": 1.0}).encode()

# Input files: name -> bytes.
FILES = {
    "scalar.yaml": b"42\n",
    "list.yaml": b"- 1\n- 2\n",
    "binary.yaml": bytes(range(256)) * 4,
    "syntax.yaml": b"frequency: [1, 2\n",
    "unknown.yaml": b"no_such_key: 1\n",
    "nan.yaml": b"frequency: .nan\n",
    "dup.yaml": b"frequency: 10\nfrequency: 12\n",
    "python.yaml": b"frequency: !!python/object/apply:os.system ['true']\n",
    "alias.yaml": b"a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    b"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    b"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
    "empty.npy": b"",
    "garbage.npy": b"not a numpy file\n",
    "scenario_nan.yaml": b"robot: beetle\nduration: .nan\n",
    "scenario_inf.yaml": b"robot: beetle\ntime_step: .inf\n",
    "scenario_unknown.yaml": b"robot: beetle\nspeed: 3\n",
    "scenario_robot.yaml": b"robot: no_such_robot\n",
    "scenario_dup.yaml": b"robot: beetle\nrobot: cow\n",
    "track_nan.yaml": b"tracking:\n  gains:\n    kf_swing: .nan\n",
    "track_cycles.yaml": b"tracking:\n  cycles: 100000000\n",
    "gait_knots.yaml": b"frequency: 10\nknots: 100000000\n",
    "gait_inf.yaml": b"frequency: .inf\n",
    "design_unknown.yaml": b"robot: beetle\nmotion: walk\nno_such: 1\n",
    "design_nan.yaml": b"robot: beetle\nmotion: walk\nspeed: .nan\n",
    "skin_inf.yaml": b"robot: beetle\nthickness: .inf\n",
    "skin_unknown.yaml": b"robot: beetle\nthicknes: 0.004\n",
    "modes_nan.yaml": b"amplitude: .nan\n",
    "course_unknown.yaml": b"name: c\nno_such: 1\n",
    "course_syntax.yaml": b"name: [c\n",
    "motion_syntax.yaml": b"frames: {\n",
    "motion_nan.yaml": b"duration: 2\nfeet:\n  front_left:\n    times: [0, .nan]\n",
    "sweep_sweep.yaml": b"command: sweep beetle_drop\ngrid:\n  workers: [1, 2]\n",
    "sweep_negative.yaml": b"command: simulate beetle\ngrid:\n  duration: [0.1, -1]\n",
    "sweep_robot.yaml": b"command: simulate {robot}\nfixed: {duration: 0.05}\n"
    b"grid:\n  robot: [beetle, no_such_robot]\n",
    "sweep_nan.yaml": b"command: simulate beetle\ngrid:\n  duration: [0.1, .nan]\n",
    "sweep_big.yaml": b"command: simulate beetle\ngrid:\n  duration: [0.1, 1.0e+12]\n",
    "sweep_option.yaml": b"command: simulate beetle\ngrid:\n  no-such-option: [1, 2]\n",
    "sweep_verb.yaml": b"command: no-such-verb\ngrid:\n  x: [1]\n",
    "sweep_out.yaml": b"command: simulate beetle\nfixed: {out: x}\ngrid:\n  duration: [0.1]\n",
    "sweep_empty.yaml": b"command: simulate beetle\n",
    "sweep_unknown.yaml": b"command: simulate beetle\ngrids: {}\n",
    "sweep_scalar.yaml": b"7\n",
    "sweep_binary.yaml": bytes(range(256)),
    "sweep_track.yaml": b"command: track {plan}\ngrid:\n  kf: [1.0, .inf]\n  plan: [p]\n",
    "sweep_design.yaml": b"command: design beetle\nfixed: {motion: walk}\n"
    b"grid:\n  knot-frames: [4, 0]\n",
    "sweep_design_robot.yaml": b"command: design {robot}\nfixed: {motion: walk}\n"
    b"grid:\n  robot: [beetle, hamr_vi]\n",
    "sweep_skin.yaml": b"command: skin beetle\ngrid:\n  thickness: [0.004, 0]\n",
    # One bad case in a grid of each verb that checks its config only when it starts.
    "sweep_gecko.yaml": b"command: gecko navigate\ngrid:\n  max-steps: [40, 0]\n",
    "sweep_gecko_space.yaml": b"command: gecko velocity-space\nfixed: {model: geometric}\n"
    b"grid:\n  q1: ['50,60,70', '50,60,500']\n",
    "sweep_voxel.yaml": b"command: voxel fem\nfixed: {actuate: 'node=0:0:0/3,axis=y,stroke=2mm'}\n"
    b"grid:\n  strut-side: [1.27, 1000]\n",
    "sweep_voxel_pom.yaml": b"command: voxel pom\ngrid:\n  lift: [4, 100]\n",
    "sweep_hamr.yaml": b"command: hamr modes\ngrid:\n  body-threshold: [0.3, 1.5]\n",
    "sweep_skin_bend.yaml": b"command: skin-bend beetle\n"
    b"grid:\n  joint: [front_left_ankle, no_such_joint]\n",
    "sweep_skin_bend_step.yaml": b"command: skin-bend beetle\ngrid:\n  time-step: [0.02, 1.0e-5]\n",
    "scenario_step.yaml": b"robot: beetle\ntime_step: 1.0e-9\n",
    "fit_corrupt.json": b'{"coefficients": [1, 2',
    "fit_list.json": b"[1, 2, 3]",
    "fit_binary.json": bytes(range(256)),
    "fit_shape.json": b'{"coefficients": [[1, 2], [3, 4]]}',
    "sweep_a.yaml": b"command: simulate beetle\ngrid:\n  duration: [0.05]\n",
    "sweep_b.yaml": b"command: simulate beetle\ngrid:\n  duration: [0.05]\n",
}

# Input folders: name -> {file: bytes}.
FOLDERS = {
    "plan_bad_summary": {"summary.json": b"{not json", "solution.npz": _Npz(times=np.zeros(2))},
    "plan_list_summary": {"summary.json": b"[1, 2]", "solution.npz": _Npz(times=np.zeros(2))},
    "plan_bad_solution": {"summary.json": PLAN_SUMMARY, "solution.npz": b"PK\x03\x04 cut"},
    "plan_no_solution": {"summary.json": PLAN_SUMMARY},
    "plan_jump": {
        "summary.json": json.dumps({"problem": "hamr-jump"}).encode(),
        "solution.npz": _Npz(times=np.zeros(2), q=np.zeros((2, 2))),
    },
    "plan_arrays": {"summary.json": PLAN_SUMMARY, "solution.npz": _Npz(other=np.zeros(2))},
    "log_corrupt": {"summary.json": b'{"robot": "beetle"}', "log.npz": b"\x00" * 100},
    "log_truncated": {"summary.json": b'{"robot": "beetle"}', "log.npz": GOOD_LOG[:60]},
    "log_arrays": {"summary.json": b'{"robot": "beetle"}', "log.npz": GOOD_LOG},
    "log_no_log": {"summary.json": b'{"robot": "beetle"}'},
    "log_bad_summary": {"summary.json": b"\xff\xfe", "log.npz": GOOD_LOG},
    "log_robot": {"summary.json": b'{"robot": "no_such_robot"}', "log.npz": GOOD_LOG},
    "log_no_robot": {"summary.json": b'{"x": 1}', "log.npz": GOOD_LOG},
    "skin_cow": {
        "skin.json": json.dumps({"robot": "cow"}).encode(),
        "skin.vtk": b"# vtk DataFile Version 2.0\n",
        "skin.npz": _Npz(glue_vertices=np.zeros(0, int)),
    },
    "skin_corrupt": {"skin.json": b"{", "skin.vtk": b"", "skin.npz": b""},
    "skin_missing": {"skin.json": b"{}"},
    "not_sweep": {"something.txt": b"mine"},
    "other_sweep": {
        "cases.json": json.dumps({"source": "/elsewhere/other.yaml", "cases": []}).encode()
    },
}

NAN = ("nan", "inf", "-inf")


def C(verb, argv, needles, code=2):
    """A case: the command line (with placeholders) and what its one-line message must name."""
    return pytest.param(argv, needles, code, id=f"{verb}: {' '.join(argv)}")


CASES = [
    # --- demo
    C("demo", ["demo", "--bogus", "--out", "{out}"], ["--bogus"]),
    C("demo", ["demo", "extra", "--out", "{out}"], ["extra"]),
    C("demo", ["demo", "--out"], ["--out"]),
    # --- info
    C("info", ["info", "no_such_robot"], ["no_such_robot"]),
    C("info", ["info", "--bogus"], ["--bogus"]),
    C("info", ["info", "beetle", "cow"], ["cow"]),
    # --- simulate: options
    C("simulate", ["simulate", "beetle", "--duration", "-1", "--out", "{out}"], ["--duration"]),
    C("simulate", ["simulate", "beetle", "--duration", "0", "--out", "{out}"], ["--duration"]),
    C("simulate", ["simulate", "beetle", "--duration", "1e12", "--out", "{out}"], ["--duration"]),
    C("simulate", ["simulate", "beetle", "--duration", "abc", "--out", "{out}"], ["--duration"]),
    C("simulate", ["simulate", "beetle", "--time-step", "-1", "--out", "{out}"], ["--time-step"]),
    C(
        "simulate",
        ["simulate", "{scenario_step.yaml}", "--out", "{out}"],
        ["scenario_step.yaml", "time_step", "below 1e-06"],
    ),
    C("simulate", ["simulate", "beetle", "--log-period", "-1", "--out", "{out}"], ["--log-period"]),
    C("simulate", ["simulate", "no_such_robot", "--out", "{out}"], ["no_such_robot"]),
    C("simulate", ["simulate", "--out", "{out}"], ["robot"]),
    C("simulate", ["simulate", "beetle", "--cycles", "1e3", "--out", "{out}"], ["--cycles"]),
    C("simulate", ["simulate", "beetle", "--cycles", "100000000", "--out", "{out}"], ["--cycles"]),
    C("simulate", ["simulate", "beetle", "--frequency", "1e9", "--out", "{out}"], ["--frequency"]),
    C("simulate", ["simulate", "beetle", "--frequency", "3", "--out", "{out}"], ["--frequency"]),
    C("simulate", ["simulate", "beetle", "--bogus", "--out", "{out}"], ["--bogus"]),
    # --- simulate: scenario files
    C("simulate", ["simulate", "{scenario_nan.yaml}", "--out", "{out}"], ["duration"]),
    C("simulate", ["simulate", "{scenario_inf.yaml}", "--out", "{out}"], ["time_step"]),
    C("simulate", ["simulate", "{scenario_unknown.yaml}", "--out", "{out}"], ["speed"]),
    C("simulate", ["simulate", "{scenario_robot.yaml}", "--out", "{out}"], ["no_such_robot"]),
    C("simulate", ["simulate", "{scenario_dup.yaml}", "--out", "{out}"], ["robot"]),
    C(
        "simulate",
        ["simulate", "--config", "{scalar.yaml}", "--out", "{out}"],
        ["--config", "top level"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{list.yaml}", "--out", "{out}"],
        ["--config", "top level"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{binary.yaml}", "--out", "{out}"],
        ["--config", "text"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{syntax.yaml}", "--out", "{out}"],
        ["--config", "YAML"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{python.yaml}", "--out", "{out}"],
        ["--config", "python"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{alias.yaml}", "--out", "{out}"],
        ["--config", "aliases"],
    ),
    C(
        "simulate",
        ["simulate", "--config", "{tmp}/missing.yaml", "--out", "{out}"],
        ["--config", "missing"],
    ),
    C(
        "simulate",
        ["simulate", "beetle", "--skin", "{skin_missing}", "--duration", "0.01", "--out", "{out}"],
        ["skin_missing"],
    ),
    C(
        "simulate",
        [
            "simulate",
            "beetle",
            "--skin",
            "{skin_missing}",
            "--skin-contact",
            "penalty",
            "--out",
            "{out}",
        ],
        ["--skin-contact", "penalty"],
    ),  # fmt: skip
    C(
        "simulate",
        ["simulate", "beetle", "--skin-contact", "convex", "--duration", "0.01", "--out", "{out}"],
        ["--skin-contact", "--skin"],
    ),
    # --- design
    C("design", ["design", "beetle", "--out", "{out}"], ["--motion"]),
    C("design", ["design", "beetle", "--motion", "fly", "--out", "{out}"], ["--motion"]),
    C("design", ["design", "no_such_robot", "--motion", "walk", "--out", "{out}"], ["no_such"]),
    C("design", ["design", "hamr_vi", "--motion", "walk", "--out", "{out}"], ["hamr_vi"]),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--skin", "{skin_cow}", "--out", "{out}"],
        ["--skin", "skin_cow", "cow"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--skin", "{skin_corrupt}", "--out", "{out}"],
        ["--skin", "skin_corrupt"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--skin", "{skin_missing}", "--out", "{out}"],
        ["--skin", "skin_missing"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--skin", "{tmp}/nope", "--out", "{out}"],
        ["--skin", "nope"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--knot-frames", "0", "--out", "{out}"],
        ["--knot-frames"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--knot-frames", "99999999", "--out", "{out}"],
        ["--knot-frames"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--iterations", "0", "--out", "{out}"],
        ["--iterations"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--duration", "-2", "--out", "{out}"],
        ["--duration"],
    ),
    C(
        "design",
        ["design", "beetle", "--motion", "walk", "--mass-scale", "0", "--out", "{out}"],
        ["--mass-scale"],
    ),
    C(
        "design",
        ["design", "beetle", "--config", "{design_unknown.yaml}", "--out", "{out}"],
        ["--config", "no_such", "design_unknown.yaml"],
    ),
    C(
        "design",
        ["design", "beetle", "--config", "{design_nan.yaml}", "--out", "{out}"],
        ["--config", "speed", "design_nan.yaml"],
    ),
    C(
        "design",
        ["design", "beetle", "--config", "{scalar.yaml}", "--out", "{out}"],
        ["--config", "scalar.yaml"],
    ),
    C(
        "design",
        [
            "design",
            "beetle",
            "--motion",
            "walk",
            "--motion-file",
            "{tmp}/none.yaml",
            "--out",
            "{out}",
        ],
        ["--motion-file", "none.yaml"],
    ),
    C(
        "design",
        [
            "design",
            "beetle",
            "--motion",
            "walk",
            "--motion-file",
            "{motion_syntax.yaml}",
            "--out",
            "{out}",
        ],
        ["motion_syntax.yaml"],
    ),
    C(
        "design",
        [
            "design",
            "beetle",
            "--motion",
            "walk",
            "--motion-file",
            "{motion_nan.yaml}",
            "--out",
            "{out}",
        ],
        ["motion_nan.yaml", "feet.front_left.times[1]"],
    ),
    # --- skin
    C("skin", ["skin", "beetle", "--thickness", "0", "--out", "{out}"], ["--thickness"]),
    C("skin", ["skin", "beetle", "--thickness", "-0.004", "--out", "{out}"], ["--thickness"]),
    C("skin", ["skin", "beetle", "--youngs-modulus", "0", "--out", "{out}"], ["--youngs-modulus"]),
    C(
        "skin",
        ["skin", "beetle", "--poissons-ratio", "0.5", "--out", "{out}"],
        ["--poissons-ratio"],
    ),
    C("skin", ["skin", "beetle", "--fold-teeth", "0", "--out", "{out}"], ["--fold-teeth"]),
    C("skin", ["skin", "beetle", "--fold-teeth", "1000000", "--out", "{out}"], ["--fold-teeth"]),
    C("skin", ["skin", "beetle", "--soft-scale", "2", "--out", "{out}"], ["--soft-scale"]),
    C("skin", ["skin", "beetle", "--soft-regions", "wing", "--out", "{out}"], ["--soft-regions"]),
    C(
        "skin",
        ["skin", "beetle", "--config", "{skin_inf.yaml}", "--out", "{out}"],
        ["--config", "thickness", "skin_inf.yaml"],
    ),
    C(
        "skin",
        ["skin", "beetle", "--config", "{skin_unknown.yaml}", "--out", "{out}"],
        ["--config", "thicknes", "skin_unknown.yaml"],
    ),
    C(
        "skin",
        ["skin", "beetle", "--config", "{binary.yaml}", "--out", "{out}"],
        ["--config", "binary.yaml"],
    ),
    # --- skin-bend
    C("skin-bend", ["skin-bend", "--out", "{out}"], ["robot"]),
    C("skin-bend", ["skin-bend", "beetle", "--time-step", "0", "--out", "{out}"], ["--time-step"]),
    C("skin-bend", ["skin-bend", "beetle", "--time-step", "-1", "--out", "{out}"], ["--time-step"]),
    C(
        "skin-bend",
        ["skin-bend", "beetle", "--time-step", "1e-5", "--out", "{out}"],
        ["--time-step 1e-05", "coupled steps"],
    ),
    C("skin-bend", ["skin-bend", "beetle", "--time", "1e9", "--out", "{out}"], ["--time"]),
    C("skin-bend", ["skin-bend", "beetle", "--hold", "1e9", "--out", "{out}"], ["--hold"]),
    C(
        "skin-bend",
        ["skin-bend", "beetle", "--fold-teeth", "0", "--out", "{out}"],
        ["--fold-teeth"],
    ),
    C(
        "skin-bend",
        ["skin-bend", "beetle", "--config", "{syntax.yaml}", "--out", "{out}"],
        ["--config", "syntax.yaml"],
    ),
    # --- optimize
    C("optimize", ["optimize", "hamr-gait", "--out", "{out}"], ["--frequency"]),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "-10", "--out", "{out}"],
        ["--frequency"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "1e9", "--out", "{out}"],
        ["--frequency"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "10", "--knots", "100000000", "--out", "{out}"],
        ["--knots"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "10", "--knots", "1", "--out", "{out}"],
        ["--knots"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "10", "--surface", "ice", "--out", "{out}"],
        ["--surface"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--frequency", "10", "--iterations", "-1", "--out", "{out}"],
        ["--iterations"],
    ),
    C("optimize", ["optimize", "hamr-jump", "--out", "{out}"], ["--height"]),
    C(
        "optimize",
        ["optimize", "hamr-jump", "--height", "12", "--duration", "1e9", "--out", "{out}"],
        ["--duration"],
    ),
    C("optimize", ["optimize", "hamr-fly", "--out", "{out}"], ["hamr-fly"]),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{scalar.yaml}", "--out", "{out}"],
        ["--config", "scalar.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{list.yaml}", "--out", "{out}"],
        ["--config", "list.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{binary.yaml}", "--out", "{out}"],
        ["--config", "binary.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{syntax.yaml}", "--out", "{out}"],
        ["--config", "syntax.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{unknown.yaml}", "--out", "{out}"],
        ["--config", "no_such_key", "unknown.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{nan.yaml}", "--out", "{out}"],
        ["--config", "frequency", "nan.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{dup.yaml}", "--out", "{out}"],
        ["--config", "frequency", "dup.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{python.yaml}", "--out", "{out}"],
        ["--config", "python.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{alias.yaml}", "--out", "{out}"],
        ["--config", "alias.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{gait_knots.yaml}", "--out", "{out}"],
        ["--config", "knots", "gait_knots.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{gait_inf.yaml}", "--out", "{out}"],
        ["--config", "frequency", "gait_inf.yaml"],
    ),
    C(
        "optimize",
        ["optimize", "hamr-gait", "--config", "{tmp}/none.yaml", "--out", "{out}"],
        ["--config", "none.yaml"],
    ),
    # --- track
    C("track", ["track", "--out", "{out}"], ["plan"]),
    C("track", ["track", "{tmp}/none", "--out", "{out}"], ["none"]),
    C(
        "track",
        ["track", "{plan_bad_summary}", "--out", "{out}"],
        ["plan_bad_summary", "summary.json"],
    ),
    C(
        "track",
        ["track", "{plan_list_summary}", "--out", "{out}"],
        ["plan_list_summary", "summary.json"],
    ),
    C(
        "track",
        ["track", "{plan_bad_solution}", "--out", "{out}"],
        ["plan_bad_solution", "solution.npz"],
    ),
    C(
        "track",
        ["track", "{plan_no_solution}", "--out", "{out}"],
        ["plan_no_solution", "solution.npz"],
    ),
    C("track", ["track", "{plan_jump}", "--out", "{out}"], ["plan_jump", "hamr-jump"]),
    C("track", ["track", "{plan_arrays}", "--out", "{out}"], ["plan_arrays", "solution.npz"]),
    C("track", ["track", "{plan_jump}", "--cycles", "1", "--out", "{out}"], ["--cycles"]),
    C("track", ["track", "{plan_jump}", "--cycles", "99999999", "--out", "{out}"], ["--cycles"]),
    C(
        "track",
        ["track", "{plan_jump}", "--table-samples", "9999999", "--out", "{out}"],
        ["--table-samples"],
    ),
    C(
        "track",
        ["track", "{plan_jump}", "--voltage-hold", "cubic", "--out", "{out}"],
        ["--voltage-hold"],
    ),
    C(
        "track",
        ["track", "--config", "{track_nan.yaml}", "{plan_jump}", "--out", "{out}"],
        ["--config", "kf_swing", "track_nan.yaml"],
    ),
    C(
        "track",
        ["track", "--config", "{track_cycles.yaml}", "{plan_jump}", "--out", "{out}"],
        ["--config", "cycles", "track_cycles.yaml"],
    ),
    C(
        "track",
        ["track", "--config", "{scalar.yaml}", "{plan_jump}", "--out", "{out}"],
        ["--config", "scalar.yaml"],
    ),
    # --- view
    C("view", ["view", "{log_corrupt}"], ["log_corrupt", "log.npz"]),
    C("view", ["view", "{log_truncated}"], ["log_truncated", "log.npz"]),
    C("view", ["view", "{log_arrays}"], ["log_arrays", "log.npz"]),
    C("view", ["view", "{log_no_log}"], ["log_no_log", "log.npz"]),
    C("view", ["view", "{log_bad_summary}"], ["log_bad_summary", "summary.json"]),
    C("view", ["view", "{log_robot}"], ["log_robot", "no_such_robot"]),
    C("view", ["view", "{log_no_robot}"], ["log_no_robot", "robot"]),
    C("view", ["view", "{tmp}/none"], ["none"]),
    C("view", ["view", "{log_corrupt}", "--port", "0"], ["--port"]),
    C("view", ["view", "{log_corrupt}", "--port", "65536"], ["--port"]),
    C("view", ["view", "{log_corrupt}", "--port", "http"], ["--port"]),
    C("view", ["view", "{log_corrupt}", "--seconds", "-1"], ["--seconds"]),
    C("view", ["view", "{log_corrupt}", "--host", "no-such-host.invalid"], ["--host"]),
    # --- hamr
    C("hamr", ["hamr", "modes", "--amplitude", "0", "--out", "{out}"], ["--amplitude"]),
    C("hamr", ["hamr", "modes", "--amplitude", "-1", "--out", "{out}"], ["--amplitude"]),
    C(
        "hamr",
        ["hamr", "modes", "--config", "{modes_nan.yaml}", "--out", "{out}"],
        ["--config", "amplitude", "modes_nan.yaml"],
    ),
    C(
        "hamr",
        ["hamr", "modes", "--config", "{unknown.yaml}", "--out", "{out}"],
        ["--config", "no_such_key", "unknown.yaml"],
    ),
    C("hamr", ["hamr", "walk", "--out", "{out}"], ["walk"]),
    # --- gecko
    C("gecko", ["gecko", "velocity-space", "--q1", "a,b", "--out", "{out}"], ["--q1"]),
    C("gecko", ["gecko", "velocity-space", "--q1", "nan", "--out", "{out}"], ["--q1"]),
    C("gecko", ["gecko", "velocity-space", "--warmup", "99999999", "--out", "{out}"], ["--warmup"]),
    C("gecko", ["gecko", "velocity-space", "--workers", "99999", "--out", "{out}"], ["--workers"]),
    C("gecko", ["gecko", "velocity-space", "--time-step", "0", "--out", "{out}"], ["--time-step"]),
    C("gecko", ["gecko", "navigate", "--time-step", "-1", "--out", "{out}"], ["--time-step"]),
    C(
        "gecko",
        ["gecko", "velocity-space", "--config", "{syntax.yaml}", "--out", "{out}"],
        ["--config", "syntax.yaml"],
    ),
    C("gecko", ["gecko", "navigate", "--targets", "1,2,3", "--out", "{out}"], ["--targets"]),
    C("gecko", ["gecko", "navigate", "--targets", "inf,0", "--out", "{out}"], ["--targets"]),
    C(
        "gecko",
        [
            "gecko",
            "navigate",
            "--targets",
            "0.4,0.1",
            "--fit",
            "{fit_corrupt.json}",
            "--out",
            "{out}",
        ],
        ["--fit", "fit_corrupt.json"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--targets", "0.4,0.1", "--fit", "{fit_list.json}", "--out", "{out}"],
        ["--fit", "fit_list.json"],
    ),
    C(
        "gecko",
        [
            "gecko",
            "navigate",
            "--targets",
            "0.4,0.1",
            "--fit",
            "{fit_binary.json}",
            "--out",
            "{out}",
        ],
        ["--fit", "fit_binary.json"],
    ),
    C(
        "gecko",
        [
            "gecko",
            "navigate",
            "--targets",
            "0.4,0.1",
            "--fit",
            "{fit_shape.json}",
            "--out",
            "{out}",
        ],
        ["--fit", "fit_shape.json"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--targets", "0.4,0.1", "--epsilon", "0", "--out", "{out}"],
        ["--epsilon"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--targets", "0.4,0.1", "--max-steps", "999999999", "--out", "{out}"],
        ["--max-steps"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--targets", "0.4,0.1", "--start", "x", "--out", "{out}"],
        ["--start"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--course", "{course_unknown.yaml}", "--out", "{out}"],
        ["no_such", "course_unknown.yaml"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--course", "{course_syntax.yaml}", "--out", "{out}"],
        ["course_syntax.yaml"],
    ),
    C(
        "gecko",
        ["gecko", "navigate", "--course", "{tmp}/none.yaml", "--out", "{out}"],
        ["none.yaml"],
    ),
    C(
        "gecko",
        [
            "gecko",
            "navigate",
            "--targets",
            "0.4,0.1",
            "--course",
            "{course_syntax.yaml}",
            "--out",
            "{out}",
        ],
        ["--course"],
    ),
    # --- voxel
    C("voxel", ["voxel", "melt", "--out", "{out}"], ["melt"]),
    C("voxel", ["voxel", "fem", "--lattice", "2x2", "--out", "{out}"], ["--lattice"]),
    C("voxel", ["voxel", "fem", "--lattice", "0x2x1", "--out", "{out}"], ["--lattice"]),
    C("voxel", ["voxel", "fem", "--strut-side", "0", "--out", "{out}"], ["--strut-side"]),
    C("voxel", ["voxel", "fem", "--actuate", "bogus", "--out", "{out}"], ["--actuate"]),
    C("voxel", ["voxel", "fem", "--occupancy", "{garbage.npy}", "--out", "{out}"], ["garbage.npy"]),
    C("voxel", ["voxel", "fem", "--occupancy", "{empty.npy}", "--out", "{out}"], ["empty.npy"]),
    C("voxel", ["voxel", "fem", "--occupancy", "{tmp}/none.npy", "--out", "{out}"], ["none.npy"]),
    C(
        "voxel",
        ["voxel", "fem", "--config", "{unknown.yaml}", "--out", "{out}"],
        ["--config", "no_such_key", "unknown.yaml"],
    ),
    C("voxel", ["voxel", "pom", "--robot", "no_such_robot", "--out", "{out}"], ["no_such_robot"]),
    # --- sweep
    C("sweep", ["sweep", "{sweep_sweep.yaml}", "--out", "{out}"], ["sweep_sweep.yaml", "sweep"]),
    C(
        "sweep",
        ["sweep", "{sweep_negative.yaml}", "--out", "{out}"],
        ["sweep_negative.yaml", "--duration"],
    ),
    C(
        "sweep",
        ["sweep", "{sweep_robot.yaml}", "--out", "{out}"],
        ["sweep_robot.yaml", "no_such_robot"],
    ),
    C("sweep", ["sweep", "{sweep_nan.yaml}", "--out", "{out}"], ["sweep_nan.yaml", "duration"]),
    C("sweep", ["sweep", "{sweep_big.yaml}", "--out", "{out}"], ["sweep_big.yaml", "--duration"]),
    C(
        "sweep",
        ["sweep", "{sweep_option.yaml}", "--out", "{out}"],
        ["sweep_option.yaml", "no-such-option"],
    ),
    C("sweep", ["sweep", "{sweep_verb.yaml}", "--out", "{out}"], ["sweep_verb.yaml", "no-such"]),
    C("sweep", ["sweep", "{sweep_out.yaml}", "--out", "{out}"], ["sweep_out.yaml", "out"]),
    C("sweep", ["sweep", "{sweep_empty.yaml}", "--out", "{out}"], ["sweep_empty.yaml", "cases"]),
    C(
        "sweep",
        ["sweep", "{sweep_unknown.yaml}", "--out", "{out}"],
        ["sweep_unknown.yaml", "grids"],
    ),
    C("sweep", ["sweep", "{sweep_scalar.yaml}", "--out", "{out}"], ["sweep_scalar.yaml"]),
    C("sweep", ["sweep", "{sweep_binary.yaml}", "--out", "{out}"], ["sweep_binary.yaml"]),
    C("sweep", ["sweep", "{sweep_track.yaml}", "--out", "{out}"], ["sweep_track.yaml", "kf"]),
    C("sweep", ["sweep", "no_such_sweep", "--out", "{out}"], ["no_such_sweep"]),
    C(
        "sweep",
        ["sweep", "{sweep_design.yaml}", "--out", "{out}"],
        ["sweep_design.yaml", "--knot-frames"],
    ),
    C(
        "sweep",
        ["sweep", "{sweep_design_robot.yaml}", "--out", "{out}"],
        ["sweep_design_robot.yaml", "hamr_vi"],
    ),
    C(
        "sweep",
        ["sweep", "{sweep_skin.yaml}", "--out", "{out}"],
        ["sweep_skin.yaml", "--thickness"],
    ),
    C("sweep", ["sweep", "beetle_drop", "--workers", "0", "--out", "{out}"], ["--workers"]),
    C(
        "sweep",
        ["sweep", "beetle_drop", "--case-timeout", "nan", "--out", "{out}"],
        ["--case-timeout"],
    ),
    C(
        "sweep",
        ["sweep", "beetle_drop", "--allowed-failures", "-1", "--out", "{out}"],
        ["--allowed-failures"],
    ),
    C("sweep", ["sweep", "status"], ["status"]),
    C("sweep", ["sweep", "status", "{tmp}/none"], ["none"]),
    C("sweep", ["sweep", "beetle_drop", "--out", "{not_sweep}"], ["--out", "not_sweep"], 2),
    C(
        "sweep",
        ["sweep", "{sweep_a.yaml}", "--out", "{other_sweep}"],
        ["--out", "other_sweep", "other.yaml", "sweep_a.yaml"],
    ),
]

# A sweep with one bad grid case of a verb that checks its config only when it starts: refused
# by the verb's CheckArgs before any case runs; the case's command line names the bad value.
CASES += [
    C("sweep", ["sweep", "{" + name + "}", "--out", "{out}"], [name, *needles])
    for name, needles in (
        ("sweep_gecko.yaml", ["grid", "--max-steps=0", "--max-steps must be >= 1"]),
        ("sweep_gecko_space.yaml", ["--q1=50,60,500", "500"]),
        ("sweep_voxel.yaml", ["--strut-side=1000", "--strut-side 1000"]),
        ("sweep_voxel_pom.yaml", ["--lift=100", "--lift 100"]),
        ("sweep_hamr.yaml", ["--body-threshold=1.5", "--body-threshold 1.5"]),
        ("sweep_skin_bend.yaml", ["--joint=no_such_joint", "no such joint"]),
        ("sweep_skin_bend_step.yaml", ["--time-step=1e-05", "coupled steps"]),
    )
]

# A step or sampling period below the finest one run may take (WORK_FLOORS): a typo that would
# run for ever.
CASES += [
    C(argv[0], [*argv, option, value, "--out", "{out}"], [option, f"below {floor}"])
    for argv, option, value, floor in (
        (["simulate", "beetle"], "--time-step", "1e-9", "1e-06 s"),
        (["simulate", "beetle"], "--log-period", "1e-9", "1e-06 s"),
        (["skin-bend", "beetle"], "--time-step", "1e-9", "1e-06 s"),
        (["gecko", "velocity-space"], "--time-step", "1e-9", "1e-06 s"),
        (["gecko", "navigate"], "--time-step", "1e-9", "1e-06 s"),
        (["track", "{plan_jump}"], "--time-step", "1e-6", "0.001 ms"),
    )
]

# NaN and infinities, refused by the one check every numeric option goes through.
NUMERIC = [
    ("track", ["track", "{plan_jump}"], "--kf"),
    ("track", ["track", "{plan_jump}"], "--kp-swing"),
    ("track", ["track", "{plan_jump}"], "--time-step"),
    ("skin", ["skin", "beetle"], "--thickness"),
    ("skin", ["skin", "beetle"], "--youngs-modulus"),
    ("simulate", ["simulate", "beetle"], "--duration"),
    ("simulate", ["simulate", "beetle"], "--drop-height"),
    ("design", ["design", "beetle", "--motion", "walk"], "--speed"),
    ("optimize", ["optimize", "hamr-gait"], "--frequency"),
    ("optimize", ["optimize", "hamr-jump"], "--height"),
    ("skin-bend", ["skin-bend", "beetle"], "--torque-limit"),
    ("hamr", ["hamr", "modes"], "--body-threshold"),
    ("voxel", ["voxel", "fem"], "--strut-side"),
    ("gecko", ["gecko", "navigate", "--targets", "0.4,0.1"], "--epsilon"),
]
CASES += (
    [
        pytest.param(
            [*argv, option, value, "--out", "{out}"],
            [option],
            2,
            id=f"{verb}: {' '.join(argv)} {option} {value}",
        )
        for verb, argv, option in NUMERIC
        for value in NAN[:2]
    ]
    + [C("view", ["view", "{log_corrupt}", f"--seconds={value}"], ["--seconds"]) for value in NAN]
    + [C("sweep", ["sweep", "beetle_drop", "--case-timeout", "inf"], ["--case-timeout"])]
)


def _Fill(text: str, tmp: Path) -> str:
    for name in (*FILES, *FOLDERS):
        text = text.replace("{" + name + "}", str(tmp / name))
    return text.replace("{out}", str(tmp / "out")).replace("{tmp}", str(tmp))


def _Setup(tmp: Path, argv: list[str]) -> None:
    used = " ".join(argv)
    for name, data in FILES.items():
        if "{" + name + "}" in used:
            (tmp / name).write_bytes(data)
    for name, files in FOLDERS.items():
        if "{" + name + "}" in used:
            (tmp / name).mkdir()
            for file, data in files.items():
                (tmp / name / file).write_bytes(data)


def _Snapshot(folder: Path) -> list[tuple]:
    """Every file and folder under `folder`, with its size and modification time."""
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    )


@pytest.mark.parametrize("argv, needles, code", CASES)
def test_bad_input_exits_2_naming_what_and_where_writing_nothing(
    tmp_path, capsys, monkeypatch, argv, needles, code
):
    _Setup(tmp_path, argv)
    monkeypatch.chdir(tmp_path)  # A default runs/ folder would land here (and fail the test).
    before = _Snapshot(tmp_path)
    filled = [_Fill(a, tmp_path) for a in argv]
    got, stdout, err, seconds = RunVerb(filled, capsys, 20)
    assert got == code, f"exit {got}, expected {code}\n{stdout}\n{err}"
    assert "Traceback" not in err + stdout
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line:\n{err}"
    for needle in needles:
        assert _Fill(needle, tmp_path) in lines[0], f"{needle!r} not named in: {lines[0]}"
    assert not (tmp_path / "out").exists(), "--out was written"
    after = _Snapshot(tmp_path)
    assert after == before, f"written or changed: {set(after) ^ set(before)}"
    assert seconds < 10.0, f"{seconds:.1f} s: bad input must be refused before any work"


# -------------------------------------------------------------------------------------------
# Killed runs: no temporary folder left, and the next run into the same folder succeeds.


def _RunKilled(tmp_path: Path, sig: int) -> Path:
    """A `simulate` into tmp/out killed by `sig` while it writes its results (its hidden
    temporary folder exists): the moment a kill can leave something behind."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "drakebots", "simulate", "beetle", "--duration", "0.6"]
    argv += ["--no-progress", "--out", str(out)]
    process = subprocess.Popen(
        argv, cwd=tmp_path, env=_Env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.tmp-*")):
        assert process.poll() is None, "the run ended before it was killed"
        assert time.monotonic() < deadline, "no temporary folder after 120 s"
        time.sleep(0.01)
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=60)
    if sig == signal.SIGTERM:
        # Handled as Ctrl-C is (issue 68): exit 143, one line, its temporary removed on the way out.
        assert process.returncode == 143, process.returncode
        assert b"Traceback" not in stderr, stderr.decode()
        assert not list(tmp_path.glob(".out.tmp-*")), list(tmp_path.iterdir())
    else:
        assert process.returncode == -sig, process.returncode
    return out


def _Env() -> dict:
    return dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_killed_run_leaves_no_temporary_and_the_next_run_succeeds(tmp_path, sig):
    out = _RunKilled(tmp_path, sig)
    assert not out.exists()  # Never half in place.
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "drakebots",
            "simulate",
            "beetle",
            "--duration",
            "0.02",
            "--no-progress",
            "--out",
            str(out),
        ],
        cwd=tmp_path,
        env=_Env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert (out / "summary.json").is_file()
    assert not list(tmp_path.glob(".out.tmp-*")), list(tmp_path.iterdir())


def test_ctrl_c_inside_snopts_callback_exits_130_writing_nothing(tmp_path):
    """Ctrl-C while SNOPT evaluates the costs (a Python callback under C++): Drake hands the
    KeyboardInterrupt back as a RuntimeError; the command still says `interrupted`, exit 130."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "drakebots", "optimize", "hamr-gait", "--frequency", "10"]
    argv += ["--knots", "11", "--iterations", "20", "--solver", "snopt", "--out", str(out)]
    process = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=_Env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # A shell's background job ignores SIGINT; the user's terminal does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines = []
    for line in process.stdout:
        lines.append(line)
        if "solving with snopt" in line:
            break
    time.sleep(1.0)  # Inside SNOPT's first evaluations.
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=120)
    output = "".join(lines) + rest
    assert process.returncode == 130, output
    assert "drakebots optimize: interrupted" in output
    assert "Traceback" not in output
    assert not out.exists() and not list(tmp_path.glob(".out.tmp-*"))
