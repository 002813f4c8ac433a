"""Supervision of execution actors: the registry (the one address book), recovery, respawn,
quarantine; starting executions and waiting for them to finish."""

from .registry import Registry
from .supervisor import RestartIntensity, Supervisor

__all__ = ["Registry", "RestartIntensity", "Supervisor"]
