"""drakebots: modelling, simulation and motion optimisation of soft and small legged robots."""

__version__ = "0.1.0"
