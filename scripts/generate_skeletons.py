#!/usr/bin/env python3
"""Regenerates the skinned quad-robot skeleton models from their semantic parameters.

    python scripts/generate_skeletons.py            # all four: beetle cow lizard monster
    python scripts/generate_skeletons.py beetle     # one
    python scripts/generate_skeletons.py --check    # exit 1 if a committed file is stale

Writes models/<name>/<name>.sdf and models/<name>/scene.dmd.yaml from
drakebots/skinned/skeletons/<name>.yaml (see drakebots.skinned.skeleton).
"""

import argparse
import sys

from drakebots.models import ModelsDirectory
from drakebots.skinned.skeleton import BuiltinSkeletonNames, GeneratedSkeletonFiles


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", help="skeletons to generate (default: all)")
    parser.add_argument("--check", action="store_true", help="only compare, write nothing")
    args = parser.parse_args()
    names = args.names or BuiltinSkeletonNames()
    stale = []
    for name in names:
        for relative, text in GeneratedSkeletonFiles(name).items():
            path = ModelsDirectory() / relative
            if args.check:
                if not path.is_file() or path.read_text() != text:
                    stale.append(str(path))
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"wrote {path}")
    if stale:
        print("stale generated files:\n  " + "\n  ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
