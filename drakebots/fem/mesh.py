"""Linear tetrahedral meshes: geometry, boundary, orientation, and file formats.

`TetMesh` holds rest positions (n, 3) in metres and tetrahedra (m, 4) as vertex indices. Files:

- legacy VTK (`WriteVtk`/`ReadVtk`): UNSTRUCTURED_GRID of VTK_TETRA cells, the format Drake's
  DeformableModel reads (every tet positively oriented: (x1-x0) . ((x2-x0) x (x3-x0)) > 0);
- VTK XML `.vtu` (`WriteVtu`, ASCII, with point data) and a `.pvd` collection (`WritePvd`) for
  time series that ParaView opens.
"""

import dataclasses
from pathlib import Path

import numpy as np


@dataclasses.dataclass
class TetMesh:
    """A linear tetrahedral mesh.

    Attributes:
        vertices: (n, 3) rest positions, m.
        tets: (m, 4) vertex indices, positively oriented.
    """

    vertices: np.ndarray
    tets: np.ndarray

    def __post_init__(self):
        self.vertices = np.ascontiguousarray(self.vertices, dtype=float)
        self.tets = np.ascontiguousarray(self.tets, dtype=np.int64)
        if self.vertices.ndim != 2 or self.vertices.shape[1] != 3:
            raise ValueError(f"vertices must be (n, 3), got {self.vertices.shape}")
        if self.tets.ndim != 2 or self.tets.shape[1] != 4:
            raise ValueError(f"tets must be (m, 4), got {self.tets.shape}")
        if len(self.tets) and (self.tets.min() < 0 or self.tets.max() >= len(self.vertices)):
            raise ValueError("tets reference vertices that do not exist")

    @property
    def num_vertices(self) -> int:
        return len(self.vertices)

    @property
    def num_tets(self) -> int:
        return len(self.tets)

    def SignedVolumes(self, positions: np.ndarray | None = None) -> np.ndarray:
        """(m,) signed volumes, m^3 (positive for positively oriented tets)."""
        x = self.vertices if positions is None else np.asarray(positions).reshape(-1, 3)
        return SignedVolumes(x, self.tets)

    def Volume(self) -> float:
        return float(np.sum(self.SignedVolumes()))

    def LumpedMasses(self, density) -> np.ndarray:
        """(n,) vertex masses, kg: a quarter of each tetrahedron's mass on each of its vertices
        (density kg/m^3, one value or one per tet)."""
        share = np.abs(self.SignedVolumes()) * np.asarray(density, float) / 4.0
        masses = np.zeros(self.num_vertices)
        np.add.at(masses, self.tets.ravel(), np.repeat(share, 4))
        return masses

    def BoundaryFaces(self) -> np.ndarray:
        """(k, 3) boundary triangles, oriented with outward normals."""
        return BoundaryFaces(self.tets)

    def BoundaryVertices(self) -> np.ndarray:
        return np.unique(self.BoundaryFaces())


def SignedVolumes(x: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Signed volumes (m^3) of tets over positions x (n, 3)."""
    a, b, c, d = (x[tets[:, i]] for i in range(4))
    return np.einsum("ij,ij->i", b - a, np.cross(c - a, d - a)) / 6.0


def OrientPositively(vertices: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Tets with negative volume get two vertices swapped; returns the new (m, 4) array."""
    tets = np.array(tets, dtype=np.int64, copy=True)
    negative = SignedVolumes(vertices, tets) < 0.0
    tets[negative, 2], tets[negative, 3] = tets[negative, 3].copy(), tets[negative, 2].copy()
    return tets


# Faces of tet (0,1,2,3) with outward normals for a positively oriented tet.
_TET_FACES = np.array([[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]])


def BoundaryFaces(tets: np.ndarray) -> np.ndarray:
    """Triangles that belong to exactly one tet, with outward orientation."""
    faces = tets[:, _TET_FACES].reshape(-1, 3)
    key = np.sort(faces, axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    return faces[counts[inverse.ravel()] == 1]


def WriteVtk(path: str | Path, mesh: TetMesh, *, title: str = "drakebots tet mesh") -> None:
    """Writes a legacy ASCII VTK unstructured grid of tetrahedra (Drake DeformableModel input)."""
    lines = [
        "# vtk DataFile Version 3.0",
        title[:250],
        "ASCII",
        "DATASET UNSTRUCTURED_GRID",
        f"POINTS {mesh.num_vertices} double",
    ]
    lines += [f"{x:.9g} {y:.9g} {z:.9g}" for x, y, z in mesh.vertices]
    lines.append(f"CELLS {mesh.num_tets} {5 * mesh.num_tets}")
    lines += [f"4 {a} {b} {c} {d}" for a, b, c, d in mesh.tets]
    lines.append(f"CELL_TYPES {mesh.num_tets}")
    lines += ["10"] * mesh.num_tets
    Path(path).write_text("\n".join(lines) + "\n")


def ReadVtk(path: str | Path) -> TetMesh:
    """Reads a legacy ASCII VTK unstructured grid of tetrahedra (as written by WriteVtk)."""
    tokens = Path(path).read_text().split()
    i = tokens.index("POINTS")
    n = int(tokens[i + 1])
    start = i + 3
    vertices = np.array(tokens[start : start + 3 * n], dtype=float).reshape(n, 3)
    j = tokens.index("CELLS", start + 3 * n)
    m = int(tokens[j + 1])
    cells = np.array(tokens[j + 3 : j + 3 + 5 * m], dtype=np.int64).reshape(m, 5)
    if not np.all(cells[:, 0] == 4):
        raise ValueError(f"{path}: only tetrahedral cells are supported")
    return TetMesh(vertices, cells[:, 1:])


def WriteVtu(
    path: str | Path,
    positions: np.ndarray,
    tets: np.ndarray,
    *,
    point_data: dict | None = None,
    cell_data: dict | None = None,
) -> None:
    """Writes a VTK XML unstructured grid (.vtu, base64 binary) of tetrahedra for ParaView.

    Args:
        positions: (n, 3) current vertex positions, m.
        tets: (m, 4) tetrahedra.
        point_data: name -> (n,) or (n, 3) array.
        cell_data: name -> (m,) array.
    """
    import base64

    positions = np.asarray(positions, float).reshape(-1, 3)
    n, m = len(positions), len(tets)

    def array_xml(name, values, vtk_type="Float64", dtype="<f8"):
        values = np.ascontiguousarray(values, dtype=dtype)
        comps = 1 if values.ndim == 1 else values.shape[1]
        raw = values.tobytes()
        body = base64.b64encode(np.uint32(len(raw)).tobytes() + raw).decode("ascii")
        return (
            f'<DataArray type="{vtk_type}" Name="{name}" NumberOfComponents="{comps}" '
            f'format="binary">{body}</DataArray>'
        )

    parts = [
        '<?xml version="1.0"?>',
        '<VTKFile type="UnstructuredGrid" version="0.1" byte_order="LittleEndian" '
        'header_type="UInt32">',
        "<UnstructuredGrid>",
        f'<Piece NumberOfPoints="{n}" NumberOfCells="{m}">',
        "<Points>",
        array_xml("Points", positions, "Float32", "<f4"),
        "</Points>",
        "<Cells>",
        array_xml("connectivity", np.asarray(tets).ravel(), "Int32", "<i4"),
        array_xml("offsets", 4 * np.arange(1, m + 1), "Int32", "<i4"),
        array_xml("types", np.full(m, 10), "UInt8", "u1"),
        "</Cells>",
    ]
    if point_data:
        parts.append("<PointData>")
        parts += [array_xml(k, v, "Float32", "<f4") for k, v in point_data.items()]
        parts.append("</PointData>")
    if cell_data:
        parts.append("<CellData>")
        parts += [array_xml(k, v) for k, v in cell_data.items()]
        parts.append("</CellData>")
    parts += ["</Piece>", "</UnstructuredGrid>", "</VTKFile>", ""]
    Path(path).write_text("\n".join(parts))


def WritePvd(path: str | Path, entries: list[tuple[float, str]]) -> None:
    """Writes a ParaView collection (.pvd) of (time s, relative .vtu file name) entries."""
    rows = [
        '<?xml version="1.0"?>',
        '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
        "<Collection>",
    ]
    rows += [f'<DataSet timestep="{t:.9g}" part="0" file="{name}"/>' for t, name in entries]
    rows += ["</Collection>", "</VTKFile>", ""]
    Path(path).write_text("\n".join(rows))


def CheckClosedManifold(vertices: np.ndarray, faces: np.ndarray, *, what: str = "surface") -> None:
    """Raises ValueError if a triangle surface is not closed and edge-manifold.

    Every edge must be shared by exactly two triangles with opposite orientation.
    """
    faces = np.asarray(faces, dtype=np.int64)
    if faces.ndim != 2 or faces.shape[1] != 3 or len(faces) == 0:
        raise ValueError(f"{what}: needs (k, 3) triangles, got shape {faces.shape}")
    if faces.min() < 0 or faces.max() >= len(vertices):
        raise ValueError(f"{what}: triangles reference vertices that do not exist")
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    undirected = np.sort(directed, axis=1)
    keys, counts = np.unique(undirected, axis=0, return_counts=True)
    open_edges = keys[counts == 1]
    if len(open_edges):
        a, b = open_edges[0]
        raise ValueError(
            f"{what} is not closed: {len(open_edges)} boundary edges, e.g. between vertices "
            f"{a} {vertices[a].round(4).tolist()} and {b} {vertices[b].round(4).tolist()}"
        )
    bad = keys[counts > 2]
    if len(bad):
        a, b = bad[0]
        raise ValueError(
            f"{what} is not manifold: {len(bad)} edges shared by more than two triangles, e.g. "
            f"between vertices {a} and {b}"
        )
    _, dcounts = np.unique(directed, axis=0, return_counts=True)
    if np.any(dcounts > 1):
        raise ValueError(f"{what} is not consistently oriented (an edge is used twice one way)")


def BoxMesh(size, divisions, origin=(0.0, 0.0, 0.0)) -> TetMesh:
    """A box [origin, origin + size] (m) split into nx*ny*nz cubes of 6 tetrahedra each.

    The 6-tet (Kuhn) split around each cube's main diagonal makes a conforming mesh.
    """
    nx, ny, nz = (int(n) for n in divisions)
    axes = [np.linspace(o, o + s, n + 1) for o, s, n in zip(origin, size, (nx, ny, nz))]
    X = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    index = np.arange(len(X)).reshape(nx + 1, ny + 1, nz + 1)
    corners = np.stack(
        [
            index[a : a + nx, b : b + ny, c : c + nz].ravel()
            for a in (0, 1)
            for b in (0, 1)
            for c in (0, 1)
        ],
        axis=1,
    )  # corner k = 4a + 2b + c
    split = np.array(
        [[0, 1, 3, 7], [0, 1, 5, 7], [0, 2, 3, 7], [0, 2, 6, 7], [0, 4, 5, 7], [0, 4, 6, 7]]
    )
    tets = corners[:, split].reshape(-1, 4)
    return TetMesh(X, OrientPositively(X, tets))
