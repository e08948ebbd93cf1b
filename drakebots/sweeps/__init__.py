"""Sweeps: many runs of one workflow over a grid or list of cases (`drakebots sweep`).

This folder holds the shipped sweep files (*.yaml, listed by `drakebots sweep --list`) and
plots.py, the figures of a sweep's results table. It sits above the family wings and below cli/.
"""
