"""Learning: preferences, conventions, decisions, procedures and the project world model, offline.

Pure and deterministic: ``learn(turns)`` turns plain ``Turn`` values into ``Memory`` values that
cite their evidence turns. The store wiring (events, review, recall channel) is built on top.
"""

from __future__ import annotations

from .learn import learn, observe
from .types import Action, Evidence, Memory, Observation, Turn

__all__ = ["Action", "Evidence", "Memory", "Observation", "Turn", "learn", "observe"]
