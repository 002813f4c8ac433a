"""Supervision of execution actors: registry, recovery, respawn, quarantine."""

from .supervisor import RestartIntensity, Supervisor

__all__ = ["RestartIntensity", "Supervisor"]
