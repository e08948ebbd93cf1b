"""
Your own skeleton: skin it, then design a single-foot lift
==========================================================

``mybug/mybug_skeleton.yaml`` is a skeleton that is not one of the paper's four: a crab-like body,
wider than long, on four short sprawled legs with lighter MG996R servos; ``mybug/mybug.yaml`` is its
robot file (``kind: skinned_quadruped``), and loading it generates ``mybug.sdf`` into drakebots'
cache (drakebots.cache), never beside it nor into the package. `MakeSkin` makes its FEM skin;
`Design` plans a single-foot lift (the skin's mass on the links) and checks every motor against its
limit and the centre of pressure against the support polygon at every frame.
The same from the command line:
``drakebots skin scripts/examples/mybug/mybug.yaml --voxel 0.02`` and
``drakebots design scripts/examples/mybug/mybug.yaml --motion single-foot-lift``.
"""

import argparse
import tempfile
from pathlib import Path

from drakebots.skinned import Design, DesignConfig, MakeSkin, MakeSkinConfig

# This script's folder (the guide's gallery runs it in that folder, with no __file__).
HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
MYBUG = HERE / "mybug" / "mybug.yaml"


def main(fast: bool = False, out: str | None = None) -> dict:
    out = Path(out or tempfile.mkdtemp())
    skin = MakeSkin(MakeSkinConfig(robot=str(MYBUG), voxel=0.02 if fast else None))
    skin_folder = skin.Save(out / "mybug_skin", force=True)
    # fast: a 1 s lift (201 frames) instead of 2 s, and no replay page.
    lift = DesignConfig(robot=str(MYBUG), duration=1.0 if fast else None, replay=not fast)
    result = Design(lift)
    folder = result.Save(out / "mybug_lift", force=True)
    figures = result.figures
    print(
        f"skin: {skin.figures['vertices']} vertices, {skin.figures['mass_kg']:.2f} kg; lift: "
        f"{'success' if result.success else 'FAILED: ' + str(result.reason)}, max |tau|/U_m "
        f"{figures['max_torque_ratio']:.2f}, min COP margin {1e3 * figures['min_cop_margin_m']:.1f}"
        f" mm; model {result.robot.model_file}; results in {folder}"
    )
    return {
        "success": result.success,
        "max_torque_ratio": figures["max_torque_ratio"],
        "min_cop_margin": figures["min_cop_margin_m"],
        "sdf": result.robot.model_file,
        "skin_folder": str(skin_folder),
        "folder": str(folder),
        "result": result,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="your own skeleton: skin, then a foot lift")
    parser.add_argument("--fast", action="store_true", help="a coarse skin and a 1 s lift")
    parser.add_argument("--out", default=None, help="where the results go (default: temp)")
    main(**vars(parser.parse_args()))
