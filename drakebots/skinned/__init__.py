"""The skinned quad-robots (skinned-quad-robots.txt): everything of their family.

The workflows, each a call with a config in and a result out (`result.Save(folder)` writes the
results folder of the matching `drakebots` verb):
- `MakeSkin(MakeSkinConfig)`: the FEM skin of a robot (`drakebots skin`; make_skin.py).
- `Design(DesignConfig)`: the alternating design loop and its checks (`drakebots design`;
  design.py).
- `Bend(BendConfig)`: the folding-region experiment, Fig. 17 (`drakebots skin-bend`;
  skin_bend.py).

The modules under them:

- skeleton: parametric skeleton templates (the YAMLs under skeletons/ or the user's), SDF
  generation; robot: `AddSkinnedQuadruped(plant)` and the registry's `MakeRobot`.
- skin: the hollow FEM skin around a skeleton (`skin.MakeSkin(params, SkinOptions)`, the
  builder under the workflow; `WriteSkin`, `LoadSkin`).
- skin_coupling: the two-way coupled skin-skeleton system (Eqs. 1-2) on drakebots.fem.
- simulation, skeleton_simulation: Drake simulations with and without the skin.
- bend: the folding-region experiment (Fig. 17).
- motion, motions: the user's motion input and the paper's motion generators.
- skeleton_model: the skeleton as the motion optimizer sees it.
- space_time (+ space_time_terms, space_time_nlp): the space-time step (section 5.1).
- qpcc, qpcc_coupled: the frame-by-frame QPCC, rigid and with the coupled skin (5.2-5.3).
- alternating: the alternating design loop (section 5, Fig. 2).
- playback: a plan played back in Drake's simulator; plots: the skin drawn, live and in replays.

Units: SI (m, kg, s, N, Pa).
"""

from drakebots.skinned.design import Design, DesignConfig, DesignResult
from drakebots.skinned.make_skin import MakeSkin, MakeSkinConfig, MakeSkinResult
from drakebots.skinned.skeleton import LoadSkeletonParams, SkeletonParams
from drakebots.skinned.skin import LoadSkin, Skin, SkinOptions, WriteSkin
from drakebots.skinned.skin_bend import Bend, BendConfig, BendResult

__all__ = [
    "Bend",
    "BendConfig",
    "BendResult",
    "Design",
    "DesignConfig",
    "DesignResult",
    "LoadSkeletonParams",
    "LoadSkin",
    "MakeSkin",
    "MakeSkinConfig",
    "MakeSkinResult",
    "SkeletonParams",
    "Skin",
    "SkinOptions",
    "WriteSkin",
]
