"""Drawing the FEM skin: a picture of a generated skin, the deforming skin in Meshcat (live and in
replay.html), and a ParaView time series.

Meshcat recordings animate transforms and properties, not vertices, so a replay shows the skin as
one decimated surface mesh per recorded frame, each toggled visible only in its own frame
(`SkinReplayDecorator`).
"""

import numpy as np
from pydrake.geometry import Meshcat, Rgba

from drakebots.fem.mesh import BoundaryFaces
from drakebots.visualization.replay import ReplayDecorator

SKIN_COLOR = Rgba(0.93, 0.80, 0.35, 0.55)  # the paper's yellow skins (Fig. 17)


def OuterSurface(tets: np.ndarray, outer_mask: np.ndarray | None = None) -> np.ndarray:
    """The boundary triangles of a tet mesh (only the outer sheet if a vertex mask is given)."""
    faces = BoundaryFaces(tets)
    if outer_mask is not None:
        faces = faces[np.all(outer_mask[faces], axis=1)]
    return faces


def DecimatedFaces(faces: np.ndarray, max_faces: int) -> np.ndarray:
    """Every k-th triangle so that at most `max_faces` remain (a cheap, view-only thinning)."""
    if len(faces) <= max_faces:
        return faces
    step = int(np.ceil(len(faces) / max_faces))
    return faces[::step]


def ClusteredSurface(rest: np.ndarray, faces: np.ndarray, max_faces: int):
    """A coarse, closed view mesh by vertex clustering on the rest shape.

    Vertices are grouped into cubic cells (grown until at most `max_faces` triangles remain);
    each cell is represented by one of its vertices, so the coarse mesh follows the deforming
    skin by reading those vertices' positions. Returns (representatives (k,), faces (f, 3)) with
    faces indexing the representatives.
    """
    rest = np.asarray(rest, float)
    used = np.unique(faces)
    lo = rest[used].min(axis=0)
    cell = max(float(np.ptp(rest[used], axis=0).max()) / 200.0, 1e-4)
    while True:
        keys = np.floor((rest[used] - lo) / cell).astype(np.int64)
        _, first, cluster = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        cluster = cluster.ravel()
        of_vertex = -np.ones(len(rest), dtype=np.int64)
        of_vertex[used] = cluster
        small = of_vertex[faces]
        good = (
            (small[:, 0] != small[:, 1])
            & (small[:, 1] != small[:, 2])
            & (small[:, 0] != small[:, 2])
        )
        small = small[good]
        small = np.unique(small, axis=0)
        if len(small) <= max_faces:
            return used[first], small
        cell *= 1.25


def PlotSkin(skin, *, title: str = ""):
    """A matplotlib figure of a generated skin: outer surface, glue vertices, folding regions."""
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection

    mesh = skin.mesh
    faces = OuterSurface(mesh.tets, skin.outer)
    X = mesh.vertices
    fig = plt.figure(figsize=(12, 5.2))
    views = [(20, -60, "three-quarter"), (0, -90, "side"), (90, -90, "top")]
    light = np.array([0.4, -0.5, 0.8])
    light /= np.linalg.norm(light)
    tri = X[faces]
    normals = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    shade = 0.35 + 0.65 * np.clip(normals @ light, 0.0, 1.0)
    base = np.array([0.93, 0.78, 0.35])
    fold_vertices = np.zeros(mesh.num_vertices, dtype=bool)
    if skin.fold.any():
        fold_vertices[np.unique(mesh.tets[skin.fold])] = True
    colors = np.clip(shade[:, None] * base[None, :], 0, 1)
    in_fold = np.any(fold_vertices[faces], axis=1)
    colors[in_fold] = np.clip(shade[in_fold, None] * np.array([0.85, 0.35, 0.25]), 0, 1)
    soft = skin.ElementYoungsScale() < 1.0 if hasattr(skin, "ElementYoungsScale") else None
    has_soft = soft is not None and bool(soft.any())
    if has_soft:
        soft_vertices = np.zeros(mesh.num_vertices, dtype=bool)
        soft_vertices[np.unique(mesh.tets[soft])] = True
        in_soft = np.all(soft_vertices[faces], axis=1)
        colors[in_soft] = np.clip(shade[in_soft, None] * np.array([0.45, 0.75, 0.45]), 0, 1)
    if has_soft:  # the belly is seen from below
        views.append((-90, -90, "bottom"))
        fig.set_size_inches(15, 5.2)
    lo, hi = X.min(axis=0), X.max(axis=0)
    center, radius = 0.5 * (lo + hi), 0.5 * np.max(hi - lo)
    G = X[skin.glue_vertices]
    for k, (elev, azim, name) in enumerate(views):
        ax = fig.add_subplot(1, len(views), k + 1, projection="3d")
        ax.add_collection3d(
            Poly3DCollection(tri, facecolors=colors, edgecolors="none", linewidths=0.0)
        )
        ax.scatter(G[:, 0], G[:, 1], G[:, 2], s=4, c="tab:blue", depthshade=False)
        for axis, c in zip("xyz", center):
            getattr(ax, f"set_{axis}lim")(c - radius, c + radius)
        ax.set_box_aspect((1, 1, 1))
        ax.view_init(elev=elev, azim=azim)
        ax.set_title(name, fontsize=9)
        ax.set_axis_off()
    info = skin.info
    fig.suptitle(
        title
        or (
            f"{skin.robot} skin: {mesh.num_vertices} vertices, {mesh.num_tets} tets, "
            f"{len(skin.glue_vertices)} glue vertices (blue), "
            f"{info.get('thickness_m', 0) * 1000:.0f}/{info.get('foot_thickness_m', 0) * 1000:.0f}"
            f" mm thick"
            + (", folding regions red" if skin.fold.any() else "")
            + (f", soft regions green (E x {info.get('soft_scale', 0.15):g})" if has_soft else "")
        ),
        fontsize=10,
    )
    fig.tight_layout()
    return fig


class SkinMeshcat:
    """Draws a deforming skin surface into Meshcat (live)."""

    def __init__(self, meshcat: Meshcat, tets, outer_mask=None, *, path="skin", max_faces=20000):
        self.meshcat = meshcat
        self.path = path
        self.faces = DecimatedFaces(OuterSurface(tets, outer_mask), max_faces)

    def Draw(self, positions: np.ndarray) -> None:
        X = np.asarray(positions, float).reshape(-1, 3)
        self.meshcat.SetTriangleMesh(self.path, X.T, self.faces.T, SKIN_COLOR)


def SkinReplayDecorator(
    tets,
    outer_mask,
    frames: np.ndarray,
    frame_sample_indices: np.ndarray,
    *,
    max_faces: int = 4000,
) -> ReplayDecorator:
    """A replay decorator that shows the skin at each recorded frame.

    Args:
        tets: (m, 4) skin tetrahedra.
        outer_mask: (n,) outer-surface vertices.
        frames: (F, 3n) skin positions of the logged skin frames.
        frame_sample_indices: (F,) the log sample index each skin frame belongs to.
        max_faces: triangles per frame (thinned for the size of replay.html).
    """
    frames = np.asarray(frames)
    rest = frames[0].reshape(-1, 3)
    used, small = ClusteredSurface(rest, OuterSurface(tets, outer_mask), max_faces)
    sample_indices = np.asarray(frame_sample_indices)
    state = {"visible": None}

    def setup(meshcat, plant):
        for k in range(len(frames)):
            X = frames[k].reshape(-1, 3)[used]
            meshcat.SetTriangleMesh(f"skin/frame_{k:04d}", X.T, small.T, SKIN_COLOR)
            meshcat.SetProperty(f"skin/frame_{k:04d}", "visible", k == 0)

    def frame(meshcat, animation, frame_index, sample_index):
        # The skin frame whose log sample is the latest at or before this sample.
        k = int(
            np.clip(
                np.searchsorted(sample_indices, sample_index, side="right") - 1, 0, len(frames) - 1
            )
        )
        if state["visible"] != k:
            if state["visible"] is not None:
                animation.SetProperty(
                    frame_index, f"skin/frame_{state['visible']:04d}", "visible", False
                )
            animation.SetProperty(frame_index, f"skin/frame_{k:04d}", "visible", True)
            state["visible"] = k

    return ReplayDecorator(setup=setup, frame=frame)
