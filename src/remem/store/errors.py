"""Storage errors shared by every engine."""

from __future__ import annotations

from ..errors import RememError


class StoreError(RememError, RuntimeError):
    """A storage failure worth one clear line to the user (corrupt file, full disk, read-only)."""
