"""Skin generation for the skinned quad-robots (skinned-quad-robots.txt section 6.1-6.2, Figs. 8-9).

The paper starts from an artist's surface of the animal and hollows it into a 4 mm skin (8 mm at
the feet) with a CAD "mesh hollow" operation; folding regions are a gear-tooth sweep cut made
before hollowing (Fig. 8); glue vertices are where the printed bracing units hold the skin
(Fig. 9). The paper's surfaces are not available, so this module makes its own:

1. **Body shape**: an implicit surface f(p) (negative inside) built from ellipsoids and tapered
   capsules placed on the skeleton's links (torso, legs, feet, head, neck, tail) and blended with
   a smooth minimum, one recipe per animal (`_AnimalShape`). The torso and head are sized from
   the paper's overall size (`SkeletonParams.paper_size`).
2. **Folding regions** (optional, per joint): bellows-like grooves, 8 mm deep, swept around the
   limb axis at the joint: f <- f + depth * tooth(s) near the joint (s the coordinate along the
   limb), before hollowing, as in the paper.
3. **Hollowing**: f is normalised to a distance (f / |grad f|); the skin is the solid
   -t(p) <= f <= 0 with t = 4 mm, 8 mm at the feet. Outer and inner surfaces are extracted by
   marching cubes (scikit-image) and checked closed and manifold.
4. **Tetrahedralisation**: Gmsh's 3-D Delaunay mesher with Netgen optimisation, run as a separate
   process on the closed two-sheet surface (Gmsh is GPL-2.0-or-later: drakebots never imports or
   links it, it only runs the `gmsh` executable from the `gmsh` PyPI package, so drakebots keeps
   its BSD-3 licence). fTetWild (pytetwild, MPL-2.0) was measured first and rejected: on a 4 mm
   shell it needed over 10 minutes per skin on 2 cores.
5. **Skinning weights, glue vertices**: every vertex is bound to its nearest links (weights from
   the distance to the links' bones); glue vertices are inner-surface vertices at the links'
   bracing units (a ring around the middle of each leg link, the sole plate of each foot, bands
   around the torso segments, the head and tail links), thinned by farthest-point sampling to
   about `glue_per_link` per link.
6. **Pieces** (optional, `SkinOptions.pieces`): the paper molds the skin piece by piece, one per
   limb and the torso apart (section 6.2, Fig. 1), then glues the pieces with PVA. Each piece is
   made by steps 1-5 on its own links (all on one grid, the limb pieces' soles levelled) and the
   pieces are joined in one mesh that shares no vertex; the seams are not modelled, so a hip
   turns its limb's piece rigidly. A molded piece must leave the limbs room to swing, so the
   torso's piece is cut `piece_clearance` (5 mm) clear of each limb's shape and skeleton
   swept through its hip's joint range, and a limb piece on a yaw hip is cut to stay half
   that off the body's mid-plane over its range (left and right limbs pass each other). As
   shaped, the beetle's torso piece closes under the shoulders with the legs passing through
   it: along its walk (hip yaws up to 62 deg) the leg boxes sank up to 10 mm into it, with up
   to ~400 N of penalty on the torso; cut, none act.

Units: m, kg.
"""

import dataclasses
import json
import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from drakebots.fem.mesh import (
    BoundaryFaces,
    CheckClosedManifold,
    OrientPositively,
    ReadVtk,
    TetMesh,
    WriteVtk,
)
from drakebots.skinned.skeleton import LEG_NAMES, SkeletonParams, _Build

FOLDABLE_KINDS = ("ankle", "knee", "hip")
# Grid cells a folding region's tooth pitch must span at least (`MakeSkin` refuses fewer).
FOLD_VOXELS = 2

# Marching-cubes voxel per robot, m: lands the vertex counts near Table 1 (12.5k-18.3k).
DEFAULT_VOXEL = {"beetle": 0.011, "cow": 0.014, "lizard": 0.014, "monster": 0.0145}


@dataclasses.dataclass
class SkinOptions:
    """Options of `MakeSkin` (SI units)."""

    # Skin thickness everywhere but the feet, m (paper section 6.1: 4 mm).
    thickness: float = 0.004
    # Skin thickness at the feet, m (paper: 8 mm).
    foot_thickness: float = 0.008
    # Joint kinds that get a folding region ("ankles", "knees", "hips" or joint names).
    folding_regions: tuple = ()
    # Depth of the folding region's teeth, m (paper Fig. 17: 8 mm).
    fold_depth: float = 0.008
    # Tooth pitch along the limb and number of teeth of a folding region.
    fold_pitch: float = 0.014
    fold_teeth: int = 3
    # Marching-cubes voxel size, m (sets the surface resolution and so the vertex count; 0: the
    # robot's default, chosen to land near the paper's vertex counts, Table 1).
    voxel: float = 0.0
    # Largest tetrahedron edge inside the shell, m.
    max_edge: float = 0.03
    # Target number of glue vertices per link.
    glue_per_link: int = 12
    # Skin density, kg/m^3 (0: chosen so that the whole-body skin weighs the paper's skin mass).
    mass_density: float = 0.0
    # Only the shapes of these links (a skin piece, e.g. one limb as the paper fabricates it,
    # section 6.2); empty: the whole body.
    links: tuple = ()
    # Separate pieces as the paper fabricates the skin (section 6.2: one piece per limb, the
    # torso's apart): one closed shell per limb (the links of that leg, `SkinPieces`) and one
    # over the torso, head and tail, meshed apart and joined in one mesh with no shared vertex.
    # The PVA seams that join the physical pieces are not modelled: a hip turns its limb's piece
    # rigidly, so the skin does not resist it.
    pieces: bool = False
    # Skin in pieces: the gap, m, kept between the torso's piece and each limb piece while the
    # limb's hip turns through its joint range (`_SweptLimbs`): the torso's piece is cut clear of
    # the limb's shape and skeleton swept about the hip axis, as a molded piece must leave the
    # limb room to swing. 0: the pieces overlap as shaped (the torso's piece then closes under
    # the shoulders and the legs pass through it). A limb piece on a yaw hip also stays half
    # the gap off the body's mid-plane (`_MidplaneCut`).
    piece_clearance: float = 0.005
    # The limb pieces (`SkinPieces` names) this shape is cut clear of (set by `pieces` on the
    # torso's piece).
    clear_of_limbs: tuple = ()
    # This limb piece is cut to stay piece_clearance / 2 off the body's mid-plane through its
    # hip's range (`_MidplaneCut`; set by `pieces` on the limb pieces).
    clear_of_midplane: bool = False
    # A user's own outer body surface (vertices (n, 3) m, triangles (k, 3)), closed and
    # manifold, in the skeleton's home-pose frame; replaces the built-in animal shape (the
    # paper's workflow starts from such a surface, section 6.1).
    surface: tuple | None = None
    # Young's modulus (Pa) and Poisson's ratio of the skin (paper section 7).
    youngs_modulus: float = 0.09e9
    poissons_ratio: float = 0.46
    # Softer skin regions ("belly", "tail"; see SoftRegionElements) and the factor on Young's
    # modulus there. None: the robot's default (the paper's monster: belly and tail with E
    # reduced by 85 %, section 7); (): none.
    soft_regions: tuple | None = None
    soft_scale: float = 0.15


@dataclasses.dataclass
class Skin:
    """A generated skin.

    Attributes:
        robot: skeleton name.
        mesh: the tetrahedral shell (home pose, world frame = model frame), m.
        glue_vertices: (k,) vertex indices glued to the skeleton.
        glue_links: (k,) link names of the glue vertices.
        glue_points: (k, 3) glue points in their link frames (home pose: link frames are aligned
            with the world), m.
        skin_links: names of the links, in the order of the weight columns.
        weights: (n, L) skinning weights (rows sum to 1).
        thickness: (n,) local shell thickness the vertex was generated with, m.
        outer: (n,) bool, vertex on the outer surface.
        fold: (m,) bool, element in a folding region.
        youngs_scale: (m,) factor on Young's modulus per element (1 everywhere but the soft
            regions; None in skins written before soft regions existed means all ones).
        mass_density: kg/m^3 so that the skin mass equals `SkeletonParams.skin_mass`.
        info: numbers for summaries (sizes, counts).
    """

    robot: str
    mesh: TetMesh
    glue_vertices: np.ndarray
    glue_links: list
    glue_points: np.ndarray
    skin_links: list
    weights: np.ndarray
    thickness: np.ndarray
    outer: np.ndarray
    fold: np.ndarray
    mass_density: float
    youngs_modulus: float
    poissons_ratio: float
    info: dict
    youngs_scale: np.ndarray | None = None

    def ElementYoungsScale(self) -> np.ndarray:
        """(m,) factor on Young's modulus per element (ones without soft regions)."""
        if self.youngs_scale is None:
            return np.ones(self.mesh.num_tets)
        return np.asarray(self.youngs_scale, float)


class SkinInputError(ValueError):
    """Bad skin input (not closed/manifold, thickness <= 0, glue on no link, ...)."""


def CheckFoldResolution(fold_pitch: float, voxel: float) -> None:
    """Raises SkinInputError unless a folding tooth (pitch, m) spans FOLD_VOXELS cells of the
    marching-cubes grid (voxel, m). Marching cubes samples the teeth: finer ones alias away
    (measured: the monster's folded ankles at a 14 mm pitch on its 14.5 mm grid, 16.7 N*m/rad
    against 16.1 unfolded; on 8 mm cells with a 24 mm pitch, 7.3)."""
    if fold_pitch < FOLD_VOXELS * voxel:
        raise SkinInputError(
            f"--fold-pitch {fold_pitch:g} m: a tooth needs {FOLD_VOXELS} of the "
            f"{voxel * 1000:g} mm grid cells to be resolved, so a pitch of at least "
            f"{FOLD_VOXELS * voxel:.4g} m, or cells of at most {fold_pitch / FOLD_VOXELS:.4g} m"
        )


class SkinMeshingError(RuntimeError):
    """The shell could not be tetrahedralised on any of the grids tried (its sheets cross
    where the shape is thinner or more curved than the grid resolves)."""


# ----------------------------------------------------------------------------------------------
# Implicit primitives (negative inside). Approximate distances; normalised later.


def _Ellipsoid(P, center, radii, R=None):
    d = P - np.asarray(center, float)
    if R is not None:
        d = d @ np.asarray(R, float)
    r = np.asarray(radii, float)
    k0 = np.linalg.norm(d / r, axis=-1)
    k1 = np.linalg.norm(d / (r * r), axis=-1)
    return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)


def _Capsule(P, a, b, ra, rb=None):
    a, b = np.asarray(a, float), np.asarray(b, float)
    rb = ra if rb is None else rb
    ab = b - a
    t = np.clip(((P - a) @ ab) / max(float(ab @ ab), 1e-12), 0.0, 1.0)
    closest = a + t[..., None] * ab
    return np.linalg.norm(P - closest, axis=-1) - (ra + (rb - ra) * t)


def _RoundBox(P, center, half, R, radius):
    d = (P - np.asarray(center, float)) @ np.asarray(R, float)
    q = np.abs(d) - (np.asarray(half, float) - radius)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    inside = np.minimum(np.max(q, axis=-1), 0.0)
    return outside + inside - radius


def _SmoothMin(a, b, k):
    h = np.maximum(k - np.abs(a - b), 0.0) / k
    return np.minimum(a, b) - h * h * k * 0.25


def _SmoothMax(a, b, k):
    return -_SmoothMin(-a, -b, k)


# ----------------------------------------------------------------------------------------------
# The animals.


@dataclasses.dataclass
class _Part:
    """One primitive of a body shape, the link it belongs to, and its blend radius."""

    kind: str  # "ellipsoid", "capsule", "roundbox"
    link: str
    args: tuple
    blend: float = 0.02
    foot: bool = False


def _Skeleton(params: SkeletonParams):
    b = _Build(params)
    joints = {j.name: j for j in b.joints}
    return b, joints


def _LegParts(b, params) -> list[_Part]:
    parts = []
    legs = params.legs
    radius = 0.5 * max(legs.link_width, legs.link_thickness) + 0.5 * params.motor.size[1] + 0.012
    for leg in ("front_left", "front_right", "rear_left", "rear_right"):
        upper, lower, foot = (b.links[f"{leg}_{n}"] for n in ("upper_leg", "lower_leg", "foot"))
        hip, knee, ankle = upper.origin, lower.origin, foot.origin
        parts.append(_Part("capsule", upper.name, (hip, knee, radius * 1.1, radius), 0.02))
        parts.append(_Part("capsule", lower.name, (knee, ankle, radius, radius * 0.85), 0.015))
        plate = foot.boxes[0]
        half = 0.5 * plate.size + np.array([0.012, 0.012, 0.0])
        center = plate.center + np.array([0.0, 0.0, 0.0])
        # The foot: a rounded pad around the plate, its sole 8 mm below the plate's bottom (the
        # foot skin is 8 mm thick, section 6.1, so the plate rests on the inner sole).
        pad_half = np.array([half[0], half[1], 0.5 * plate.size[2] + 0.006])
        pad_center = center - np.array([0.0, 0.0, 0.002])
        parts.append(
            _Part("roundbox", foot.name, (pad_center, pad_half, plate.R, 0.01), 0.03, foot=True)
        )
        # The ankle: a bulb over the ankle motor joining leg and foot.
        parts.append(_Part("ellipsoid", foot.name, (ankle, [radius * 0.95] * 3), 0.03))
    return parts


def _AnimalShape(params: SkeletonParams) -> list[_Part]:
    """The primitives of an animal's body, placed on its skeleton (home pose)."""
    b, _ = _Skeleton(params)
    L, W, H = params.paper_size
    torso = b.links["torso"]
    tc = torso.origin
    tsize = np.asarray(params.torso_size, float)
    parts = _LegParts(b, params)
    name = params.name
    top = H  # overall height: the skin's top.
    if name == "beetle":
        # Domed elytra over the torso (a flattened ellipsoid on a rounded box), a pronotum and a
        # small head in front.
        a = 0.36 * L
        half_w = 0.5 * W
        parts.append(
            _Part(
                "ellipsoid", "torso", (tc + [-0.02, 0, 0.0], [a, half_w, top - tc[2] - 0.005]), 0.03
            )
        )
        parts.append(
            _Part("ellipsoid", "torso", (tc + [a - 0.01, 0, 0.0], [0.07, 0.11, 0.06]), 0.03)
        )
        parts.append(
            _Part("ellipsoid", "torso", (tc + [a + 0.04, 0, -0.01], [0.04, 0.06, 0.04]), 0.02)
        )
    elif name == "cow":
        a = 0.5 * tsize[0] + 0.03
        parts.append(
            _Part("ellipsoid", "torso", (tc + [-0.01, 0, 0.01], [a, 0.5 * W - 0.01, 0.11]), 0.04)
        )
        neck_a = tc + [a - 0.04, 0, 0.04]
        head_c = np.array([0.5 * L - 0.075, 0.0, top - 0.08])
        parts.append(_Part("capsule", "torso", (neck_a, head_c - [0.03, 0, 0], 0.06, 0.045)))
        parts.append(_Part("ellipsoid", "torso", (head_c, [0.07, 0.05, 0.055]), 0.03))
        parts.append(
            _Part("ellipsoid", "torso", (head_c + [0.05, 0, -0.03], [0.045, 0.04, 0.035]), 0.02)
        )
        for s in (1, -1):  # ears and horns
            parts.append(
                _Part("ellipsoid", "torso", (head_c + [-0.03, s * 0.07, 0.02], [0.02, 0.03, 0.01]))
            )
            parts.append(
                _Part(
                    "capsule",
                    "torso",
                    (
                        head_c + [-0.02, s * 0.03, 0.04],
                        head_c + [-0.03, s * 0.06, 0.05],
                        0.012,
                        0.006,
                    ),
                    0.01,
                )
            )
        parts.append(
            _Part(
                "capsule",
                "torso",
                (tc + [-a + 0.03, 0, 0.06], tc + [-a + 0.01, 0, -0.12], 0.015, 0.01),
                0.02,
            )
        )
    elif name == "monster":
        a = 0.5 * tsize[0]
        parts.append(_Part("ellipsoid", "torso", (tc, [a, 0.5 * W - 0.03, 0.055]), 0.04))
        # A wide, flat head at the front of the torso (the paper's monster is 27 cm tall).
        head_c = tc + np.array([a - 0.05, 0.0, 0.0])
        parts.append(_Part("ellipsoid", "torso", (head_c, [0.065, 0.16, 0.05]), 0.05))
        for s in (1, -1):  # eyes bulging out and horns
            parts.append(
                _Part(
                    "ellipsoid",
                    "torso",
                    (head_c + [0.03, s * 0.08, 0.04], [0.025, 0.025, 0.025]),
                    0.015,
                )
            )
            parts.append(
                _Part(
                    "capsule",
                    "torso",
                    (
                        head_c + [-0.02, s * 0.12, 0.02],
                        head_c + [-0.05, s * 0.2, 0.03],
                        0.02,
                        0.014,
                    ),
                    0.02,
                )
            )
        parts.append(
            _Part(
                "capsule",
                "torso",
                (tc + [-a + 0.02, 0, 0.02], tc + [-0.5 * L + 0.01, 0, 0.0], 0.06, 0.02),
                0.04,
            )
        )
    elif name == "lizard":
        segs = [n for n in b.links if n.startswith("torso")]
        xs = [b.links[n].origin[0] for n in segs]
        x0, x1 = min(xs) - 0.12, max(xs) + 0.12
        parts.append(
            _Part(
                "ellipsoid",
                "torso",
                (tc + [0.5 * (x0 + x1) - tc[0], 0, 0.01], [0.5 * (x1 - x0), 0.11, 0.075]),
                0.04,
            )
        )
        head = b.links["head"]
        hx = head.origin
        parts.append(
            _Part("capsule", "head", (tc + [x1 - tc[0] - 0.04, 0, 0.02], hx, 0.07, 0.06), 0.04)
        )
        parts.append(_Part("ellipsoid", "head", (hx + [0.09, 0, 0.0], [0.12, 0.07, 0.055]), 0.03))
        tails = sorted((n for n in b.links if n.startswith("tail")), key=lambda n: n)
        start = tc + [x0 - tc[0] + 0.06, 0, 0.0]
        radius = 0.065
        for n in tails:
            link = b.links[n]
            seg = params.tail.segment_length
            end = link.origin + np.array([-seg, 0.0, -0.02])
            parts.append(_Part("capsule", n, (start, end, radius, radius * 0.55), 0.03))
            start, radius = end, radius * 0.55
        parts.append(
            _Part(
                "capsule",
                tails[-1],
                (start, [-0.5 * L + 0.01, 0, start[2] - 0.02], radius, 0.008),
                0.02,
            )
        )
    else:
        a = 0.5 * tsize[0] + 0.02
        parts.append(
            _Part(
                "ellipsoid", "torso", (tc, [a, 0.5 * tsize[1] + 0.03, 0.5 * tsize[2] + 0.03]), 0.04
            )
        )
    # The torso's printed structure (and the motors on it) must stay inside the skin: a rounded
    # box 12 mm larger than each torso segment, blended in, keeps every animal clear of it.
    for name, link in b.links.items():
        if not name.startswith("torso"):
            continue
        for box in link.boxes:
            if not box.name.endswith("_shell"):
                continue
            half = 0.5 * np.asarray(box.size) + 0.012
            parts.append(
                _Part("roundbox", name, (box.center, half, box.R, 0.8 * float(half.min())), 0.03)
            )
    return parts


# Thinnest feature (radius) of a body shape, m: a 4-8 mm shell needs room for its inner sheet.
MIN_FEATURE_RADIUS = 0.014


def _Thickened(part: _Part) -> _Part:
    """The part with every radius at least MIN_FEATURE_RADIUS (horns, ears, tail tips)."""
    r = MIN_FEATURE_RADIUS
    if part.kind == "capsule":
        a, b, ra, *rest = part.args
        rb = rest[0] if rest else ra
        return dataclasses.replace(part, args=(a, b, max(ra, r), max(rb, r)))
    if part.kind == "ellipsoid":
        center, radii, *rest = part.args
        return dataclasses.replace(part, args=(center, np.maximum(radii, r), *rest))
    return part


def _EvaluatePart(part: _Part, P):
    if part.kind == "ellipsoid":
        return _Ellipsoid(P, *part.args)
    if part.kind == "capsule":
        return _Capsule(P, *part.args)
    if part.kind == "roundbox":
        return _RoundBox(P, *part.args)
    raise ValueError(part.kind)


def _Fold(P, joint_point, axis, options: SkinOptions):
    """Depth (>= 0, m) of the gear-tooth groove at points P for a folding region."""
    s = (P - joint_point) @ axis
    half = 0.5 * options.fold_pitch * options.fold_teeth
    phase = (s + half) / options.fold_pitch
    tooth = 1.0 - np.abs(2.0 * (phase - np.floor(phase)) - 1.0)  # 0 at tooth tips, 1 at roots
    inside = (s > -half) & (s < half)
    # Smooth radial window: only within 8 cm of the limb axis (the limb's skin).
    radial = np.linalg.norm((P - joint_point) - s[..., None] * axis, axis=-1)
    window = np.clip((0.08 - radial) / 0.02, 0.0, 1.0)
    return np.where(inside, options.fold_depth * tooth * window, 0.0)


def _FoldSites(params: SkeletonParams, folding: tuple) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(joint name, point, limb axis) for every requested folding region."""
    b, joints = _Skeleton(params)
    wanted = []
    for item in folding:
        key = (
            item.rstrip("s") if item.endswith("s") and item.rstrip("s") in FOLDABLE_KINDS else item
        )
        matches = [j for j in b.joints if j.kind == key or j.name == item]
        if not matches:
            kinds = sorted({j.kind for j in b.joints})
            raise SkinInputError(
                f"--folding-regions {item}: no such joint or joint kind on '{params.name}' "
                f"(kinds: {', '.join(k + 's' for k in kinds)}; or a joint name)"
            )
        wanted += matches
    sites = []
    for j in wanted:
        point = b.links[j.child].origin
        parent = b.links[j.parent].origin
        axis = point - parent
        if j.kind == "ankle":
            axis = point - parent  # along the lower leg
        n = np.linalg.norm(axis)
        axis = axis / n if n > 1e-9 else np.array([0.0, 0.0, 1.0])
        sites.append((j.name, point, axis))
    return sites


def ShapeField(params: SkeletonParams, options: SkinOptions, P: np.ndarray):
    """(f, t, fold) at points P (..., 3): body field (negative inside), thickness, fold depth."""
    parts = [_Thickened(part) for part in _AnimalShape(params)]
    if options.links:
        parts = [part for part in parts if part.link in options.links]
    f = None
    foot = np.full(P.shape[:-1], np.inf)
    for part in parts:
        value = _EvaluatePart(part, P)
        f = value if f is None else _SmoothMin(f, value, part.blend)
        if part.foot:
            foot = np.minimum(foot, value)
    # Flat soles: the skin ends at the foot skin's thickness below the skeleton's soles (z = 0),
    # whatever the blends above them do.
    if options.surface is None:
        f = _SmoothMax(f, -(P[..., 2] + options.foot_thickness), 0.004)
    if options.clear_of_midplane:
        cut = _MidplaneCut(params, tuple(options.links), P, options.piece_clearance)
        f = _SmoothMax(f, cut, CUT_BLEND)
    if options.clear_of_limbs:
        # Cut clear of the swept limbs (only where the shape is, a few centimetres around), the
        # cut's edges rounded (the smooth maximum only adds clearance, at most CUT_BLEND / 4) so
        # that the 4 mm shell's two sheets do not cross at a sharp crease.
        near = f < 0.03
        cut = options.piece_clearance - _SweptLimbs(params, options.clear_of_limbs, P[near])
        f = f.copy()
        f[near] = _SmoothMax(f[near], cut, CUT_BLEND)
    fold = np.zeros(P.shape[:-1])
    for _, point, axis in _FoldSites(params, tuple(options.folding_regions)):
        fold = np.maximum(fold, _Fold(P, point, axis, options))
    # Thickness: 8 mm inside (and 1 cm around) the foot pads, 4 mm elsewhere, blended.
    w = np.clip((0.02 - foot) / 0.02, 0.0, 1.0)
    t = options.thickness + (options.foot_thickness - options.thickness) * w
    return f, t, fold


# Angular step of a limb's sweep, rad. The limb's copies at two sampled angles are rho * step
# apart at a distance rho from the hip axis; a round part of radius r leaves a scallop about
# (rho * step)^2 / (8 r) deep between them: 0.26 mm for the beetle's lower leg (rho ~ 0.1 m,
# r ~ 37 mm), well inside the clearance.
SWEEP_STEP = math.radians(5.0)
# Blend radius of the cut that clears a piece of the swept limbs, m.
CUT_BLEND = 0.02


def _RootJoint(b, links):
    """The joint that joins a set of links (a piece's) to the rest of the skeleton, or None."""
    return next((j for j in b.joints if j.child in links and j.parent not in links), None)


def _LimbRoot(b, links):
    """(hip point, unit axis, sampled angles) of the joint that joins a limb piece's links to
    the rest (the first of a two-motor shoulder), its range in SWEEP_STEP steps."""
    root = _RootJoint(b, links)
    axis = np.asarray(root.axis, float) / np.linalg.norm(root.axis)
    count = int(math.ceil((root.upper - root.lower) / SWEEP_STEP)) + 1
    return b.links[root.child].origin, axis, np.linspace(root.lower, root.upper, count)


def _Turned(P, point, axis, theta):
    """Points P (k, 3) turned by theta about the unit axis through `point` (Rodrigues)."""
    d = P - point
    along = d @ axis
    radial = d - along[:, None] * axis
    return (
        point
        + along[:, None] * axis
        + math.cos(theta) * radial
        + math.sin(theta) * np.cross(axis, radial)
    )


def _SweptLimbs(params: SkeletonParams, limbs: tuple, P: np.ndarray) -> np.ndarray:
    """(...) field (negative inside, ~ a distance, m) of the union of the named limb pieces'
    shapes and skeleton boxes, each swept about its hip through the hip's joint range.

    A limb's root joint (`_LimbRoot`) is turned through its range with the rest of the limb at
    its home pose: a point p is in the sweep when p turned back by -theta is in the limb for
    some theta.
    """
    b, _ = _Skeleton(params)
    pieces = dict(SkinPieces(params))
    shapes = [_Thickened(part) for part in _AnimalShape(params)]
    out = np.full(P.shape[:-1], np.inf)
    for limb in limbs:
        links = pieces[limb]
        parts = [part for part in shapes if part.link in links]
        boxes = [box for name in links for box in b.links[name].boxes]
        hip, axis, angles = _LimbRoot(b, links)
        # Only points within the limb's reach of the hip can be in its sweep.
        reach = 0.01 + max(
            [np.linalg.norm(box.center - hip) + 0.5 * np.linalg.norm(box.size) for box in boxes]
            + [_PartReach(part, hip) for part in parts]
        )
        near = np.linalg.norm(P - hip, axis=-1) < reach
        swept = np.full(int(near.sum()), np.inf)
        for theta in angles:
            R = _Turned(P[near], hip, axis, -theta)
            value = None
            for part in parts:
                e = _EvaluatePart(part, R)
                value = e if value is None else _SmoothMin(value, e, part.blend)
            for box in boxes:
                value = np.minimum(value, _RoundBox(R, box.center, 0.5 * box.size, box.R, 0.0))
            swept = np.minimum(swept, value)
        out[near] = np.minimum(out[near], swept)
    return out


def _MidplaneCut(params: SkeletonParams, links: tuple, P: np.ndarray, clearance: float):
    """(...) field that is negative where a limb piece's points stay at least clearance / 2 on
    their hip's side of the body's mid-plane (y = 0) through the hip's whole range: the left
    and right limbs of a pair then pass each other at least `clearance` apart.

    Only for a yaw hip (axis within 25 deg of the vertical, the beetle's and the lizard's),
    which swings its limb in the horizontal layer where the partner limb swings: the beetle's
    pieces overlap across the mid-plane near the hips and, uncut, met each other along its
    walk. A roll or pitch hip swings its limb in a vertical plane, and the cut would take every
    point that some roll brings across the mid-plane, the lower leg and the foot (measured on
    the cow: 63 % of each limb piece's vertices); its limbs meet only if driven into each
    other, which the collision penalties handle. No cut either (a zero-valued field, -inf) for
    a hip on the mid-plane."""
    b, _ = _Skeleton(params)
    hip, axis, angles = _LimbRoot(b, links)
    side = np.sign(hip[1])
    if abs(hip[1]) <= clearance or abs(axis[2]) < math.cos(math.radians(25.0)):
        return np.full(P.shape[:-1], -np.inf)
    Q = P.reshape(-1, 3)
    lowest = np.full(len(Q), np.inf)
    for theta in angles:
        lowest = np.minimum(lowest, side * _Turned(Q, hip, axis, theta)[:, 1])
    return (0.5 * clearance - lowest).reshape(P.shape[:-1])


def _PartReach(part: _Part, point) -> float:
    """Farthest distance (m) from `point` of a primitive (a bound)."""
    if part.kind == "capsule":
        a, b, ra, *rest = part.args
        rb = rest[0] if rest else ra
        return max(
            np.linalg.norm(np.asarray(a) - point), np.linalg.norm(np.asarray(b) - point)
        ) + max(ra, rb)
    if part.kind == "ellipsoid":
        center, radii, *_ = part.args
        return float(np.linalg.norm(np.asarray(center) - point) + np.max(radii))
    center, half, *_ = part.args
    return float(np.linalg.norm(np.asarray(center) - point) + np.linalg.norm(half))


def LoadSurface(path) -> tuple[np.ndarray, np.ndarray]:
    """(vertices (n, 3), triangles (k, 3)) of an OBJ or STL file, checked closed and manifold.

    Raises:
        SkinInputError: unreadable file, a file larger than the "mesh_bytes" work bound
            (drakebots.limits), or a surface that is not closed / not manifold (the message
            names the offending edge).
    """
    path = Path(path)
    if not path.is_file():
        raise SkinInputError(f"{path}: no such file")
    from drakebots.errors import InputError
    from drakebots.limits import CheckWork

    try:  # Before reading it: a huge file would take the machine's memory (issue 68).
        CheckWork("mesh_bytes", path.stat().st_size, str(path))
    except InputError as e:
        raise SkinInputError(str(e)) from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".obj":
            vertices, faces = [], []
            for line in path.read_text().splitlines():
                parts = line.split()
                if not parts:
                    continue
                if parts[0] == "v":
                    vertices.append([float(x) for x in parts[1:4]])
                elif parts[0] == "f":
                    idx = [int(p.split("/")[0]) for p in parts[1:]]
                    idx = [i - 1 if i > 0 else len(vertices) + i for i in idx]
                    faces += [[idx[0], idx[k], idx[k + 1]] for k in range(1, len(idx) - 1)]
            vertices, faces = np.array(vertices, float), np.array(faces, np.int64)
        elif suffix == ".stl":
            data = path.read_bytes()
            count = int(np.frombuffer(data[80:84], np.uint32)[0]) if len(data) >= 84 else 0
            if len(data) == 84 + 50 * count:
                record = np.frombuffer(
                    data[84:],
                    dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")],
                )
                corners = record["v"].reshape(-1, 3).astype(float)
            else:
                text = data.decode("ascii", errors="replace").split()
                corners = np.array(
                    [text[i + 1 : i + 4] for i, w in enumerate(text) if w == "vertex"], float
                )
            vertices, inverse = np.unique(corners.round(9), axis=0, return_inverse=True)
            faces = inverse.ravel().reshape(-1, 3)
        else:
            raise SkinInputError(f"{path}: unknown surface format (use .obj or .stl)")
    except (ValueError, IndexError) as e:
        raise SkinInputError(f"{path}: cannot read the surface ({e})") from None
    try:
        CheckClosedManifold(vertices, faces, what=f"{path}")
    except ValueError as e:
        raise SkinInputError(str(e)) from None
    return vertices, faces


def GridSignedDistance(vertices, faces, axes) -> np.ndarray:
    """Signed distance (negative inside, m) of a closed surface on the grid axes (x, y, z).

    Inside/outside by the parity of crossings of a vertical ray with the triangles (each grid
    column is tested only against the triangles over it); distance to samples of the surface
    spaced a third of the grid spacing.
    """
    from scipy.spatial import cKDTree

    V = np.asarray(vertices, float)
    F = np.asarray(faces, np.int64)
    ax, ay, az = (np.asarray(a, float) for a in axes)
    h = float(ax[1] - ax[0])
    tri = V[F]
    # Jitter the columns off any vertex or edge (a measure-zero tie breaker).
    cx, cy = ax + 1.2345e-7, ay + 2.3456e-7
    i0 = np.searchsorted(cx, tri[:, :, 0].min(axis=1))
    i1 = np.searchsorted(cx, tri[:, :, 0].max(axis=1), side="right")
    j0 = np.searchsorted(cy, tri[:, :, 1].min(axis=1))
    j1 = np.searchsorted(cy, tri[:, :, 1].max(axis=1), side="right")
    ni, nj = np.maximum(i1 - i0, 0), np.maximum(j1 - j0, 0)
    counts = ni * nj
    t_index = np.repeat(np.arange(len(F)), counts)
    local = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    ii = i0[t_index] + local // np.maximum(nj[t_index], 1)
    jj = j0[t_index] + local % np.maximum(nj[t_index], 1)
    a, b, c = (tri[t_index, k] for k in range(3))
    px, py = cx[ii], cy[jj]
    det = (b[:, 1] - c[:, 1]) * (a[:, 0] - c[:, 0]) + (c[:, 0] - b[:, 0]) * (a[:, 1] - c[:, 1])
    safe = np.where(np.abs(det) > 1e-18, det, 1.0)
    l1 = ((b[:, 1] - c[:, 1]) * (px - c[:, 0]) + (c[:, 0] - b[:, 0]) * (py - c[:, 1])) / safe
    l2 = ((c[:, 1] - a[:, 1]) * (px - c[:, 0]) + (a[:, 0] - c[:, 0]) * (py - c[:, 1])) / safe
    l3 = 1.0 - l1 - l2
    hit = (np.abs(det) > 1e-18) & (l1 >= 0) & (l2 >= 0) & (l3 >= 0)
    z = l1 * a[:, 2] + l2 * b[:, 2] + l3 * c[:, 2]
    k = np.searchsorted(az, z[hit])
    crossings = np.zeros((len(ax), len(ay), len(az) + 1), dtype=np.int32)
    np.add.at(crossings, (ii[hit], jj[hit], k), 1)
    inside = (np.cumsum(crossings, axis=2)[:, :, :-1] % 2) == 1
    # Unsigned distance to dense surface samples.
    spacing = h / 3.0
    samples = [V]
    edge = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
    levels = np.maximum(1, np.ceil(edge / spacing).astype(int))
    for n in np.unique(levels):
        sel = tri[levels == n]
        u, w = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        keep = (u + w) <= n
        bary = np.stack([u[keep], w[keep], n - u[keep] - w[keep]], axis=1) / n
        samples.append(np.einsum("sk,tkd->tsd", bary, sel).reshape(-1, 3))
    tree = cKDTree(np.vstack(samples))
    X = np.stack(np.meshgrid(ax, ay, az, indexing="ij"), axis=-1).reshape(-1, 3)
    d, _ = tree.query(X, workers=-1)
    d = d.reshape(len(ax), len(ay), len(az))
    return np.where(inside, -d, d)


# Grid values closer than this fraction of a voxel to the iso-level are pushed to it (see
# `_MarchingCubes`).
SNAP_FRACTION = 0.05


def _MarchingCubes(field, level, origin, h):
    """The iso-surface field = level (field ~ a signed distance, m) on a grid of spacing h.

    A grid value within SNAP_FRACTION * h of the level puts a surface vertex within that
    fraction of an edge from the grid node, and the triangles around the node degenerate into
    slivers a few micrometres wide; Gmsh must keep the surface triangles, so it fills them with
    tetrahedra of (near) zero volume (the folded beetle ankle at a 2.5 mm voxel: 5 with zero
    volume, 496 with quality < 1e-3, and the FEM refused the mesh). Pushing such values to
    level ± SNAP_FRACTION h moves the surface by at most that much and keeps every vertex at
    least ~5% of an edge from the grid nodes.
    """
    from skimage.measure import marching_cubes

    d = np.asarray(field, float) - level
    gap = SNAP_FRACTION * h
    field = np.where(np.abs(d) < gap, level + np.where(d >= 0.0, gap, -gap), field)
    v, faces, _, _ = marching_cubes(field, level, spacing=(h, h, h), allow_degenerate=False)
    v = v + origin
    faces = faces.astype(np.int64)
    # Outward orientation: the enclosed volume must be positive.
    a, b, c = v[faces[:, 0]], v[faces[:, 1]], v[faces[:, 2]]
    if np.einsum("ij,ij->i", a, np.cross(b, c)).sum() < 0.0:
        faces = faces[:, ::-1]
    return v, faces


def MakeShellSurface(params: SkeletonParams, options: SkinOptions):
    """The two closed sheets of the hollow skin: ([(v_outer, f_outer), (v_inner, f_inner)], info).

    Both sheets are oriented outward; the solid skin lies between them.
    """
    if not options.thickness > 0.0:
        raise SkinInputError(f"--thickness must be > 0 m, got {options.thickness}")
    if not options.foot_thickness > 0.0:
        raise SkinInputError(f"--foot-thickness must be > 0 m, got {options.foot_thickness}")
    h = options.voxel
    if not h > 0.0:
        raise SkinInputError(f"voxel must be > 0 m, got {h}")
    b, _ = _Skeleton(params)
    pts = [
        link.origin for name, link in b.links.items() if not options.links or name in options.links
    ]
    lo = np.min(pts, axis=0) - 0.25
    hi = np.max(pts, axis=0) + 0.25
    lo[2] = -0.05
    if options.surface is not None:
        sv = np.asarray(options.surface[0], float)
        lo = np.minimum(lo, sv.min(axis=0) - 3 * h)
        hi = np.maximum(hi, sv.max(axis=0) + 3 * h)
    else:
        lo, hi = _GridAroundShape(params, options, lo, hi, h)
    axes = [np.arange(lo[i], hi[i] + h, h) for i in range(3)]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    f, t, fold = ShapeField(params, options, X)
    if options.surface is not None:
        f = GridSignedDistance(options.surface[0], options.surface[1], axes)
    f = f + fold
    # Normalise to a distance so that f = -t is the surface t metres inside.
    gx, gy, gz = np.gradient(f, h)
    norm = np.sqrt(gx * gx + gy * gy + gz * gz)
    f = f / np.clip(norm, 0.3, 3.0)
    # Tight bounding box of the solid, to crop the grid (faster marching cubes).
    inside = f < 2 * h
    idx = np.argwhere(inside)
    i0 = np.maximum(idx.min(axis=0) - 2, 0)
    i1 = np.minimum(idx.max(axis=0) + 3, np.array(f.shape))
    sl = tuple(slice(a, c) for a, c in zip(i0, i1))
    f, t = f[sl], t[sl]
    origin = np.array([axes[k][i0[k]] for k in range(3)])
    # Pad so that both sheets are closed.
    f = np.pad(f, 1, constant_values=1.0)
    t = np.pad(t, 1, mode="edge")
    origin = origin - h
    vo, fo = _MarchingCubes(f, 0.0, origin, h)
    vi, fi = _MarchingCubes(f + t, 0.0, origin, h)
    # Keep only the largest component of each sheet (stray bits of a blended shape).
    vo, fo = _LargestComponent(vo, fo)
    vi, fi = _LargestComponent(vi, fi)
    CheckClosedManifold(vo, fo, what="outer skin surface")
    CheckClosedManifold(vi, fi, what="inner skin surface")
    info = {
        "outer_surface_vertices": len(vo),
        "inner_surface_vertices": len(vi),
        "size": (vo.max(axis=0) - vo.min(axis=0)).tolist(),
        "paper_size": list(params.paper_size),
    }
    return [(vo, fo), (vi, fi)], info


# Growth of the skin's grid past a face the shape reaches, m (whole voxels of it).
GRID_GROWTH = 0.05


def _GridAroundShape(params: SkeletonParams, options: SkinOptions, lo, hi, h: float):
    """(lo, hi) grown until the shape's field is outside the solid on every face of the grid
    (each face's nodes a voxel out at least: both sheets then close inside the grid, where
    marching cubes places them, not against the padding beyond it), by whole voxels so that
    the grid's nodes, and the soles' plane, stay where they were (a shape the old margin held
    by more than a voxel is made the same; the beetle's torso piece, within one, moved by at
    most 67 µm).

    The 0.25 m margin around a piece's link origins did not hold the monster's and the cow's
    torso pieces (their links' origins lie on the mid-line; the monster's torso is 0.55 m wide,
    the cow's reaches more than 0.25 m fore and aft) nor the lizard's tail: marching cubes
    closed both sheets on the grid's last plane of nodes, 31 µm apart, and the monster's torso
    had 881 surface vertices on 31 µm walls, 6271 sliver tetrahedra (issue 69, Findings 38).
    `z-` is the soles' side: it is checked like the others.
    """
    lo, hi = np.array(lo, float), np.array(hi, float)
    step = h * math.ceil(GRID_GROWTH / h)
    for _ in range(40):
        axes = [np.arange(lo[i], hi[i] + h, h) for i in range(3)]
        grown = False
        for k in range(3):
            for end, corner in ((0, lo), (-1, hi)):
                face = list(axes)
                face[k] = axes[k][[end]]
                X = np.stack(np.meshgrid(*face, indexing="ij"), axis=-1)
                f, _, fold = ShapeField(params, options, X)
                if float(np.min(f + fold)) < h:
                    corner[k] += step if end else -step
                    grown = True
        if not grown:
            return lo, hi
    raise SkinInputError(
        f"the skin's shape reaches past a grid of {np.round(hi - lo, 2).tolist()} m around its "
        "skeleton: is a part's size in millimetres?"
    )


def _LargestComponent(v, faces):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    n = len(v)
    rows = np.concatenate([faces[:, 0], faces[:, 1], faces[:, 2]])
    cols = np.concatenate([faces[:, 1], faces[:, 2], faces[:, 0]])
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    count, labels = connected_components(graph, directed=False)
    if count == 1:
        return v, faces
    used = np.zeros(n, bool)
    used[faces.ravel()] = True
    sizes = np.bincount(labels[used], minlength=count)
    keep = labels == int(np.argmax(sizes))
    faces = faces[keep[faces[:, 0]]]
    remap = -np.ones(n, dtype=np.int64)
    remap[keep] = np.arange(int(keep.sum()))
    return v[keep], remap[faces]


def MakeShellMesh(field, lo, hi, thickness: float, voxel: float) -> TetMesh:
    """A hollow shell of any implicit shape: the solid -thickness <= f <= 0, tetrahedralised.

    Args:
        field: f(P (..., 3)) -> (...), negative inside, approximately a distance (m).
        lo, hi: corners of the box that contains the shape with a margin, m.
        thickness: shell thickness, m (> 0).
        voxel: marching-cubes grid spacing, m.
    """
    if not thickness > 0.0:
        raise SkinInputError(f"thickness must be > 0 m, got {thickness}")
    axes = [np.arange(lo[i], hi[i] + voxel, voxel) for i in range(3)]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    f = np.pad(field(X), 1, constant_values=1.0)
    origin = np.array([a[0] for a in axes]) - voxel
    outer = _MarchingCubes(f, 0.0, origin, voxel)
    inner = _MarchingCubes(f + thickness, 0.0, origin, voxel)
    return Tetrahedralize([outer, inner], max_edge=4 * voxel)


# ----------------------------------------------------------------------------------------------
# Tetrahedralisation with Gmsh (separate process).


# What the gmsh PyPI package's `gmsh` script runs, started as a separate program by this same
# interpreter: gmsh is GPL, so it is never imported into drakebots' process (issue 68: the
# script's `#!/usr/bin/env python` started whichever Python came first on PATH, the system's
# outside an activated venv, which has no gmsh module).
_GMSH_MAIN = "import sys, gmsh; gmsh.initialize(sys.argv, run=True); gmsh.finalize()"


def GmshCommand() -> list[str]:
    """The command line that runs Gmsh: this interpreter (`sys.executable`) running the gmsh
    package's entry point in a child process. RuntimeError when the package is not installed
    for this interpreter (found without importing it)."""
    import importlib.util
    import sys

    if importlib.util.find_spec("gmsh") is None:
        raise RuntimeError(
            "the gmsh package is not installed for this Python "
            f"({sys.executable}): pip install gmsh (drakebots runs it as a separate program to "
            "tetrahedralise skins)"
        )
    return [sys.executable, "-c", _GMSH_MAIN]


def GmshExecutable() -> str:
    """The interpreter that runs Gmsh (GmshCommand's first word; kept for older callers)."""
    return GmshCommand()[0]


def Tetrahedralize(sheets, *, max_edge: float = 0.03, threads: int = 2) -> TetMesh:
    """Tetrahedralises the solid bounded by closed surfaces with Gmsh.

    Args:
        sheets: [(vertices (n, 3) m, faces (k, 3)), ...]: the outer boundary first (outward
            normals), then the boundaries of cavities (any orientation).
        max_edge: largest tet edge, m.
    """
    for k, (vertices, faces) in enumerate(sheets):
        CheckClosedManifold(vertices, faces, what=f"skin surface {k}")
    with tempfile.TemporaryDirectory(prefix="drakebots-gmsh-") as tmp:
        tmp = Path(tmp)
        merges = []
        for k, (vertices, faces) in enumerate(sheets):
            _WriteBinaryStl(tmp / f"sheet{k}.stl", vertices, faces)
            merges.append(f'Merge "sheet{k}.stl";')
        loops = [f"Surface Loop({k + 1}) = {{{k + 1}}};" for k in range(len(sheets))]
        volume = "Volume(1) = {" + ", ".join(str(k + 1) for k in range(len(sheets))) + "};"
        (tmp / "shell.geo").write_text(
            "\n".join(
                merges
                + loops
                + [
                    volume,
                    "Mesh.Algorithm3D = 1;",
                    f"Mesh.MeshSizeMax = {max_edge};",
                    "Mesh.Optimize = 1;",
                    "Mesh.OptimizeNetgen = 1;",
                    "Mesh.OptimizeThreshold = 0.3;",
                    "",
                ]
            )
        )
        # On Ctrl-C (or any exception) subprocess.run kills the child before re-raising, and
        # the temporary folder is removed: nothing is left running or half written.
        result = subprocess.run(
            [
                *GmshCommand(),
                "shell.geo",
                "-3",
                "-o",
                "shell.msh",
                "-format",
                "msh22",
                "-nt",
                str(threads),
                "-v",
                "2",
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0 or not (tmp / "shell.msh").exists():
            raise RuntimeError(f"gmsh failed: {result.stdout[-2000:]}{result.stderr[-2000:]}")
        nodes, tets = _ReadMsh22(tmp / "shell.msh")
        if len(tets) == 0:
            raise RuntimeError(
                "gmsh produced no tetrahedra (the surface triangles are probably too coarse for "
                f"the shell's thickness): {result.stdout[-1500:]}"
            )
    used = np.unique(tets)
    remap = -np.ones(len(nodes), dtype=np.int64)
    remap[used] = np.arange(len(used))
    nodes, tets = nodes[used], remap[tets]
    tets = OrientPositively(nodes, tets)
    return TetMesh(nodes, tets)


def _WriteBinaryStl(path, vertices, faces):
    tri = vertices[faces].astype(np.float32)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    record = np.zeros(len(faces), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    record["n"] = n
    record["v"] = tri
    with open(path, "wb") as f:
        f.write(b"drakebots skin".ljust(80, b" "))
        f.write(np.uint32(len(faces)).tobytes())
        f.write(record.tobytes())


def _ReadMsh22(path):
    lines = Path(path).read_text().splitlines()
    i = lines.index("$Nodes")
    n = int(lines[i + 1])
    node_ids = np.empty(n, dtype=np.int64)
    nodes = np.empty((n, 3))
    for k in range(n):
        parts = lines[i + 2 + k].split()
        node_ids[k] = int(parts[0])
        nodes[k] = [float(p) for p in parts[1:4]]
    j = lines.index("$Elements")
    m = int(lines[j + 1])
    tets = []
    for k in range(m):
        parts = lines[j + 2 + k].split()
        if parts[1] == "4":
            ntags = int(parts[2])
            tets.append([int(p) for p in parts[3 + ntags : 7 + ntags]])
    id_to_index = {int(v): k for k, v in enumerate(node_ids)}
    tets = np.array([[id_to_index[v] for v in t] for t in tets], dtype=np.int64)
    return nodes, tets


# ----------------------------------------------------------------------------------------------
# Skinning weights and glue vertices.


def _Bones(params: SkeletonParams):
    """link name -> (k, 2, 3) segments representing the link (home pose)."""
    b, joints = _Skeleton(params)
    children = {}
    for j in b.joints:
        children.setdefault(j.parent, []).append(j.child)
    bones = {}
    for name, link in b.links.items():
        segs = []
        for box in link.boxes:
            if box.name.endswith("_motor"):
                continue
            half = 0.5 * box.size[0] * box.R[:, 0]
            segs.append((box.center - half, box.center + half))
        if not segs:
            segs.append((link.origin, link.origin))
        bones[name] = np.array(segs)
    return bones


def _PointSegmentDistance(P, segs):
    d = np.full(len(P), np.inf)
    for a, b in segs:
        ab = b - a
        denom = max(float(ab @ ab), 1e-12)
        t = np.clip(((P - a) @ ab) / denom, 0.0, 1.0)
        d = np.minimum(d, np.linalg.norm(P - (a + t[:, None] * ab), axis=1))
    return d


def SkinningWeights(
    params: SkeletonParams, points: np.ndarray, *, sharpness: float = 0.015, links=()
):
    """(link names, (n, L) weights): soft nearest-bone weights (Gaussian in the distance gap)."""
    bones = _Bones(params)
    if links:
        bones = {name: bones[name] for name in links}
    names = list(bones)
    D = np.column_stack([_PointSegmentDistance(points, bones[n]) for n in names])
    gap = D - D.min(axis=1, keepdims=True)
    W = np.exp(-((gap / sharpness) ** 2))
    W[gap > 3 * sharpness] = 0.0
    W /= W.sum(axis=1, keepdims=True)
    return names, W, D


def _FarthestPointSample(points, k, seed_index=0):
    n = len(points)
    if n <= k:
        return np.arange(n)
    chosen = [seed_index]
    d = np.linalg.norm(points - points[seed_index], axis=1)
    for _ in range(k - 1):
        nxt = int(np.argmax(d))
        chosen.append(nxt)
        d = np.minimum(d, np.linalg.norm(points - points[nxt], axis=1))
    return np.array(chosen)


def GlueVertices(params: SkeletonParams, mesh: TetMesh, inner: np.ndarray, per_link: int, links=()):
    """Glue vertices where the bracing units hold the skin (paper section 6.2, Fig. 9).

    A bracing unit sits around the middle of each leg link (a ring), under each foot plate, on
    bands around each torso segment, and on the head and tail links. Among the inner-surface
    vertices nearest to a link, those within the bracing band are candidates; farthest-point
    sampling keeps about `per_link` of them, spread around the band.

    Returns:
        (vertex indices (k,), link names (k,)).
    """
    b, _ = _Skeleton(params)
    bones = _Bones(params)
    names, _, D = SkinningWeights(params, mesh.vertices[inner], links=links)
    nearest = np.argmin(D, axis=1)
    chosen, links = [], []
    for li, name in enumerate(names):
        candidates = inner[nearest == li]
        if len(candidates) == 0:
            continue
        P = mesh.vertices[candidates]
        segs = bones[name]
        # Along-bone coordinate of the main (first) segment.
        a, c = segs[0]
        ab = c - a
        t = ((P - a) @ ab) / max(float(ab @ ab), 1e-12)
        if name.endswith("_foot"):
            band = P[:, 2] < a[2] + 0.01  # the sole, under the plate
        elif name.startswith("torso") or name in ("head",):
            band = np.abs(t - 0.5) < 0.3
        else:
            band = np.abs(t - 0.5) < 0.2
        pool = candidates[band] if band.sum() >= 3 else candidates
        dist = np.linalg.norm(mesh.vertices[pool] - 0.5 * (a + c), axis=1)
        pick = _FarthestPointSample(mesh.vertices[pool], per_link, int(np.argmin(dist)))
        chosen += list(pool[pick])
        links += [name] * len(pick)
    return np.array(chosen, dtype=np.int64), links


def CheckGlue(skin_links: list, glue_links: list, known_links: list) -> None:
    """Raises SkinInputError when a glue vertex attaches to no link of the skeleton."""
    for k, name in enumerate(glue_links):
        if name not in known_links:
            raise SkinInputError(
                f"glue vertex #{k} attaches to link '{name}', which the skeleton does not have "
                f"(links: {', '.join(known_links)})"
            )


# ----------------------------------------------------------------------------------------------
# Soft regions (paper section 7: the monster's belly and tail, Young's modulus reduced by 85 %).

SOFT_REGIONS = ("belly", "tail")
DEFAULT_SOFT_REGIONS = {"monster": ("belly", "tail")}


def SoftRegionElements(
    params: SkeletonParams, mesh: TetMesh, weights: np.ndarray, skin_links: list, regions
) -> np.ndarray:
    """(m,) bool: the elements of the named soft regions.

    The regions are defined on the skeleton, so they work for any body shape: an element
    belongs to the body (not a leg, head or neck) when the link with the largest mean skinning
    weight over its vertices is a torso or tail link; of those,

      "tail":  the elements of tail links, and those behind the torso's printed shell (centroid
               x behind its rear face): the monster's tail is part of its torso skin;
      "belly": the elements under the torso shell (centroid below its bottom face) between its
               front and rear faces (the skin under the torso, legs excluded).

    Raises:
        SkinInputError: an unknown region name.
    """
    unknown = [r for r in regions if r not in SOFT_REGIONS]
    if unknown:
        raise SkinInputError(
            f"unknown soft region {unknown[0]!r} (known: {', '.join(SOFT_REGIONS)})"
        )
    soft = np.zeros(mesh.num_tets, dtype=bool)
    if not regions:
        return soft
    b, _ = _Skeleton(params)
    corners = []
    for name, link in b.links.items():
        if not name.startswith("torso"):
            continue
        for box in link.boxes:
            if not box.name.endswith("_shell"):
                continue  # motors hang below the structure; the shell is the body
            signs = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).reshape(3, -1).T
            corners.append(box.center + (0.5 * signs * box.size) @ np.asarray(box.R).T)
    if not corners:
        return soft
    corners = np.vstack(corners)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    centroids = mesh.vertices[mesh.tets].mean(axis=1)
    dominant = np.asarray(skin_links)[np.argmax(weights[mesh.tets].mean(axis=1), axis=1)]
    body = np.char.startswith(dominant.astype(str), "torso") | np.char.startswith(
        dominant.astype(str), "tail"
    )
    if "tail" in regions:
        soft |= np.char.startswith(dominant.astype(str), "tail") | (
            body & (centroids[:, 0] < lo[0])
        )
    if "belly" in regions:
        soft |= (
            body
            & (centroids[:, 2] < lo[2])
            & (centroids[:, 0] >= lo[0])
            & (centroids[:, 0] <= hi[0])
        )
    return soft


# ----------------------------------------------------------------------------------------------
# The whole pipeline.


def MakeSkin(params: SkeletonParams, options: SkinOptions | None = None, *, progress=None) -> Skin:
    """Generates the skin of a skeleton (see the module docstring).

    Args:
        params: the skeleton's parameters (drakebots.skinned.skeleton.LoadSkeletonParams).
        options: SkinOptions.
        progress: optional callable(str) told about each stage.
    """
    options = options or SkinOptions()
    say = progress or (lambda _: None)
    if not -1.0 < options.poissons_ratio < 0.5:
        raise SkinInputError(
            f"Poisson's ratio must be in (-1, 0.5) (0.5 is incompressible), got "
            f"{options.poissons_ratio}"
        )
    if not options.youngs_modulus > 0.0:
        raise SkinInputError(f"Young's modulus must be > 0 Pa, got {options.youngs_modulus}")
    if not 0.0 < options.soft_scale <= 1.0:
        raise SkinInputError(
            f"the soft regions' Young's modulus factor must be in (0, 1], got {options.soft_scale}"
        )
    soft_regions = options.soft_regions
    if soft_regions is None:
        soft_regions = () if options.links else DEFAULT_SOFT_REGIONS.get(params.name, ())
    soft_regions = tuple(soft_regions)
    unknown = [r for r in soft_regions if r not in SOFT_REGIONS]
    if unknown:
        raise SkinInputError(
            f"unknown soft region {unknown[0]!r} (known: {', '.join(SOFT_REGIONS)})"
        )
    voxel = options.voxel or DEFAULT_VOXEL.get(params.name, 0.011)
    _FoldSites(params, tuple(options.folding_regions))  # unknown joints first
    if options.folding_regions:
        CheckFoldResolution(options.fold_pitch, voxel)
    if options.pieces:
        return _MakePieces(params, options, soft_regions, say)
    say("shape and surfaces (marching cubes)")
    # Marching cubes on a coarse grid can make the two sheets (4 mm apart) cross where the
    # surface curves; Gmsh then refuses the boundary. Retry on a finer grid.
    tried = []
    for attempt in range(5):
        sheets, info = MakeShellSurface(params, dataclasses.replace(options, voxel=voxel))
        count = sum(len(v) for v, _ in sheets)
        say(f"tetrahedralising with gmsh ({count} surface vertices, voxel {voxel * 1000:.1f} mm)")
        tried.append(voxel)
        try:
            mesh = Tetrahedralize(sheets, max_edge=options.max_edge)
            break
        except RuntimeError as e:
            if attempt == 4:
                what = f"the piece on {', '.join(options.links)}" if options.links else "skin"
                raise SkinMeshingError(
                    f"gmsh could not tetrahedralise {what} on voxels of "
                    f"{', '.join(f'{v * 1000:.1f}' for v in tried)} mm ({e}); a smaller "
                    "--voxel, a thicker skin or shallower folds may mesh"
                ) from None
            voxel *= 0.9
    info["voxel_m"] = voxel
    # Outer/inner classification of boundary vertices: the outer sheet holds the vertices
    # farthest from the skeleton; use the field value at the vertex.
    f, t, fold = ShapeField(params, options, mesh.vertices)
    boundary = np.unique(BoundaryFaces(mesh.tets))
    bf = BoundaryFaces(mesh.tets)
    # Split the boundary into its two sheets by connected components; the one with the larger
    # bounding box is outer.
    comp = _SheetLabels(mesh.num_vertices, bf)
    labels = np.unique(comp[boundary])
    extents = {
        lab: np.ptp(mesh.vertices[boundary[comp[boundary] == lab]], axis=0).prod() for lab in labels
    }
    outer_label = max(extents, key=extents.get)
    outer = np.zeros(mesh.num_vertices, dtype=bool)
    outer[boundary[comp[boundary] == outer_label]] = True
    inner = boundary[comp[boundary] != outer_label]
    say("skinning weights and glue vertices")
    skin_links, W, _ = SkinningWeights(params, mesh.vertices, links=tuple(options.links))
    glue, glue_links = GlueVertices(
        params, mesh, inner, options.glue_per_link, links=tuple(options.links)
    )
    b, _ = _Skeleton(params)
    CheckGlue(skin_links, glue_links, list(b.links))
    glue_points = np.array([mesh.vertices[v] - b.links[n].origin for v, n in zip(glue, glue_links)])
    volume = mesh.Volume()
    density = options.mass_density or params.skin_mass / volume
    centroids = mesh.vertices[mesh.tets].mean(axis=1)
    fold_el = np.zeros(mesh.num_tets, dtype=bool)
    if options.folding_regions:
        _, _, fold_c = ShapeField(params, options, centroids)
        fold_el = fold_c > 0.0
    soft = SoftRegionElements(params, mesh, W, skin_links, soft_regions)
    youngs_scale = np.where(soft, options.soft_scale, 1.0)
    info.update(_MeshInfo(mesh, len(glue), density, options, fold_el, soft, soft_regions))
    return Skin(
        robot=params.name,
        mesh=mesh,
        glue_vertices=glue,
        glue_links=list(glue_links),
        glue_points=glue_points,
        skin_links=skin_links,
        weights=W,
        thickness=t,
        outer=outer,
        fold=fold_el,
        mass_density=density,
        youngs_modulus=options.youngs_modulus,
        poissons_ratio=options.poissons_ratio,
        info=info,
        youngs_scale=youngs_scale,
    )


def _MeshInfo(mesh, glue_count, density, options, fold, soft, soft_regions) -> dict:
    """The skin's counts, mass and material regions for `Skin.info` (summaries)."""
    volume = mesh.Volume()
    return {
        "vertices": mesh.num_vertices,
        "tets": mesh.num_tets,
        "glue_vertices": glue_count,
        "volume_m3": volume,
        "mass_kg": density * volume,
        "mass_density": density,
        "thickness_m": options.thickness,
        "foot_thickness_m": options.foot_thickness,
        "folding_regions": list(options.folding_regions),
        "folding_elements": int(fold.sum()),
        "soft_regions": list(soft_regions),
        "soft_scale": options.soft_scale if soft_regions else 1.0,
        "soft_elements": int(soft.sum()),
        "min_tet_volume_m3": float(mesh.SignedVolumes().min()),
    }


def SkinPieces(params: SkeletonParams) -> list[tuple[str, tuple]]:
    """(piece name, its links) of the skin in pieces: one per limb (every link of that leg: the
    hip link between a two-motor shoulder's joints too, so both its joints turn the piece
    rigidly), then the torso's (torso, head, neck, tail)."""
    b, _ = _Skeleton(params)
    pieces = [(leg, tuple(n for n in b.links if n.startswith(f"{leg}_"))) for leg in LEG_NAMES]
    on_legs = {name for _, links in pieces for name in links}
    return pieces + [("torso", tuple(n for n in b.links if n not in on_legs))]


def _MakePieces(params, options: SkinOptions, soft_regions: tuple, say) -> Skin:
    """`MakeSkin` of each piece (`SkinPieces`), joined: vertices, tets and glue are
    concatenated (indices offset), weights are spread over the union of the pieces' links, the
    density makes the whole skin weigh the paper's skin mass, and the soft regions are taken
    on the joined skin."""
    if options.surface is not None:
        raise SkinInputError(
            "a user's surface is one closed body: it cannot be split into pieces (leave out "
            "--pieces, or give each piece's surface)"
        )
    # Every limb piece on the same marching-cubes grid: the soles' heights are where the grid
    # puts the sole plane, so pieces meshed on different grids (MakeSkin refines a piece whose
    # sheets crossed) stand on soles up to half a millimetre apart, and the robot rocks on a
    # diagonal. Limb pieces made on a coarser grid than the finest one are made again on it;
    # the torso's piece has no sole and keeps its own grid (its cut edges may need a finer one).
    voxel = options.voxel or DEFAULT_VOXEL.get(params.name, 0.011)
    made = {}
    limbs = [n for n, _ in SkinPieces(params) if n != "torso"]
    cut = options.piece_clearance > 0.0
    for _ in range(4):
        for name, links in SkinPieces(params):
            if name == "torso" and name in made:
                continue  # no sole: it needs no common grid
            if name in made and made[name].info["voxel_m"] == voxel:
                continue
            say(f"piece '{name}' ({', '.join(links)}), voxel {voxel * 1000:.1f} mm")
            piece_options = dataclasses.replace(
                options,
                pieces=False,
                links=links,
                soft_regions=(),
                mass_density=1.0,
                voxel=voxel,
                clear_of_limbs=tuple(limbs) if name == "torso" and cut else (),
                clear_of_midplane=name != "torso" and cut,
            )
            made[name] = MakeSkin(params, piece_options, progress=say)
        finest = min(made[n].info["voxel_m"] for n in limbs)
        if all(made[n].info["voxel_m"] == finest for n in limbs):
            break
        voxel = finest
    else:
        raise SkinInputError(
            "the skin's pieces could not be meshed on one grid (voxels "
            f"{sorted({p.info['voxel_m'] for p in made.values()})} m)"
        )
    parts = [(name, made[name]) for name, _ in SkinPieces(params)]
    # Level the limb pieces' soles on the lowest one: marching cubes samples each piece's foot
    # at its own offsets from the grid, which leaves the soles up to ~0.5 mm apart (measured:
    # 0.43 mm at the beetle's 11 mm voxel, 0.02 mm on one grid at 16 mm); the robot would stand
    # on a diagonal pair of feet. Each limb piece is moved down by its gap, glue points with it.
    soles = {name: p.mesh.vertices[:, 2].min() for name, p in parts if name != "torso"}
    ground = min(soles.values())
    levelled = {}
    for name, piece in parts:
        gap = soles.get(name, ground) - ground
        levelled[name] = gap
        if gap > 0.0:
            piece.mesh.vertices[:, 2] -= gap
            piece.glue_points = piece.glue_points - [0.0, 0.0, gap]
    skin_links = []
    for _, piece in parts:
        skin_links += [n for n in piece.skin_links if n not in skin_links]
    column = {n: k for k, n in enumerate(skin_links)}
    offsets = np.cumsum([0] + [p.mesh.num_vertices for _, p in parts])
    vertices = np.vstack([p.mesh.vertices for _, p in parts])
    tets = np.vstack([p.mesh.tets + o for (_, p), o in zip(parts, offsets)])
    mesh = TetMesh(vertices, tets)
    W = np.zeros((len(vertices), len(skin_links)))
    for (_, p), o in zip(parts, offsets):
        W[o : o + p.mesh.num_vertices, [column[n] for n in p.skin_links]] = p.weights
    volume = mesh.Volume()
    density = options.mass_density or params.skin_mass / volume
    # On the joined skin: the torso's piece closes under the shoulders, where the whole-body
    # skin ran into the legs, so its belly region is larger (the monster's: 9.3k soft elements
    # against 5.0k).
    soft = SoftRegionElements(params, mesh, W, skin_links, soft_regions)
    fold = np.concatenate([p.fold for _, p in parts])
    info = {
        "size": np.ptp(vertices, axis=0).tolist(),
        "paper_size": parts[0][1].info.get("paper_size"),
        "voxel_m": max(p.info["voxel_m"] for _, p in parts),
        "pieces": {
            name: {
                "vertices": p.mesh.num_vertices,
                "glue_vertices": len(p.glue_vertices),
                "lowered_to_level_soles_m": levelled[name],
            }
            for name, p in parts
        },
    } | _MeshInfo(
        mesh,
        int(sum(len(p.glue_vertices) for _, p in parts)),
        density,
        options,
        fold,
        soft,
        soft_regions,
    )
    return Skin(
        robot=params.name,
        mesh=mesh,
        glue_vertices=np.concatenate([p.glue_vertices + o for (_, p), o in zip(parts, offsets)]),
        glue_links=[n for _, p in parts for n in p.glue_links],
        glue_points=np.vstack([p.glue_points for _, p in parts]),
        skin_links=skin_links,
        weights=W,
        thickness=np.concatenate([p.thickness for _, p in parts]),
        outer=np.concatenate([p.outer for _, p in parts]),
        fold=fold,
        mass_density=density,
        youngs_modulus=options.youngs_modulus,
        poissons_ratio=options.poissons_ratio,
        info=info,
        youngs_scale=np.where(soft, options.soft_scale, 1.0),
    )


def _SheetLabels(n, faces):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    rows = np.concatenate([faces[:, 0], faces[:, 1], faces[:, 2]])
    cols = np.concatenate([faces[:, 1], faces[:, 2], faces[:, 0]])
    graph = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels


# ----------------------------------------------------------------------------------------------
# Files.

SKIN_FILES = ("skin.vtk", "skin.npz", "skin.json")


def WriteSkin(directory: str | Path, skin: Skin) -> None:
    """skin.vtk (tets), skin.npz (glue, weights, masks), skin.json (material, links, counts),
    in `directory` (made, with its parents, if missing)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    WriteVtk(directory / "skin.vtk", skin.mesh, title=f"drakebots skin of {skin.robot}")
    np.savez_compressed(
        directory / "skin.npz",
        glue_vertices=skin.glue_vertices,
        glue_links=np.array(skin.glue_links, dtype=str),
        glue_points=skin.glue_points,
        skin_links=np.array(skin.skin_links, dtype=str),
        weights=skin.weights.astype(np.float32),
        thickness=skin.thickness,
        outer=skin.outer,
        fold=skin.fold,
        youngs_scale=skin.ElementYoungsScale(),
    )
    meta = {
        "robot": skin.robot,
        "mass_density": skin.mass_density,
        "youngs_modulus": skin.youngs_modulus,
        "poissons_ratio": skin.poissons_ratio,
        "info": skin.info,
    }
    (directory / "skin.json").write_text(json.dumps(meta, indent=2) + "\n")


def LoadSkin(directory: str | Path) -> Skin:
    """Reads a skin written by WriteSkin (raises SkinInputError naming a missing file)."""
    directory = Path(directory)
    for name in SKIN_FILES:
        if not (directory / name).is_file():
            raise SkinInputError(f"{directory}: missing {name} (make one with `drakebots skin`)")
    meta = json.loads((directory / "skin.json").read_text())
    mesh = ReadVtk(directory / "skin.vtk")
    with np.load(directory / "skin.npz", allow_pickle=False) as data:
        glue = data["glue_vertices"]
        if len(glue) and (glue.min() < 0 or glue.max() >= mesh.num_vertices):
            raise SkinInputError(f"{directory}/skin.npz: glue vertex indices out of range")
        return Skin(
            robot=meta["robot"],
            mesh=mesh,
            glue_vertices=glue,
            glue_links=[str(s) for s in data["glue_links"]],
            glue_points=data["glue_points"],
            skin_links=[str(s) for s in data["skin_links"]],
            weights=data["weights"].astype(float),
            thickness=data["thickness"],
            outer=data["outer"],
            fold=data["fold"],
            mass_density=float(meta["mass_density"]),
            youngs_modulus=float(meta["youngs_modulus"]),
            poissons_ratio=float(meta["poissons_ratio"]),
            info=meta.get("info", {}),
            youngs_scale=data["youngs_scale"] if "youngs_scale" in data.files else None,
        )


def SkinGluedToNothing(skin: Skin, link_names: list) -> list:
    """Indices of glue vertices whose link is not in `link_names`."""
    return [k for k, n in enumerate(skin.glue_links) if n not in link_names]


def PieceParentLinks(skin: Skin, params: SkeletonParams) -> np.ndarray:
    """(n,) per vertex of a skin in pieces, the link its piece hangs from (the parent of the
    joint that joins the piece's links to the rest: the torso, for a limb), "" for the torso's
    piece and for every vertex of a skin in one piece. The pieces are read from
    `info["pieces"]` (their vertex counts, in mesh order) and their links from the weights."""
    parents = np.full(skin.mesh.num_vertices, "", dtype=object)
    pieces = skin.info.get("pieces")
    if not pieces:
        return parents
    b, _ = _Skeleton(params)
    start = 0
    for count in (piece["vertices"] for piece in pieces.values()):
        rows = slice(start, start + count)
        start += count
        bound = np.any(skin.weights[rows] > 0.0, axis=0)
        links = {name for name, used in zip(skin.skin_links, bound) if used}
        root = _RootJoint(b, links)
        if root is not None:
            parents[rows] = root.parent
    if start != skin.mesh.num_vertices:
        raise SkinInputError(
            f"the skin's pieces hold {start} vertices, its mesh {skin.mesh.num_vertices}"
        )
    return parents
