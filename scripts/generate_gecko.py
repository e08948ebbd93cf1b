"""Writes the gecko's model files: models/gecko/gecko.sdf and scene.dmd.yaml.

The SDF comes from drakebots.gecko.model.MakeGeckoSdf(GeckoParams()) (five constant-curvature
limbs as rigid-segment chains); the scene places it in its home pose (the straight-gait pose at
q1 = +90 deg) on the ground; chain_error.png shows the segment chains against the exact arcs
(the README's table). The picture is scripts/render_pictures.py gecko. A test
(tests/gecko/test_model.py) fails when the committed model files differ from what this
script writes.

Usage:
  python scripts/generate_gecko.py            # write the files
  python scripts/generate_gecko.py --check    # exit 1 if the committed files are out of date
"""

import argparse
import sys

from drakebots.gecko.model import SceneText, SdfText
from drakebots.models import ModelsDirectory


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="only compare with the files")
    args = parser.parse_args()
    folder = ModelsDirectory() / "gecko"
    files = {"gecko.sdf": SdfText(), "scene.dmd.yaml": SceneText()}
    stale = [
        name
        for name, text in files.items()
        if not (folder / name).is_file() or (folder / name).read_text() != text
    ]
    if args.check:
        for name in stale:
            print(f"models/gecko/{name} is out of date: run python scripts/generate_gecko.py")
        return 1 if stale else 0
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
        print(f"wrote {folder / name}")
    from drakebots.gecko.plots import PlotChainError

    figure = PlotChainError(0.091, max_angle_deg=157.5)
    figure.savefig(folder / "chain_error.png", dpi=100)
    print(f"wrote {folder / 'chain_error.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
