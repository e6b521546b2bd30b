"""Storage errors shared by every engine."""

from __future__ import annotations

import sqlite3

from ..errors import RememError


class StoreError(RememError, RuntimeError):
    """A storage failure worth one clear line to the user (corrupt file, full disk, read-only)."""


class Locked(StoreError):
    """``transaction(wait=False)`` met another writer holding the lock: nothing was written; the same
    work can be tried again later."""


#: What a storage call may raise: StoreError, and an engine's own error from a read not yet behind an
#: area method (every area method and ``store.transaction()`` already turn it into StoreError). The
#: faces (CLI, API, MCP) catch these; a PostgreSQL engine adds its own error type here.
ENGINE_ERRORS: tuple[type[Exception], ...] = (StoreError, sqlite3.Error)
