"""HAMR-VI, the 1.5 g piezo-driven microrobot (hamr-contact-implicit.txt): everything of its family.

- model: the mechanism's facts and the SDFormat generator (`MakeHamrSdf`).
- robot: `AddHamr(plant)`, the home pose, the 24 loop-closure rows, the registry's `MakeRobot`.
- piezo: the bending actuators' force model (a LeafSystem and its derivatives).
- gaits: the open-loop drives (stand, trot, pronk, jump).
- simulation: the Drake simulation of a gait on a surface.
- modes: standing equilibrium and body natural frequencies.
- trajopt: gaits and jump by variational contact-implicit optimization (a preset of
  drakebots.optimization.contact_implicit).
- tracking: closed-loop tracking of a planned trajectory.
- plots, replay: figures and Meshcat lighting in the model's millimetre units.
- workflows: the verbs as Python calls: `OptimizeGait(GaitConfig)`, `OptimizeJump(JumpConfig)`,
  `Track(TrackConfig)`, `Modes(ModesConfig)` (trajopt_report and tracking_report hold their
  figures of merit, plots and replays).

Units: mm, ms, g (force N, torque N·mm), as in the paper.
"""

from drakebots.hamr.robot import AddHamr, HamrLoopConstraints, HomePositions
from drakebots.hamr.workflows import (
    GaitConfig,
    GaitResult,
    JumpConfig,
    JumpResult,
    Modes,
    ModesConfig,
    ModesResult,
    OptimizeGait,
    OptimizeJump,
    Track,
    TrackConfig,
    TrackResult,
)

__all__ = [
    "AddHamr",
    "HamrLoopConstraints",
    "HomePositions",
    "GaitConfig",
    "GaitResult",
    "JumpConfig",
    "JumpResult",
    "Modes",
    "ModesConfig",
    "ModesResult",
    "OptimizeGait",
    "OptimizeJump",
    "Track",
    "TrackConfig",
    "TrackResult",
]
