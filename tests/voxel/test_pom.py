"""The Planes-of-Motion model: the FEM observations it rests on, forward/inverse consistency,
over-determination, and the tripod robot against the frame FEM."""

import numpy as np
import pytest

from drakebots.errors import InputError
from drakebots.voxel.lattice import CubicLattice
from drakebots.voxel.pom import (
    Control,
    DeriveActuationMatrices,
    IdealActuationMatrices,
    PomModel,
    ReferenceFormation,
)
from drakebots.voxel.tripod import (
    CompareWithFem,
    FemFeetMatrix,
    GaitQuantities,
    GaitQuantityMatrix,
    GaitStrokes,
    ReverseGait,
    TripodGaitTargets,
    TripodPom,
)


def test_two_by_two_formation_rotates_its_squares():
    """Sec. 2.1: equal magnitudes in the plane, alternating directions, nothing off the plane."""
    lattice, actuator, _, _ = ReferenceFormation(2)
    actuator.stroke = 1e-3
    u = lattice.MakeFrame().Solve(actuators=[actuator]).translations
    on = lattice.face_axis() != 2
    magnitude = np.linalg.norm(u, axis=1)
    assert np.all(np.abs(magnitude[on] - 0.5e-3) < 0.01 * 0.5e-3)
    assert np.all(magnitude[~on] < 0.01 * 0.5e-3)


def test_derived_actuation_matrices_are_near_the_rigid_rotation_pattern():
    A, details = DeriveActuationMatrices()
    assert np.abs(A - IdealActuationMatrices()).max() < 0.01
    assert all(d["voxel_spread"] < 0.01 for d in details.values())


def test_forward_then_inverse_returns_the_input():
    lattice = CubicLattice((3, 3, 3))
    controls = [
        Control(lattice.NodeAt((2, 1, 1)), 1),  # z-plane 0
        Control(lattice.NodeAt((2, 1, 3)), 2),  # y-plane 0
        Control(lattice.NodeAt((1, 4, 3)), 0),  # z-plane 1
        Control(lattice.NodeAt((3, 4, 5)), 2),  # x-plane 1
    ]
    model = PomModel(lattice, controls)
    c = np.array([1e-3, -2e-3, 0.5e-3, 3e-3])
    u = model.Forward(c)
    back, residual = model.Inverse(u)
    assert np.allclose(back, c, rtol=0, atol=1e-15)
    assert np.nanmax(np.abs(residual)) < 1e-15
    # Each control node reproduces its own displacement exactly.
    for control, value in zip(controls, c):
        assert u[control.node, control.axis] == pytest.approx(value, abs=1e-15)


def test_two_controls_on_one_plane_are_over_determined():
    lattice = CubicLattice((2, 2, 1))
    controls = [Control(lattice.NodeAt((2, 1, 1)), 1), Control(lattice.NodeAt((1, 2, 1)), 0)]
    with pytest.raises(InputError, match="over-determined"):
        PomModel(lattice, controls)


def test_tripod_pom_against_fem():
    """The core nodes follow the POM prediction within 1 % of the largest displacement; the
    front feet (extensions, sec. 3.1) within 25 %."""
    pom = TripodPom()
    strokes, residual = GaitStrokes(pom, TripodGaitTargets())
    assert max(np.abs(r).max() for r in residual.values()) < 1e-12
    assert 2e-3 < np.abs(strokes).max() <= 10e-3  # a few millimetres
    comparison = CompareWithFem(strokes[3])
    peak = np.linalg.norm(comparison.pom, axis=1).max()
    assert comparison.error.max() < 0.01 * peak
    for name in ("rear_right", "rear_left", "marker1", "marker2", "marker3", "marker4"):
        error = np.linalg.norm(comparison.feet_pom[name] - comparison.feet_fem[name])
        assert error < 0.01 * peak, name
    for name in ("front_right", "front_left"):
        error = np.linalg.norm(comparison.feet_pom[name] - comparison.feet_fem[name])
        assert error < 0.25 * np.linalg.norm(comparison.feet_fem[name]), name


def test_gait_inverse_kinematics_reproduces_the_foot_paths():
    """The four gait quantities determine the four strokes (full rank), and the POM forward
    kinematics of the IK strokes gives back the prescribed foot paths."""
    pom = TripodPom()
    names, M = GaitQuantityMatrix(pom)
    assert np.linalg.matrix_rank(M) == len(pom.controls) == len(names)
    targets = TripodGaitTargets(clearance=3e-3, narrow=5e-3)
    strokes, residual = GaitStrokes(pom, targets)
    achieved = GaitQuantities(pom, strokes)
    for name, values in targets.items():
        assert np.abs(achieved[name] - values).max() < 1e-15, name
        assert np.abs(residual[name]).max() < 1e-15, name
    # The reversed foot paths give the reversed strokes, from the same standing keyframe.
    reversed_strokes, _ = GaitStrokes(pom, ReverseGait(targets))
    assert np.array_equal(reversed_strokes[0], strokes[0])
    assert np.allclose(reversed_strokes[1:], strokes[:0:-1], rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="unknown gait quantities"):
        GaitStrokes(pom, {"stride": np.zeros(8)})


def test_front_feet_touch_down_level_fore_and_aft():
    """The claim the gait design rests on (drakebots.voxel.tripod): with the front voxels hung
    from single nodes, whatever the strokes, the fore-aft offset between the front feet is
    proportional to their height difference, so a swing foot that comes down level with the
    stance foot is level with it fore and aft too (no step from the front feet alone). Checked on
    the frame FEM of the whole robot, not on the POM model that the design uses."""
    fem = FemFeetMatrix()
    dx = fem["front_right"][0] - fem["front_left"][0]
    dz = fem["front_right"][2] - fem["front_left"][2]
    assert np.abs(dz).max() > 0.5  # the side actuators lift one front foot more than the other
    # dx = k dz for one k: the 2x4 matrix [dx; dz] has rank one.
    singular = np.linalg.svd(np.vstack([dx, dz]), compute_uv=False)
    assert singular[1] < 1e-6 * singular[0], singular
