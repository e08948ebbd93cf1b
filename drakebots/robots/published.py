"""Published robot models as they are: `package://` URIs and every mesh format they use.

A robot file points at a model as its authors published it (a ROS package, the PyPI package
`example-robot-data`, a vendor's URDF); nothing in it is edited or copied beside it (DESIGN.md,
"Robots as users have them").

Packages. `package://NAME/...` (in the robot file's `model:` and in the model's meshes) resolves,
first match wins:

1. the robot file's `packages: {NAME: folder}` (relative to the robot file);
2. a folder above the model file holding a package.xml that declares NAME;
3. a folder named NAME above the model file (example-robot-data's URIs say `example-robot-data`
   while its package.xml declares `example_robot_descriptions`);
4. `ROS_PACKAGE_PATH` (Drake's own crawl of it);
5. installed prefixes: `share/NAME` under each folder of `AMENT_PREFIX_PATH`, then under Python's
   cmeel prefix (`<site-packages>/cmeel.prefix`, where PyPI's ROS-packaged models install).

Meshes. Drake reads .obj, .vtk and .gltf itself; every other mesh (STL, DAE, PLY, ...) is read by
trimesh (MIT; pycollada, BSD, for DAE; COLLADA's <unit> applied as ROS tools do), its repeated
vertices merged, and written as OBJ (geometry only: the model's <material> colours the visual)
into drakebots' cache
(drakebots.cache.CacheEntry, keyed by the mesh file's bytes and the scale it is used at). The model
is then parsed from a rewritten copy in the cache whose mesh references are the absolute paths of
the converted (and unconverted) meshes. The user's files are only read.

A mesh larger than drakebots.limits' "mesh_extent" bound (100 m) once scaled is refused: it is a
millimetre mesh read as metres, or worse, and the bounding boxes, contact and replays built from
it would be absurd.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
import sys
import sysconfig
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from drakebots.cache import CacheEntry, SafeName, WriteCacheFile
from drakebots.errors import InputError
from drakebots.limits import Limit

# Mesh formats Drake 1.51 reads itself (visual and collision); others are converted to OBJ.
DRAKE_MESH_SUFFIXES = (".obj", ".vtk", ".gltf")
# The largest extent (m) a scaled mesh of a robot may have, and the size of a mesh file read, are
# drakebots.limits' "mesh_extent" and "model_mesh_bytes" bounds.
_INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_PACKAGE_URI = re.compile(r"^package://([^/]+)/(.*)$")
# A URDF <mesh filename="..."> (attribute order free) and an SDF <uri>...</uri>.
_URDF_MESH = re.compile(r"(<mesh\b[^>]*?\bfilename\s*=\s*)([\"'])(.*?)\2", re.S)
_SDF_URI = re.compile(r"(<uri>\s*)(.*?)(\s*</uri>)", re.S)
_URDF_SCALE = re.compile(r"\bscale\s*=\s*([\"'])(.*?)\1")


def CmeelPrefixes() -> list[Path]:
    """Python's cmeel prefixes, `<site-packages>/cmeel.prefix`, that exist: the environment's
    own site-packages first, then the others on sys.path (a user site, a system one)."""
    folders = [Path(sysconfig.get_paths()["purelib"]), Path(sysconfig.get_paths()["platlib"])]
    folders += [Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    prefixes = []
    for folder in folders:
        prefix = folder / "cmeel.prefix"
        if prefix.is_dir() and prefix not in prefixes:
            prefixes.append(prefix)
    return prefixes


def CmeelPrefix() -> Path:
    """The first of CmeelPrefixes() (`<site-packages>/cmeel.prefix`, which may not exist)."""
    prefixes = CmeelPrefixes()
    return prefixes[0] if prefixes else Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"


def _PackageXmlName(folder: Path) -> str | None:
    """The <name> that folder/package.xml declares (None without a readable one)."""
    xml = folder / "package.xml"
    if not xml.is_file():
        return None
    try:
        name = ElementTree.parse(xml).getroot().findtext("name")
    except (ElementTree.ParseError, OSError):
        return None
    return name.strip() if name else None


@dataclass
class PackageResolver:
    """Finds `package://NAME` folders in the order of the module docstring.

    Attributes:
        source: the robot file (named in every error).
        packages: the robot file's `packages:` key, NAME -> folder (absolute).
        model_file: the model file, whose folders above are searched (None: not yet known).
        found: NAME -> folder, what was resolved so far (also what a Parser's PackageMap gets).
    """

    source: str
    packages: dict = field(default_factory=dict)
    model_file: Path | None = None
    found: dict = field(default_factory=dict)

    def Find(self, name: str) -> Path | None:
        """The folder of package `name`, or None when no rule finds it."""
        if name in self.found:
            return self.found[name]
        folder = self._Search(name)
        if folder is not None:
            self.found[name] = folder
        return folder

    def _Search(self, name: str) -> Path | None:
        if name in self.packages:
            return self.packages[name]
        if self.model_file is not None:
            parents = list(Path(self.model_file).resolve().parents)
            for folder in parents:
                if _PackageXmlName(folder) == name:
                    return folder
            for folder in parents:
                if folder.name == name:
                    return folder
        if os.environ.get("ROS_PACKAGE_PATH", "").strip():
            from pydrake.multibody.parsing import PackageMap

            ros = PackageMap.MakeEmpty()
            ros.PopulateFromRosPackagePath()
            if ros.Contains(name):
                return Path(ros.GetPath(name))
        prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
        prefixes += [str(prefix) for prefix in CmeelPrefixes()]
        for prefix in prefixes:
            folder = Path(prefix) / "share" / name
            if folder.is_dir():
                return folder
        return None

    def Resolve(self, uri: str, *, key: str, what: str) -> Path:
        """The file of a `package://NAME/path` URI.

        Raises:
            InputError: naming the robot file, `key` and the package (or the missing file).
        """
        match = _PACKAGE_URI.match(uri)
        if match is None:
            raise InputError(f"{self.source}: key '{key}': '{uri}' is not a package://NAME/... URI")
        name, relative = match.groups()
        folder = self.Find(name)
        if folder is None:
            raise InputError(
                f"{self.source}: key '{key}': package '{name}' of {what} not found (looked in "
                "the robot file's 'packages', package.xml and folders above the model, "
                "ROS_PACKAGE_PATH, AMENT_PREFIX_PATH and the cmeel prefix); add "
                f"'packages: {{{name}: FOLDER}}' to the robot file"
            )
        return folder / relative


@dataclass
class PreparedModel:
    """A model ready for Drake's Parser.

    Attributes:
        parse_file: the file to parse (the user's model, or its rewritten copy in the cache).
        packages: NAME -> folder for the Parser's PackageMap.
        converted: source mesh path -> the OBJ in the cache it was converted to.
    """

    parse_file: Path
    packages: dict
    converted: dict


def _MeshReferences(text: str, suffix: str):
    """(start, end, reference, scale) of each mesh reference in a URDF/SDF text."""
    if suffix == ".urdf":
        for match in _URDF_MESH.finditer(text):
            element = text[match.start() : text.find(">", match.end()) + 1]
            scale = _URDF_SCALE.search(element)
            yield match.start(3), match.end(3), match.group(3), scale.group(2) if scale else ""
    else:
        for match in _SDF_URI.finditer(text):
            # Only a <mesh>'s <uri> is a mesh file: the last <mesh> opened before it is open.
            before = text[: match.start()]
            opened = before.rfind("<mesh>")
            if opened < 0 or before.rfind("</mesh>") > opened:
                continue
            closed = text.find("</mesh>", match.end())
            scale = re.search(r"<scale>(.*?)</scale>", text[opened:closed], re.S)
            yield match.start(2), match.end(2), match.group(2), scale.group(1) if scale else ""


def _ParseScale(text: str) -> np.ndarray:
    try:
        values = [float(x) for x in text.split()] if text.strip() else [1.0, 1.0, 1.0]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * 3
    return np.array(values if len(values) == 3 else [1.0, 1.0, 1.0])


def _MeshBounds(path: Path, *, model: Path):
    """trimesh's mesh of `path` (scene transforms applied, DAE units as trimesh reads them)."""
    import trimesh

    from drakebots.limits import CheckWork

    CheckWork("model_mesh_bytes", path.stat().st_size, f"{path}: mesh of model {model}")
    try:
        mesh = trimesh.load(str(path), force="mesh", process=False)
        if path.suffix.lower() == ".dae":
            text = path.read_text(errors="replace")
            if len(getattr(mesh, "vertices", [])) == 0:
                # pycollada drops a node whose material binding is broken (a texture missing):
                # the geometry does not depend on the materials, so read it without them.
                text = re.sub(r"<bind_material>.*?</bind_material>", "", text, flags=re.S)
                mesh = trimesh.load(
                    io.BytesIO(text.encode()), file_type="dae", force="mesh", process=False
                )
            # COLLADA's <unit meter="..."> (trimesh keeps it as metadata only; ROS applies it).
            unit = re.search(r"<unit\b[^>]*\bmeter\s*=\s*[\"']([^\"']+)", text)
            if unit is not None and float(unit.group(1)) != 1.0:
                mesh.apply_scale(float(unit.group(1)))
    except Exception as e:  # noqa: BLE001 - any reader failure is the same bad input.
        raise InputError(
            f"{path}: mesh of model {model} cannot be read ({type(e).__name__}: "
            f"{' '.join(str(e).split())[:200]})"
        ) from None
    if len(getattr(mesh, "vertices", [])) == 0:
        raise InputError(f"{path}: mesh of model {model} cannot be read (no vertices)")
    return mesh


@functools.cache
def _TrimeshVersion() -> str:
    """trimesh's version, for cache keys, without importing it (its import takes seconds: a
    model whose meshes are all in the cache never imports it)."""
    from importlib.metadata import version

    return version("trimesh")


def ConvertMesh(path: Path, scale: np.ndarray, *, model: Path, length_per_metre: float = 1.0):
    """The OBJ (in the cache) Drake reads for mesh `path`, or `path` itself when Drake reads it.

    Also checks the mesh's size at `scale`: larger than the "mesh_extent" bound is refused. The
    check's result (and the conversion) is cached, keyed by the file's bytes and the scale.

    Returns:
        (path Drake parses, (lower, upper) bounds of the unscaled mesh).

    Raises:
        InputError: naming the mesh file and the model when the mesh cannot be read or is absurd.
    """
    from drakebots.limits import CheckWork

    # Judged before the bytes are read for the cache key (and again by _MeshBounds).
    CheckWork("model_mesh_bytes", path.stat().st_size, f"{path}: mesh of model {model}")
    data = path.read_bytes()
    native = path.suffix.lower() in DRAKE_MESH_SUFFIXES
    entry = CacheEntry(
        "meshes",
        [
            data,
            path.suffix.lower(),
            " ".join(f"{s:.17g}" for s in scale),
            _TrimeshVersion(),
            "merged",
        ],
        name=path.stem,
    )
    info_file = entry / "mesh.json"
    target = entry / f"{SafeName(path.stem, default='mesh')}.obj"
    info = None
    if info_file.is_file() and (native or target.is_file()):
        try:
            info = json.loads(info_file.read_text())
        except ValueError:
            info = None
    if info is None:
        if path.suffix.lower() == ".vtk":
            return path, None
        mesh = _MeshBounds(path, model=model)
        info = {"lower": mesh.bounds[0].tolist(), "upper": mesh.bounds[1].tolist()}
        extent = float(np.max((mesh.bounds[1] - mesh.bounds[0]) * np.abs(scale)))
        info["extent"] = extent
        if not native and extent <= Limit("mesh_extent") * length_per_metre:
            import trimesh

            # COLLADA and STL repeat each vertex for every triangle: merged, Go1's 28 MB body
            # has 175k vertices instead of 830k (the same triangles), and its replay is smaller.
            mesh.merge_vertices(merge_tex=True, merge_norm=True)
            WriteCacheFile(
                target,
                trimesh.exchange.obj.export_obj(mesh, include_normals=False, include_texture=False),
            )
        WriteCacheFile(info_file, json.dumps(info))
    if info["extent"] > Limit("mesh_extent") * length_per_metre:
        raise InputError(
            f"{path}: mesh of model {model} is {info['extent']:.4g} length units across at scale "
            f"{' '.join(f'{s:g}' for s in scale)}, more than {Limit('mesh_extent'):g} m: absurd "
            "for a robot (a millimetre mesh read as metres?); fix the scale in the model (or set "
            "DRAKEBOTS_MAX_MESH_EXTENT to allow more)"
        )
    return (path if native else target), (np.array(info["lower"]), np.array(info["upper"]))


_URDF_MATERIAL = re.compile(
    r"(<material\b[^>]*?\bname\s*=\s*)([\"'])([^\"'<>]*)\2([^>]*?)(?<!/)>(.*?)</material>", re.S
)


def _RenameConflictingMaterials(text: str) -> str | None:
    """A URDF's text with each later definition of a material name that differs from its first
    given a name of its own (`NAME__2`, ...): ROS tools let a visual's inline material win, Drake
    refuses the model ("Material 'black' was previously defined", HyQ). None when none differs."""
    first, counts, changed = {}, {}, False

    def Rename(match):
        nonlocal changed
        name, body = match.group(3), " ".join(match.group(5).split())
        if not body:
            return match.group(0)
        if name not in first:
            first[name] = body
            return match.group(0)
        if first[name] == body:
            return match.group(0)
        counts[name] = counts.get(name, 1) + 1
        changed = True
        new = f"{name}__{counts[name]}"
        head = f"{match.group(1)}{match.group(2)}{new}{match.group(2)}{match.group(4)}>"
        return f"{head}{match.group(5)}</material>"

    result = _URDF_MATERIAL.sub(Rename, text)
    return result if changed else None


def PrepareModel(
    model_file: Path, resolver: PackageResolver, *, length_per_metre: float = 1.0
) -> PreparedModel:
    """Resolves the model's mesh references and converts meshes Drake cannot read (see the
    module docstring). The user's files are never written.

    Raises:
        InputError: a package not found, a mesh missing, unreadable or absurdly large.
    """
    model_file = Path(model_file)
    suffix = model_file.suffix.lower()
    text = model_file.read_text(errors="replace")
    resolver.model_file = model_file
    pieces, converted, last, changed = [], {}, 0, False
    for start, end, reference, scale_text in _MeshReferences(text, suffix):
        reference = reference.strip()
        if reference.startswith("package://"):
            mesh = resolver.Resolve(
                reference, key="model", what=f"mesh {reference} of {model_file}"
            )
        elif reference.startswith("file://"):
            mesh = Path(reference[len("file://") :])
        elif "://" in reference:
            continue  # Drake reports other schemes itself.
        else:
            mesh = model_file.parent / reference
        if not mesh.is_file():
            raise InputError(f"{mesh}: mesh file of model {model_file} not found ({reference})")
        used, _ = ConvertMesh(
            mesh, _ParseScale(scale_text), model=model_file, length_per_metre=length_per_metre
        )
        if used != mesh:
            converted[str(mesh)] = used
            changed = True
        pieces.append(text[last:start])
        pieces.append(str(used.resolve()))
        last = end
    pieces.append(text[last:])
    if suffix == ".urdf":
        renamed = _RenameConflictingMaterials("".join(pieces))
        if renamed is not None:
            pieces, changed = [renamed], True
    if not changed:
        return PreparedModel(model_file, dict(resolver.found), converted)
    rewritten = "".join(pieces)
    entry = CacheEntry("models", [rewritten, str(model_file.resolve())], name=model_file.stem)
    copy = entry / f"{SafeName(model_file.stem, default='model')}{suffix}"
    WriteCacheFile(copy, rewritten)
    return PreparedModel(copy, dict(resolver.found), converted)


def _Float(text, default: float = 0.0) -> float:
    try:
        return float(text) if text is not None else default
    except ValueError:
        return math.nan


def CheckModelXml(model_file: Path, source: str) -> None:
    """Model checks Drake makes late, obscurely or not at all (issue 68), on the URDF/SDF itself:
    a negative link mass, a non-physical rotational inertia (not positive semi-definite, or
    principal moments against the triangle inequality), inverted joint limits (Drake stops with
    "Failure at joint.h"), and a link that two joints move (a loop, which a tree cannot hold).

    Raises:
        InputError: one line naming the robot file, the model and the link or joint.
    """
    try:
        root = ElementTree.parse(model_file).getroot()
    except (ElementTree.ParseError, OSError):
        return  # Drake's parser names the line.
    urdf = root.tag == "robot"

    def Bad(what: str) -> InputError:
        return InputError(f"{source}: key 'model': {model_file}: {what}")

    # The links a moving joint carries (its child). A link welded to others is part of a rigid
    # group whose composite inertia is what Drake simulates: published models weld placeholder
    # and sensor links whose own inertia is not physical (the 1 mg root `base` of HyQ, B1 and
    # ANYmal B, all six entries 1e-6, with the real inertia on a welded link; ANYmal C's depth
    # cameras), so only the links moving joints carry are checked one by one.
    moving = set()
    for joint in root.iter("joint"):
        if joint.get("type") not in ("fixed", None):
            node = joint.find("child")
            if node is not None:
                moving.add(node.get("link") if urdf else (node.text or "").strip())
    for link in root.iter("link"):
        name = link.get("name", "?")
        inertial = link.find("inertial")
        if inertial is None:
            continue
        if urdf:
            mass_node = inertial.find("mass")
            mass = _Float(mass_node.get("value") if mass_node is not None else None)
            node = inertial.find("inertia")
            values = {k: _Float(node.get(k)) for k in _INERTIA_KEYS} if node is not None else {}
        else:
            mass = _Float(inertial.findtext("mass"))
            values = {k: _Float(inertial.findtext(f"inertia/{k}")) for k in _INERTIA_KEYS}
        if not math.isfinite(mass) or mass < 0.0:
            raise Bad(f"link '{name}' has mass {mass}: a mass must be finite and >= 0")
        if values and name in moving:
            I = np.array(
                [
                    [values["ixx"], values["ixy"], values["ixz"]],
                    [values["ixy"], values["iyy"], values["iyz"]],
                    [values["ixz"], values["iyz"], values["izz"]],
                ]
            )
            if not np.all(np.isfinite(I)):
                raise Bad(f"link '{name}' has a rotational inertia that is not finite")
            moments = np.linalg.eigvalsh(I)
            tolerance = 1e-9 * max(float(np.abs(moments).max()), 1e-300)
            if moments.min() < -tolerance:
                raise Bad(
                    f"link '{name}' has a non-physical inertia: principal moments "
                    f"{', '.join(f'{m:.4g}' for m in moments)} (not positive semi-definite)"
                )
            a, b, c = moments
            if c > a + b + tolerance:
                raise Bad(
                    f"link '{name}' has a non-physical inertia: principal moments "
                    f"{a:.4g}, {b:.4g}, {c:.4g} violate the triangle inequality "
                    f"({c:.4g} > {a:.4g} + {b:.4g})"
                )
    parents = {}
    for joint in root.iter("joint"):
        name = joint.get("name", "?")
        if urdf:
            child = joint.find("child")
            child = child.get("link") if child is not None else None
            limit = joint.find("limit")
            lower = _Float(limit.get("lower"), -math.inf) if limit is not None else -math.inf
            upper = _Float(limit.get("upper"), math.inf) if limit is not None else math.inf
        else:
            child = (joint.findtext("child") or "").strip() or None
            lower = _Float(joint.findtext("axis/limit/lower"), -math.inf)
            upper = _Float(joint.findtext("axis/limit/upper"), math.inf)
        if joint.get("type") in ("revolute", "prismatic") and lower > upper:
            raise Bad(f"joint '{name}' has inverted limits: lower {lower:g} > upper {upper:g}")
        if child is not None:
            if child in parents:
                raise Bad(
                    f"link '{child}' is the child of two joints ('{parents[child]}' and "
                    f"'{name}'): a joint loop, which drakebots' tree models cannot hold"
                )
            parents[child] = name


def CheckMasses(plant, instance, source: str, model_file) -> None:
    """A body that a moving joint carries must weigh something with what lies beyond it: a
    massless, inertia-free subtree on a moving joint makes the mass matrix singular (Drake
    accepts it silently and the simulation fails). Massless welded links (sensor frames, feet
    with no inertial) stay accepted.

    Raises:
        InputError: naming the robot file, the model, the joint and its child body.
    """
    children = {}
    for index in plant.GetJointIndices(instance):
        joint = plant.get_joint(index)
        children.setdefault(joint.parent_body().index(), []).append(joint.child_body())

    def Beyond(body):
        mass, inertia = body.default_mass(), 0.0
        if hasattr(body, "default_rotational_inertia"):
            moments = body.default_rotational_inertia().CalcPrincipalMomentsOfInertia()
            inertia = float(np.nan_to_num(np.max(moments)))
        for child in children.get(body.index(), []):
            m, i = Beyond(child)
            mass, inertia = mass + m, inertia + i
        return mass, inertia

    for index in plant.GetJointIndices(instance):
        joint = plant.get_joint(index)
        if joint.num_velocities() == 0:
            continue
        mass, inertia = Beyond(joint.child_body())
        if not (mass > 0.0 or inertia > 0.0):
            raise InputError(
                f"{source}: key 'model': {model_file}: body '{joint.child_body().name()}' that "
                f"joint '{joint.name()}' moves has zero mass and nothing massive beyond it (give "
                "it an <inertial>, or make the joint fixed)"
            )
