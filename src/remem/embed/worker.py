"""Background embedding: rows wait in ``embed_state='pending'`` and are embedded in batches,
outside any write transaction; a changed model re-embeds everything in the background."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .embedtext import actions_from_row, summary_text

if TYPE_CHECKING:
    from ..store.protocols import WriteStore

log = logging.getLogger("remem.embed")

FIELDS = ("summary", "actions")

#: where the last measured embedding rate is kept (in REMEM_HOME), for the backlog's ETA
RATE_FILE = "embed_rate.json"
# a rate measured over fewer turns says little (model loading, the first batch's warm-up)
MIN_RATE_TURNS = 32
RATE_EVERY = 15.0  # seconds between two writes of the rate during a run


def embed_text(request: str, summary: str, reply: str) -> str:
    """What the 'summary' vector sees (embed/embedtext.py)."""
    return summary_text(request, summary, reply)


def run_pending(store: WriteStore, embedder: Any, *, batch_size: int = 32, limit: int | None = None,
                should_stop: Callable[[], bool] = lambda: False,
                on_progress: Callable[[int, int], None] | None = None,
                rate_file: Path | None = None, total: int | None = None) -> int:
    """Embed pending turns with ``embedder``, the newest first (recent work gets its vectors
    soonest); returns how many turns were embedded. With ``rate_file``, the turns per second of
    this run are written there (see :func:`backlog`). ``total``: the backlog when the caller
    counted it already (for ``on_progress``)."""
    import numpy as np

    model_id = embedder.model_id
    done = 0
    spent, saved = 0.0, time.monotonic()
    if total is None:
        total = store.turns.embed_backlog()
    rows: Any = None  # the last batch read: empty when the backlog is drained
    while not should_stop():
        t0 = time.perf_counter()
        rows = store.turns.embed_batch(batch_size)
        if not rows:
            break
        texts = [summary_text(r["request"], r["summary"], r["reply"]) for r in rows]
        acts = [(r, a) for r in rows if (a := actions_from_row(r["actions_json"], r["actions"]))]
        try:
            # both fields in one call: the model's workers share one queue
            both = np.asarray(embedder.embed(texts + [a for _, a in acts]), dtype=np.float32)
            vecs, avecs = both[:len(texts)], (both[len(texts):] if acts else None)
        except Exception as e:  # the model broke: mark the batch failed, keep lexical search working
            log.warning("embedding failed: %s", e)
            with store.transaction():
                store.turns.mark_embed_failed([r["id"] for r in rows])
            continue
        out = []
        for r, v in zip(rows, vecs, strict=True):
            out.append(("turn", r["id"], "summary", model_id, int(v.shape[0]), v.tobytes(), r["content_hash"],
                        r["owner"], r["agent"], r["project"]))
        if avecs is not None:
            for (r, _), v in zip(acts, avecs, strict=True):
                out.append(("turn", r["id"], "actions", model_id, int(v.shape[0]), v.tobytes(),
                            r["content_hash"], r["owner"], r["agent"], r["project"]))
        with store.transaction():
            store.vectors.put_many(out)
            # only rows whose content did not change meanwhile are done
            store.turns.mark_embedded([(r["id"], r["content_hash"]) for r in rows])
        spent += time.perf_counter() - t0  # selection, model and writes: what the backlog costs
        done += len(rows)
        if on_progress:
            on_progress(done, total)
        if rate_file is not None and done >= MIN_RATE_TURNS and time.monotonic() - saved > RATE_EVERY:
            save_rate(rate_file, model_id, done / spent)  # a long backlog's ETA is fresh meanwhile
            saved = time.monotonic()
        if limit is not None and done >= limit:
            break
    if rate_file is not None and done >= MIN_RATE_TURNS and spent > 0:
        save_rate(rate_file, model_id, done / spent)
    if done and rows is not None and not rows:
        settle(store)
    return done


def settle(store: WriteStore) -> None:
    """The backlog is drained: an engine that indexes vectors itself builds what it lacks now
    (PostgreSQL's HNSW indexes; nothing on SQLite). A failure leaves search exact, never the job failed."""
    fn = getattr(store.vectors, "settle", None)
    if fn is None:
        return
    try:
        built = fn()
        if built:
            log.info("built vector indexes: %s", ", ".join(built))
    except Exception as e:  # the index is an optimisation: the same query scans exactly without it
        log.warning("cannot build the vector index yet: %s", e)


def save_rate(path: Path, model_id: str, turns_per_s: float) -> None:
    """Remember the measured rate (atomically; a home that cannot be written keeps the old one)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(json.dumps({"model": model_id, "turns_per_s": round(turns_per_s, 2),
                                   "at": time.time()}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        log.debug("cannot write %s: %s", path, e)


def backlog(store: WriteStore, rate_file: Path | None, model_id: str | None = None) -> dict[str, Any]:
    """Turns waiting for vectors, the last measured rate and the ETA in seconds from it (None
    when no rate was measured yet, or it was for another model than ``model_id``)."""
    pending = store.turns.embed_backlog()
    rate = None
    try:
        doc = json.loads(rate_file.read_text(encoding="utf-8")) if rate_file is not None else None
        if isinstance(doc, dict) and (model_id is None or doc.get("model") == model_id):
            r = float(doc.get("turns_per_s") or 0)
            rate = r if r > 0 else None
    except (OSError, ValueError, TypeError):
        rate = None
    eta = round(pending / rate) if rate and pending else (0 if not pending else None)
    return {"pending": pending, "turns_per_s": rate, "eta_seconds": eta}


def reset_for_model(store: WriteStore, model_id: str) -> int:
    """Mark turns without a vector of ``model_id`` pending (after a model change)."""
    with store.transaction():
        return store.turns.reembed_for_model(model_id)
