"""Reproduce the observations of the voxel paper's sec. 2.1 (Figs. 1-3) under several settings.

The paper (voxel-planes-of-motion.txt) reports from PFEA, a Frame3DD-type solver with rigid
strut-to-node joints: an actuator between two nodes of a 2x2 formation displaces the nodes of its
plane with equal magnitude and alternating direction; the pattern does not decay through a larger
lattice ("only up to 4.9 % of displacement is lost to other modes"); nodes outside the actuated
plane do not translate. The figures' exact lattices are not in our copy of the text, so this
study measures the claims (drakebots.voxel.observations) over:

  A. the 2x2x1 formation of Fig. 1 with four actuator settings: stroke with both nodes clamped
     (each moves half the stroke, rotations held: our reading of sec. 2.1), the FERVOR PFEA
     setting (one node fully fixed, the other's rotations held, a force along the axis), and a
     floating actuator with a prismatic or pin-ended (axial) mount; rigid and pinned joints;
  B. N x N x 1 layers (N = 2..12), rigid and pinned joints: dissipation against lattice size;
  C. the 8x8x1 layer with thinner struts: dissipation against strut slenderness L/b;
  D. 2 x M x 2 blocks: the rotation of the layers parallel to the actuated one.

Usage: python scripts/study_voxel_observations.py [--out runs/voxel_observations]
Writes <out>/observations.json and <out>/observations.png and prints the tables.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from drakebots.frame.elements import RectangularSection
from drakebots.frame.model import Actuator, FixNode
from drakebots.voxel.lattice import (
    PITCH,
    POISSONS_RATIO,
    STRUT_SIDE,
    YOUNGS_MODULUS,
    CubicLattice,
)
from drakebots.voxel.observations import AnalysePattern

STROKE = 2e-3  # m
FORCE = 1.0  # N


def Lattice(size, side=STRUT_SIDE):
    section = RectangularSection(
        side, side, youngs_modulus=YOUNGS_MODULUS, poissons_ratio=POISSONS_RATIO
    )
    return CubicLattice(size, section=section)


def CentralActuator(lattice, plane="z"):
    """The Fig. 1 actuator at the lattice centre: x-face nodes one pitch apart along y (z-plane),
    or along z (y-plane)."""
    nx, ny, nz = lattice.occupancy.shape
    i = 2 * (nx // 2)
    if plane == "z":
        j = 2 * (ny // 2)
        return lattice.NodeAt((i, j - 1, 1)), lattice.NodeAt((i, j + 1, 1))
    k = 2 * (nz // 2)
    return lattice.NodeAt((i, 1, k - 1)), lattice.NodeAt((i, 1, k + 1))


def Measure(lattice, a, b, setting="clamped", joints="rigid"):
    frame = lattice.MakeFrame(joints=joints)
    start = time.perf_counter()
    if setting == "fervor":
        # dcellucci/pfea examples/experiments/FERVOR: one actuator node fixed, the other's
        # rotations held, the actuator force on it along the axis.
        axis = lattice.nodes[b] - lattice.nodes[a]
        loads = np.zeros((lattice.num_nodes, 6))
        loads[b, :3] = FORCE * axis / np.linalg.norm(axis)
        supports = FixNode(frame, a) | FixNode(frame, b, translations=False)
        solution = frame.Solve(loads=loads, supports=supports)
    elif setting == "clamped":
        solution = frame.Solve(actuators=[Actuator(a, b, stroke=STROKE, mount="clamped")])
    else:
        clamp = next(i for i in range(lattice.num_nodes) if i not in (a, b))
        solution = frame.Solve(
            actuators=[Actuator(a, b, stroke=STROKE, mount=setting)], clamp_node=clamp
        )
    seconds = time.perf_counter() - start
    report = AnalysePattern(
        lattice, solution.translations, a, b, remove_rigid_motion=setting != "clamped"
    )
    energy = frame.StrainEnergyParts(solution.displacements)
    total = sum(energy.values())
    row = report.Summary()
    row |= {
        "axial_energy_fraction": energy["axial"] / total if total > 0 else 0.0,
        "solve_s": seconds,
        "profile": report.DistanceProfile(0.5 * lattice.pitch),
    }
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="runs/voxel_observations")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {"stroke_m": STROKE, "force_N": FORCE, "pitch_m": PITCH}

    print("A. 2x2x1 formation (Fig. 1)")
    print(f"{'setting':>10} {'joints':>7} {'dissip %':>9} {'off-pat %':>9} {'off-plane %':>11}")
    rows = []
    lattice = Lattice((2, 2, 1))
    a, b = CentralActuator(lattice)
    for setting in ("clamped", "fervor", "prismatic", "axial"):
        for joints in ("rigid", "pinned"):
            if joints == "pinned" and setting == "fervor":
                continue  # a force on a mechanism has no static response
            row = Measure(lattice, a, b, setting, joints) | {"setting": setting, "joints": joints}
            rows.append(row)
            print(
                f"{setting:>10} {joints:>7} {100 * row['max_dissipation']:9.3f} "
                f"{100 * row['max_off_pattern']:9.3f} {100 * row['max_off_plane_ratio']:11.3f}"
            )
    results["formation"] = rows

    print("\nB. N x N x 1 layers, clamped stroke at the centre")
    print(f"{'N':>3} {'joints':>7} {'dissip %':>9} {'off-pat %':>9} {'axial E %':>9} {'s':>6}")
    rows = []
    for n in (2, 3, 4, 5, 6, 8, 10, 12):
        lattice = Lattice((n, n, 1))
        a, b = CentralActuator(lattice)
        for joints in ("rigid", "pinned"):
            row = Measure(lattice, a, b, "clamped", joints) | {"n": n, "joints": joints}
            rows.append(row)
            print(
                f"{n:>3} {joints:>7} {100 * row['max_dissipation']:9.3f} "
                f"{100 * row['max_off_pattern']:9.3f} "
                + (
                    f"{100 * row['axial_energy_fraction']:9.2f} "
                    if joints == "rigid"
                    else f"{'(0 J)':>9} "  # a pinned layer's mechanism stores no energy
                )
                + f"{row['solve_s']:6.2f}"
            )
    results["layers"] = rows

    print("\nC. 8x8x1 layer: strut slenderness (rigid joints)")
    print(f"{'side mm':>8} {'L/b':>6} {'dissip %':>9} {'x (b0/b)^2':>10}")
    rows = []
    for side in (STRUT_SIDE, 0.9e-3, 0.635e-3, 0.3175e-3):
        lattice = Lattice((8, 8, 1), side)
        a, b = CentralActuator(lattice)
        row = Measure(lattice, a, b) | {"strut_side_m": side}
        row["slenderness"] = PITCH / np.sqrt(2) / side
        rows.append(row)
        print(
            f"{side * 1e3:8.3f} {row['slenderness']:6.0f} {100 * row['max_dissipation']:9.3f} "
            f"{100 * row['max_dissipation'] * (STRUT_SIDE / side) ** 2:10.3f}"
        )
    results["slenderness"] = rows

    print("\nD. 2 x M x 2 blocks: y-plane 0 actuated (vertical actuator), parallel layers")
    print(f"{'M':>3} {'joints':>7} {'side mm':>8}  layer rotation / actuated layer")
    rows = []
    for m in (2, 3, 4):
        for joints, side in (("rigid", STRUT_SIDE), ("rigid", 0.3175e-3), ("pinned", STRUT_SIDE)):
            lattice = Lattice((2, m, 2), side)
            a, b = CentralActuator(lattice, plane="y")
            row = Measure(lattice, a, b, "clamped", joints)
            row |= {"m": m, "joints": joints, "strut_side_m": side}
            rows.append(row)
            ratios = " ".join(f"{r:+.4f}" for r in row["layer_ratio"])
            print(f"{m:>3} {joints:>7} {side * 1e3:8.3f}  {ratios}")
    results["parallel_layers"] = rows

    (out / "observations.json").write_text(json.dumps(results, indent=1, default=float) + "\n")
    Plot(results, out / "observations.png")
    print(f"\nwrote {out / 'observations.json'} and {out / 'observations.png'}")
    return 0


def Plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 3, figsize=(15, 4.3))
    ax = axes[0]
    for joints, marker in (("rigid", "o-"), ("pinned", "s--")):
        rows = [r for r in results["layers"] if r["joints"] == joints]
        ax.plot(
            [r["n"] ** 2 for r in rows],
            [100 * r["max_dissipation"] for r in rows],
            marker,
            label=f"{joints} joints",
        )
    ax.axhline(4.9, color="red", ls="--", lw=1, label="paper: at most 4.9 %")
    ax.set_xlabel("voxels in the actuated plane (N x N)")
    ax.set_ylabel("max displacement dissipation (%)")
    ax.set_title("B. dissipation grows with the plane's size", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[1]
    for row in results["layers"]:
        if row["joints"] == "rigid" and row["n"] in (4, 8, 12):
            profile = row["profile"]
            ax.plot(
                np.array(profile["distance_m"]) * 1e3,
                100 * np.array(profile["max_dissipation"]),
                "o-",
                ms=3,
                label=f"{row['n']}x{row['n']}x1",
            )
    ax.axhline(4.9, color="red", ls="--", lw=1)
    ax.set_xlabel("distance from the actuator (mm)")
    ax.set_ylabel("max dissipation at that distance (%)")
    ax.set_title("dissipation against distance (rigid joints)", fontsize=10)
    ax.legend(fontsize=8)
    ax = axes[2]
    for row in results["parallel_layers"]:
        if row["m"] != 4:
            continue
        label = f"{row['joints']}, strut {row['strut_side_m'] * 1e3:.2f} mm"
        ax.semilogy(
            row["layer_offsets"],
            np.maximum(np.abs(row["layer_ratio"]), 1e-12),
            "o-",
            label=label,
        )
    ax.set_xlabel("layer offset from the actuated layer (voxels)")
    ax.set_ylabel("|layer rotation| / actuated layer")
    ax.set_title("D. parallel layers (2x4x2 block)", fontsize=10)
    ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


if __name__ == "__main__":
    raise SystemExit(main())
