"""drakebots.limits (work bounds in one place), drakebots.config.CheckTypes (a Python config of the
wrong type names its field), and the checks issue 68 added under them: every path (flags, config
files, Python configs) meets the same bounds, because the workflows' checks call them.

References are stated in advance: the bounds' documented defaults, counts of steps and samples
computed by hand, connected pieces counted on the drawing, the declared types of the fields.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
import pytest

from drakebots import limits
from drakebots.config import CheckTypes, LoadTypedYaml
from drakebots.errors import InputError

# --- the bounds -------------------------------------------------------------------------------


def test_each_bound_has_its_documented_default_and_variable(monkeypatch):
    documented = {
        "frames": 200_000,
        "duration": 3600.0,
        "steps": 1e7,
        "log_samples": 1e6,
        "knots": 2000,
        "cases": 10_000,
        "voxels": 8000,
        "grid_cells": 5e7,
        "mesh_bytes": 1e8,
        # issue 68's leftovers, each a fixed number before (the same defaults)
        "iterations": 100_000,
        "cycles": 10_000,
        "warmup": 1000,
        "knot_frames": 1000,
        "table_samples": 1001,
        "planner_steps": 100_000,
        "lookahead": 1000,
        "fold_teeth": 100,
        "friction_directions": 64,
        "workers": 1024,
        "frequency": 1000.0,
        "plan_time": 10_000.0,
        "replay_seconds": 86_400.0,
        "case_timeout": 604_800.0,
        "bend_steps": 10_000,
        "drop_height": 100.0,
        "friction": 10.0,
        "speed": 10.0,
        "lift_height": 1.0,
        "hamr_distance": 1000.0,
        "torque": 1000.0,
        "motor_fraction": 100.0,
        "mass_scale": 1000.0,
        "weight": 1e6,
        "skeleton_length": 10.0,
        "mesh_extent": 100.0,
        "model_mesh_bytes": 512 * 1024**2,
        "yaml_bytes": 4 * 1024**2,
        "yaml_values": 200_000,
        "course": 1000.0,
        "target_radius": 10.0,
    }
    assert set(limits.BOUNDS) == set(documented)
    for name, default in documented.items():
        variable = "DRAKEBOTS_MAX_" + name.upper()
        monkeypatch.delenv(variable, raising=False)
        assert limits.Limit(name) == default
        monkeypatch.setenv(variable, "12.5")
        assert limits.Limit(name) == 12.5
        for bad in ("abc", "0", "-3", "nan", "inf"):
            monkeypatch.setenv(variable, bad)
            with pytest.raises(InputError, match=f"{variable}='{bad}'"):
                limits.Limit(name)


def test_a_refusal_is_one_line_naming_what_the_value_the_bound_and_the_variable(monkeypatch):
    monkeypatch.delenv("DRAKEBOTS_MAX_CASES", raising=False)
    limits.CheckWork("cases", 10_000, "sweep.yaml")  # at the bound: allowed
    with pytest.raises(InputError) as error:
        limits.CheckWork("cases", 10_001, "sweep.yaml")
    message = str(error.value)
    assert "\n" not in message
    for needle in ("sweep.yaml: 10001 cases", "bound of 10000", "DRAKEBOTS_MAX_CASES"):
        assert needle in message, message
    with pytest.raises(InputError):
        limits.CheckWork("cases", math.nan, "x")
    monkeypatch.setenv("DRAKEBOTS_MAX_CASES", "20000")
    limits.CheckWork("cases", 10_001, "sweep.yaml")  # raised by the variable


def _WithoutMeminfo(monkeypatch):
    """/proc/meminfo unreadable to drakebots.limits: MemoryAvailable falls back to 8 GiB."""

    def Unreadable(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(limits, "open", Unreadable, raising=False)


def test_steps_and_log_samples_counted_as_duration_over_step(monkeypatch):
    for name in ("STEPS", "LOG_SAMPLES", "MEMORY_GB"):
        monkeypatch.delenv("DRAKEBOTS_MAX_" + name, raising=False)
    limits.CheckSimulation(10.0, 1e-6)  # 1e7 steps: the bound
    with pytest.raises(InputError, match=r"1\.2e\+07 simulation steps.*DRAKEBOTS_MAX_STEPS"):
        limits.CheckSimulation(12.0, 1e-6)
    limits.CheckSimulation(1000.0, 1e-3, 1e-3)  # 1e6 samples
    with pytest.raises(InputError, match=r"3\.6e\+09 log samples"):
        limits.CheckSimulation(3600.0, 1e-3, 1e-6)
    limits.CheckSimulation(3600.0, 0.0, 0.0)  # 0: the family's default, not judged here

    # The logs' memory: 1e6 samples of 1000 doubles is 8 GB, above a 1 GiB cap. (The machine's
    # own MemAvailable is left out, its 8 GiB fallback in: a loaded machine with under 1 GiB
    # free named that instead of the cap, and failed this in a CI run beside two replays.)
    _WithoutMeminfo(monkeypatch)
    monkeypatch.setenv("DRAKEBOTS_MAX_MEMORY_GB", "1")
    with pytest.raises(InputError, match=r"7\.45 GiB of memory.*1 GiB available"):
        limits.CheckSimulation(1000.0, 1e-3, 1e-3, state_size=1000)


def test_memory_available_from_meminfo_else_8_gib(monkeypatch):
    monkeypatch.delenv("DRAKEBOTS_MAX_MEMORY_GB", raising=False)
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 0 < limits.MemoryAvailable() <= physical

    _WithoutMeminfo(monkeypatch)
    assert limits.MemoryAvailable() == 8 * 1024**3
    limits.CheckMemory(8 * 1024**3, "x")
    with pytest.raises(InputError, match="8 GiB available"):
        limits.CheckMemory(8 * 1024**3 + 1, "x")
    monkeypatch.setenv("DRAKEBOTS_MAX_MEMORY_GB", "0.5")
    assert limits.MemoryAvailable() == 512 * 1024**2


def test_a_grid_counts_its_cells_before_any_is_allocated(monkeypatch):
    monkeypatch.delenv("DRAKEBOTS_MAX_MEMORY_GB", raising=False)
    # A 1 m cube at 0.1 m: at least 11 samples an axis (np.arange(0, 1.1, 0.1)); counted as 12.
    monkeypatch.setenv("DRAKEBOTS_MAX_GRID_CELLS", str(12**3))
    limits.CheckGrid([0, 0, 0], [1, 1, 1], 0.1, "grid")
    assert 11**3 <= 12**3
    monkeypatch.setenv("DRAKEBOTS_MAX_GRID_CELLS", str(12**3 - 1))
    with pytest.raises(InputError, match="1728 grid cells"):
        limits.CheckGrid([0, 0, 0], [1, 1, 1], 0.1, "grid")


# --- every path meets the bounds -----------------------------------------------------------------


def test_python_configs_meet_the_bounds_before_any_work():
    from drakebots.skinned import MakeSkin, MakeSkinConfig
    from drakebots.systems.simulate import Simulate, SimulateConfig
    from drakebots.voxel import Fem, FemConfig

    calls = [
        (lambda: Simulate(SimulateConfig(duration=1e9)), "DRAKEBOTS_MAX_DURATION"),
        (
            lambda: Simulate(SimulateConfig(duration=3600, log_period=1e-6)),
            "DRAKEBOTS_MAX_LOG_SAMPLES",
        ),
        (lambda: Simulate(SimulateConfig(duration=100, time_step=1e-6)), "DRAKEBOTS_MAX_STEPS"),
        (lambda: Fem(FemConfig(lattice="30x30x30", actuate=["x"])), "DRAKEBOTS_MAX_VOXELS"),
        (lambda: MakeSkin(MakeSkinConfig(voxel=1e-4)), "DRAKEBOTS_MAX_GRID_CELLS"),
    ]
    for call, variable in calls:
        with pytest.raises(InputError, match=variable):
            call()


def test_config_files_judge_numbers_as_loaded_not_as_written():
    """YAML 1.1 reads 1e-9 (no dot) as a string; the typed loader converts it to the float."""
    from drakebots.systems.simulate import CheckConfig, SimulateConfig

    for text in ("time_step: 1e-9\n", "time_step: 1.0e-9\n", "time_step: '1e-9'\n"):
        with pytest.raises(InputError, match="time_step.*below 1e-06"):
            LoadTypedYaml(SimulateConfig, data=text)
    config = LoadTypedYaml(SimulateConfig, data="duration: 1e9\n")
    assert config.duration == 1e9
    with pytest.raises(InputError, match="DRAKEBOTS_MAX_DURATION"):
        CheckConfig(config)


# --- CheckTypes -----------------------------------------------------------------------------------


@dataclasses.dataclass
class _Inner:
    # A count.
    count: int = 1


@dataclasses.dataclass
class _Outer:
    # Nested.
    inner: _Inner = dataclasses.field(default_factory=_Inner)
    # Weights by name.
    weights: dict[str, float] = dataclasses.field(default_factory=dict)
    # Optional list of inners.
    items: list[_Inner] | None = None
    # Pairs.
    pair: tuple[float, str] = (0.0, "a")
    # A switch.
    on: bool = False


@pytest.mark.parametrize(
    "config, message",
    [
        (_Outer(), None),
        (_Outer(inner=_Inner(count=2), weights={"a": 1, "b": 2.5}, items=[_Inner()]), None),
        (_Outer(inner="x"), "inner: expected _Inner, got str 'x'"),
        (_Outer(inner=_Inner(count="3")), "inner.count: expected int, got str '3'"),
        (_Outer(inner=_Inner(count=True)), "inner.count: expected int, got bool"),
        (_Outer(inner=_Inner(count=2.0)), "inner.count: expected int, got float"),
        (_Outer(weights={"a": "1"}), "weights['a']: expected float, got str"),
        (_Outer(weights={1: 1.0}), "weights key 1: expected str, got int"),
        (_Outer(weights=[1.0]), "weights: expected dict[str, float], got list"),
        (_Outer(items=[_Inner(), 3]), "items[1]: expected _Inner, got int"),
        (_Outer(items=[_Inner(count=None)]), "items[0].count: expected int, got NoneType"),
        (_Outer(pair=(1, 2)), "pair[1]: expected str, got int"),
        (_Outer(pair=(1.0,)), "pair: expected 2 values, got 1"),
        (_Outer(pair=(math.nan, "a")), "pair[0] is nan: must be a finite number"),
        (_Outer(on=1), "on: expected bool, got int"),
    ],
)
def test_check_types_names_the_dotted_field_the_expected_and_the_given_type(config, message):
    if message is None:
        CheckTypes(config)
        return
    with pytest.raises(InputError) as error:
        CheckTypes(config)
    assert str(error.value) == message or str(error.value).startswith(message), str(error.value)


WORKFLOW_CONFIGS = [
    ("drakebots.optimization.legged", "GaitConfig"),
    ("drakebots.optimization.legged", "JumpConfig"),
    ("drakebots.hamr", "GaitConfig"),
    ("drakebots.hamr", "JumpConfig"),
    ("drakebots.hamr", "TrackConfig"),
    ("drakebots.hamr", "ModesConfig"),
    ("drakebots.voxel", "FemConfig"),
    ("drakebots.voxel", "PomConfig"),
    ("drakebots.voxel", "CompareConfig"),
    ("drakebots.gecko", "NavigateConfig"),
    ("drakebots.gecko", "VelocitySpaceConfig"),
    ("drakebots.systems.simulate", "SimulateConfig"),
    ("drakebots.skinned", "DesignConfig"),
    ("drakebots.skinned", "MakeSkinConfig"),
    ("drakebots.skinned", "BendConfig"),
]


@pytest.mark.parametrize("module, name", WORKFLOW_CONFIGS)
def test_every_workflow_configs_defaults_are_of_their_declared_types(module, name):
    import importlib

    CheckTypes(getattr(importlib.import_module(module), name)())


def _Workflows():
    """(call, the field it must name): each workflow given a config with one field of the wrong
    type, through its public entry point."""
    from drakebots import hamr, skinned, voxel
    from drakebots.gecko import Navigate, NavigateConfig, VelocitySpace, VelocitySpaceConfig
    from drakebots.optimization import legged
    from drakebots.systems.simulate import Simulate, SimulateConfig

    return [
        (lambda: legged.OptimizeJump(legged.JumpConfig(solver="ipopt")), "solver: expected"),
        (lambda: legged.OptimizeGait(legged.GaitConfig(knots="21")), "knots: expected int"),
        (lambda: hamr.OptimizeGait(hamr.GaitConfig(knots=21.0)), "knots: expected int"),
        (lambda: hamr.OptimizeJump(hamr.JumpConfig(solver="snopt")), "solver: expected"),
        (lambda: hamr.Track(hamr.TrackConfig(plan=3)), "plan: expected str"),
        (lambda: hamr.Modes(hamr.ModesConfig(amplitude="1")), "amplitude: expected float"),
        (lambda: voxel.Fem(voxel.FemConfig(actuate="node=0:0:0/3")), "actuate: expected list"),
        (lambda: voxel.Pom(voxel.PomConfig(lift="2")), "lift: expected float"),
        (lambda: voxel.Compare(voxel.CompareConfig(lift=None)), "lift: expected float"),
        (lambda: Navigate(NavigateConfig(targets=[[0.1, "a"]])), "targets[0][1]: expected"),
        (lambda: VelocitySpace(VelocitySpaceConfig(q1=50.0)), "q1: expected"),
        (lambda: Simulate(SimulateConfig(duration="2")), "duration: expected float"),
        (lambda: skinned.Design(skinned.DesignConfig(speed="fast")), "speed: expected"),
        (lambda: skinned.MakeSkin(skinned.MakeSkinConfig(voxel="0.01")), "voxel: expected"),
        (lambda: skinned.Bend(skinned.BendConfig(time="2")), "time: expected float"),
    ]


def test_every_workflow_names_the_field_of_the_wrong_type():
    """Issue 68: `JumpConfig(solver="ipopt")` failed deep inside with AttributeError."""
    calls = _Workflows()
    assert len(calls) == len(WORKFLOW_CONFIGS)
    for call, message in calls:
        with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
            call()


# --- the voxel occupancy, the skeleton, the gecko's course -------------------------------------


@pytest.mark.parametrize(
    "voxels, pieces",
    [
        ([(0, 0, 0)], 1),
        ([(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1)], 1),  # an L through faces
        ([(0, 0, 0), (2, 0, 0)], 2),  # a gap
        ([(0, 0, 0), (1, 1, 0)], 2),  # edge neighbours: no shared node (nodes sit on faces)
        ([(0, 0, 0), (1, 1, 1)], 2),  # corner neighbours
        ([(0, 0, 0), (2, 0, 0), (0, 2, 0), (2, 2, 2)], 4),
    ],
)
def test_an_occupancy_in_pieces_is_refused_naming_the_count(voxels, pieces):
    from drakebots.voxel.actuators import CheckConnected
    from drakebots.voxel.lattice import VoxelLattice

    occupancy = np.zeros((3, 3, 3), bool)
    for voxel in voxels:
        occupancy[voxel] = True
    # The reference: voxels that share a node, from the lattice's own node numbering.
    lattice = VoxelLattice(occupancy)
    shared = {
        (a, b)
        for a in range(len(voxels))
        for b in range(len(voxels))
        if set(lattice.voxel_nodes[a]) & set(lattice.voxel_nodes[b])
    }
    if pieces == 1:
        CheckConnected(occupancy)
        return
    assert len(shared) == len(voxels) or pieces < len(voxels)  # singletons share only themselves
    with pytest.raises(InputError, match=f"form {pieces} separate pieces"):
        CheckConnected(occupancy)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"legs": {"upper_length": 0.0}}, "legs.upper_length"),
        ({"legs": {"lower_length": -0.15}}, "legs.lower_length"),
        ({"legs": {"link_thickness": 0}}, "legs.link_thickness"),
        ({"legs": {"foot_width": 11.0}}, "legs.foot_width"),
        ({"legs": {"ankle_height": -0.01}}, "legs.ankle_height"),
        ({"torso_size": [0.3, -0.16, 0.1]}, "torso_size"),
        ({"torso_size": [0.3, 0.16]}, "torso_size"),
        ({"motor": {"size": [0.04, 0.0, 0.038]}}, "motor.size"),
        ({"neck": {"joints": 1, "width": 0.0}}, "neck.width"),
        ({"spine": {"joints": -1}}, "spine.joints"),
        ({"contact": {"sphere_radius": 0.0}}, "contact.sphere_radius"),
        ({"legs": {"foot_mass": -1.0}}, "legs.foot_mass"),
        ({"legs": {"knee_limit": 0.0}}, "legs.knee_limit"),
        ({"motor": {"effort_limit": -1.96}}, "motor.effort_limit"),
        ({"motor": {"kd": -0.4}}, "motor.kd"),
        ({"contact": {"stiffness": 0.0}}, "contact.stiffness"),
        ({"contact": {"mu_dynamic": -0.8}}, "contact.mu_dynamic"),
    ],
)
def test_zero_and_negative_skeleton_sizes_are_refused_naming_the_key(tmp_path, change, key):
    import json

    from drakebots.skinned.skeleton import LoadSkeletonParams

    path = tmp_path / "skeleton.yaml"
    path.write_text(json.dumps({"name": "t", **change}))
    with pytest.raises(InputError, match=f"{path}: key '{key}'"):
        LoadSkeletonParams(path)


def test_the_built_in_skeletons_pass_the_size_checks():
    from drakebots.skinned.skeleton import BuiltinSkeletonNames, LoadSkeletonParams

    assert len(BuiltinSkeletonNames()) == 4
    for name in BuiltinSkeletonNames():
        LoadSkeletonParams(name)


def test_a_course_beyond_1000_m_is_refused_before_the_planner():
    from drakebots.gecko.navigation import NavigateConfig, ResolveCourse

    ResolveCourse(NavigateConfig(targets=[[999.0, -999.0]]))
    for targets in ([[1e300, 0.0]], [[0.1, 0.1], [0.0, -1000.5]]):
        with pytest.raises(InputError, match=f"target {len(targets)}.*1000 m"):
            ResolveCourse(NavigateConfig(targets=targets))
    with pytest.raises(InputError, match="--start"):
        ResolveCourse(NavigateConfig(start=[0.0, 2e3, 0.0]))


def test_environment_readers_name_the_variable(monkeypatch):
    from drakebots.fem.model import KernelThreads
    from drakebots.frame.model import FactorizationBackend, FrameThreads
    from drakebots.runtime import CheckEnvironment

    monkeypatch.setenv("DRAKEBOTS_FRAME_SOLVER", "SuperLU")
    assert FactorizationBackend() == "superlu"  # case-insensitive, as before
    monkeypatch.setenv("DRAKEBOTS_FRAME_THREADS", "3")
    assert FrameThreads() == 3
    monkeypatch.setenv("DRAKEBOTS_FEM_THREADS", "1")
    assert KernelThreads() == 1
    CheckEnvironment()
    for variable, value, reader in [
        ("DRAKEBOTS_FRAME_SOLVER", "umfpack", FactorizationBackend),
        ("DRAKEBOTS_FRAME_THREADS", "x", FrameThreads),
        ("DRAKEBOTS_FEM_THREADS", "0", KernelThreads),
    ]:
        monkeypatch.setenv(variable, value)
        for call in (reader, CheckEnvironment):
            with pytest.raises(InputError, match=f"^environment variable {variable}='{value}'"):
                call()
        monkeypatch.delenv(variable)


# --- issue 68's leftovers: every bound from a flag, a config file and a Python config ------------

# (key, command line before the flag, the flag) for every key of limits.KEY_BOUNDS a flag sets
# (lookahead's flag takes a word, major_iterations has none: a file and Python set them).
_PLAN = ["track", "no_plan"]
KEY_FLAGS = [
    ("knots", ["optimize", "hamr-gait"], "--knots"),
    ("knot_frames", ["design", "beetle"], "--knot-frames"),
    ("cycles", ["simulate", "hamr_vi"], "--cycles"),
    ("iterations", ["optimize", "hamr-gait"], "--iterations"),
    ("space_time_iterations", ["design", "beetle"], "--space-time-iterations"),
    ("first_stage_iterations", ["optimize", "hamr-jump"], "--first-stage-iterations"),
    ("table_samples", _PLAN, "--table-samples"),
    ("max_steps", ["gecko", "navigate"], "--max-steps"),
    ("warmup", ["gecko", "velocity-space"], "--warmup"),
    ("frequency", ["optimize", "hamr-gait"], "--frequency"),
    ("workers", ["gecko", "velocity-space"], "--workers"),
    ("fold_teeth", ["skin", "beetle"], "--fold-teeth"),
    ("friction_directions", ["optimize", "hamr-gait"], "--friction-directions"),
    ("friction", ["optimize", "gait", "robot.yaml"], "--friction"),
    ("torque_limit", ["skin-bend", "beetle"], "--torque-limit"),
    ("motor_limit", ["design", "beetle"], "--motor-limit"),
    ("plan_motor_limits", ["design", "beetle"], "--plan-motor-limits"),
    ("mass_scale", ["design", "beetle"], "--mass-scale"),
    ("torso_attitude_weight", ["design", "beetle"], "--torso-attitude-weight"),
    ("scuff_weight", ["optimize", "hamr-gait"], "--scuff-weight"),
    ("goal", ["optimize", "hamr-gait"], "--goal"),
    ("scuff_height", ["optimize", "hamr-gait"], "--scuff-height"),
    ("amplitude", ["hamr", "modes"], "--amplitude"),
]
# Options bounded by dest only (no config key of that name), and optimize's --duration (its own).
DEST_FLAGS = [
    ("replay_seconds", ["view", "folder"], "--seconds"),
    ("replay_seconds", ["design", "beetle"], "--coupled-replay-seconds"),
    ("case_timeout", ["sweep", "sweep.yaml"], "--case-timeout"),
    ("duration", ["skin-bend", "beetle"], "--time"),
    ("duration", ["skin-bend", "beetle"], "--hold"),
    ("plan_time", ["optimize", "hamr-jump"], "--duration"),
]


def _Above(bound: str) -> str:
    """A value above the bound's default: twice it (an integer for a count)."""
    default = limits.BOUNDS[bound].default
    return str(int(2 * default) + 1) if float(default).is_integer() else repr(2.5 * default)


def _Parse(argv, capsys):
    """(exit code, stderr) of parsing `drakebots ARGV` (the flags' checks; nothing runs)."""
    from drakebots.cli import MakeParser

    try:
        MakeParser().parse_args(argv)
    except SystemExit as e:
        return e.code, capsys.readouterr().err
    return 0, capsys.readouterr().err


def test_every_key_bound_has_a_flag_or_says_why_not():
    assert {key for key, _, _ in KEY_FLAGS} == set(limits.KEY_BOUNDS) - {
        "lookahead",
        "major_iterations",
    }
    assert set(limits.KEY_BOUNDS.values()) <= set(limits.BOUNDS)


@pytest.mark.parametrize(
    "bound, argv, flag",
    [(limits.KEY_BOUNDS[key], argv, flag) for key, argv, flag in KEY_FLAGS] + DEST_FLAGS,
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_a_flag_above_its_bound_is_refused_naming_the_variable_which_raises_it(
    monkeypatch, capsys, bound, argv, flag
):
    variable = "DRAKEBOTS_MAX_" + bound.upper()
    monkeypatch.delenv(variable, raising=False)
    value = _Above(bound)
    code, err = _Parse([*argv, flag, value], capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert f"argument {flag}: {value} is above the bound of" in err and variable in err, err
    monkeypatch.setenv(variable, repr(4.0 * float(value)))
    code, err = _Parse([*argv, flag, value], capsys)
    assert code == 0, err


@dataclasses.dataclass
class _Solver:
    # Iterations.
    major_iterations: int = 10


@dataclasses.dataclass
class _Keys:
    """One field per key of limits.KEY_BOUNDS (the bound goes by the field's name)."""

    # The nested solver.
    solver: _Solver = dataclasses.field(default_factory=_Solver)
    knots: int = 3
    knot_frames: int = 1
    cycles: int = 1
    iterations: int = 1
    space_time_iterations: int = 1
    first_stage_iterations: int = 1
    table_samples: int = 3
    max_steps: int = 1
    warmup: int = 1
    frequency: float = 1.0
    workers: int = 1
    fold_teeth: int = 1
    friction_directions: int = 4
    lookahead: int = 1
    friction: float = 0.5
    torque_limit: float = 1.0
    motor_limit: float = 1.0
    plan_motor_limits: float = 1.0
    mass_scale: float = 1.0
    torso_attitude_weight: float = 1.0
    scuff_weight: float = 1.0
    goal: float = 1.0
    scuff_height: float = 1.0
    amplitude: float = 1.0


@pytest.mark.parametrize("key", sorted(limits.KEY_BOUNDS))
def test_a_config_file_key_and_a_python_field_above_the_bound_are_refused(monkeypatch, key):
    bound = limits.KEY_BOUNDS[key]
    variable = "DRAKEBOTS_MAX_" + bound.upper()
    monkeypatch.delenv(variable, raising=False)
    value = _Above(bound)
    path = "solver.major_iterations" if key == "major_iterations" else key
    text = f"{key}: {value}\n"
    if key == "major_iterations":
        text = "solver: {major_iterations: " + value + "}\n"
    with pytest.raises(
        InputError, match=f"f.yaml: key '{path}' {value}(\\.0)? is above.*{variable}"
    ):
        LoadTypedYaml(_Keys, data=text, source="f.yaml")
    config = _Keys()
    target = config.solver if key == "major_iterations" else config
    setattr(target, key, type(getattr(target, key))(float(value)))
    with pytest.raises(InputError, match=f"^{re_escape(path)}: .* is above the bound.*{variable}"):
        CheckTypes(config)
    monkeypatch.setenv(variable, repr(4.0 * float(value)))
    LoadTypedYaml(_Keys, data=text, source="f.yaml")
    CheckTypes(config)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


@pytest.mark.parametrize(
    "bound, field, value",
    [("drop_height", "drop_height", 150.0), ("friction", "ground_friction", 12.0)],
)
def test_a_simulations_scale_bounds_from_file_and_python(monkeypatch, bound, field, value):
    from drakebots.systems.simulate import CheckConfig, SimulateConfig

    variable = "DRAKEBOTS_MAX_" + bound.upper()
    monkeypatch.delenv(variable, raising=False)
    flag = "--" + field.replace("_", "-")
    config = SimulateConfig(robot="beetle", **{field: value})
    with pytest.raises(InputError, match=f"^{flag}: {value:g} .* bound of .*{variable}"):
        CheckConfig(config)
    loaded = LoadTypedYaml(SimulateConfig, data=f"robot: beetle\n{field}: {value}\n")
    names = {field: f"s.yaml: key '{field}'"}
    with pytest.raises(InputError, match=f"^s.yaml: key '{field}': .*{variable}"):
        CheckConfig(loaded, names)
    monkeypatch.setenv(variable, str(2 * value))
    CheckConfig(config)
    CheckConfig(loaded, names)


def test_hamr_and_gecko_scale_bounds_from_python_and_raised(monkeypatch):
    from drakebots import hamr
    from drakebots.gecko.navigation import NavigateConfig, ResolveCourse

    for variable in ("HAMR_DISTANCE", "TARGET_RADIUS", "COURSE", "PLAN_TIME"):
        monkeypatch.delenv("DRAKEBOTS_MAX_" + variable, raising=False)
    with pytest.raises(InputError, match="^height: 1500 mm .*DRAKEBOTS_MAX_HAMR_DISTANCE"):
        hamr.OptimizeJump(hamr.JumpConfig(height=1500.0))
    with pytest.raises(InputError, match=r"0.05 Hz.*2e\+04 ms.*DRAKEBOTS_MAX_PLAN_TIME"):
        hamr.OptimizeGait(hamr.GaitConfig(frequency=0.05))
    with pytest.raises(InputError, match="--epsilon 12.0 m: 12 m .*DRAKEBOTS_MAX_TARGET_RADIUS"):
        ResolveCourse(NavigateConfig(epsilon=12.0))
    with pytest.raises(InputError, match="target 1.*1000 m.*DRAKEBOTS_MAX_COURSE"):
        ResolveCourse(NavigateConfig(targets=[[1500.0, 0.0]]))
    monkeypatch.setenv("DRAKEBOTS_MAX_TARGET_RADIUS", "20")
    monkeypatch.setenv("DRAKEBOTS_MAX_COURSE", "2000")
    assert ResolveCourse(NavigateConfig(epsilon=12.0)).epsilon == 12.0
    ResolveCourse(NavigateConfig(targets=[[1500.0, 0.0]]))


@pytest.mark.parametrize("text", ["1e-320", "-4.9e-324", "2e-310"])
def test_a_subnormal_is_refused_from_a_flag_a_file_and_python(capsys, text):
    from drakebots.systems.simulate import SimulateConfig

    code, err = _Parse(["simulate", "beetle", f"--drop-height={text}"], capsys)
    assert code == 2 and "subnormal" in err and "--drop-height" in err, err
    with pytest.raises(InputError, match="key 'drop_height' .*subnormal"):
        LoadTypedYaml(SimulateConfig, data=f"drop_height: {text}\n")
    with pytest.raises(InputError, match="^drop_height is .*subnormal"):
        CheckTypes(SimulateConfig(drop_height=float(text)))
    for normal in ("0", "-0.0", "2.3e-308"):  # zero and the smallest normal pass this check
        CheckTypes(SimulateConfig(drop_height=float(normal)))


# --- the sizes of what is read: YAML files, skeleton lengths, robot meshes ----------------------


def test_a_yaml_files_size_and_expanded_values_meet_their_bounds(monkeypatch):
    from drakebots.config import ReadYaml

    for name in ("YAML_BYTES", "YAML_VALUES"):
        monkeypatch.delenv("DRAKEBOTS_MAX_" + name, raising=False)
    # 10 aliases of a 1000-item list: 11 000 values and more once expanded (the list and its
    # items, ten times), under 11 020 (the mapping, its keys, the outer list: a handful).
    text = "a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 10) + "]\n"
    ReadYaml(data=text)  # within the 200 000 default
    monkeypatch.setenv("DRAKEBOTS_MAX_YAML_VALUES", "11000")
    with pytest.raises(InputError, match="more than 11000 values.*DRAKEBOTS_MAX_YAML_VALUES"):
        ReadYaml(data=text, source="t.yaml")
    monkeypatch.setenv("DRAKEBOTS_MAX_YAML_VALUES", "11020")
    ReadYaml(data=text)
    monkeypatch.setenv("DRAKEBOTS_MAX_YAML_BYTES", str(len(text) - 1))
    with pytest.raises(InputError, match=f"larger than {len(text) - 1} bytes.*YAML_BYTES"):
        ReadYaml(data=text, source="t.yaml")
    monkeypatch.setenv("DRAKEBOTS_MAX_YAML_BYTES", str(len(text)))
    ReadYaml(data=text)


def test_a_skeleton_length_above_its_bound_is_refused_and_the_variable_raises_it(
    tmp_path, monkeypatch
):
    import json

    from drakebots.skinned.skeleton import LoadSkeletonParams

    monkeypatch.delenv("DRAKEBOTS_MAX_SKELETON_LENGTH", raising=False)
    path = tmp_path / "skeleton.yaml"
    path.write_text(json.dumps({"name": "t", "legs": {"lower_length": 15.0}}))
    with pytest.raises(InputError, match="legs.lower_length.*15.*DRAKEBOTS_MAX_SKELETON_LENGTH"):
        LoadSkeletonParams(path)
    monkeypatch.setenv("DRAKEBOTS_MAX_SKELETON_LENGTH", "20")
    assert LoadSkeletonParams(path).legs.lower_length == 15.0


def test_a_robot_mesh_above_its_extent_bound_is_refused_and_the_variable_raises_it(
    tmp_path, monkeypatch
):
    import trimesh

    from drakebots.robots import LoadRobot
    from tests.robots.test_published import _LegUrdf, _RobotFile

    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("DRAKEBOTS_MAX_MESH_EXTENT", raising=False)
    monkeypatch.delenv("DRAKEBOTS_MAX_MODEL_MESH_BYTES", raising=False)
    folder = tmp_path / "robot"
    folder.mkdir()
    trimesh.creation.box(extents=[150.0, 20.0, 10.0]).export(folder / "big.stl")
    path = _RobotFile(folder, _LegUrdf("big.stl"))
    with pytest.raises(InputError, match="150 length units across.*DRAKEBOTS_MAX_MESH_EXTENT"):
        LoadRobot(path)
    monkeypatch.setenv("DRAKEBOTS_MAX_MESH_EXTENT", "200")
    LoadRobot(path)  # converted now, into the cache
    size = (folder / "big.stl").stat().st_size
    monkeypatch.setenv("DRAKEBOTS_MAX_MODEL_MESH_BYTES", str(size - 1))
    with pytest.raises(InputError, match=f"big.stl: mesh of model .*: {size} bytes of mesh file"):
        LoadRobot(path)


def test_every_bound_is_in_the_documents_table_with_its_variable():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "results.md").read_text()
    rows = [
        line for line in text.splitlines() if line.startswith("| ") and "DRAKEBOTS_MAX_" in line
    ]
    documented = {row.split("`DRAKEBOTS_MAX_")[1].split("`")[0].lower() for row in rows}
    assert documented == set(limits.BOUNDS) | {"memory_gb"}
