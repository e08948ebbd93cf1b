"""A cantilever block clamped at one end, sagging under its own weight: our static neo-Hookean
solution against Drake's DeformableModel (same mesh, material and load) and against
Euler-Bernoulli beam theory in the small-deflection regime."""

import numpy as np
import pytest

from drakebots.fem.integrator import StaticEquilibrium
from drakebots.fem.materials import LameParameters, Material
from drakebots.fem.mesh import BoxMesh, WriteVtk
from drakebots.fem.model import FemModel

L, B = 0.2, 0.02  # m: length and square cross-section side
E, NU, RHO = 1e7, 0.3, 1000.0  # Pa, -, kg/m^3: tip sag ~3 % of L (small deflection)
G = 9.81


def _Euler_Bernoulli_tip():
    """delta = q L^4 / (8 E I) for a uniform load q = rho g A."""
    q = RHO * G * B * B
    return q * L**4 / (8.0 * E * B**4 / 12.0)


def _OurTipSag(divisions):
    mesh = BoxMesh((L, B, B), divisions, origin=(0.0, -B / 2, 0.3))
    fixed = np.flatnonzero(mesh.vertices[:, 0] < 1e-9)
    fem = FemModel(mesh, Material(youngs_modulus=E, poissons_ratio=NU, mass_density=RHO))
    x = StaticEquilibrium(fem, fixed_vertices=fixed).reshape(-1, 3)
    tip = mesh.vertices[:, 0] > L - 1e-9
    return mesh, tip, float(np.mean(mesh.vertices[tip, 2] - x[tip, 2]))


def DrakeMaterialWithSameLinearization(E, nu):
    """(E', nu') for Drake's stable neo-Hookean so that its small-strain Lame constants equal
    ours. Drake's energy psi = mu/2 (I_C - 3) + lam/2 (J - 1 - mu/lam)^2 linearises to
    (mu, lam - mu); ours, mu/2 (I_C - 3) - mu ln J + lam/2 (ln J)^2, to (mu, lam). So Drake
    gets mu' = mu and lam' = lam + mu."""
    mu, lam = LameParameters(E, nu)
    lam_d = lam + mu
    nu_d = lam_d / (2.0 * (lam_d + mu))
    E_d = mu * (3.0 * lam_d + 2.0 * mu) / (lam_d + mu)
    return E_d, nu_d


@pytest.mark.paper
def test_cantilever_matches_drake_deformable_model(tmp_path):
    from pydrake.geometry import GeometryInstance, Mesh, ProximityProperties
    from pydrake.math import RigidTransform
    from pydrake.multibody.fem import DeformableBodyConfig, MaterialModel
    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.systems.analysis import Simulator
    from pydrake.systems.framework import DiagramBuilder

    mesh, tip, ours = _OurTipSag((40, 4, 4))
    WriteVtk(tmp_path / "beam.vtk", mesh)
    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(time_step=5e-3, discrete_contact_approximation="sap"), builder
    )
    model = plant.mutable_deformable_model()
    config = DeformableBodyConfig()
    E_d, nu_d = DrakeMaterialWithSameLinearization(E, NU)
    config.set_youngs_modulus(E_d)
    config.set_poissons_ratio(nu_d)
    config.set_mass_density(RHO)
    config.set_material_model(MaterialModel.kNeoHookean)
    config.set_mass_damping_coefficient(60.0)  # about critical for the first bending mode
    geometry = GeometryInstance(RigidTransform(), Mesh(str(tmp_path / "beam.vtk")), "beam")
    geometry.set_proximity_properties(ProximityProperties())
    body = model.RegisterDeformableBody(geometry, config, 1.0)
    model.SetWallBoundaryCondition(body, [1e-6, 0.0, 0.0], [1.0, 0.0, 0.0])
    plant.Finalize()
    simulator = Simulator(builder.Build())
    simulator.Initialize()
    context = plant.GetMyContextFromRoot(simulator.get_context())
    sags = []
    for t in (0.6, 0.8):  # settled: the two samples agree
        simulator.AdvanceTo(t)
        X = model.GetPositions(context, body).T
        sags.append(float(np.mean(mesh.vertices[tip, 2] - X[tip, 2])))
    assert sags[1] == pytest.approx(sags[0], rel=1e-3)
    assert ours == pytest.approx(sags[1], rel=0.05)


@pytest.mark.paper
def test_cantilever_converges_to_euler_bernoulli():
    """Linear tets are too stiff in bending on coarse meshes (locking); refined, the sag
    increases monotonically towards the beam theory value, and the Richardson extrapolation of
    the two finest meshes (displacements of linear elements converge at O(h^2)) lands within 5 %
    (the Timoshenko shear correction of this L/B = 10 beam is 1 %)."""
    eb = _Euler_Bernoulli_tip()
    assert eb / L < 0.05  # the small-deflection regime
    _, _, coarse = _OurTipSag((20, 2, 2))
    _, _, medium = _OurTipSag((40, 4, 4))
    _, _, fine = _OurTipSag((80, 8, 8))
    assert coarse < medium < fine < 1.02 * eb
    extrapolated = fine + (fine - medium) / (2.0**2 - 1.0)
    assert extrapolated == pytest.approx(eb, rel=0.05)
