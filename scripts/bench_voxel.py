"""Benchmark: static solves of cubic voxel lattices against PFEA's published times, and the POM
forward kinematics against the FEM solve of the same lattice.

PFEA (Python port of Frame3DD, 2017 hardware; reference/voxel/README.md): 8 voxels 0.09 s, 56 voxels
0.82 s, 2744 voxels 154 s. Goal here: 2744 voxels <= 5 s; POM >= 1000x faster than the FEM.

Usage: python scripts/bench_voxel.py [--out runs/bench/voxel.json] [--quick]
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from drakebots.frame.model import Actuator, FactorizationBackend
from drakebots.frame.pom import Control, PomModel
from drakebots.frame.voxel import CubicLattice

PFEA_SECONDS = {8: 0.09, 56: 0.82, 2744: 154.0}
SIZES = {8: (2, 2, 2), 56: (2, 4, 7), 2744: (14, 14, 14)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/bench/voxel.json")
    parser.add_argument("--quick", action="store_true", help="skip the 2744-voxel lattice")
    args = parser.parse_args()
    rows = []
    print(f"backend: {FactorizationBackend()}")
    print(
        f"{'voxels':>7} {'dofs':>7} {'build s':>8} {'solve s':>8} {'PFEA s':>7} {'ratio':>7} "
        f"{'POM s':>9} {'FEM/POM':>9}"
    )
    for count, size in SIZES.items():
        if args.quick and count > 100:
            continue
        start = time.perf_counter()
        lattice = CubicLattice(size)
        frame = lattice.MakeFrame()
        build = time.perf_counter() - start
        nx = size[0]
        a = lattice.NodeAt((2 * (nx // 2), 1, 1))
        b = lattice.NodeAt((2 * (nx // 2), 3, 1))
        start = time.perf_counter()
        frame.Solve(actuators=[Actuator(a, b, stroke=2e-3, mount="clamped")])
        solve = time.perf_counter() - start
        model = PomModel(lattice, [Control(b, 1)])
        c = np.array([1e-3])
        repeats = 2000
        start = time.perf_counter()
        for _ in range(repeats):
            model.Forward(c)
        pom = (time.perf_counter() - start) / repeats
        row = {
            "voxels": count,
            "size": size,
            "dofs": frame.num_dofs,
            "build_s": build,
            "solve_s": solve,
            "total_s": build + solve,
            "pfea_s": PFEA_SECONDS[count],
            "speedup_vs_pfea": PFEA_SECONDS[count] / (build + solve),
            "pom_forward_s": pom,
            "fem_over_pom": solve / pom,
        }
        rows.append(row)
        print(
            f"{count:>7} {frame.num_dofs:>7} {build:>8.3f} {solve:>8.3f} {row['pfea_s']:>7.2f} "
            f"{row['speedup_vs_pfea']:>7.1f} {pom:>9.2e} {row['fem_over_pom']:>9.0f}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"backend": FactorizationBackend(), "rows": rows}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
