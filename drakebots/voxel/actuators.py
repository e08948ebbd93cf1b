"""Actuator specs of a voxel lattice ("node=I:J:K/N,axis=x|y|z|to=I:J:K/N,stroke=2mm|force=1N")
and occupancy files, read and validated into drakebots.frame actuators (InputError naming the
spec and listing the actuators that drive a plane of motion).

Nodes are named by voxel grid position and in-voxel id (0 -x, 1 -y, 2 -z, 3 +x, 4 +y, 5 +z):
`node=I:J:K/N`. An actuator joins that node to the node one pitch along `axis` (or to `to=...`);
`stroke=` (mm or m suffix; extension > 0) or `force=` (N) drives it. It must drive a plane of
motion (paper sec. 2.1): both nodes on faces normal to another axis than `axis`.
"""

import re

import numpy as np

from drakebots.errors import InputError
from drakebots.frame.model import Actuator
from drakebots.voxel.lattice import AXES, CheckOccupancy
from drakebots.voxel.observations import ActuatorPlane, DescribeValidActuators, ValidActuators

# Actuation axis -> (lattice, node) of the 2x2 formation of Fig. 1 with its actuator along it.
FORMATIONS = {"x": ("2x2x1", "0:0:0/4"), "y": ("2x2x1", "0:0:0/3"), "z": ("2x1x2", "0:0:0/3")}


def LoadOccupancy(path: str):
    """The occupancy array of an .npy file, validated (3-D boolean, at least one voxel, and its
    grid within the "voxels" work bound, judged from the file's header before it is read)."""
    from pathlib import Path

    from drakebots.limits import CheckWork

    if not Path(path).is_file():  # a folder, or a FIFO whose read would wait for ever
        raise InputError(f"--occupancy {path}: no such file (or not a regular file)")
    try:
        header = np.load(path, allow_pickle=False, mmap_mode="r")
        if isinstance(header, np.ndarray):
            what = f"--occupancy {path} (a {'x'.join(map(str, header.shape))} grid)"
            CheckWork("voxels", float(np.prod(header.shape, dtype=float)), what)
            del header
        occupancy = np.load(path, allow_pickle=False)
    except InputError:
        raise
    except (OSError, ValueError, EOFError) as e:  # EOFError: an empty or cut-short file.
        raise InputError(f"--occupancy {path}: cannot read a .npy array ({e})") from None
    if not isinstance(occupancy, np.ndarray):
        occupancy.close()
        raise InputError(f"--occupancy {path}: an .npz archive, not a .npy array")
    try:
        return CheckOccupancy(occupancy)
    except InputError as e:
        raise InputError(f"--occupancy {path}: {e}") from None


def CheckConnected(occupancy: np.ndarray) -> None:
    """InputError when the voxels of `occupancy` are not one piece: voxels join through shared
    nodes, which face neighbours share (a node sits at each face centre), so the pieces are the
    6-connected components. A lattice in pieces has rigid motions the frame FEM's single clamp
    cannot hold (it reported "success" with 200 % dissipation, issue 68)."""
    from scipy import ndimage

    _, pieces = ndimage.label(occupancy)  # 3-D default structure: the 6 face neighbours.
    if pieces > 1:
        raise InputError(
            f"its {int(occupancy.sum())} voxels form {pieces} separate pieces; voxels must join "
            "through shared faces into one lattice"
        )


def _Length(text: str, what: str) -> float:
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*(mm|m)?\s*", text)
    if not match:
        raise InputError(f"--actuate {what}={text}: expected a length such as 2mm or 0.002m")
    try:
        value = float(match.group(1))
    except ValueError:
        raise InputError(
            f"--actuate {what}={text}: expected a length such as 2mm or 0.002m"
        ) from None
    return value * 1e-3 if match.group(2) in (None, "mm") else value


def _Node(lattice, text: str, spec: str) -> int:
    match = re.fullmatch(r"\s*(-?\d+):(-?\d+):(-?\d+)/(\d+)\s*", text)
    if not match:
        raise InputError(f"--actuate '{spec}': node '{text}' must be I:J:K/N (voxel, node id 0-5)")
    i, j, k, n = (int(g) for g in match.groups())
    try:
        return lattice.NodeOf((i, j, k), n)
    except InputError as e:
        raise InputError(f"--actuate '{spec}': node {text}: {e}") from e


def ParseActuator(lattice, spec: str, mount: str):
    """One actuator spec (`FemConfig.actuate`, `--actuate`) -> frame Actuator, validated before
    anything is solved.

    The actuator must drive a plane of motion (sec. 2.1): its two nodes lie one pitch apart along
    x, y or z and sit on faces normal to another axis. Every error lists valid actuators.
    """

    def Fail(message: str):
        raise InputError(
            f"--actuate '{spec}': {message}. Actuators that drive a plane of motion in this "
            f"lattice: {DescribeValidActuators(lattice)}"
        )

    fields = {}
    for part in spec.split(","):
        if "=" not in part:
            raise InputError(f"--actuate '{spec}': '{part}' is not key=value")
        key, value = (s.strip() for s in part.split("=", 1))
        if key not in ("node", "axis", "to", "stroke", "force"):
            raise InputError(
                f"--actuate '{spec}': unknown key '{key}' (keys: node, axis, to, stroke, force)"
            )
        fields[key] = value
    if "node" not in fields:
        raise InputError(f"--actuate '{spec}': node=I:J:K/N is required")
    a = _Node(lattice, fields["node"], spec)
    if "to" in fields:
        b = _Node(lattice, fields["to"], spec)
    elif "axis" in fields:
        if fields["axis"] not in AXES:
            raise InputError(f"--actuate '{spec}': axis must be x, y or z")
        target = lattice.node_coords[a] + 2 * np.eye(3, dtype=int)[AXES.index(fields["axis"])]
        b = lattice.NodeAt(target)
        axis = AXES.index(fields["axis"])
        if b is None and not any(v[2] == axis for v in ValidActuators(lattice)):
            # The smallest Fig. 1 formation with an actuator along this axis.
            lattice_text, node_text = FORMATIONS[fields["axis"]]
            Fail(
                f"no actuator along {fields['axis']} drives a plane of motion in this lattice "
                f"(one voxel thick along {fields['axis']}: its only node pairs one pitch apart "
                f"along {fields['axis']} are opposite nodes of one voxel). For the 2x2 formation "
                f"of Fig. 1 in a plane containing {fields['axis']}, use --lattice {lattice_text} "
                f'--actuate "node={node_text},axis={fields["axis"]},stroke=2mm"'
            )
        if b is None:
            Fail(
                f"there is no node one pitch along +{fields['axis']} from {fields['node']} "
                f"(lattice coordinates {tuple(int(c) for c in target)}, units of p/2, are "
                "outside the lattice)"
            )
    else:
        raise InputError(f"--actuate '{spec}': give axis=x|y|z or to=I:J:K/N")
    if a == b:
        Fail("both ends are the same node")
    try:
        ActuatorPlane(lattice, a, b)
    except InputError as e:
        Fail(str(e).split(": ", 1)[1])
    if ("stroke" in fields) == ("force" in fields):
        raise InputError(f"--actuate '{spec}': give exactly one of stroke= or force=")
    if "stroke" in fields:
        stroke = _Length(fields["stroke"], "stroke")
        if abs(stroke) >= lattice.pitch:
            raise InputError(
                f"--actuate '{spec}': stroke {stroke * 1e3:g} mm collapses the actuator (its "
                f"nodes are {lattice.pitch * 1e3:g} mm apart)"
            )
        return Actuator(a, b, stroke=stroke, mount=mount, name=spec)
    match = re.fullmatch(r"\s*([-+0-9.eE]+)\s*N?\s*", fields["force"])
    if not match:
        raise InputError(f"--actuate '{spec}': force must be like 1N")
    return Actuator(a, b, force=float(match.group(1)), mount=mount, name=spec)
