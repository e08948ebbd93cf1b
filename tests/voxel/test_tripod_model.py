"""The committed voxel_tripod model files equal the generator's output, and the Drake bushings
reproduce the frame element's stiffness."""

import numpy as np
import pytest

from drakebots.models import ModelsDirectory
from drakebots.voxel.tripod_model import TripodModelFiles


def test_committed_files_equal_the_generator_output():
    folder = ModelsDirectory() / "voxel_tripod"
    for name, text in TripodModelFiles().items():
        assert (folder / name).read_text() == text, (
            f"models/voxel_tripod/{name} is stale: run python scripts/generate_voxel_tripod.py"
        )


def test_midpoint_spring_reproduces_the_beam_element():
    """A diagonal spring at the midpoint between two rigid half-struts (the bushing model) has the
    same 12x12 stiffness as the Euler-Bernoulli element."""
    from drakebots.frame.elements import LocalStiffness
    from drakebots.voxel.lattice import StrutSection

    s = StrutSection()
    L = 0.05
    E, G = s.youngs_modulus, s.shear_modulus
    k_t = np.diag([E * s.area / L, 12 * E * s.Iz / L**3, 12 * E * s.Iy / L**3])
    k_r = np.diag([G * s.J / L, E * s.Iy / L, E * s.Iz / L])

    # Relative motion at the midpoint: (u_b + w_b x (-L/2 ex)) - (u_a + w_a x (L/2 ex)), and
    # rotation w_b - w_a; w x r = -[r]x w.
    def Skew(v):
        return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])

    half = Skew(np.array([L / 2, 0, 0]))
    B = np.zeros((6, 12))
    B[:3, 0:3], B[:3, 3:6] = -np.eye(3), half
    B[:3, 6:9], B[:3, 9:12] = np.eye(3), half
    B[3:, 3:6], B[3:, 9:12] = -np.eye(3), np.eye(3)
    D = np.zeros((6, 6))
    D[:3, :3], D[3:, 3:] = k_t, k_r
    K_spring = B.T @ D @ B
    K_beam = LocalStiffness(s, np.array([L]))[0]
    assert np.abs(K_spring - K_beam).max() <= 1e-9 * np.abs(K_beam).max()


def test_drake_model_statics_match_the_frame_fem():
    """The Drake model's stiffness, measured from Drake (bushing forces by central differences,
    distance constraints as the axial springs they are), gives the frame FEM's static response to
    the same strokes (prismatic mounts, one clamped node), node by node.

    Tolerance 1e-6 of the largest displacement: the bushing is exact for the Euler-Bernoulli
    element in the small-motion limit, so what remains is the finite-difference error (step
    1e-7: truncation O(step^2), round-off ~1e-16 / 1e-7 of the forces) amplified by the
    conditioning of K (axial/bending stiffness ratio ~1800 and the soft rotating-squares modes).
    """
    from drakebots.frame.model import RemoveRigidBodyMotion
    from drakebots.voxel.statics import TripodStatics
    from drakebots.voxel.tripod import TripodActuators, TripodLattice
    from drakebots.voxel.tripod_model import NodeName

    strokes = {"right": 1e-3, "left": -0.5e-3, "rear": 0.3e-3, "front": -0.2e-3}
    statics = TripodStatics()
    drake = statics.Solve(strokes, clamp="node_3_1_0")
    lattice = TripodLattice()
    solution = lattice.MakeFrame().Solve(
        actuators=TripodActuators(lattice, strokes, mount="prismatic"),
        clamp_node=lattice.NodeAt((3, 1, 0)),
    )
    u_fem, _, _ = RemoveRigidBodyMotion(lattice.nodes, solution.translations)
    u_drake = np.array([drake[NodeName(c)] for c in lattice.node_coords])
    u_drake, _, _ = RemoveRigidBodyMotion(lattice.nodes, u_drake)
    peak = np.abs(u_fem).max()
    assert peak > 1e-4  # strokes of a millimetre move the lattice visibly
    assert np.abs(u_drake - u_fem).max() <= 1e-6 * peak


def test_pads_give_the_intended_effective_friction():
    """Drake combines the two coefficients of a contact pair (2 mu_A mu_B / (mu_A + mu_B)); the
    pads' own coefficients must give the documented effective values (sticky front 1.5, printed
    rear 0.3) against the ground the simulation adds. Checked with Drake's own rule."""
    from pydrake.multibody.plant import (
        AddMultibodyPlantSceneGraph,
        CalcContactFrictionFromSurfaceProperties,
        CoulombFriction,
    )
    from pydrake.systems.framework import DiagramBuilder

    from drakebots.robots import GetRobot
    from drakebots.voxel.robot import TripodMetadata

    meta = TripodMetadata()["friction"]
    builder = DiagramBuilder()
    plant, scene_graph = AddMultibodyPlantSceneGraph(builder, time_step=1e-3)
    GetRobot("voxel_tripod").AddTo(plant)
    plant.Finalize()
    inspector = scene_graph.model_inspector()
    ground = CoulombFriction(meta["ground"], meta["ground"])
    seen = set()
    for body_index in plant.GetBodyIndices(plant.GetModelInstanceByName("voxel_tripod")):
        for geometry in plant.GetCollisionGeometriesForBody(plant.get_body(body_index)):
            name = inspector.GetName(geometry).split("::")[-1]
            pad = inspector.GetProximityProperties(geometry).GetProperty(
                "material", "coulomb_friction"
            )
            combined = CalcContactFrictionFromSurfaceProperties(pad, ground)
            intended = meta["front"] if name.startswith("front") else meta["rear"]
            assert combined.static_friction() == pytest.approx(intended, rel=1e-8), name
            assert combined.dynamic_friction() == pytest.approx(intended, rel=1e-8), name
            seen.add(name)
    assert seen == {"front_right", "front_left", "rear_right", "rear_left"}
    assert (meta["front"], meta["rear"]) == (1.5, 0.3)
