"""Octahedral voxel lattices (voxel-planes-of-motion.txt sec. 2; reference/voxel/README.md).

A voxel is a regular octahedron: six nodes at the centres of the faces of a cube of side p (the
pitch) and twelve struts of length p / sqrt(2) joining every pair of nodes that are not opposite;
its struts form three orthogonal squares. Node numbering (PFEA and the POM scripts), offsets from
the cube centre in units of p/2:

    0: -x   1: -y   2: -z   3: +x   4: +y   5: +z

Neighbouring voxels share the node on their common face. Lattice coordinates are integers in units
of p/2 (the POM scripts' convention): voxel (i, j, k) has its centre at (2i+1, 2j+1, 2k+1); a node
has exactly two odd coordinates, and its *face axis* is the even one.

Defaults are the FERVOR-lineage physical voxels: pitch 76.2 mm, glass-filled Ultem 1000 struts
1.27 mm square, E = 6.894757 GPa, nu = 0.35, rho = 1420 kg/m^3. The connector mass per node is
derived from the 72.2 g of the 2x2x4 worm (reference README) minus its struts' mass.
"""

import dataclasses
import math
import re

import numpy as np

from drakebots.errors import InputError
from drakebots.frame.elements import RectangularSection, Section
from drakebots.frame.model import Frame

PITCH = 0.0762  # m (3 in)
STRUT_SIDE = 1.27e-3  # m, square cross-section
YOUNGS_MODULUS = 6.894757e9  # Pa, glass-filled Ultem 1000
POISSONS_RATIO = 0.35
MASS_DENSITY = 1420.0  # kg/m^3
WORM_MASS = 72.2e-3  # kg, the 2x2x4 voxel worm
AXES = "xyz"

# Node offsets from the voxel centre, units of p/2, in the reference numbering.
NODE_OFFSETS = np.array(
    [[-1, 0, 0], [0, -1, 0], [0, 0, -1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.int64
)
# Face axis of each local node: 0 and 3 are x-face nodes, 1 and 4 y, 2 and 5 z.
NODE_FACE_AXIS = np.array([0, 1, 2, 0, 1, 2])
# The twelve struts: every pair of local nodes that are not opposite.
VOXEL_STRUTS = np.array([(i, j) for i in range(6) for j in range(i + 1, 6) if j != i + 3])


def StrutSection(*, timoshenko: bool = False) -> Section:
    """The reference strut: 1.27 mm square glass-filled Ultem 1000 (SI units)."""
    return RectangularSection(
        STRUT_SIDE,
        STRUT_SIDE,
        youngs_modulus=YOUNGS_MODULUS,
        poissons_ratio=POISSONS_RATIO,
        mass_density=MASS_DENSITY,
        timoshenko=timoshenko,
    )


def StrutMass(pitch: float = PITCH) -> float:
    """Mass of one reference strut, kg."""
    return MASS_DENSITY * STRUT_SIDE**2 * pitch / math.sqrt(2.0)


def ConnectorMassPerNode() -> float:
    """Connector mass per node, kg: (72.2 g worm - its 192 struts) / its 68 nodes."""
    worm = VoxelLattice(np.ones((2, 2, 4), dtype=bool))
    return (WORM_MASS - len(worm.struts) * StrutMass()) / worm.num_nodes


def ParseLatticeSize(text: str) -> tuple[int, int, int]:
    """'2x2x1' -> (2, 2, 1); raises InputError naming the text when malformed."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*[xX*]\s*(\d+)\s*", text or "")
    if not match:
        raise InputError(f"--lattice '{text}': expected NXxNYxNZ, e.g. 2x2x1")
    from drakebots.limits import CheckWork

    size = tuple(int(g) for g in match.groups())
    if min(size) < 1:
        raise InputError(f"--lattice '{text}': each size must be >= 1")
    CheckWork("voxels", float(np.prod(size, dtype=float)), f"--lattice '{text}'")
    return size


def CheckOccupancy(occupancy) -> np.ndarray:
    """The occupancy as a 3-D boolean array; InputError saying what is wrong otherwise."""
    if not isinstance(occupancy, np.ndarray):
        raise InputError(
            f"occupancy must be a 3-D numpy boolean array, got {type(occupancy).__name__}"
        )
    if occupancy.ndim != 3:
        raise InputError(
            f"occupancy must be a 3-D boolean array, got {occupancy.ndim}-D shape {occupancy.shape}"
        )
    if occupancy.dtype != np.bool_:
        raise InputError(f"occupancy must be a boolean array, got dtype {occupancy.dtype}")
    if not occupancy.any():
        raise InputError("occupancy has no voxel")
    return occupancy


@dataclasses.dataclass
class VoxelLattice:
    """A lattice of octahedral voxels and its frame model.

    Args:
        occupancy: 3-D boolean array; occupancy[i, j, k] puts a voxel at grid position (i, j, k).
        pitch: voxel pitch p, m.
        section: strut cross-section and material (default: the reference strut).
        origin: position of the lattice coordinate origin, m.

    Attributes (after construction):
        voxels: (num_voxels, 3) grid positions, in occupancy's C order.
        node_coords: (num_nodes, 3) integer lattice coordinates (units of p/2).
        nodes: (num_nodes, 3) positions, m.
        voxel_nodes: (num_voxels, 6) node indices in the reference numbering.
        struts: (num_struts, 2) node index pairs.
        strut_voxel: (num_struts,) the voxel each strut belongs to.
    """

    occupancy: np.ndarray
    pitch: float = PITCH
    section: Section | None = None
    origin: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        CheckOccupancy(self.occupancy)
        if not self.pitch > 0:
            raise InputError(f"pitch must be > 0 m, got {self.pitch}")
        if self.section is None:
            self.section = StrutSection()
        self.voxels = np.argwhere(self.occupancy).astype(np.int64)
        centres = 2 * self.voxels + 1
        all_coords = (centres[:, None, :] + NODE_OFFSETS[None, :, :]).reshape(-1, 3)
        self.node_coords, inverse = np.unique(all_coords, axis=0, return_inverse=True)
        self.voxel_nodes = inverse.reshape(-1, 6)
        self.nodes = self.node_coords * (0.5 * self.pitch) + np.asarray(self.origin, float)
        self.struts = self.voxel_nodes[:, VOXEL_STRUTS].reshape(-1, 2)
        self.strut_voxel = np.repeat(np.arange(len(self.voxels)), len(VOXEL_STRUTS))
        self._index = {tuple(c): i for i, c in enumerate(self.node_coords.tolist())}
        self._voxel_index = {tuple(v): i for i, v in enumerate(self.voxels.tolist())}

    @property
    def num_nodes(self) -> int:
        return len(self.node_coords)

    @property
    def num_voxels(self) -> int:
        return len(self.voxels)

    def face_axis(self) -> np.ndarray:
        """(num_nodes,) face axis of every node (0 x, 1 y, 2 z): its even coordinate."""
        return np.argmax(self.node_coords % 2 == 0, axis=1)

    def NodeAt(self, coords) -> int | None:
        """The node index at integer lattice coordinates (units of p/2), or None."""
        return self._index.get(tuple(int(c) for c in coords))

    def VoxelIndex(self, voxel) -> int | None:
        """Index of the voxel at a grid position, or None."""
        return self._voxel_index.get(tuple(int(c) for c in voxel))

    def NodeOf(self, voxel, local: int) -> int:
        """The node index of local node `local` (0-5) of the voxel at grid position `voxel`.

        Raises:
            InputError: the voxel is not in the lattice or the local id is not 0-5.
        """
        index = self.VoxelIndex(voxel)
        if index is None:
            raise InputError(f"voxel {tuple(int(c) for c in voxel)} is not in the lattice")
        if not 0 <= int(local) <= 5:
            raise InputError(f"node id {local}: voxel node ids are 0-5")
        return int(self.voxel_nodes[index, int(local)])

    def VoxelsOfNode(self, node: int) -> list[tuple[int, int]]:
        """[(voxel index, local id)] of the one or two voxels that share a node."""
        rows, cols = np.nonzero(self.voxel_nodes == node)
        return list(zip(rows.tolist(), cols.tolist()))

    def MakeFrame(self, *, node_masses: bool = True, joints: str = "rigid") -> Frame:
        """The frame model: one beam per strut, connector masses at the nodes.

        Args:
            node_masses: put the connector mass (ConnectorMassPerNode) at every node.
            joints: "rigid" (struts clamped to their connectors, as in PFEA/Frame3DD) or
                "pinned" (ideal ball joints; see drakebots.frame.model.Frame).
        """
        masses = np.full(self.num_nodes, ConnectorMassPerNode()) if node_masses else None
        return Frame(self.nodes, self.struts, self.section, node_masses=masses, joints=joints)

    def _DiagonalGradients(self, translations: np.ndarray) -> np.ndarray:
        """(num_voxels, 3, 3) displacement gradient G of each voxel from its three diagonals
        (x3 - x0, x4 - x1, x5 - x2 = p I when undeformed): column k is the change of diagonal k / p.
        """
        u = np.asarray(translations, dtype=float)[:, :3][self.voxel_nodes]
        return np.stack([u[:, 3] - u[:, 0], u[:, 4] - u[:, 1], u[:, 5] - u[:, 2]], axis=2) / (
            self.pitch
        )

    def VoxelVolumeRatios(self, translations: np.ndarray) -> np.ndarray:
        """(num_voxels,) deformed / undeformed volume of every voxel, det(I + eps), small strain.

        eps = sym(G) is the voxel's strain (G from its diagonals). The rotation part of G is left
        out on purpose: a linear solution represents a rotation by theta as a stretch of
        1 + theta^2, which would hide inversion. A ratio <= 0: the voxel is turned inside out.
        """
        G = self._DiagonalGradients(translations)
        strain = 0.5 * (G + np.swapaxes(G, 1, 2))
        return np.linalg.det(np.eye(3) + strain)

    def VoxelRotations(self, translations: np.ndarray) -> np.ndarray:
        """(num_voxels, 3) small rotation vector of every voxel (skew part of G), rad."""
        G = self._DiagonalGradients(translations)
        return 0.5 * np.stack(
            [G[:, 2, 1] - G[:, 1, 2], G[:, 0, 2] - G[:, 2, 0], G[:, 1, 0] - G[:, 0, 1]], axis=1
        )


# Rotating squares (sec. 2.1): two neighbouring voxels of a plane of motion turn their squares by
# -phi and +phi. The squares meet edge to edge when |phi| reaches 45 degrees; beyond it struts of
# neighbouring voxels would cross (a voxel folds into its neighbour).
MAX_SQUARE_ROTATION = math.pi / 4


def StrokeLimits(pitch: float = PITCH) -> tuple[float, float]:
    """(min, max) stroke, m, of an actuator across a gap of a plane of motion.

    The actuator's nodes are opposite corners of the rhombic gap between four voxels, whose
    squares turn by +-phi: the nodes' distance is p (cos phi - sin phi) (exact rotating-squares
    kinematics, pin-jointed idealisation). |phi| <= 45 degrees gives strokes from -p (the gap
    closes, the nodes meet) to (sqrt(2) - 1) p (the gap opens fully and the squares meet).
    """
    return -pitch, (math.sqrt(2.0) - 1.0) * pitch


def SquareRotation(stroke: float, pitch: float = PITCH) -> float:
    """The exact square rotation phi (rad) of the voxels next to an actuator of this stroke (m).

    Raises:
        ValueError: the stroke is outside StrokeLimits(pitch).
    """
    lo, hi = StrokeLimits(pitch)
    if not lo < stroke < hi:
        raise ValueError(f"stroke {stroke} m is outside ({lo:.4g}, {hi:.4g}) m")
    # p (cos phi - sin phi) = sqrt(2) p cos(phi + 45 deg) = p + stroke.
    return math.acos((1.0 + stroke / pitch) / math.sqrt(2.0)) - math.pi / 4


def CubicLattice(size: tuple[int, int, int], **kwargs) -> VoxelLattice:
    """A full box of voxels of the given size (nx, ny, nz)."""
    return VoxelLattice(np.ones(size, dtype=bool), **kwargs)
