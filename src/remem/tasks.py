"""The background tasks, one function each, called alike by the CLI (``remem embed``, ``remem sync``,
``remem import``), the library (``Remem.embed_pending`` / ``index_pending``) and the daemon's job
runner (the handlers in ``server/jobkinds.py`` only adapt a job's payload, progress and controls).

- ``embed``: vectors for turns waiting for them (every write leaves its turns in that backlog).
- ``index``: the trigram (substring) index and missing entities for turns written in bulk.
- ``sync``: new agent history through the sync engine (``remem.sources.sync``).
- ``discover``: the "add another agent" flow (``remem.sources.custom.add_custom_source``).

Each takes the ``Remem`` it works on, a ``should_stop`` callable checked between units of work
(a job's pause / stop control blocks in it) and a ``report`` callable that receives progress dicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import RememError
from .ingest.deferred import index_rows

if TYPE_CHECKING:
    from .core import Remem

ONNX_BACKLOG = 300  # texts at which embedding in this process builds or loads the onnxruntime encoder first
INDEX_BATCH = 2000  # turns per transaction of the index task

Report = Callable[[dict[str, Any]], None]


class EmbedderUnavailable(RememError):
    """Embeddings are on but the configured model cannot be loaded (the message says why)."""


def _never() -> bool:
    return False


def _ignore(_: dict[str, Any]) -> None:
    return None


def embed(mem: Remem, *, limit: int | None = None, check_model: bool = False, wait_for_runtime: bool = True,
          should_stop: Callable[[], bool] = _never, report: Report = _ignore) -> dict[str, Any]:
    """Embed the turns waiting for vectors, newest first, in batches outside any write transaction.

    ``check_model``: first mark pending every turn without a vector of the loaded model (after a
    model change). ``wait_for_runtime``: a backlog of ``ONNX_BACKLOG`` or more first builds or
    loads the faster runtime (a few seconds once, then ~3x faster per text); the daemon prepares
    it in the background at start-up instead. Raises EmbedderUnavailable when the model cannot load."""
    from .embed.worker import reset_for_model, run_pending

    if not mem.config.get("embedding.enabled"):
        return {"embedded": 0, "note": "embeddings are disabled in settings"}
    report({"phase": "loading model"})
    emb = mem.embedder()
    if emb is None:
        raise EmbedderUnavailable(f"embedder unavailable: {mem.embedder_error}")
    reset = reset_for_model(mem.store, emb.model_id) if check_model else 0
    total = mem.store.turns.embed_backlog()
    if wait_for_runtime and min(total, limit or total) >= ONNX_BACKLOG:
        mem.prepare_onnx(wait=True)
    report({"phase": "embedding", "done": 0, "total": total, "model": emb.model_id})
    done = run_pending(mem.store, emb, batch_size=int(mem.config.get("embedding.batch_size")), limit=limit,
                       should_stop=should_stop, rate_file=mem.embed_rate_file, total=total,
                       on_progress=lambda d, t: report({"done": d, "total": max(t, d)}))
    return {"embedded": done, "model": emb.model_id, "reset_for_model": reset}


def index(mem: Remem, *, should_stop: Callable[[], bool] = _never, report: Report = _ignore) -> dict[str, Any]:
    """Move turns written in bulk into the trigram (substring) index, a batch per transaction."""
    store = mem.store
    total = store.turns.text_backlog()
    done = 0
    report({"phase": "indexing", "done": 0, "total": total})
    while not should_stop():
        with store.transaction():
            n = index_rows(store, limit=INDEX_BATCH)
        if not n:
            break
        done += n
        report({"done": done, "total": max(total, done)})
    return {"indexed": done}


def sync(mem: Remem, agents: list[str] | None = None, *, full: bool = False, control: Any = None,
         on_progress: Callable[[dict[str, Any]], None] | None = None, engine: Any = None) -> Any:
    """Import new history of every detected agent (or only ``agents``) through the sync engine
    (``engine``: the module, when the caller loaded it already). Returns the engine's result."""
    if engine is None:
        from .sources import sync as engine
    return engine.run_sync(mem, agents, full=full, control=control, on_progress=on_progress)


def discover(mem: Remem, name: str, paths: list[str], *, on_progress: Report | None = None,
             add_source: Callable[..., Any] | None = None) -> Any:
    """Find, check and import another agent's history by name (``remem sources add``).
    ``add_source``: the discovery function the daemon loaded (it may not take progress events)."""
    if add_source is None:
        from .sources.custom import add_custom_source

        return add_custom_source(mem, name, paths, on_progress=on_progress)
    try:
        return add_source(mem, name, paths, on_progress=on_progress)
    except TypeError:
        return add_source(mem, name, paths)
