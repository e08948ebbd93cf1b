"""Three-dimensional frame (beam) elements: stiffness, geometric stiffness, mass, rotations.

Every function is vectorised over elements: arrays carry a leading axis of length `num_elements`.
A frame element joins two nodes with six degrees of freedom each, ordered per node as
(u_x, u_y, u_z, theta_x, theta_y, theta_z); the element vector is [node a (6), node b (6)].

The local element axis x runs from node a to node b; local y and z are the principal axes of the
cross-section. The stiffness is the classical Euler-Bernoulli beam (axial EA/L, torsion GJ/L,
bending 12EI/L^3 in two planes) with optional Timoshenko shear flexibility through
Phi = 12 E I / (G A_s L^2) (Przemieniecki, "Theory of Matrix Structural Analysis", 1968, sec. 5.6;
the element PFEA/Frame3DD use, voxel-planes-of-motion.txt sec. 2 and reference/voxel/README.md).

Units: SI (m, N, Pa, kg); any consistent set works.
"""

import dataclasses
import math

import numpy as np

# Positions inside the 12-vector of one element.
_AXIAL = (0, 6)
_TORSION = (3, 9)
_BEND_XY = (1, 5, 7, 11)  # u_y, theta_z at a and b: bending in the local x-y plane (uses I_z)
_BEND_XZ = (2, 4, 8, 10)  # u_z, theta_y at a and b: bending in the local x-z plane (uses I_y)


@dataclasses.dataclass(frozen=True)
class Section:
    """Cross-section and material of a straight prismatic beam (SI units).

    Attributes:
        area: cross-section area A, m^2.
        Iy, Iz: second moments of area about the local y and z axes, m^4.
        J: torsion constant, m^4 (the polar moment only for circular sections).
        youngs_modulus: E, Pa.
        shear_modulus: G, Pa.
        mass_density: rho, kg/m^3.
        shear_area_y, shear_area_z: effective shear areas for Timoshenko shear, m^2 (0: no
            shear flexibility, Euler-Bernoulli).
    """

    area: float
    Iy: float
    Iz: float
    J: float
    youngs_modulus: float
    shear_modulus: float
    mass_density: float = 0.0
    shear_area_y: float = 0.0
    shear_area_z: float = 0.0

    def WithTimoshenkoShear(self, enabled: bool = True) -> "Section":
        """The same section with shear areas 5/6 A (rectangles) or without shear flexibility."""
        shear = 5.0 / 6.0 * self.area if enabled else 0.0
        return dataclasses.replace(self, shear_area_y=shear, shear_area_z=shear)


def RectangularTorsionConstant(width: float, height: float) -> float:
    """Saint-Venant torsion constant of a solid rectangle, m^4.

    The exact series (Timoshenko & Goodier, "Theory of Elasticity", sec. 109):
    J = a b^3 [1/3 - (64/pi^5)(b/a) sum_{n odd} tanh(n pi a / 2b) / n^5], a >= b.
    """
    a, b = max(width, height), min(width, height)
    n = np.arange(1, 40, 2, dtype=float)
    series = np.sum(np.tanh(n * math.pi * a / (2.0 * b)) / n**5)
    return float(a * b**3 * (1.0 / 3.0 - 64.0 / math.pi**5 * (b / a) * series))


def RectangularSection(
    width: float,
    height: float,
    *,
    youngs_modulus: float,
    poissons_ratio: float,
    mass_density: float = 0.0,
    timoshenko: bool = False,
) -> Section:
    """A solid width x height rectangle (width along local y, height along local z), SI units."""
    area = width * height
    section = Section(
        area=area,
        Iy=width * height**3 / 12.0,
        Iz=height * width**3 / 12.0,
        J=RectangularTorsionConstant(width, height),
        youngs_modulus=youngs_modulus,
        shear_modulus=youngs_modulus / (2.0 * (1.0 + poissons_ratio)),
        mass_density=mass_density,
    )
    return section.WithTimoshenkoShear(timoshenko)


def ShearParameters(section: Section, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Timoshenko shear parameters (Phi_y, Phi_z) per element (zero without shear areas).

    Phi_y = 12 E I_z / (G A_sy L^2) belongs to bending in the x-y plane, Phi_z to the x-z plane.
    """
    E, G = section.youngs_modulus, section.shear_modulus
    L2 = np.asarray(length, dtype=float) ** 2
    phi_y = 12.0 * E * section.Iz / (G * section.shear_area_y * L2) if section.shear_area_y else 0
    phi_z = 12.0 * E * section.Iy / (G * section.shear_area_z * L2) if section.shear_area_z else 0
    return np.broadcast_to(phi_y, L2.shape) * 1.0, np.broadcast_to(phi_z, L2.shape) * 1.0


def LocalStiffness(section: Section, length: np.ndarray) -> np.ndarray:
    """Element stiffness in local axes, shape (num_elements, 12, 12), N/m, N, N*m.

    Args:
        section: the cross-section and material (shared by all elements).
        length: (num_elements,) element lengths, m.
    """
    L = np.atleast_1d(np.asarray(length, dtype=float))
    num = len(L)
    E, G = section.youngs_modulus, section.shear_modulus
    k = np.zeros((num, 12, 12))
    axial = E * section.area / L
    torsion = G * section.J / L
    for (i, j), value in (((0, 0), 1.0), ((0, 1), -1.0), ((1, 0), -1.0), ((1, 1), 1.0)):
        k[:, _AXIAL[i], _AXIAL[j]] = value * axial
        k[:, _TORSION[i], _TORSION[j]] = value * torsion
    phi_y, phi_z = ShearParameters(section, L)
    # Bending in x-y (v, theta_z): the rotation theta_z = dv/dx enters with a + sign.
    ii, jj = np.ix_(_BEND_XY, _BEND_XY)
    k[:, ii, jj] = _BendingBlock(E * section.Iz, L, phi_y, sign=+1.0)
    # Bending in x-z (w, theta_y): theta_y = -dw/dx, hence the flipped coupling signs.
    ii, jj = np.ix_(_BEND_XZ, _BEND_XZ)
    k[:, ii, jj] = _BendingBlock(E * section.Iy, L, phi_z, sign=-1.0)
    return k


def _BendingBlock(EI: float, L: np.ndarray, phi: np.ndarray, sign: float) -> np.ndarray:
    """The 4x4 bending stiffness [v_a, theta_a, v_b, theta_b] of a Timoshenko beam."""
    c = EI / (L**3 * (1.0 + phi))
    s = sign
    block = np.empty((len(L), 4, 4))
    block[:, 0] = np.stack([12 + 0 * L, s * 6 * L, -12 + 0 * L, s * 6 * L], axis=1)
    block[:, 1] = np.stack([s * 6 * L, (4 + phi) * L**2, -s * 6 * L, (2 - phi) * L**2], axis=1)
    block[:, 2] = np.stack([-12 + 0 * L, -s * 6 * L, 12 + 0 * L, -s * 6 * L], axis=1)
    block[:, 3] = np.stack([s * 6 * L, (2 - phi) * L**2, -s * 6 * L, (4 + phi) * L**2], axis=1)
    return block * c[:, None, None]


def LocalGeometricStiffness(length: np.ndarray, axial_force: np.ndarray) -> np.ndarray:
    """Consistent geometric stiffness in local axes, (num_elements, 12, 12).

    From cubic transverse shape functions (Przemieniecki sec. 15; McGuire, Gallagher & Ziemian,
    "Matrix Structural Analysis", eq. 9.20 without the torsion/axial coupling terms).

    Args:
        length: (num_elements,) lengths, m.
        axial_force: (num_elements,) axial force N, tension positive, N.
    """
    L = np.atleast_1d(np.asarray(length, dtype=float))
    N = np.broadcast_to(np.asarray(axial_force, dtype=float), L.shape)
    kg = np.zeros((len(L), 12, 12))
    for indices, s in ((_BEND_XY, 1.0), (_BEND_XZ, -1.0)):
        block = np.empty((len(L), 4, 4))
        block[:, 0] = np.stack([36 + 0 * L, s * 3 * L, -36 + 0 * L, s * 3 * L], axis=1)
        block[:, 1] = np.stack([s * 3 * L, 4 * L**2, -s * 3 * L, -(L**2)], axis=1)
        block[:, 2] = np.stack([-36 + 0 * L, -s * 3 * L, 36 + 0 * L, -s * 3 * L], axis=1)
        block[:, 3] = np.stack([s * 3 * L, -(L**2), -s * 3 * L, 4 * L**2], axis=1)
        ii, jj = np.ix_(indices, indices)
        kg[:, ii, jj] = block * (N / (30.0 * L))[:, None, None]
    return kg


def LocalConsistentMass(section: Section, length: np.ndarray) -> np.ndarray:
    """Consistent mass matrix in local axes, (num_elements, 12, 12), kg and kg*m^2.

    Cubic Hermite transverse, linear axial and torsional shape functions (Przemieniecki eq. 11.32),
    torsional inertia rho (I_y + I_z) L.
    """
    L = np.atleast_1d(np.asarray(length, dtype=float))
    m = section.mass_density * section.area * L
    mass = np.zeros((len(L), 12, 12))
    for (i, j), value in (((0, 0), 2.0), ((0, 1), 1.0), ((1, 0), 1.0), ((1, 1), 2.0)):
        mass[:, _AXIAL[i], _AXIAL[j]] = value * m / 6.0
        polar = section.mass_density * (section.Iy + section.Iz) * L
        mass[:, _TORSION[i], _TORSION[j]] = value * polar / 6.0
    for indices, s in ((_BEND_XY, 1.0), (_BEND_XZ, -1.0)):
        block = np.empty((len(L), 4, 4))
        block[:, 0] = np.stack([156 + 0 * L, s * 22 * L, 54 + 0 * L, -s * 13 * L], axis=1)
        block[:, 1] = np.stack([s * 22 * L, 4 * L**2, s * 13 * L, -3 * L**2], axis=1)
        block[:, 2] = np.stack([54 + 0 * L, s * 13 * L, 156 + 0 * L, -s * 22 * L], axis=1)
        block[:, 3] = np.stack([-s * 13 * L, -3 * L**2, -s * 22 * L, 4 * L**2], axis=1)
        ii, jj = np.ix_(indices, indices)
        mass[:, ii, jj] = block * (m / 420.0)[:, None, None]
    return mass


def ElementRotations(p_a: np.ndarray, p_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotation matrices R (rows = local x, y, z in world coordinates) and lengths per element.

    Local x points from a to b; local z is the world z projected off x (world x when the element
    is nearly vertical), so sections with I_y = I_z (the voxel struts) need no orientation input.

    Returns:
        R: (num_elements, 3, 3); length: (num_elements,), m.
    """
    d = np.asarray(p_b, dtype=float) - np.asarray(p_a, dtype=float)
    length = np.linalg.norm(d, axis=1)
    if np.any(length <= 0.0):
        raise ValueError("frame element of zero length")
    ex = d / length[:, None]
    reference = np.tile([0.0, 0.0, 1.0], (len(ex), 1))
    vertical = np.abs(ex[:, 2]) > 0.999
    reference[vertical] = [1.0, 0.0, 0.0]
    ez = reference - np.sum(reference * ex, axis=1)[:, None] * ex
    ez /= np.linalg.norm(ez, axis=1)[:, None]
    ey = np.cross(ez, ex)
    return np.stack([ex, ey, ez], axis=1), length


def ToGlobal(local: np.ndarray, R: np.ndarray) -> np.ndarray:
    """T^T k T for T = blockdiag(R, R, R, R): element matrices in world axes."""
    blocks = local.reshape(len(R), 4, 3, 4, 3)
    rotated = np.einsum("eji,eajbk,ekl->eaibl", R, blocks, R, optimize=True)
    return rotated.reshape(len(R), 12, 12)


def TransformVectors(R: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Element 12-vectors from world to local axes (u_local = T u_world)."""
    reshaped = vectors.reshape(len(R), 4, 3)
    return np.einsum("eij,ebj->ebi", R, reshaped).reshape(len(R), 12)
