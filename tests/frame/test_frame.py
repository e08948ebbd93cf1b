"""The frame element and solver against Euler-Bernoulli/Timoshenko closed forms, identities of the
stiffness and rigid-body invariance, on beams and voxel lattices (the lattice itself:
tests/voxel/test_lattice.py)."""

import numpy as np
import pytest

from drakebots.frame.elements import RectangularSection
from drakebots.frame.model import Actuator, FixNode, Frame, RigidBodyDisplacement
from drakebots.voxel.lattice import CubicLattice


def _Cantilever(timoshenko, elements=1):
    section = RectangularSection(
        0.01, 0.02, youngs_modulus=200e9, poissons_ratio=0.3, timoshenko=timoshenko
    )
    direction = np.array([1.0, 2.0, -0.5]) / np.linalg.norm([1.0, 2.0, -0.5])
    L = 0.5
    nodes = np.outer(np.linspace(0, L, elements + 1), direction)
    edges = np.column_stack([np.arange(elements), np.arange(1, elements + 1)])
    return Frame(nodes, edges, section), section, L


@pytest.mark.parametrize("timoshenko", [False, True])
@pytest.mark.parametrize("elements", [1, 4])
def test_cantilever_matches_beam_theory(timoshenko, elements):
    frame, s, L = _Cantilever(timoshenko, elements)
    ex, ey, ez = frame.R[0]
    E, G = s.youngs_modulus, s.shear_modulus
    tip = frame.num_nodes - 1
    support = FixNode(frame, 0)
    shear_y = L / (G * s.shear_area_y) if timoshenko else 0.0
    shear_z = L / (G * s.shear_area_z) if timoshenko else 0.0
    P, M = 1000.0, 10.0

    def Tip(force=(0, 0, 0), moment=(0, 0, 0)):
        loads = np.zeros((frame.num_nodes, 6))
        loads[tip, :3], loads[tip, 3:] = force, moment
        return frame.Solve(loads=loads, supports=support).displacements[tip]

    u = Tip(force=P * ey)  # bending in the local x-y plane
    assert u[:3] @ ey == pytest.approx(P * L**3 / (3 * E * s.Iz) + P * shear_y, rel=1e-9)
    assert u[3:] @ ez == pytest.approx(P * L**2 / (2 * E * s.Iz), rel=1e-9)
    u = Tip(force=P * ez)  # bending in the local x-z plane
    assert u[:3] @ ez == pytest.approx(P * L**3 / (3 * E * s.Iy) + P * shear_z, rel=1e-9)
    assert u[3:] @ ey == pytest.approx(-P * L**2 / (2 * E * s.Iy), rel=1e-9)
    u = Tip(moment=M * ez)  # end moment: no shear deformation
    assert u[:3] @ ey == pytest.approx(M * L**2 / (2 * E * s.Iz), rel=1e-9)
    assert u[3:] @ ez == pytest.approx(M * L / (E * s.Iz), rel=1e-9)
    u = Tip(force=P * ex, moment=M * ex)  # axial and torsion
    assert u[:3] @ ex == pytest.approx(P * L / (E * s.area), rel=1e-9)
    assert u[3:] @ ex == pytest.approx(M * L / (G * s.J), rel=1e-9)


@pytest.mark.parametrize("timoshenko", [False, True])
def test_element_stiffness_symmetric_with_six_rigid_modes(timoshenko):
    frame, _, _ = _Cantilever(timoshenko)
    K = frame.element_stiffness[0]
    assert np.abs(K - K.T).max() <= 1e-12 * np.abs(K).max()
    eigenvalues = np.sort(np.abs(np.linalg.eigvalsh(K)))
    assert np.all(eigenvalues[:6] <= 1e-12 * eigenvalues[-1])
    assert eigenvalues[6] > 1e-8 * eigenvalues[-1]
    # The six zero modes are the rigid motions of the two end nodes.
    rigid = np.column_stack(
        [RigidBodyDisplacement(frame.nodes, t, w).ravel() for t, w in np.eye(6).reshape(6, 2, 3)]
    )
    assert np.abs(K @ rigid).max() <= 1e-9 * np.abs(K).max()


def test_lattice_under_rigid_support_motion_has_no_strain_energy():
    lattice = CubicLattice((3, 2, 2))
    frame = lattice.MakeFrame()
    rng = np.random.default_rng(1)
    t, w = 1e-3 * rng.standard_normal(3), 1e-3 * rng.standard_normal(3)
    rigid = RigidBodyDisplacement(lattice.nodes, t, w)
    supports = {}
    for node in range(0, lattice.num_nodes, 7):  # an over-determined set of supports
        supports |= FixNode(frame, node, values=rigid[node])
    solution = frame.Solve(supports=supports)
    assert np.abs(solution.displacements - rigid).max() <= 1e-9 * np.abs(rigid).max()
    deformed = 1e-3 * rng.standard_normal(frame.num_dofs)  # same size, not rigid
    assert solution.strain_energy <= 1e-12 * frame.StrainEnergy(deformed)
    assert np.abs(solution.reactions).max() <= 1e-6


def test_actuator_constraints_and_forces_balance():
    lattice = CubicLattice((2, 2, 1))
    frame = lattice.MakeFrame()
    a, b = lattice.NodeAt((2, 1, 1)), lattice.NodeAt((2, 3, 1))
    for mount in ("axial", "prismatic"):
        solution = frame.Solve(actuators=[Actuator(a, b, stroke=1e-3, mount=mount)], clamp_node=0)
        u = solution.translations
        assert (u[b] - u[a])[1] == pytest.approx(1e-3, rel=1e-9)
        # Internal actuator: the single clamp carries no load.
        assert np.abs(solution.reactions).max() <= 1e-6 * abs(solution.actuator_forces[0])
        # Work done by the actuator = strain energy (Clapeyron).
        assert 0.5 * solution.actuator_forces[0] * 1e-3 == pytest.approx(
            solution.strain_energy, rel=1e-8
        )


def test_modes_of_a_free_lattice_start_with_six_rigid_modes():
    lattice = CubicLattice((2, 2, 1))
    frequencies, _ = lattice.MakeFrame().Modes(8)
    assert np.all(frequencies[:6] < 1e-3 * frequencies[6])
    assert frequencies[6] > 1.0
