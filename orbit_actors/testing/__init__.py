"""Helpers shipped for tests of Orbit and of code built on it."""

from .driver import Driver

__all__ = ["Driver"]
