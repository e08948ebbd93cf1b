"""Print what a robot is made of: coordinates, actuators, mass, size, limits, units.

Examples:
  drakebots info beetle
  drakebots info beetle --json
  drakebots info ./my_hopper.yaml          (a robot file: see drakebots.robots.robot_file)
  drakebots info --list

JSON keys (stable; robot units, see "units"):
  robot, family, description        name, family and one-line description
  units                             quantity -> unit (SI, or mm/ms/g for HAMR-VI)
  gravity                           magnitude of gravity in the robot's units
  num_positions, num_velocities     generalized coordinates of the robot (floating base included)
  num_actuators, num_bodies, num_joints
  total_mass                        mass of the model
  num_loop_constraints              rows of the loop-closure constraint c(q) = 0 (0: tree)
  base_body, nominal_base_height    floating body and its height in the home pose
  bounding_box                      {lower, upper, size} of the visual geometry in the home pose
  actuators                         [{name, joint, effort_limit, effort_unit}] (effort_limit null:
                                    the model states none, infinite)
  joints                            [{name, type, position_lower, position_upper}]
Families add their own keys (skinned quad-robots: skeleton_mass, skin_mass, paper_size, motor,
joint_kinds, feet; HAMR-VI: loop_jacobian_rank, ...; robot files: robot_file, model, base,
contacts, home).
"""

import json
import math

from drakebots.cli import AddVerb


def register(subparsers):
    parser = AddVerb(subparsers, "info", __doc__)
    parser.add_argument("robot", nargs="?", help="robot name (see --list) or robot file (.yaml)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--list", action="store_true", help="list the known robots")
    parser.set_defaults(func=Run)
    return parser


def Run(args) -> int:
    from drakebots.errors import InputError
    from drakebots.robots import GetRobot, KnownRobots

    if args.list or not args.robot:
        robots = KnownRobots()
        if args.json:
            print(json.dumps(robots, indent=2))
        else:
            width = max(len(name) for name in robots)
            for name, description in robots.items():
                print(f"{name:<{width}}  {description}")
        if not args.robot and not args.list:
            raise InputError(
                "give a robot name or a robot file (.yaml); known robots: " + ", ".join(robots)
            )
        return 0
    from drakebots.robots.base import DescribeRobot

    info = DescribeRobot(GetRobot(args.robot))
    if args.json:
        from drakebots.results import ToJson

        print(ToJson(info), end="")
        return 0
    units = info["units"]
    length, mass = units.get("length", "m"), units.get("mass", "kg")
    size = " x ".join(f"{x:.4g}" for x in info["bounding_box"]["size"])
    print(f"{info['robot']}: {info['description']}")
    print(f"  family            {info['family']}")
    print(f"  positions         {info['num_positions']}")
    print(f"  velocities        {info['num_velocities']}")
    print(f"  actuators         {info['num_actuators']}")
    print(f"  bodies            {info['num_bodies']}")
    print(f"  total mass        {info['total_mass']:.6g} {mass}")
    print(f"  bounding box      {size} {length} (home pose)")
    print(f"  base height       {info['nominal_base_height']:.6g} {length}")
    print(f"  loop constraints  {info['num_loop_constraints']}")
    print(f"  units             {', '.join(f'{k} {v}' for k, v in units.items())}")
    limits = sorted({(a["effort_limit"], a["effort_unit"]) for a in info["actuators"]})
    efforts = ", ".join(
        f"{x:.4g} {unit}" if math.isfinite(x) else f"none ({unit})" for x, unit in limits
    )
    print(f"  effort limits     {efforts}")
    return 0
