"""drakebots: modelling, simulation and motion optimisation of soft and small legged robots.

`import drakebots` stays light (the version only); the workflows that serve any robot are here
by name, imported when first used:

    from drakebots import Simulate, SimulateConfig
    result = Simulate(SimulateConfig(robot="beetle", duration=0.5))
"""

__version__ = "0.1.0"

# Name -> the foundation module defining it (imported on first access, PEP 562).
_LAZY = {
    "Simulate": "drakebots.systems.simulate",
    "SimulateConfig": "drakebots.systems.simulate",
    "SimulateResult": "drakebots.systems.simulate",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'drakebots' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
