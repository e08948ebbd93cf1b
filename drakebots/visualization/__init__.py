"""Meshcat playback, static-HTML replay export, and matplotlib plots."""
