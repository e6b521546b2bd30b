"""Learning: preferences, conventions, decisions, procedures and the project world model, offline.

Pure and deterministic: ``learn(turns)`` (in ``remem.layers.learn``) turns plain ``Turn`` values into
``Memory`` values that cite their evidence turns. The store wiring (events, review, recall channel) is
built on top.

The package itself imports only its value types: recall reads a few small modules of it (the repair
trigger, the selection of learned memories) and must not load the learner's regexes (~0.1 s) with them.
"""

from __future__ import annotations

from .types import Action, Evidence, Memory, Observation, Turn

__all__ = ["Action", "Evidence", "Memory", "Observation", "Turn"]
