"""
A skinned robot in a Drake diagram of your own
==============================================

The beetle's skeleton (`drakebots.skinned.robot.AddSkinnedQuadruped`) in your own DiagramBuilder:
a discrete plant (SAP contact), the package's ground, the plant's own PD servos holding the home
pose, a Meshcat visualizer. Drake's Simulator runs it and the Meshcat recording becomes one page,
``beetle.html``. Standing still, the ground carries the robot's weight.
"""

import argparse
import tempfile
from pathlib import Path

import numpy as np
from pydrake.geometry import MeshcatVisualizer
from pydrake.multibody.plant import AddMultibodyPlant, MultibodyPlantConfig
from pydrake.systems.analysis import Simulator
from pydrake.systems.framework import DiagramBuilder
from pydrake.systems.primitives import ConstantVectorSource

from drakebots.skinned.robot import AddSkinnedQuadruped
from drakebots.systems.ground import AddGround
from drakebots.visualization.meshcat import LocalMeshcat


def main(fast: bool = False, out: str | None = None) -> dict:
    builder = DiagramBuilder()
    config = MultibodyPlantConfig(time_step=1e-3, discrete_contact_approximation="sap")
    plant, scene_graph = AddMultibodyPlant(config, builder)
    beetle = AddSkinnedQuadruped(plant, "beetle")
    AddGround(plant)
    plant.Finalize()
    # The servos (PD gains in the SDF) hold the home pose: desired [q, v] of the actuated joints.
    home, actuators = plant.CreateDefaultContext(), plant.GetJointActuatorIndices(beetle)
    q_home = [plant.get_joint_actuator(i).joint().GetOnePosition(home) for i in actuators]
    target = builder.AddSystem(ConstantVectorSource(np.concatenate([q_home, 0 * np.array(q_home)])))
    builder.Connect(target.get_output_port(), plant.get_desired_state_input_port(beetle))
    MeshcatVisualizer.AddToBuilder(builder, scene_graph, meshcat := LocalMeshcat())
    simulator = Simulator(builder.Build())
    meshcat.StartRecording()
    simulator.AdvanceTo(0.3 if fast else 2.0)
    meshcat.StopRecording()
    meshcat.PublishRecording()
    (page := Path(out or tempfile.mkdtemp()) / "beetle.html").parent.mkdir(exist_ok=True)
    page.write_text(meshcat.StaticHtml())
    context = plant.GetMyContextFromRoot(simulator.get_context())
    contacts = plant.get_contact_results_output_port().Eval(context)
    infos = map(contacts.point_pair_contact_info, range(contacts.num_point_pair_contacts()))
    ground_force = sum(abs(info.contact_force()[2]) for info in infos)  # on the feet, N
    weight = plant.CalcTotalMass(context, [beetle]) * 9.81
    print(f"ground force {ground_force:.2f} N for a weight of {weight:.2f} N; replay: {page}")
    return {"page": str(page), "ground_force": ground_force, "weight": float(weight)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="a skinned robot in your own diagram")
    parser.add_argument("--fast", action="store_true", help="0.3 s instead of 2 s")
    parser.add_argument("--out", default=None, help="folder for beetle.html (default: a temp one)")
    main(**vars(parser.parse_args()))
