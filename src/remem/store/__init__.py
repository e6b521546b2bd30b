"""Storage: connection and pragmas, forward-only migrations, repositories.

Nothing above this package writes SQL; every read here takes a Scope.
"""

from .db import StoreError, connect, transaction
from .migrations import migrate

__all__ = ["StoreError", "connect", "migrate", "transaction"]
