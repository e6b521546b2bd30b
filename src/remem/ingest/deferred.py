"""Index work that follows a write: the trigram index (and entities of rows that have none).

Every write records its entity rows in its own transaction (``pipeline.persist``). Small writes
(the CLI, hooks) also fill the trigram index at once; imports leave that to the background
``index`` task (``remem.tasks.index``) so they stay fast. Rows waiting for it are still found by
the word, CJK, entity and vector channels meanwhile. Rows written before entities were inline
(or with no entity at all) are extracted here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..text.entities import extract, turn_text

if TYPE_CHECKING:
    from ..store.protocols import WriteStore


def index_rows(store: WriteStore, *, ids: list[str] | None = None, limit: int = 2000) -> int:
    """Entities + trigram for pending turns (of ``ids``, or the first ``limit``), inside the
    caller's transaction. Returns rows done."""
    rows = store.turns.unindexed(ids=ids, limit=limit)
    store.turns.put_entities([(r["owner"], r["id"], extract(turn_text(r["request"], r["reply"], r["actions"])), True)
                              for r in rows if not r["has_entities"]])
    return store.turns.index_text([r["id"] for r in rows])
