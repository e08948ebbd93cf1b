"""The replay recording animates: its frame rate is the requested one (Meshcat plays recordings at
1 / publish_period), it spans the logged duration in the robot's time unit, and each frame shows
the log sample at that playback time."""

import dataclasses

import numpy as np
import pytest
from pydrake.geometry import Meshcat

from drakebots.robots import GetRobot
from drakebots.visualization.replay import RecordReplay, ReplayDecorator


def _Trajectory(robot, duration, samples):
    from pydrake.multibody.plant import MultibodyPlant

    plant = MultibodyPlant(time_step=0.0)
    robot.AddTo(plant)
    plant.Finalize()
    q0 = plant.GetPositions(plant.CreateDefaultContext())
    times = np.linspace(0.0, duration, samples)
    return times, np.tile(q0, (samples, 1))


def _Record(robot, times, positions, frame_rate):
    seen = []
    decorator = ReplayDecorator(frame=lambda meshcat, animation, f, i: seen.append((f, i)))
    scene, frames = RecordReplay(
        Meshcat(), robot, times, positions, frame_rate=frame_rate, decorator=decorator
    )
    return scene.visualizer.get_mutable_recording(), frames, np.array(seen)


@pytest.mark.parametrize("frame_rate", [30.0, 12.0])
def test_recording_plays_at_the_frame_rate_over_the_logged_duration(frame_rate):
    robot = GetRobot("beetle")
    times, positions = _Trajectory(robot, duration=2.0, samples=401)
    animation, frames, seen = _Record(robot, times, positions, frame_rate)
    assert animation.frames_per_second() == pytest.approx(frame_rate)
    assert frames == int(round(2.0 * frame_rate)) + 1
    np.testing.assert_array_equal(seen[:, 0], np.arange(frames))
    # Frame f shows the log sample nearest to f / frame_rate seconds.
    expected = np.argmin(np.abs(times[None, :] - seen[:, :1] / frame_rate), axis=1)
    np.testing.assert_array_equal(seen[:, 1], expected)


def test_millisecond_robots_play_in_seconds_with_slow_motion():
    beetle = GetRobot("beetle")
    robot = dataclasses.replace(beetle, units=dict(beetle.units, time="ms"))
    robot.replay_slow_motion = 10.0
    times, positions = _Trajectory(beetle, duration=300.0, samples=301)  # 300 ms
    _, frames, seen = _Record(robot, times, positions, 30.0)
    assert frames == int(round(0.3 * 10.0 * 30.0)) + 1  # 3 s of playback
    assert seen[-1, 1] == len(times) - 1
    # Frame f plays at f / 30 s, which at 10x slow motion is f / 300 s = 10 f / 3 ms of the log:
    # it shows the sample nearest to that (the samples are 1 ms apart).
    np.testing.assert_array_equal(seen[:, 0], np.arange(frames))
    expected = np.argmin(np.abs(times[None, :] - 10.0 * seen[:, :1] / 3.0), axis=1)
    np.testing.assert_array_equal(seen[:, 1], expected)
