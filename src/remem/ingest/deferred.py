"""Index work that follows a write: the trigram index (and entities of rows that have none).

Every write records its entity rows in its own transaction (``pipeline.persist``). Small writes
(the CLI, hooks) also fill the trigram index at once; imports leave that to the background
``index`` job so they stay fast. Rows waiting for it have ``turns.trgm = 0`` and are still found
by the word, CJK, entity and vector channels meanwhile. Rows written before entities were inline
(or with no entity at all) are extracted here.
"""

from __future__ import annotations

import sqlite3

from ..index.entities import index_turn
from ..store.sqlite.turns import index_trigram


def index_rows(db: sqlite3.Connection, *, rowids: list[int] | None = None, limit: int = 2000) -> int:
    """Entities + trigram for pending turns (caller holds a write transaction). Returns rows done."""
    if rowids is not None:
        if not rowids:
            return 0
        marks = ",".join("?" * len(rowids))
        rows = db.execute(f"SELECT rowid, id, owner, request, reply, actions FROM turns WHERE trgm = 0 "
                          f"AND rowid IN ({marks})", rowids).fetchall()
    else:
        rows = db.execute("SELECT rowid, id, owner, request, reply, actions FROM turns WHERE trgm = 0 "
                          "LIMIT ?", (limit,)).fetchall()
    for r in rows:
        if db.execute("SELECT 1 FROM entity_mentions WHERE turn_id = ? LIMIT 1", (r["id"],)).fetchone():
            continue  # recorded by the write itself
        index_turn(db, r["owner"], r["id"], r["request"], r["reply"], r["actions"], replace=True)
    return index_trigram(db, rowids=[r["rowid"] for r in rows])
