"""Replay extras for the gecko: suction-foot markers coloured by fixation, targets, obstacles.

The markers are children of the feet's Meshcat paths (robot/gecko/<foot>_foot/...), so they move
with the feet; each frame toggles the green "fixed" disc or the grey "free" ring.
"""

from __future__ import annotations

import numpy as np
from pydrake.geometry import Cylinder, Rgba, Sphere
from pydrake.math import RigidTransform

from drakebots.gecko.geometry import FEET
from drakebots.visualization.replay import ReplayDecorator

FIXED_COLOR = Rgba(0.10, 0.85, 0.25, 0.95)
FREE_COLOR = Rgba(0.55, 0.55, 0.55, 0.55)
TARGET_COLOR = Rgba(0.55, 0.10, 0.75, 0.9)
EPSILON_COLOR = Rgba(0.55, 0.10, 0.75, 0.18)
OBSTACLE_COLOR = Rgba(0.30, 0.30, 0.30, 0.9)


def GeckoReplayDecorator(
    fixation: np.ndarray,
    *,
    targets=None,
    epsilon: float = 0.05,
    obstacles=(),
    track=None,
    model_name: str = "gecko",
) -> ReplayDecorator:
    """Suction markers (and optionally targets and obstacles) for a gecko replay.

    Args:
        fixation: (T, 4) fixation per logged sample (FEET order; > 0.5 = fixed).
        targets: (K, 2) targets, m; drawn as purple posts with their epsilon discs.
        epsilon: target radius, m.
        obstacles: (x, y, radius) cylinders, m.
        track: (T, 2 or 3) positions of the torso midpoint, m: the camera looks down on the
            region they cover (and the targets), from the south at about 60 degrees.
    """
    fixation = np.asarray(fixation) > 0.5

    def Paths(foot):
        base = f"robot/{model_name}/{foot}_foot"
        return f"{base}/suction_fixed", f"{base}/suction_free"

    def Setup(meshcat, plant):
        if track is not None:
            points = [np.asarray(track)[:, :2]]
            if targets is not None:
                points.append(np.asarray(targets).reshape(-1, 2))
            points = np.vstack(points)
            lower, upper = points.min(axis=0) - 0.15, points.max(axis=0) + 0.15
            center = np.append(0.5 * (lower + upper), 0.0)
            extent = max(float(np.max(upper - lower)), 0.3)
            meshcat.SetCameraPose(center + 0.85 * extent * np.array([0.0, -0.55, 1.0]), center)
        for foot in FEET:
            fixed_path, free_path = Paths(foot)
            meshcat.SetObject(fixed_path, Cylinder(0.0135, 0.004), FIXED_COLOR)
            meshcat.SetTransform(fixed_path, RigidTransform([0.0, 0.0, 0.004]))
            meshcat.SetObject(free_path, Cylinder(0.0135, 0.002), FREE_COLOR)
            meshcat.SetTransform(free_path, RigidTransform([0.0, 0.0, 0.004]))
        if targets is not None:
            for k, (x, y) in enumerate(np.asarray(targets).reshape(-1, 2)):
                meshcat.SetObject(f"course/target_{k}", Sphere(0.01), TARGET_COLOR)
                meshcat.SetTransform(f"course/target_{k}", RigidTransform([x, y, 0.03]))
                meshcat.SetObject(f"course/epsilon_{k}", Cylinder(epsilon, 0.001), EPSILON_COLOR)
                meshcat.SetTransform(f"course/epsilon_{k}", RigidTransform([x, y, 0.0006]))
        for k, (x, y, radius) in enumerate(obstacles):
            meshcat.SetObject(f"course/obstacle_{k}", Cylinder(radius, 0.04), OBSTACLE_COLOR)
            meshcat.SetTransform(f"course/obstacle_{k}", RigidTransform([x, y, 0.02]))

    def Frame(meshcat, animation, frame_index, sample_index):
        fixed = fixation[min(sample_index, len(fixation) - 1)]
        for j, foot in enumerate(FEET):
            fixed_path, free_path = Paths(foot)
            animation.SetProperty(frame_index, fixed_path, "visible", bool(fixed[j]))
            animation.SetProperty(frame_index, free_path, "visible", not fixed[j])

    return ReplayDecorator(setup=Setup, frame=Frame)


def GeometricTracePositions(robot, times: np.ndarray, z: np.ndarray, *, rate: float = 15.0):
    """Plant positions that show a geometric-model trace with the Drake model's segment chains.

    The trace's poses (z rows: x, y, eps, alpha(5), lengths(5)) are interpolated linearly in
    time at `rate` samples per second; the limb lengths are the model's (the Drake chains are
    inextensible). Returns (sample_times, positions, row_of_sample).
    """
    from pydrake.multibody.plant import MultibodyPlant

    from drakebots.gecko.model import SetGeckoPose

    plant = MultibodyPlant(0.0)
    instance = robot.AddTo(plant)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    times = np.asarray(times, dtype=float)
    samples = np.arange(times[0], times[-1] + 1e-9, 1.0 / rate)
    positions = np.zeros((len(samples), plant.num_positions()))
    rows = np.clip(np.searchsorted(times, samples, side="right") - 1, 0, len(times) - 1)
    for k, t in enumerate(samples):
        values = [np.interp(t, times, z[:, i]) for i in range(8)]
        SetGeckoPose(
            plant, context, instance, alpha=values[3:8], pose=values[0:3], params=robot.params
        )
        positions[k] = plant.GetPositions(context)
    return samples, positions, rows


def GeometricTraceReplay(robot, trace, **decorator_args) -> str:
    """replay.html of a geometric-model run (GeometricTrace), suction markers included."""
    from drakebots.visualization.replay import ReplayHtml

    samples, positions, rows = GeometricTracePositions(robot, trace.times, trace.z)
    fixation = np.asarray(trace.fixed, dtype=float)[rows]
    decorator = GeckoReplayDecorator(fixation, **decorator_args)
    return ReplayHtml(robot, samples, positions, decorator=decorator)
