"""Meshcat lighting and camera for HAMR-VI's millimetre scenes.

Meshcat's default scene is built for metres: its two point lights sit 2-3 units from the origin
and fade out within 10 units, and the camera's far plane is 100 units. In a scene measured in
millimetres that puts the lights inside the 45 mm robot (a bright spot under it, a dark ground)
and clips the 400 mm ground. `ScaleMeshcatScene` moves the lights out by the length scale, stops
their fall-off, and pushes the camera's far plane out; `HamrReplayDecorator` applies it to a
replay (drakebots.visualization.replay.ReplayDecorator).
"""

from __future__ import annotations

from drakebots.visualization.replay import ReplayDecorator

_POINT_LIGHTS = {
    "PointLightNegativeX": (1.5, 1.5, 2.0),
    "PointLightPositiveX": (-1.5, -1.5, 2.0),
}


def ScaleMeshcatScene(meshcat, *, length_scale: float = 1000.0, intensity: float = 1.0) -> None:
    """Adapts Meshcat's default lights and camera to a scene `length_scale` times larger.

    Args:
        meshcat: a pydrake.geometry.Meshcat.
        length_scale: scene units per metre (1000 for mm).
        intensity: intensity of each point light once its fall-off is removed.
    """
    for name, position in _POINT_LIGHTS.items():
        path = f"/Lights/{name}/<object>"
        meshcat.SetProperty(path, "position", [length_scale * p for p in position])
        meshcat.SetProperty(path, "distance", 0.0)
        meshcat.SetProperty(path, "decay", 0.0)
        meshcat.SetProperty(path, "intensity", float(intensity))
    camera = "/Cameras/default/rotated/<object>"
    meshcat.SetProperty(camera, "far", 100.0 * length_scale)
    meshcat.SetProperty(camera, "near", 0.01 * length_scale / 100.0)


def HamrReplayDecorator() -> ReplayDecorator:
    """A replay decorator that lights HAMR's millimetre scene (no extra objects)."""

    def setup(meshcat, plant):
        ScaleMeshcatScene(meshcat)

    return ReplayDecorator(setup=setup)
