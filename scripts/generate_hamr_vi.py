#!/usr/bin/env python3
"""Regenerates HAMR-VI's model files from the facts in drakebots/robots/hamr_model.py.

    python scripts/generate_hamr_vi.py          # writes models/hamr_vi/hamr_vi.sdf, scene.dmd.yaml
    python scripts/generate_hamr_vi.py --check    # exit 1 if a committed file is stale

The scene's default joint positions are the home pose, solved with the loop constraints
(drakebots.robots.hamr.SolveStandingPose) from the SDF this script writes first.
"""

import argparse
import sys

from drakebots.models import ModelsDirectory
from drakebots.robots import hamr, hamr_model


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args()
    sdf_path = ModelsDirectory() / "hamr_vi" / "hamr_vi.sdf"
    sdf = hamr_model.MakeHamrSdf()
    if args.check:
        stale = [
            str(ModelsDirectory() / relative)
            for relative, text in hamr.GeneratedHamrFiles().items()
            if not (ModelsDirectory() / relative).is_file()
            or (ModelsDirectory() / relative).read_text() != text
        ]
        if stale:
            print("stale generated files:\n  " + "\n  ".join(stale), file=sys.stderr)
            return 1
        return 0
    sdf_path.parent.mkdir(parents=True, exist_ok=True)
    sdf_path.write_text(sdf)
    print(f"wrote {sdf_path}")
    # The scene's home pose is solved on the model just written.
    hamr._HomeJointPositions.cache_clear()
    for relative, text in hamr.GeneratedHamrFiles().items():
        path = ModelsDirectory() / relative
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
