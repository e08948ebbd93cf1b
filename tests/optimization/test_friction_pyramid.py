"""The friction pyramid's edges against Coulomb's cone (hamr-contact-implicit.txt, Eq. 13).

A block sliding along the diagonal of the 4-edge pyramid is where maximum dissipation cannot fix
the friction direction: the pyramid then brakes it by mu g / sqrt(2) instead of mu g (the planned
HAMR gaits slid loaded feet exactly there, /work/notes/issue-4-gap.md). With 8 edges the diagonal
is an edge and the transcription must reproduce Coulomb's analytic stop: distance v0^2/(2 mu g)
along the initial direction.
"""

from __future__ import annotations

import numpy as np
import pytest
from pydrake.solvers import SnoptSolver

from drakebots.optimization.tree_lagrangian import TreeLagrangian
from drakebots.optimization.variational import (
    PYRAMID_DIRECTIONS,
    PointContact,
    PyramidDirections,
    VariationalDynamics,
)
from tests.optimization.test_contact_implicit import G, PointMassPlant, SolveSimulationProblem


def test_pyramid_directions_are_unit_and_evenly_spaced():
    np.testing.assert_array_equal(PyramidDirections(4), PYRAMID_DIRECTIONS)
    for count in (3, 6, 8, 16):
        D = PyramidDirections(count)
        assert D.shape == (count, 3)
        np.testing.assert_allclose(np.linalg.norm(D, axis=1), 1.0, rtol=1e-15)
        np.testing.assert_allclose(D[:, 2], 0.0)
        np.testing.assert_allclose(D.sum(axis=0), 0.0, atol=1e-12)
        cosines = np.sum(D * np.roll(D, -1, axis=0), axis=1)
        np.testing.assert_allclose(cosines, np.cos(2 * np.pi / count), atol=1e-12)
    with pytest.raises(ValueError, match="at least 3"):
        PyramidDirections(2)


@pytest.mark.skipif(not SnoptSolver().available(), reason="SNOPT not available")
@pytest.mark.parametrize("edges, brake", [(8, 1.0), (4, 1.0 / np.sqrt(2.0))])
def test_diagonal_slide_brakes_at_mu_g_only_with_an_edge_on_the_slip(edges, brake):
    mu = 0.8
    _, plant, body = PointMassPlant()
    dyn = VariationalDynamics(
        TreeLagrangian(plant),
        contacts=[PointContact(int(body.index()), np.zeros(3), "point")],
        friction=mu,
        force_scale=G,
        friction_directions=edges,
    )
    speed = 500.0  # mm/s, along the pyramid's diagonal (45 deg)
    v0 = speed * np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
    a = brake * mu * G  # analytic deceleration along the slip (Coulomb: mu g)
    h = 0.002
    N = int(np.ceil(1.25 * (speed / (mu * G / np.sqrt(2.0))) / h)) + 1
    _, outcome, check, traj = SolveSimulationProblem(dyn, [0, 0, 0], v0, h, N)
    assert outcome.success, outcome.status
    assert check.max_violation <= 1e-6, check.MostViolated()
    travelled = np.linalg.norm(traj.q[-1, :2])
    assert travelled == pytest.approx(speed**2 / (2 * a), rel=0.03)
    if edges == 8:
        # Coulomb: the friction opposes the slip, so the block keeps its heading.
        assert abs(traj.q[-1, 0] - traj.q[-1, 1]) <= 1e-3 * travelled
