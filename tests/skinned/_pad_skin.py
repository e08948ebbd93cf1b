"""A small skin for tests: a hollow silicone pad around each foot of a skinned quad-robot.

The generated whole-body skins take ~20 s of Gmsh and 10-20k vertices (drakebots skin); the
coupled QPCC's tests need the same physics on a few thousand unknowns. Each pad is the 8 mm shell
(the paper's foot thickness, section 6.1) of a rounded box around the foot plate, with a flat sole,
tetrahedralised once and translated under every foot; its inner bottom and top faces are glued to
the foot (the bracing unit). Material: the paper's skin (E = 0.09 GPa, nu = 0.46) at the beetle
skin's density.
"""

import numpy as np

from drakebots.fem.mesh import BoundaryFaces, TetMesh
from drakebots.skinned.skin import MakeShellMesh, Skin

PAD_THICKNESS = 0.008  # m
DENSITY = 473.0  # kg/m^3 (the generated beetle skin's)


def _RoundBoxField(half, radius):
    half = np.asarray(half, float)

    def field(P):
        q = np.abs(P) - (half - radius)
        outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
        inside = np.minimum(np.max(q, axis=-1), 0.0)
        return outside + inside - radius

    return field


def MakeFootPadSkin(
    model,
    *,
    voxel: float = 0.006,
    youngs_modulus: float = 0.09e9,
    glue: int = 40,
    bridge_ankles: bool = False,
) -> Skin:
    """Four hollow foot pads glued to the feet of `model` (a SkeletonModel) at its home pose.

    With `bridge_ankles`, each pad spans its ankle as a limb's skin spans a joint: the glue
    vertices of its inner top face hold it to the lower leg (the ankle's parent link), those of
    its inner bottom face to the foot, and the skinning weights blend the two links linearly in
    height (sole: the foot, top: the lower leg). Bending an ankle then deforms the pad."""
    corners = model.sole_corners[0]
    half_sole = 0.5 * np.ptp(corners[:, :2], axis=0)
    margin = 0.006
    half = np.array([half_sole[0] + margin, half_sole[1] + margin, 0.012])
    # Pad frame: origin at the pad's centre; its outer sole is at -half_z.
    mesh = MakeShellMesh(
        _RoundBoxField(half, 0.005), -half - 0.01, half + 0.01, PAD_THICKNESS, voxel
    )
    boundary = np.unique(BoundaryFaces(mesh.tets))
    V = mesh.vertices
    field = _RoundBoxField(half, 0.005)(V)
    inner_b = boundary[field[boundary] < -0.5 * PAD_THICKNESS]
    # Glue: inner faces (bottom and top) over the foot plate.
    over_plate = np.all(np.abs(V[inner_b, :2]) <= half_sole + 1e-9, axis=1)
    glue_local = inner_b[over_plate]
    # About as many glue vertices per foot as a generated skin has per link (section 6.2).
    glue_local = glue_local[
        np.linspace(0, len(glue_local) - 1, min(glue, len(glue_local))).astype(int)
    ]
    verts, tets, glued, links, points, outer = [], [], [], [], [], []
    q = model.q_home
    plant, ctx = model.plant, model.context
    plant.SetPositions(ctx, q)
    for j in range(len(model.legs)):
        sole_c, _ = model.FootPoints(q, j, model.sole_centers[j])
        # The pad's outer sole sits PAD_THICKNESS below the foot's sole.
        center = sole_c[0] + np.array([0.0, 0.0, half[2] - PAD_THICKNESS])
        offset = sum(len(v) for v in verts)
        P = V + center
        verts.append(P)
        tets.append(mesh.tets + offset)
        glued.append(glue_local + offset)
        body = model.foot_bodies[j]
        X_WB = plant.EvalBodyPoseInWorld(ctx, body)
        points.append(X_WB.inverse().multiply(P[glue_local].T).T)
        links += [body.name()] * len(glue_local)
        is_outer = np.zeros(len(V), dtype=bool)
        is_outer[boundary[field[boundary] > -0.5 * PAD_THICKNESS]] = True
        outer.append(is_outer)
    V_all = np.concatenate(verts)
    mesh_all = TetMesh(V_all, np.concatenate(tets))
    n = len(V_all)
    skin_links = [b.name() for b in model.foot_bodies]
    weights = np.repeat(np.eye(4), len(V), axis=0)
    glued_all, points_all = np.concatenate(glued), np.concatenate(points)
    if bridge_ankles:
        s = (V[:, 2] - V[:, 2].min()) / np.ptp(V[:, 2])  # 0 at the outer sole, 1 at the top
        weights = np.hstack([weights * (1.0 - np.tile(s, 4))[:, None], np.zeros((n, 4))])
        top = np.flatnonzero(V[glue_local, 2] > V[glue_local, 2].mean())
        for j, leg_name in enumerate(model.legs):
            leg = plant.GetJointByName(f"{leg_name}_ankle", model.instance).parent_body()
            skin_links.append(leg.name())
            weights[j * len(V) : (j + 1) * len(V), 4 + j] = s
            rows = j * len(glue_local) + top
            X_WL = plant.EvalBodyPoseInWorld(ctx, leg)
            points_all[rows] = X_WL.inverse().multiply(V_all[glued_all[rows]].T).T
            for i in rows:
                links[i] = leg.name()
    return Skin(
        robot=model.robot,
        mesh=mesh_all,
        glue_vertices=glued_all,
        glue_links=links,
        glue_points=points_all,
        skin_links=skin_links,
        weights=weights,
        thickness=np.full(n, PAD_THICKNESS),
        outer=np.concatenate(outer),
        fold=np.zeros(len(mesh_all.tets), dtype=bool),
        mass_density=DENSITY,
        youngs_modulus=youngs_modulus,
        poissons_ratio=0.46,
        info={"vertices": n, "tets": len(mesh_all.tets)},
    )
