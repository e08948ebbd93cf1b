"""Skin generation: shells from implicit shapes, files, and the four robots' skins (slow).

Every generated skin.vtk must load into Drake's DeformableModel (the independent reader), with
every tetrahedron positively oriented, both surface sheets closed and manifold, the glue vertices
on links of the skeleton, and the skin mass equal to the paper's skin mass."""

import numpy as np
import pytest

from drakebots.fem.mesh import BoundaryFaces, CheckClosedManifold, ReadVtk, TetMesh
from drakebots.skinned.skeleton import LoadSkeletonParams, _Build
from drakebots.skinned.skin import (
    LoadSkin,
    MakeShellMesh,
    MakeSkin,
    Skin,
    SkinInputError,
    SkinOptions,
    WriteSkin,
)

PAPER_VERTICES = {"beetle": 14152, "monster": 16624, "lizard": 18261, "cow": 12494}


def LoadsInDrake(path, density=1000.0) -> int:
    """Registers a VTK tet mesh as a Drake deformable body; returns its vertex count."""
    from pydrake.geometry import GeometryInstance, Mesh, ProximityProperties
    from pydrake.math import RigidTransform
    from pydrake.multibody.fem import DeformableBodyConfig
    from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
    from pydrake.systems.framework import DiagramBuilder

    builder = DiagramBuilder()
    plant, _ = AddMultibodyPlant(
        MultibodyPlantConfig(time_step=1e-3, discrete_contact_approximation="sap"), builder
    )
    config = DeformableBodyConfig()
    config.set_mass_density(density)
    geometry = GeometryInstance(RigidTransform(), Mesh(str(path)), "skin")
    geometry.set_proximity_properties(ProximityProperties())
    body = plant.mutable_deformable_model().RegisterDeformableBody(geometry, config, 1.0)
    plant.Finalize()
    context = plant.CreateDefaultContext()
    return plant.deformable_model().GetPositions(context, body).shape[1]


def test_shell_of_a_sphere_is_a_closed_positive_shell_that_drake_loads(tmp_path):
    from drakebots.fem.mesh import WriteVtk

    outer_r, thickness = 0.05, 0.004
    mesh = MakeShellMesh(
        lambda P: np.linalg.norm(P, axis=-1) - outer_r, [-0.06] * 3, [0.06] * 3, thickness, 0.008
    )
    assert mesh.SignedVolumes().min() > 0.0
    exact = 4.0 / 3.0 * np.pi * (outer_r**3 - (outer_r - thickness) ** 3)
    assert mesh.Volume() == pytest.approx(exact, rel=0.05)
    CheckClosedManifold(mesh.vertices, BoundaryFaces(mesh.tets))
    WriteVtk(tmp_path / "shell.vtk", mesh)
    back = ReadVtk(tmp_path / "shell.vtk")
    np.testing.assert_allclose(back.vertices, mesh.vertices, atol=1e-8)
    assert LoadsInDrake(tmp_path / "shell.vtk") == mesh.num_vertices


def _TetQuality(mesh) -> np.ndarray:
    """6 sqrt(2) V / l_max^3 per tet: 1 for a regular tet, 0 for a flat one."""
    x, t = mesh.vertices, mesh.tets
    D = np.stack([x[t[:, k]] - x[t[:, 0]] for k in (1, 2, 3)], axis=2)
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    edges = np.stack([np.linalg.norm(x[t[:, i]] - x[t[:, j]], axis=1) for i, j in pairs], 1)
    return 6.0 * np.sqrt(2.0) * (np.linalg.det(D) / 6.0) / edges.max(axis=1) ** 3


@pytest.mark.parametrize("offset", [1e-7, 3e-6])
def test_a_surface_grazing_the_grid_nodes_meshes_without_slivers(offset):
    """A sphere whose surface passes `offset` from grid nodes (radius 6 voxels + offset, centred
    on a node): unsnapped marching cubes puts vertices micrometres from the nodes and Gmsh fills
    the sliver triangles with flat tets (min quality 1e-9 and 2e-5, ~190 tets below 1e-2,
    measured); the snapped field (skin._MarchingCubes) keeps every tet above 1e-2."""
    r = 0.048 + offset
    mesh = MakeShellMesh(
        lambda P: np.linalg.norm(P, axis=-1) - r, [-0.064] * 3, [0.064] * 3, 0.004, 0.008
    )
    assert _TetQuality(mesh).min() > 1e-2


@pytest.mark.parametrize(
    ("robot", "piece"), [("monster", "torso"), ("cow", "torso"), ("lizard", None)]
)
def test_the_grid_holds_the_whole_shape(robot, piece):
    """The skin's surface lies on the shape's own field, not on the grid's edge: the outer
    sheet's vertices where the field (independent of marching cubes) is zero, within 0.4 voxel.
    The 0.25 m margin around the link origins clipped these three (the monster's torso piece
    is 0.55 m wide about its mid-line links, the cow's reaches past the margin fore and aft,
    the lizard's tail past it aft): the sheets closed on the grid's last nodes, 39, 53 and
    12 mm inside the field's surface, on 31 µm walls; 2.7 mm at most once the grid grows
    (skin._GridAroundShape, Findings 38 of docs/reproductions/skinned.md)."""
    from drakebots.skinned.skin import DEFAULT_VOXEL, MakeShellSurface, ShapeField, SkinPieces

    params = LoadSkeletonParams(robot)
    voxel = DEFAULT_VOXEL[robot]
    options = SkinOptions(voxel=voxel)
    if piece is not None:
        pieces = dict(SkinPieces(params))
        limbs = tuple(name for name in pieces if name != "torso")
        options = SkinOptions(voxel=voxel, links=pieces[piece], clear_of_limbs=limbs)
    sheets, _ = MakeShellSurface(params, options)
    f, _, fold = ShapeField(params, options, sheets[0][0])
    assert np.abs(f + fold).max() < 0.4 * voxel


def test_bad_thickness_and_poissons_ratio_are_rejected():
    params = LoadSkeletonParams("beetle")
    with pytest.raises(SkinInputError, match="thickness"):
        MakeSkin(params, SkinOptions(thickness=0.0))
    with pytest.raises(SkinInputError, match="Poisson"):
        MakeSkin(params, SkinOptions(poissons_ratio=0.5))
    with pytest.raises(SkinInputError, match="elbows"):
        MakeSkin(params, SkinOptions(folding_regions=("elbows",)))
    with pytest.raises(SkinInputError, match="soft region 'wings'"):
        MakeSkin(params, SkinOptions(soft_regions=("wings",)))
    with pytest.raises(SkinInputError, match="factor"):
        MakeSkin(params, SkinOptions(soft_scale=0.0))


def _SeriesBar(scale):
    """A 10 x 1 x 1 cm bar along x whose far half has Young's modulus x `scale`."""
    from drakebots.fem.mesh import BoxMesh

    mesh = BoxMesh((0.1, 0.01, 0.01), (40, 4, 4))
    centroids = mesh.vertices[mesh.tets].mean(axis=1)
    return mesh, np.where(centroids[:, 0] > 0.05, scale, 1.0)


def test_a_soft_region_stretches_by_the_inverse_of_its_modulus_factor(tmp_path):
    """Paper section 7 (the monster's belly and tail: E reduced by 85 %): a bar of two halves in
    series, clamped at x = 0 and pulled at x = L, carries the same stress in both halves, so
    the soft half's strain is the stiff half's divided by 0.15 (uniaxial stress, small strain;
    analytic). The per-element factor goes through the skin files (WriteSkin / LoadSkin)."""
    import scipy.sparse.linalg as spla

    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel

    mesh, scale = _SeriesBar(0.15)
    n = mesh.num_vertices
    skin = Skin(
        robot="beetle",
        mesh=mesh,
        glue_vertices=np.zeros(0, dtype=np.int64),
        glue_links=[],
        glue_points=np.zeros((0, 3)),
        skin_links=["torso"],
        weights=np.ones((n, 1)),
        thickness=np.full(n, 0.01),
        outer=np.zeros(n, dtype=bool),
        fold=np.zeros(mesh.num_tets, dtype=bool),
        mass_density=1100.0,
        youngs_modulus=1e6,
        poissons_ratio=0.3,
        info={},
        youngs_scale=scale,
    )
    WriteSkin(tmp_path, skin)
    loaded = LoadSkin(tmp_path)
    np.testing.assert_array_equal(loaded.ElementYoungsScale(), scale)
    material = Material(youngs_modulus=1e6, poissons_ratio=0.3)
    model = FemModel(loaded.mesh, material, youngs_scale=loaded.ElementYoungsScale())
    X = mesh.vertices
    K = model.Hessian(model.RestPositions()).tocsc()
    # Clamp x = 0 in x only (one point fully, one more in y/z): no lateral constraint, so the
    # stress is uniaxial everywhere; pull the end face with 1 N.
    fixed = list(3 * np.flatnonzero(X[:, 0] < 1e-9))
    corner = int(np.flatnonzero(np.all(np.abs(X) < 1e-9, axis=1))[0])
    other = int(
        np.flatnonzero((X[:, 0] < 1e-9) & (np.abs(X[:, 1] - 0.01) < 1e-9) & (X[:, 2] < 1e-9))[0]
    )
    fixed += [3 * corner + 1, 3 * corner + 2, 3 * other + 2]
    free = np.setdiff1d(np.arange(3 * n), fixed)
    end = np.flatnonzero(X[:, 0] > 0.1 - 1e-9)
    f = np.zeros(3 * n)
    f[3 * end] = 1.0 / len(end)  # uniform nodal loads: the bar's x = L face, 1 N total
    u = np.zeros(3 * n)
    u[free] = spla.spsolve(K[free][:, free], f[free])
    ux = u[0::3]

    def Strain(a, b):  # mean x-displacement difference between two cross-sections / length
        at = lambda x: ux[np.abs(X[:, 0] - x) < 1e-9].mean()  # noqa: E731
        return (at(b) - at(a)) / (b - a)

    stiff, soft = Strain(0.01, 0.04), Strain(0.06, 0.09)
    assert stiff == pytest.approx(1.0 / (1e6 * 1e-4), rel=0.02)  # sigma / E, sigma = 1 N / 1 cm^2
    assert soft / stiff == pytest.approx(1.0 / 0.15, rel=0.02)


def test_a_non_positive_tet_is_refused_by_the_model():
    from drakebots.fem.materials import Material
    from drakebots.fem.model import FemModel

    mesh = TetMesh(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]), [[0, 2, 1, 3]])
    with pytest.raises(ValueError, match="element 0"):
        FemModel(mesh, Material())


@pytest.mark.paper
@pytest.mark.parametrize("robot", sorted(PAPER_VERTICES))
def test_every_robot_skin(robot, tmp_path):
    params = LoadSkeletonParams(robot)
    skin = MakeSkin(params)
    mesh = skin.mesh
    # The paper's scale (Table 1: 12.5k-18.3k skin vertices): within a factor of 2.
    assert 0.5 * PAPER_VERTICES[robot] < mesh.num_vertices < 2.0 * PAPER_VERTICES[robot]
    assert 100 <= len(skin.glue_vertices) <= 400  # paper: 140-301
    assert mesh.SignedVolumes().min() > 0.0
    faces = BoundaryFaces(mesh.tets)
    CheckClosedManifold(mesh.vertices, faces)
    assert mesh.Volume() * skin.mass_density == pytest.approx(params.skin_mass, rel=1e-9)
    links = set(_Build(params).links)
    assert set(skin.glue_links) <= links
    # Glue points sit on the inner sheet, the skeleton side of the shell.
    assert not skin.outer[skin.glue_vertices].any()
    np.testing.assert_allclose(skin.weights.sum(axis=1), 1.0, atol=1e-6)
    # The outer size is the paper's overall size within 20 % along each axis.
    size = mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)
    np.testing.assert_allclose(size, params.paper_size, rtol=0.2)
    # Soft regions (section 7): the monster's belly and tail, E x 0.15; the others uniform.
    soft = skin.ElementYoungsScale() < 1.0
    if robot == "monster":
        np.testing.assert_allclose(skin.ElementYoungsScale()[soft], 0.15)
        c = mesh.vertices[mesh.tets[soft]].mean(axis=1)
        torso = next(b for b in _Build(params).links["torso"].boxes if b.name.endswith("_shell"))
        below = c[:, 2] < torso.center[2] - 0.5 * torso.size[2]
        behind = c[:, 0] < torso.center[0] - 0.5 * torso.size[0]
        assert np.all(below | behind) and below.sum() > 1000 and behind.sum() > 300
        assert 0.05 < soft.mean() < 0.4
    else:
        assert not soft.any()
    WriteSkin(tmp_path, skin)
    assert LoadsInDrake(tmp_path / "skin.vtk", skin.mass_density) == mesh.num_vertices


@pytest.mark.paper
def test_skin_from_a_user_surface(tmp_path):
    """The paper's workflow: hollow the user's own closed surface (here an OBJ of a smooth blob
    around the beetle, written by a different route: marching cubes of an analytic field)."""
    from skimage.measure import marching_cubes

    from drakebots.skinned.skin import LoadSurface

    params = LoadSkeletonParams("beetle")
    h = 0.01
    axes = [np.arange(-0.32, 0.32, h), np.arange(-0.25, 0.25, h), np.arange(-0.05, 0.45, h)]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    radii = np.array([0.27, 0.18, 0.22])
    field = np.linalg.norm((X - [0.0, 0.0, 0.2]) / radii, axis=-1) - 1.0
    v, f, _, _ = marching_cubes(field, 0.0, spacing=(h, h, h))
    v += [a[0] for a in axes]
    lines = [f"v {x} {y} {z}" for x, y, z in v] + [f"f {a + 1} {c + 1} {b + 1}" for a, b, c in f]
    (tmp_path / "blob.obj").write_text("\n".join(lines) + "\n")
    surface = LoadSurface(tmp_path / "blob.obj")
    skin = MakeSkin(params, SkinOptions(surface=surface))
    mesh = skin.mesh
    assert mesh.SignedVolumes().min() > 0.0
    CheckClosedManifold(mesh.vertices, BoundaryFaces(mesh.tets))
    size = mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)
    np.testing.assert_allclose(size, 2 * radii, rtol=0.05)
    WriteSkin(tmp_path, skin)
    assert LoadsInDrake(tmp_path / "skin.vtk", skin.mass_density) == mesh.num_vertices


def test_a_skin_in_pieces_is_five_shells_each_glued_to_its_own_limb(
    tmp_path, beetle_skin_pieces_coarse
):
    """Section 6.2: one skin piece per limb and one over the torso. The joined mesh must fall
    apart into exactly those five pieces (connected components of the tets' vertex graph, found
    here independently of the code that joined them), each closed and positively oriented, each
    glued only to its own links and skinned only to them; the whole weighs the paper's skin mass
    and loads into Drake's DeformableModel."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    from drakebots.skinned.skin import SkinPieces

    params = LoadSkeletonParams("beetle")
    skin = beetle_skin_pieces_coarse
    mesh = skin.mesh
    assert mesh.SignedVolumes().min() > 0.0
    CheckClosedManifold(mesh.vertices, BoundaryFaces(mesh.tets))
    T = mesh.tets
    rows = np.repeat(T, 4, axis=1).ravel()
    cols = np.tile(T, (1, 4)).ravel()
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(mesh.num_vertices,) * 2)
    count, label = connected_components(graph, directed=False)
    pieces = dict(SkinPieces(params))
    assert count == len(pieces) == 5
    links = np.asarray(skin.glue_links)
    for component in range(count):
        glued = set(links[label[skin.glue_vertices] == component])
        owner = [name for name, piece in pieces.items() if glued <= set(piece)]
        assert len(owner) == 1, glued
        piece = pieces[owner[0]]
        # Every link of a limb piece holds it (three glue sites: upper leg, lower leg, foot).
        if owner[0] != "torso":
            assert glued == set(piece)
        columns = [k for k, n in enumerate(skin.skin_links) if n not in piece]
        assert np.all(skin.weights[label == component][:, columns] == 0.0)
    np.testing.assert_allclose(skin.weights.sum(axis=1), 1.0, atol=1e-6)
    # The four limb pieces stand on soles at one height (flat ground touches every foot).
    lowest = [mesh.vertices[label == c, 2].min() for c in range(count)]
    soles = sorted(lowest)[:4]
    assert soles[-1] - soles[0] <= 1e-9
    assert skin.info["vertices"] == mesh.num_vertices
    assert mesh.Volume() * skin.mass_density == pytest.approx(params.skin_mass, rel=1e-9)
    assert sum(p["vertices"] for p in skin.info["pieces"].values()) == mesh.num_vertices
    WriteSkin(tmp_path, skin)
    again = LoadSkin(tmp_path)
    np.testing.assert_array_equal(again.glue_vertices, skin.glue_vertices)
    assert LoadsInDrake(tmp_path / "skin.vtk", skin.mass_density) == mesh.num_vertices
    with pytest.raises(SkinInputError, match="pieces"):
        MakeSkin(params, SkinOptions(pieces=True, surface=(mesh.vertices, BoundaryFaces(T))))


def _PiecesTurned(skin, params, angles):
    """Vertices of a skin in pieces with each limb piece turned rigidly about its hip by the
    angle given for it (rad), and each leg box turned with it: (vertices (n, 3), piece name
    per vertex, [(piece, center, R, half size)] of the turned leg boxes). The pieces are told
    apart by their weights (each piece is skinned only to its own links)."""
    from scipy.spatial.transform import Rotation

    from drakebots.skinned.skin import SkinPieces

    built = _Build(params)
    X = skin.mesh.vertices.copy()
    owner = np.full(len(X), "torso", dtype=object)
    boxes = []
    for name, links in SkinPieces(params):
        if name == "torso":
            continue
        columns = [k for k, n in enumerate(skin.skin_links) if n in links]
        mine = skin.weights[:, columns].sum(axis=1) > 0.5
        owner[mine] = name
        hip = next(j for j in built.joints if j.child in links and j.parent not in links)
        p = built.links[hip.child].origin
        R = Rotation.from_rotvec(np.asarray(hip.axis, float) * angles[name]).as_matrix()
        X[mine] = p + (X[mine] - p) @ R.T
        for link in links:
            for box in built.links[link].boxes:
                boxes.append((name, p + R @ (box.center - p), R @ box.R, 0.5 * box.size))
    return X, owner, boxes


def test_the_pieces_stay_clear_of_each_other_through_the_hips_range(
    beetle_skin_pieces_coarse, beetle_skin_pieces_overlapping
):
    """Section 6.2's pieces must leave the limbs room to swing: the torso's piece is cut clear
    of each limb's shape and skeleton swept through its hip's range, and each left/right pair
    clear of the mid-plane. Turning the limb pieces rigidly to angles across the hips' range
    (a pair swung towards and away from each other), measured here with the skeleton's own
    boxes and nearest-vertex distances: no vertex of the torso's piece is inside a leg box,
    and the torso's piece stays farther from every limb piece, and left from right, than the
    self-collision penalty's reach (3 mm; 5 mm asked, within 1.1 mm on 12 mm voxels). The
    pieces as shaped (piece_clearance 0) fail the same checks: the legs pass through the
    torso's piece."""
    from scipy.spatial import cKDTree

    from drakebots.skinned.skin_coupling import CouplingConfig

    params = LoadSkeletonParams("beetle")
    built = _Build(params)
    limit = next(j for j in built.joints if j.name == "front_left_hip_yaw").upper
    gaps = {}
    for label, skin in (
        ("cut", beetle_skin_pieces_coarse),
        ("as shaped", beetle_skin_pieces_overlapping),
    ):
        worst_gap, worst_depth = np.inf, -np.inf
        for theta in np.linspace(-limit, limit, 7):
            for sign in (1.0, -1.0):
                angles = {
                    "front_left": theta,
                    "front_right": sign * theta,
                    "rear_left": -theta,
                    "rear_right": -sign * theta,
                }
                X, owner, boxes = _PiecesTurned(skin, params, angles)
                torso = X[owner == "torso"]
                for _, center, R, half in boxes:
                    local = (torso - center) @ R
                    worst_depth = max(worst_depth, (half - np.abs(local)).min(axis=1).max())
                tree = cKDTree(torso)
                for limb in ("front_left", "front_right", "rear_left", "rear_right"):
                    worst_gap = min(worst_gap, tree.query(X[owner == limb])[0].min())
                for left, right in (("front_left", "front_right"), ("rear_left", "rear_right")):
                    d = cKDTree(X[owner == left]).query(X[owner == right])[0].min()
                    worst_gap = min(worst_gap, d)
        gaps[label] = (worst_gap, worst_depth)
    gap, depth = gaps["cut"]
    assert gap > CouplingConfig().self_collision_distance and depth < 0.0, gaps
    gap, depth = gaps["as shaped"]
    assert gap < 0.001 and depth > 0.005, gaps


def test_only_a_yaw_hip_keeps_its_limb_off_the_mid_plane():
    """A yaw hip swings its limb in the layer where the partner limb swings, so the beetle's
    limb piece is cut where some hip angle brings it within 2.5 mm of the mid-plane (the point
    30 mm behind the hip, 5 mm off the plane, comes to the plane's other side at the range's
    end; the foot stays on its side). A roll hip (the cow's) would have every far point of its
    limb cross the plane at some roll, so it cuts nothing."""
    from drakebots.skinned.skin import SkinPieces, _MidplaneCut

    for robot, cuts in (("beetle", True), ("cow", False)):
        params = LoadSkeletonParams(robot)
        links = dict(SkinPieces(params))["front_left"]
        built = _Build(params)
        hip = built.links[links[0]].origin
        foot = built.links[links[-1]].origin
        points = np.array([[hip[0] - 0.03, 0.005, hip[2]], foot])
        value = _MidplaneCut(params, links, points, 0.005)
        if cuts:
            assert value[0] > 0.0 > value[1]
        else:
            assert np.all(value == -np.inf)
