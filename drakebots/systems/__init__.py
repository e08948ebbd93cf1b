"""Drake systems and diagrams: ground, controllers, actuators, the coupled skin, simulation runs."""
