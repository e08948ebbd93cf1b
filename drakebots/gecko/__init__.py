"""The gecko-inspired soft walker (gecko-gait-pattern-generator.txt): everything of its family.

- geometry: constant-curvature limbs and the gait law (NumPy only).
- model: `GeckoParams`, the SDFormat generator, `AddGecko(plant)`, suction anchors, the registry's
  `MakeRobot`.
- pneumatics: calibration map, chambers and the cascaded controller (LeafSystems).
- gait: the gait law and the gait pattern generator as LeafSystems.
- simulation: the Drake simulation with suction feet, pneumatics and the generator.
- geometric: the authors' geometric quasi-static model (a MathematicalProgram).
- planner: the velocity-space fit (Eq. 16) and the gait pattern generator's planner.
- experiments: the velocity space and navigation on either model.
- velocity_space, navigation: the workflows `VelocitySpace` and `Navigate` (config in, result
  out; `drakebots gecko velocity-space|navigate` call them).
- plots, replay: figures after the paper's, suction-foot markers in Meshcat.

Units: SI (m, rad; the gait law's q1 in degrees, as the paper).
"""

from drakebots.gecko.model import AddGecko, GeckoParams
from drakebots.gecko.navigation import GeckoCourse, Navigate, NavigateConfig, NavigateResult
from drakebots.gecko.velocity_space import (
    VelocitySpace,
    VelocitySpaceConfig,
    VelocitySpaceResult,
)

__all__ = [
    "AddGecko",
    "GeckoCourse",
    "GeckoParams",
    "Navigate",
    "NavigateConfig",
    "NavigateResult",
    "VelocitySpace",
    "VelocitySpaceConfig",
    "VelocitySpaceResult",
]
