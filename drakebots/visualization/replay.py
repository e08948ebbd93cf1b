"""Meshcat replay of a logged trajectory: a live view (`drakebots view`) and a static replay.html.

Both paths rebuild the robot's plant and scene graph, set the logged positions frame by frame and
record them into a Meshcat animation; `StaticHtml()` then writes that recording into one
self-contained page (Meshcat's JavaScript is inlined, so it opens with no network).

Families that draw more than rigid bodies (the deforming skin, suction-foot markers) pass a
`ReplayDecorator` that adds its own objects once and animates them per frame (Meshcat recordings
animate transforms and properties such as visibility, not vertices).
"""

import dataclasses
import gc
import logging
from collections.abc import Callable

import numpy as np
from pydrake.geometry import Meshcat, MeshcatVisualizer, MeshcatVisualizerParams, Role
from pydrake.multibody.plant import AddMultibodyPlantSceneGraph
from pydrake.systems.framework import DiagramBuilder

from drakebots.robots.base import Robot, VisualBoundingBox
from drakebots.systems.ground import AddGround
from drakebots.visualization.meshcat import LocalMeshcat

# Opacity of a plan drawn beside Drake's run (RecordReplay's ghost).
GHOST_OPACITY = 0.3


@dataclasses.dataclass
class ReplayDecorator:
    """Extra drawing for a replay.

    Attributes:
        setup: called once with (meshcat, plant) before recording; adds objects.
        frame: called per recorded frame with (meshcat, animation, frame_index, sample_index).
    """

    setup: Callable | None = None
    frame: Callable | None = None


@dataclasses.dataclass
class ReplayScene:
    """A plant + scene graph + Meshcat visualizer for replaying positions."""

    diagram: object
    plant: object
    scene_graph: object
    visualizer: object
    context: object
    meshcat: Meshcat
    # A second scene recorded with this one (a plan drawn beside the run), or None.
    ghost: object = None


def MakeReplayScene(
    robot: Robot,
    meshcat: Meshcat,
    *,
    ground: bool = True,
    add_models: Callable | None = None,
    frame_rate: float = 30.0,
    prefix: str = "robot",
) -> ReplayScene:
    """Builds a scene for replaying `robot` in `meshcat`.

    Args:
        robot: the robot whose logged positions will be replayed.
        meshcat: the Meshcat to draw into.
        ground: draw the ground.
        add_models: optional f(plant) that adds more models (it must keep the plant's position
            layout equal to the logged one).
        frame_rate: frames per second of the recording (the visualizer's publish rate: Meshcat
            recordings run at 1 / publish_period frames per second).
        prefix: the Meshcat path under /drake the robot is drawn at ("plan" for a ghost).
    """
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=0.0)
    robot.AddTo(plant)
    if add_models is not None:
        add_models(plant)
    if ground:
        AddGround(plant, size=_GroundSize(robot))
    plant.Finalize()
    visualizer = MeshcatVisualizer.AddToBuilder(
        builder,
        scene_graph,
        meshcat,
        MeshcatVisualizerParams(
            role=Role.kIllustration, prefix=prefix, publish_period=1.0 / frame_rate
        ),
    )
    diagram = builder.Build()
    context = diagram.CreateDefaultContext()
    return ReplayScene(diagram, plant, scene_graph, visualizer, context, meshcat)


def _GroundSize(robot: Robot) -> float:
    """A ground plate of a few body lengths in the robot's length unit."""
    return 4.0 if robot.units.get("length") == "m" else 400.0


def FrameCamera(scene: ReplayScene, positions: np.ndarray | None = None, last=None) -> None:
    """Points the camera at the robot from the front-left, at a distance that frames it in the
    pose `positions` and, if given, in the pose `last` (the end of a trajectory) too."""
    plant_context = scene.plant.GetMyContextFromRoot(scene.context)
    boxes = []
    for q in (positions, last):
        if q is not None:
            scene.plant.SetPositions(plant_context, q)
        if q is not None or not boxes:
            boxes.append(VisualBoundingBox(scene.plant, scene.scene_graph, plant_context))
    lower = np.min([box[0] for box in boxes], axis=0)
    upper = np.max([box[1] for box in boxes], axis=0)
    # The ground plate is the world body's, which VisualBoundingBox leaves out.
    center = 0.5 * (lower + upper)
    direction = np.array([1.0, -1.5, 0.8])
    direction /= np.linalg.norm(direction)
    # Distance from the box's half-diagonal: the whole robot fits Meshcat's 75-degree view.
    radius = 0.5 * float(np.linalg.norm(upper - lower))
    scene.meshcat.SetCameraPose(center + max(2.0 * radius, 1e-6) * direction, center)
    # Meshcat's default grid and axes only clutter a robot standing on its own ground plate.
    scene.meshcat.SetProperty("/Grid", "visible", False)
    scene.meshcat.SetProperty("/Axes", "visible", False)


def NearestSamples(times: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Index of the log sample nearest to each query time (times sorted ascending)."""
    after = np.clip(np.searchsorted(times, query), 1, max(1, len(times) - 1))
    before = after - 1
    pick_after = np.abs(times[np.minimum(after, len(times) - 1)] - query) < np.abs(
        times[before] - query
    )
    return np.where(pick_after, np.minimum(after, len(times) - 1), before)


def RecordTrajectory(
    scene: ReplayScene,
    times: np.ndarray,
    positions: np.ndarray,
    *,
    frame_rate: float = 30.0,
    decorator: ReplayDecorator | None = None,
    time_unit: str = "s",
    slow_motion: float = 1.0,
    ghost: tuple | None = None,
) -> int:
    """Records the logged positions as a Meshcat animation and publishes it; returns #frames.

    Frames are sampled at `frame_rate` per second of playback from the log (the nearest
    sample). `times` are in `time_unit` ("s" or "ms"); `slow_motion` > 1 plays fast robots
    (HAMR-VI strides at 10-30 Hz) slower than real time. `ghost`: (scene, times, positions) of
    a second copy of the robot recorded into the same animation (the plan beside Drake's run).
    """
    if decorator is not None and decorator.setup is not None:
        decorator.setup(scene.meshcat, scene.plant)
    plant_context = scene.plant.GetMyContextFromRoot(scene.context)
    # Log time in the robot's unit -> seconds of playback.
    seconds_per_unit = {"s": 1.0, "ms": 1e-3}.get(time_unit, 1.0) * slow_motion
    t0, t1 = float(times[0]), float(times[-1])
    from drakebots.limits import CheckWork

    # A log whose last time is 1e12 asked for 218 TiB of frames (issue 68).
    playback = (t1 - t0) * seconds_per_unit * frame_rate
    CheckWork("frames", playback + 1, f"a replay of {t1 - t0:g} {time_unit} at {frame_rate:g}/s")
    count = max(1, int(round((t1 - t0) * seconds_per_unit * frame_rate)) + 1)
    frame_times = t0 + np.arange(count) / (frame_rate * seconds_per_unit)
    sample = NearestSamples(times, frame_times)
    if ghost is not None:
        # Its visualizer records too (into the Meshcat's one animation, which the run's
        # StartRecording below starts afresh).
        ghost_scene, ghost_times, ghost_positions = ghost
        ghost_scene.visualizer.StartRecording(set_transforms_while_recording=False)
        ghost_context = ghost_scene.plant.GetMyContextFromRoot(ghost_scene.context)
        ghost_sample = NearestSamples(np.asarray(ghost_times), frame_times)
    animation = scene.visualizer.StartRecording(set_transforms_while_recording=False)
    for frame, index in enumerate(sample):
        scene.context.SetTime(frame / frame_rate)  # animation frame = time * frame_rate
        scene.plant.SetPositions(plant_context, positions[index])
        scene.visualizer.ForcedPublish(scene.visualizer.GetMyContextFromRoot(scene.context))
        if ghost is not None:
            ghost_scene.context.SetTime(frame / frame_rate)
            ghost_scene.plant.SetPositions(ghost_context, ghost_positions[ghost_sample[frame]])
            ghost_scene.visualizer.ForcedPublish(
                ghost_scene.visualizer.GetMyContextFromRoot(ghost_scene.context)
            )
        if decorator is not None and decorator.frame is not None:
            decorator.frame(scene.meshcat, animation, frame, int(index))
    scene.visualizer.StopRecording()
    if ghost is not None:
        ghost_scene.visualizer.StopRecording()
    scene.visualizer.PublishRecording()
    return count


def RecordReplay(
    meshcat: Meshcat,
    robot: Robot,
    times: np.ndarray,
    positions: np.ndarray,
    *,
    decorator: ReplayDecorator | None = None,
    add_models: Callable | None = None,
    frame_rate: float = 30.0,
    ghost: tuple | None = None,
) -> tuple[ReplayScene, int]:
    """Builds the replay scene in `meshcat`, frames the camera and records the trajectory.

    The one path behind both `replay.html` and `drakebots view`. Returns the scene and the
    number of recorded frames. `ghost`: None or (times, positions) of a plan drawn beside the
    run as a transparent second copy of the robot (Meshcat path /drake/plan, opacity
    GHOST_OPACITY) in the same recording.
    """
    scene = MakeReplayScene(robot, meshcat, add_models=add_models, frame_rate=frame_rate)
    FrameCamera(scene, positions[0], positions[-1])
    ghost_record = None
    if ghost is not None:
        ghost_scene = MakeReplayScene(
            robot, meshcat, ground=False, frame_rate=frame_rate, prefix="plan"
        )
        ghost_record = (ghost_scene, ghost[0], ghost[1])
    frames = RecordTrajectory(
        scene,
        times,
        positions,
        frame_rate=frame_rate,
        decorator=decorator,
        time_unit=robot.units.get("time", "s"),
        slow_motion=getattr(robot, "replay_slow_motion", 1.0),
        ghost=ghost_record,
    )
    if ghost is not None:
        meshcat.SetProperty("/drake/plan", "modulated_opacity", GHOST_OPACITY)
        scene.ghost = ghost_record[0]  # kept alive with the scene
    return scene, frames


def ReplayHtml(
    robot: Robot,
    times: np.ndarray,
    positions: np.ndarray,
    *,
    decorator: ReplayDecorator | None = None,
    add_models: Callable | None = None,
    frame_rate: float = 30.0,
    ghost: tuple | None = None,
) -> str:
    """A self-contained replay page (Meshcat StaticHtml) of a logged trajectory (and, with
    `ghost` = (times, positions), a plan drawn beside it: RecordReplay)."""
    logging.getLogger("drake").setLevel(logging.WARNING)  # no "Meshcat listening" line
    meshcat = LocalMeshcat()
    scene = None
    try:
        scene, _ = RecordReplay(
            meshcat,
            robot,
            times,
            positions,
            decorator=decorator,
            add_models=add_models,
            frame_rate=frame_rate,
            ghost=ghost,
        )
        return meshcat.StaticHtml()
    finally:
        # The diagram holds the Meshcat through reference cycles; collect it here, on this
        # thread: Drake aborts if a Meshcat is destroyed on another thread by a later gc.
        del scene, meshcat
        gc.collect()
