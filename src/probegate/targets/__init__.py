"""Targets: one module per kind behind :class:`probegate.targets.base.Target`.

The registry of kinds lives in :mod:`probegate.targets.registry`.
"""
