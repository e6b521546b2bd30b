"""Background embedding: rows wait in ``embed_state='pending'`` and are embedded in batches,
outside any write transaction; a changed model re-embeds everything in the background."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from ..store.db import transaction
from ..store.vectors import put_many

log = logging.getLogger("remem.embed")

FIELDS = ("summary", "actions")


# Embedding cost grows faster than text length (attention), and the default model does ~17 short
# texts per CPU second: embed what carries the signal, capped, never whole turns.
REQUEST_CHARS = 700
GIST_CHARS = 300
ACTIONS_CHARS = 600


def embed_text(request: str, summary: str, reply: str) -> str:
    """What the 'summary' vector sees: the request carries most of the signal, then the gist."""
    return (request[:REQUEST_CHARS] + "\n" + (summary or reply)[:GIST_CHARS]).strip()


def run_pending(db: sqlite3.Connection, embedder: Any, *, batch_size: int = 32, limit: int | None = None,
                should_stop: Callable[[], bool] = lambda: False,
                on_progress: Callable[[int, int], None] | None = None) -> int:
    """Embed pending turns with ``embedder``; returns how many turns were embedded."""
    import numpy as np

    model_id = embedder.model_id
    done = 0
    total = db.execute("SELECT count(*) FROM turns WHERE embed_state = 'pending'").fetchone()[0]
    while not should_stop():
        rows = db.execute(
            "SELECT id, owner, agent, project, request, reply, summary, actions, content_hash FROM turns "
            "WHERE embed_state = 'pending' ORDER BY rowid LIMIT ?", (batch_size,)).fetchall()
        if not rows:
            break
        texts = [embed_text(r["request"], r["summary"], r["reply"]) for r in rows]
        act_rows = [r for r in rows if r["actions"]]
        try:
            vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
            avecs = (np.asarray(embedder.embed([r["actions"][:ACTIONS_CHARS] for r in act_rows]), dtype=np.float32)
                     if act_rows else None)
        except Exception as e:  # the model broke: mark the batch failed, keep lexical search working
            log.warning("embedding failed: %s", e)
            with transaction(db):
                db.executemany("UPDATE turns SET embed_state='failed' WHERE id=?", [(r["id"],) for r in rows])
            continue
        out = []
        for r, v in zip(rows, vecs, strict=True):
            out.append(("turn", r["id"], "summary", model_id, int(v.shape[0]), v.tobytes(), r["content_hash"],
                        r["owner"], r["agent"], r["project"]))
        if avecs is not None:
            for r, v in zip(act_rows, avecs, strict=True):
                out.append(("turn", r["id"], "actions", model_id, int(v.shape[0]), v.tobytes(),
                            r["content_hash"], r["owner"], r["agent"], r["project"]))
        with transaction(db):
            put_many(db, out)
            # only rows whose content did not change meanwhile are done
            db.executemany("UPDATE turns SET embed_state='done' WHERE id=? AND content_hash=?",
                           [(r["id"], r["content_hash"]) for r in rows])
        done += len(rows)
        if on_progress:
            on_progress(done, total)
        if limit is not None and done >= limit:
            break
    return done


def reset_for_model(db: sqlite3.Connection, model_id: str) -> int:
    """Mark turns without a vector of ``model_id`` pending (after a model change)."""
    with transaction(db):
        return db.execute(
            "UPDATE turns SET embed_state='pending' WHERE embed_state != 'pending' AND id NOT IN "
            "(SELECT row_id FROM embeddings WHERE row_kind='turn' AND field='summary' AND model_id=?)",
            (model_id,)).rowcount
