"""Write the tripod-gait voxel robot's model files into models/voxel_tripod/.

Usage:
  python scripts/generate_voxel_tripod.py            # (re)write the files
  python scripts/generate_voxel_tripod.py --check    # exit 1 if the committed files differ
"""

import argparse
import sys
from pathlib import Path

from drakebots.voxel.tripod_model import TripodModelFiles

FOLDER = Path(__file__).resolve().parents[1] / "models" / "voxel_tripod"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    stale = []
    for name, text in TripodModelFiles().items():
        path = FOLDER / name
        if args.check:
            if not path.is_file() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python {Path(__file__).name}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
