"""The tripod-gait voxel robot as Drake model files (SDFormat text; no Drake import here).

`TripodModelFiles()` returns the text of models/voxel_tripod/{voxel_tripod.sdf, voxel_tripod.yaml}.
scripts/generate_voxel_tripod.py writes them, and tests/voxel/test_tripod_model.py checks that the
committed files equal this output.

The model (issue "Voxel-lattice robots", build item 6):
- every lattice node is a body: mass = the connector mass per node plus half of each strut that
  meets there (voxel.ConnectorMassPerNode, voxel.StrutMass); rotational inertia of a solid sphere
  of the connector's size, scaled up by ROTARY_INERTIA_SCALE (not from the source; see below);
- every strut is a LinearBushingRollPitchYaw whose frames A and C sit at the strut's midpoint
  with x along the strut. A diagonal spring at the midpoint between two rigid half-struts
  reproduces the 12x12 Euler-Bernoulli frame element exactly for small motions: translation
  stiffness (EA/L, 12EI/L^3, 12EI/L^3), rotation stiffness (GJ/L, EI/L, EI/L). The axial EA/L
  (the stiffest by four orders of magnitude) is carried by a compliant SAP distance constraint
  between the two nodes instead (AddVoxelTripod), which Drake's discrete solver treats
  implicitly; the bushing keeps the transverse and rotational terms;
- each actuator is a prismatic joint from its lower node (parent) to its upper node (child)
  along z with a JointActuator carrying PD gains: a position-controlled linear actuator whose
  mount holds relative rotation, like the FEM's "prismatic" mount;
- the feet carry spherical pads FOOT_PAD_HEIGHT deep: smooth printed pads at the rear, "sticky"
  (high-friction) pads at the front (sec. 3.2); their coefficients are set so that Drake's pair
  rule gives the intended effective values against the simulation ground (PadFriction).

ROTARY_INERTIA_SCALE: the bushings are explicit forces in Drake's discrete solver, so the
highest node-rotation frequency limits the time step. Rotational inertia does not enter the
quasi-static equilibrium the paper studies (sec. 2: "a slow-moving system which remains close to
equilibrium"), so it is scaled up; translational masses (weight, friction) stay physical.
"""

import math

import numpy as np

from drakebots.voxel.lattice import (
    AXES,
    PITCH,
    STRUT_SIDE,
    ConnectorMassPerNode,
    StrutMass,
)
from drakebots.voxel.tripod import ACTUATORS, FEET, FOOT_PAD_HEIGHT, MARKERS, TripodLattice

MODEL_NAME = "voxel_tripod"
CONNECTOR_RADIUS = 0.004  # m, a node connector drawn as a sphere of this radius
STRUT_VISUAL_RADIUS = 0.001  # m, struts drawn 2 mm thick (1.27 mm square really) to be seen
MARKER_RADIUS = 0.006  # m, the purple motion-capture markers of sec. 3.2 (visual only)
ACTUATOR_HOUSING_RADIUS = 0.006  # m, actuator drawn as a housing on its lower node ...
ACTUATOR_ROD_RADIUS = 0.0025  # m, ... and a rod on its upper node (visual only)
ACTUATOR_COLOURS = {
    "right": "0.85 0.2 0.2 1",
    "left": "0.95 0.75 0.1 1",
    "rear": "0.2 0.4 0.9 1",
    "front": "0.2 0.7 0.3 1",
}
ROTARY_INERTIA_SCALE = 200.0  # see the module docstring
STRUT_DAMPING_RATIO = 0.05  # of each bushing mode's critical damping with the node masses
ACTUATOR_EFFORT_LIMIT = 40.0  # N, a small linear servo (not from the paper)
ACTUATOR_STROKE_LIMIT = 0.01  # m, +- travel of the prismatic joint (not from the paper)
ACTUATOR_KP = 2.0e4  # N/m, position gain of the actuator servo
ACTUATOR_KD = 40.0  # N s/m
# Friction (sec. 3.2: "3D printed back feet and 'sticky' front feet" on a smooth surface). These are
# the effective coefficients of each pad against the ground. Drake gives each geometry its own
# coefficient and combines the two of a contact pair as mu = 2 mu_A mu_B / (mu_A + mu_B)
# (CalcContactFrictionFromSurfaceProperties), so the pads carry PadFriction(effective) against
# the simulation ground's GROUND_FRICTION.
REAR_FRICTION = 0.3  # printed pads on a smooth surface (not tuned)
FRONT_FRICTION = 1.5  # "sticky" front pads (not tuned)
GROUND_FRICTION = 1.0  # the ground the simulation adds (drakebots.voxel.simulation)
PAD_RADIUS = 0.004  # m


def PadFriction(effective: float, ground: float = GROUND_FRICTION) -> float:
    """The pad coefficient that Drake's pair rule 2 mu_pad mu_ground / (mu_pad + mu_ground) turns
    into `effective` against a ground of coefficient `ground`.

    Raises:
        ValueError: effective is not in (0, 2 ground) (the rule cannot exceed twice the ground's).
    """
    if not 0.0 < effective < 2.0 * ground:
        raise ValueError(f"effective friction {effective} must be in (0, {2.0 * ground})")
    return effective * ground / (2.0 * ground - effective)


def NodeName(coords) -> str:
    return "node_" + "_".join(str(int(c)) for c in coords)


def _Pose(xyz, rpy=(0.0, 0.0, 0.0)) -> str:
    return " ".join(f"{v:.9g}" for v in (*xyz, *rpy))


def _StrutRpy(direction: np.ndarray) -> tuple[float, float, float]:
    """Roll-pitch-yaw of a frame whose x axis is `direction` (z kept as vertical as possible)."""
    ex = direction / np.linalg.norm(direction)
    reference = np.array([0.0, 0.0, 1.0]) if abs(ex[2]) < 0.999 else np.array([1.0, 0.0, 0.0])
    ez = reference - ex * (reference @ ex)
    ez /= np.linalg.norm(ez)
    ey = np.cross(ez, ex)
    R = np.column_stack([ex, ey, ez])
    pitch = math.asin(-max(-1.0, min(1.0, R[2, 0])))
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw


def _Tag(name: str, value: str) -> str:
    return f"      <drake:{name}>{value}</drake:{name}>"


def _AxisZRpy(direction: np.ndarray) -> tuple[float, float, float]:
    """Roll-pitch-yaw of a frame whose z axis is `direction`."""
    ez = direction / np.linalg.norm(direction)
    reference = np.array([1.0, 0.0, 0.0]) if abs(ez[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    ex = reference - ez * (reference @ ez)
    ex /= np.linalg.norm(ex)
    ey = np.cross(ez, ex)
    R = np.column_stack([ex, ey, ez])
    pitch = math.asin(-max(-1.0, min(1.0, R[2, 0])))
    return math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0])


def TripodModelFiles() -> dict[str, str]:
    """File name -> text of the generated model files."""
    lattice = TripodLattice()
    section = lattice.section
    E, G = section.youngs_modulus, section.shear_modulus
    L = PITCH / math.sqrt(2.0)
    strut_mass = StrutMass()
    connector = ConnectorMassPerNode()
    degree = np.bincount(lattice.struts.ravel(), minlength=lattice.num_nodes)
    masses = connector + 0.5 * strut_mass * degree
    children = {
        lattice.NodeAt(upper): (name, lattice.NodeAt(lower))
        for name, (lower, upper) in ACTUATORS.items()
    }
    feet = {lattice.NodeAt(foot): name for name, (foot, _) in FEET.items()}
    markers = {lattice.NodeAt(coords): name for name, coords in MARKERS.items()}
    translation_stiffness = (
        E * section.area / L,
        12 * E * section.Iz / L**3,
        12 * E * section.Iy / L**3,
    )
    rotation_stiffness = (G * section.J / L, E * section.Iy / L, E * section.Iz / L)
    m_pair = 0.5 * float(np.mean(masses))  # reduced mass of two nodes
    axial_stiffness = translation_stiffness[0]
    axial_damping = 2 * STRUT_DAMPING_RATIO * math.sqrt(axial_stiffness * m_pair)
    # The axial spring is a compliant SAP distance constraint (implicit, see AddVoxelTripod):
    # the bushing carries only the soft transverse and rotational stiffness.
    translation_stiffness = (0.0, *translation_stiffness[1:])
    force_damping = [2 * STRUT_DAMPING_RATIO * math.sqrt(k * m_pair) for k in translation_stiffness]
    inertia_pair = 0.5 * 0.4 * float(np.mean(masses)) * CONNECTOR_RADIUS**2 * ROTARY_INERTIA_SCALE
    torque_damping = [
        2 * STRUT_DAMPING_RATIO * math.sqrt(k * inertia_pair) for k in rotation_stiffness
    ]

    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by scripts/generate_voxel_tripod.py; do not edit. -->",
        '<sdf version="1.9" xmlns:drake="http://drake.mit.edu">',
        f'  <model name="{MODEL_NAME}">',
    ]
    lift = np.array([0.0, 0.0, FOOT_PAD_HEIGHT])  # the pads stand on z = 0
    half_struts = {node: [] for node in range(lattice.num_nodes)}
    for a, b in lattice.struts:
        half_struts[a].append(b)
        half_struts[b].append(a)
    for node, coords in enumerate(lattice.node_coords):
        name = NodeName(coords)
        p = lattice.nodes[node] + lift
        m = float(masses[node])
        inertia = 0.4 * m * CONNECTOR_RADIUS**2 * ROTARY_INERTIA_SCALE
        lines += [
            f'    <link name="{name}">',
            f"      <pose>{_Pose(p)}</pose>",
            "      <inertial>",
            f"        <mass>{m:.9g}</mass>",
            f"        <inertia><ixx>{inertia:.9g}</ixx><iyy>{inertia:.9g}</iyy>"
            f"<izz>{inertia:.9g}</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>",
            "      </inertial>",
            '      <visual name="connector">',
            f"        <geometry><sphere><radius>{CONNECTOR_RADIUS}</radius></sphere></geometry>",
            "        <material><diffuse>0.15 0.15 0.18 1</diffuse></material>",
            "      </visual>",
        ]
        for k, other in enumerate(half_struts[node]):
            # Half of each strut, drawn on this node's body (it bends with the node).
            direction = lattice.nodes[other] - lattice.nodes[node]
            rpy = _AxisZRpy(direction)  # a cylinder's axis is its frame's z
            centre = 0.25 * direction
            lines += [
                f'      <visual name="strut{k}">',
                f"        <pose>{_Pose(centre, rpy)}</pose>",
                f"        <geometry><cylinder><radius>{STRUT_VISUAL_RADIUS:.6g}</radius>"
                f"<length>{0.5 * L:.9g}</length></cylinder></geometry>",
                "        <material><diffuse>0.93 0.8 0.45 1</diffuse></material>",
                "      </visual>",
            ]
        if node in markers:
            lines += [
                f'      <visual name="{markers[node]}">',
                f"        <geometry><sphere><radius>{MARKER_RADIUS}</radius></sphere></geometry>",
                "        <material><diffuse>0.55 0.2 0.75 1</diffuse></material>",
                "      </visual>",
            ]
        for name, (lower, upper) in ACTUATORS.items():
            # A linear actuator drawn telescoping: housing up from the lower node, rod down
            # from the upper node (each moves with its node; the prismatic joint keeps them
            # aligned).
            length = 0.55 * PITCH
            if node == lattice.NodeAt(lower):
                pose, radius, part = (0.0, 0.0, 0.5 * length), ACTUATOR_HOUSING_RADIUS, "housing"
            elif node == lattice.NodeAt(upper):
                pose, radius, part = (0.0, 0.0, -0.5 * length), ACTUATOR_ROD_RADIUS, "rod"
            else:
                continue
            lines += [
                f'      <visual name="actuator_{name}_{part}">',
                f"        <pose>{_Pose(pose)}</pose>",
                f"        <geometry><cylinder><radius>{radius}</radius>"
                f"<length>{length:.9g}</length></cylinder></geometry>",
                f"        <material><diffuse>{ACTUATOR_COLOURS[name]}</diffuse></material>",
                "      </visual>",
            ]
        if node in feet:
            front = feet[node].startswith("front")
            mu = PadFriction(FRONT_FRICTION if front else REAR_FRICTION)
            colour = "0.85 0.35 0.1 1" if front else "0.2 0.45 0.8 1"
            centre = (0.0, 0.0, -(FOOT_PAD_HEIGHT - PAD_RADIUS))
            lines += [
                f'      <visual name="{feet[node]}_pad">',
                f"        <pose>{_Pose(centre)}</pose>",
                f"        <geometry><sphere><radius>{PAD_RADIUS}</radius></sphere></geometry>",
                f"        <material><diffuse>{colour}</diffuse></material>",
                "      </visual>",
                f'      <collision name="{feet[node]}">',
                f"        <pose>{_Pose(centre)}</pose>",
                f"        <geometry><sphere><radius>{PAD_RADIUS}</radius></sphere></geometry>",
                "        <drake:proximity_properties>",
                f"          <drake:mu_static>{mu:.9g}</drake:mu_static>",
                f"          <drake:mu_dynamic>{mu:.9g}</drake:mu_dynamic>",
                "          <drake:point_contact_stiffness>2000</drake:point_contact_stiffness>",
                "          <drake:hunt_crossley_dissipation>5</drake:hunt_crossley_dissipation>",
                "        </drake:proximity_properties>",
                "      </collision>",
            ]
        lines.append("    </link>")
    # Strut midpoint frames and bushings; struts drawn on the lower-index node's body.
    for index, (a, b) in enumerate(lattice.struts):
        pa, pb = lattice.nodes[a] + lift, lattice.nodes[b] + lift
        mid = 0.5 * (pa + pb)
        rpy = _StrutRpy(pb - pa)
        name_a, name_b = NodeName(lattice.node_coords[a]), NodeName(lattice.node_coords[b])
        lines += [
            f'    <frame name="strut{index}_A" attached_to="{name_a}">',
            f'      <pose relative_to="__model__">{_Pose(mid, rpy)}</pose>',
            "    </frame>",
            f'    <frame name="strut{index}_C" attached_to="{name_b}">',
            f'      <pose relative_to="__model__">{_Pose(mid, rpy)}</pose>',
            "    </frame>",
            "    <drake:linear_bushing_rpy>",
            f"      <drake:bushing_frameA>strut{index}_A</drake:bushing_frameA>",
            f"      <drake:bushing_frameC>strut{index}_C</drake:bushing_frameC>",
            _Tag("bushing_torque_stiffness", _Pose(rotation_stiffness)),
            _Tag("bushing_torque_damping", _Pose(torque_damping)),
            _Tag("bushing_force_stiffness", _Pose(translation_stiffness)),
            _Tag("bushing_force_damping", _Pose(force_damping)),
            "    </drake:linear_bushing_rpy>",
        ]
    for child, (name, parent) in children.items():
        lines += [
            f'    <joint name="{name}" type="prismatic">',
            f"      <parent>{NodeName(lattice.node_coords[parent])}</parent>",
            f"      <child>{NodeName(lattice.node_coords[child])}</child>",
            "      <axis>",
            "        <xyz>0 0 1</xyz>",
            f"        <limit><lower>{-ACTUATOR_STROKE_LIMIT}</lower>"
            f"<upper>{ACTUATOR_STROKE_LIMIT}</upper><effort>{ACTUATOR_EFFORT_LIMIT}</effort></limit>",
            "      </axis>",
            f'      <drake:controller_gains p="{ACTUATOR_KP}" d="{ACTUATOR_KD}"/>',
            "    </joint>",
        ]
    lines += ["  </model>", "</sdf>", ""]
    sdf = "\n".join(lines)

    meta = [
        "# Generated by scripts/generate_voxel_tripod.py; do not edit.",
        "# Facts the Drake runner needs about the generated SDF (SI units).",
        f"pitch: {PITCH}",
        f"strut_side: {STRUT_SIDE}",
        f"foot_pad_height: {FOOT_PAD_HEIGHT}",
        f"base_body: {NodeName((1, 1, 2))}",
        f"nominal_base_height: {0.5 * PITCH * 2 + FOOT_PAD_HEIGHT:.9g}",
        f"total_mass: {float(masses.sum()):.9g}",
        f"strut_axial_stiffness: {axial_stiffness:.9g}  # N/m, EA/L",
        f"strut_axial_damping: {axial_damping:.9g}  # N s/m",
        f"strut_length: {L:.9g}",
        "# Effective pad-ground friction coefficients and the ground coefficient they assume.",
        f"friction: {{front: {FRONT_FRICTION}, rear: {REAR_FRICTION}, ground: {GROUND_FRICTION}}}",
        "actuators:",
    ]
    for name, (lower, upper) in ACTUATORS.items():
        meta.append(f"  {name}: {{lower: {NodeName(lower)}, upper: {NodeName(upper)}}}")
    meta.append("feet:")
    for name, (foot, _) in FEET.items():
        meta.append(f"  {name}: {NodeName(foot)}")
    meta.append("markers:")
    for name, coords in MARKERS.items():
        meta.append(f"  {name}: {NodeName(coords)}")
    meta.append("struts:")
    for a, b in lattice.struts:
        meta.append(f"  - [{NodeName(lattice.node_coords[a])}, {NodeName(lattice.node_coords[b])}]")
    meta.append(f"axes: {AXES}")
    return {f"{MODEL_NAME}.sdf": sdf, f"{MODEL_NAME}.yaml": "\n".join(meta) + "\n"}
