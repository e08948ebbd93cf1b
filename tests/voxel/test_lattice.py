"""The octahedral voxel lattice (drakebots.voxel.lattice): geometry, reference numbering, and
its input checks."""

import numpy as np
import pytest

from drakebots.errors import InputError
from drakebots.voxel.lattice import CubicLattice, VoxelLattice


def test_voxel_lattice_geometry():
    lattice = CubicLattice((2, 2, 2))
    assert lattice.num_nodes == 36 and len(lattice.struts) == 96
    lengths = np.linalg.norm(
        lattice.nodes[lattice.struts[:, 0]] - lattice.nodes[lattice.struts[:, 1]], axis=1
    )
    assert np.allclose(lengths, lattice.pitch / np.sqrt(2))
    # Reference numbering: node 3 of voxel (0,0,0) is node 0 of voxel (1,0,0).
    assert lattice.NodeOf((0, 0, 0), 3) == lattice.NodeOf((1, 0, 0), 0)
    assert np.allclose(
        lattice.nodes[lattice.NodeOf((0, 0, 0), 5)], [0.5, 0.5, 1.0] * np.array(lattice.pitch)
    )


@pytest.mark.parametrize(
    "occupancy, message",
    [
        (np.ones((2, 2), dtype=bool), "3-D"),
        (np.ones((2, 2, 1), dtype=int), "boolean"),
        ([[[True]]], "numpy"),
        (np.zeros((1, 1, 1), dtype=bool), "no voxel"),
    ],
)
def test_bad_occupancy_is_an_input_error(occupancy, message):
    with pytest.raises(InputError, match=message):
        VoxelLattice(occupancy)
