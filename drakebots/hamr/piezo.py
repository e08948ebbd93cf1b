"""Piezoelectric bending actuators (HAMR-VI's eight benders): force from voltage and deflection.

The paper (hamr-contact-implicit.txt, section II-B, Eq. 3) models each actuator as a force source
in parallel with a spring, F_act = B(q)^T (F_s(u, q) - K q), with an affine approximation of the
force source of Jafferis et al. (2015). The force source here is that model as the authors wrote
it (their PZTBender class; reference facts in shared/reference/hamr-vi/README.md):

- a bimorph of two PZT plates (thickness t_pzt) on a carbon-fibre core (t_cf = t_act - 2 t_pzt),
  tapered (width ratio w_r) with a rigid extension (l_ext) beyond its active length l_act;
- simultaneous drive: a bias V_b = 225 V across the stack, the drive voltage V on the middle
  electrode, so the top plate sees V_t = V_b - V and the bottom plate V_bot = V - V_g;
- each plate's effective piezoelectric stress coefficient moves linearly from its blocked value
  f31_b (0.024) to its free value f31_f (0.032) as the tip deflection q approaches the free
  deflection δ_f, so each plate's force per volt is affine in q:

      C_top(q) = C0 (f31_b - σ q/δ_f (f31_f - f31_b)),
      C_bot(q) = C0 (f31_b + σ q/δ_f (f31_f - f31_b)),

  with C0 = 0.75 w_n (t_pzt + t_cf) GF / l_act and σ the bender's orientation (±1);
- the force on the actuator joint: F_s = σ (C_top(q) V_t - C_bot(q) V_bot).

At the mid voltage V_b/2 the force is zero at q = 0 and the model adds a restoring stiffness
2 C0 (V_b/2)(f31_f - f31_b)/δ_f (0.385 N/mm); at V = 0 or 225 V it gives the blocked force
±C0 f31_b V_b = ±0.324 N. The bender's own spring K (1.1556 N/mm for this geometry,
`PiezoBenderParams.stiffness`) is *not* part of F_s: in drakebots it is a PrismaticSpring in the
plant (AddHamr), so that the plant's potential energy holds it (the paper's "-Kq" of Eq. 3).

Units: mm, V, N; moduli in N/mm² (MPa); f31 in N/(mm·V) (stress per field; 24 Pa·m/V in SI is
0.024 N/(mm·V), the authors' scaled value).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math

import numpy as np
from pydrake.systems.framework import BasicVector, LeafSystem

LOGGER = logging.getLogger("drakebots.hamr.piezo")


@dataclasses.dataclass(frozen=True)
class PiezoBenderParams:
    """Geometry, materials and drive of a PZT bimorph bending actuator (HAMR-VI's defaults).

    Attributes (units mm, V, N/mm²):
        t_act: total thickness, mm.
        t_pzt: thickness of one PZT plate, mm.
        width: nominal (root) width w_n, mm.
        width_ratio: root-to-tip width ratio w_r.
        l_ext: rigid extension length, mm.
        l_act: active length, mm.
        f31_blocked, f31_free: effective piezoelectric stress coefficients, N/(mm·V).
        E_pzt: average PZT modulus, N/mm² (the reference's Eave; its sigmoid spans 38.5e3-81e3).
        E_cf: carbon-fibre modulus, N/mm².
        bias_voltage: V_b, V. ground_voltage: V_g, V.
    """

    t_act: float = 0.335
    t_pzt: float = 0.135
    width: float = 3.5
    width_ratio: float = 1.5
    l_ext: float = 1.0
    l_act: float = 9.2
    f31_blocked: float = 24e-3
    f31_free: float = 32e-3
    E_pzt: float = 40e3  # noqa: N815 (a modulus is E)
    E_cf: float = 340e3  # noqa: N815
    bias_voltage: float = 225.0
    ground_voltage: float = 0.0

    @property
    def t_cf(self) -> float:
        """Carbon-fibre core thickness, mm."""
        return self.t_act - 2.0 * self.t_pzt

    @property
    def geometry_factor(self) -> float:
        """GF of Jafferis et al. (2015) for a tapered bender with an extension."""
        wr, lr = self.width_ratio, self.l_ext / self.l_act
        numerator = 8.0 * (1.0 - wr) ** 3 * (1.0 + 2.0 * lr)
        denominator = -6.0 * (wr - 1.0) * (-3.0 + 4.0 * lr * (wr - 1.0) + 2.0 * wr) + 3.0 * (
            -2.0 + 2.0 * lr * (wr - 1.0) + wr
        ) ** 2 * math.log((2.0 - wr) / wr)
        return numerator / denominator

    @property
    def _bending_rigidity(self) -> float:
        """Per-unit-width flexural rigidity of the laminate, N·mm."""
        t, c = self.t_pzt, self.t_cf
        return (1.0 / 3.0) * self.E_pzt * t * (1.5 * c * c + 3.0 * c * t + 2.0 * t * t) + (
            self.E_cf * c**3 / 12.0
        )

    @property
    def free_deflection(self) -> float:
        """δ_f: tip deflection with no load at the full field V_b / t_pzt, mm."""
        field = (self.bias_voltage - self.ground_voltage) / self.t_pzt
        lr = self.l_ext / self.l_act
        numerator = self.f31_free * self.t_pzt * self.l_act**2 * field * (self.t_pzt + self.t_cf)
        return 0.25 * (1.0 + 2.0 * lr) * numerator / self._bending_rigidity

    @property
    def stiffness(self) -> float:
        """The bender's tip stiffness, N/mm (the "K" of Eq. 3; 1.1556 N/mm for the defaults)."""
        return (
            3.0
            * (self.f31_blocked / self.f31_free)
            * (self.width / self.l_act**3)
            * self.geometry_factor
            * self._bending_rigidity
            / (1.0 + 2.0 * self.l_ext / self.l_act)
        )

    @property
    def force_per_volt(self) -> float:
        """C0 f31_blocked: force per volt of one plate at zero deflection, N/V."""
        return self._C0 * self.f31_blocked

    @property
    def blocked_force(self) -> float:
        """Force at zero deflection with the full bias on one plate (V = 0 or V_b), N."""
        return self.force_per_volt * (self.bias_voltage - self.ground_voltage)

    @property
    def mid_voltage(self) -> float:
        """The drive voltage at which the bender exerts no force at zero deflection, V."""
        return 0.5 * (self.bias_voltage + self.ground_voltage)

    @property
    def _C0(self) -> float:
        return 0.75 * self.width * (self.t_pzt + self.t_cf) * self.geometry_factor / self.l_act


@functools.cache
def DefaultPiezoBender() -> PiezoBenderParams:
    """HAMR-VI's bender (the reference's PZTBender defaults)."""
    return PiezoBenderParams()


def PiezoBenderForce(voltage, deflection, orientation=1.0, params: PiezoBenderParams | None = None):
    """The affine force source F_s(V, q) of the paper's Eq. 3 and its partial derivatives.

    Vectorised over arrays of equal shape (or broadcastable). Pure arithmetic, so it also takes
    AutoDiffXd or symbolic object arrays.

    Args:
        voltage: drive voltage V, V (the model is meant for [V_g, V_b]; nothing is clamped here).
        deflection: actuator tip deflection q, mm (the actuator joint's position).
        orientation: ±1, the bender's orientation σ (drakebots.hamr.robot.ACTUATOR_ORIENTATION).
        params: the bender (default: HAMR-VI's).

    Returns:
        (force N, ∂force/∂V in N/V, ∂force/∂q in N/mm).
    """
    p = params or DefaultPiezoBender()
    V = voltage
    q = deflection
    s = orientation
    V_top = p.bias_voltage - V
    V_bottom = V - p.ground_voltage
    slope = p._C0 * (p.f31_free - p.f31_blocked) / p.free_deflection  # N/(V·mm)
    C_top = p._C0 * p.f31_blocked - s * slope * q
    C_bottom = p._C0 * p.f31_blocked + s * slope * q
    force = s * (C_top * V_top - C_bottom * V_bottom)
    dforce_dvoltage = -s * (C_top + C_bottom)
    dforce_ddeflection = s * (-s * slope * V_top - s * slope * V_bottom)
    return force, dforce_dvoltage, dforce_ddeflection


class PiezoBenders(LeafSystem):
    """Drive voltages and actuator deflections in, actuator forces out (paper Eq. 3, force source).

    Double only.

    voltage, state -> PiezoBenders -> force

    Args:
        deflection_indices: for each actuator, the index of its deflection in the `state` input
            (the plant's state: its prismatic actuator joint's position).
        num_states: size of the `state` input.
        orientations: each bender's orientation (±1).
        params: the bender (default: HAMR-VI's).
        saturate: clamp voltages to [V_g, V_b] (the paper's drive limits [0, 225] V); the first
            clamp logs one warning naming the actuator and the voltage.
        names: actuator names for messages.

    The force excludes the bender's spring, which the plant carries (see the module docstring).
    """

    def __init__(
        self,
        deflection_indices,
        num_states: int,
        orientations,
        params: PiezoBenderParams | None = None,
        *,
        saturate: bool = True,
        names=None,
    ):
        super().__init__()
        self._indices = np.asarray(deflection_indices, int)
        count = len(self._indices)
        self._orientations = np.asarray(orientations, float)
        self._params = params or DefaultPiezoBender()
        self._saturate = saturate
        self._names = list(names) if names is not None else [f"actuator{i}" for i in range(count)]
        self._warned = False
        self._voltage_port = self.DeclareVectorInputPort("voltage", count)
        self._state_port = self.DeclareVectorInputPort("state", num_states)
        self._force_port = self.DeclareVectorOutputPort("force", count, self._CalcForce)
        self._voltage_log_port = self.DeclareVectorOutputPort(
            "applied_voltage", count, self._CalcAppliedVoltage
        )

    def get_voltage_input_port(self):
        return self._voltage_port

    def get_state_input_port(self):
        return self._state_port

    def get_force_output_port(self):
        return self._force_port

    def get_applied_voltage_output_port(self):
        """The voltages after saturation."""
        return self._voltage_log_port

    def _Voltages(self, context) -> np.ndarray:
        V = self._voltage_port.Eval(context)
        if not self._saturate:
            return V
        low, high = self._params.ground_voltage, self._params.bias_voltage
        clamped = np.clip(V, low, high)
        if not self._warned and np.any(clamped != V):
            k = int(np.argmax(np.abs(clamped - V)))
            LOGGER.warning(
                "piezo drive voltage %.4g V on %s is outside [%g, %g] V; saturating (warned once)",
                V[k],
                self._names[k],
                low,
                high,
            )
            self._warned = True
        return clamped

    def _CalcAppliedVoltage(self, context, output: BasicVector):
        output.SetFromVector(self._Voltages(context))

    def _CalcForce(self, context, output: BasicVector):
        q = self._state_port.Eval(context)[self._indices]
        force, _, _ = PiezoBenderForce(self._Voltages(context), q, self._orientations, self._params)
        output.SetFromVector(force)
