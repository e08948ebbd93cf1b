"""Metrics on arrays (velocities per cycle, slip, COP margins, modal frequencies, energy)."""
