"""What recall runs on: ``RecallContext`` (the store's read areas, the embedder, the settings, a clock).

Recall imports nothing of the façade (``remem.core``): the façade builds one context (lazily, on its
first recall) and passes it to every entry point. Recall's caches live on the context (the scope
corpora, recent query vectors, the in-memory vector indexes) or on the store's areas (word
statistics, scope sizes), so a second store, or a second handle, never shares them by accident.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..scope import Scope
from ..store.errors import StoreError
from ..store.protocols import Candidates, EntityLookups, RecallStore, TextIndex, VectorSearch
from . import okapi


@dataclass(frozen=True, slots=True)
class RecallSettings:
    """The settings recall reads (``embedding.enabled``, ``embedding.related_margin``, ``recall.token_budget``,
    ``learn.retention.half_life_*``)."""

    embedding_enabled: bool = True
    related_margin: float | str = "auto"  # a vector hit's margin over the typical memory; "auto": the model's
    token_budget: int = 2000              # the packet's default budget (turn_start)
    half_lives: tuple[float, ...] = ()    # learn.retention.half_life_* in ``layers.retention.HalfLives``'
    #                                       order (rules, decisions, facts, procedures, working state, other);
    #                                       empty: its defaults. Fading memories sink in a packet's order.


def _no_embedder() -> Any:
    return None


class RecallContext:
    """One store's recall inputs. Cheap to build; the caches fill on use."""

    def __init__(self, store: RecallStore, *, embedder: Callable[[], Any] = _no_embedder,
                 embedder_error: Callable[[], str] = lambda: "embeddings not configured",
                 settings: RecallSettings | Callable[[], RecallSettings] = RecallSettings(),
                 clock: Callable[[], float] = time.time,
                 on_shown: Callable[[Scope, list[str], float], None] | None = None) -> None:
        self.store = store
        self.text: TextIndex = store.text
        self.candidates: Candidates = store.candidates
        self.entities: EntityLookups = store.entities
        self._embedder = embedder
        self._embedder_error = embedder_error
        self._settings = settings
        self.clock = clock
        self._on_shown = on_shown
        self.corpora = okapi.Corpora()
        self.query_vectors: dict[tuple[str, str], Any] = {}  # (model id, text) → vector: turn_start, then search
        self._vectors: VectorSearch | None = None
        # what a failing channel becomes (an unavailable channel with its reason, never an error)
        self.errors: tuple[type[BaseException], ...] = (*store.errors, StoreError, ValueError, RuntimeError,
                                                        OSError, MemoryError)

    @property
    def settings(self) -> RecallSettings:
        """The settings now (read at each use: they can change while a daemon runs)."""
        s = self._settings
        return s if isinstance(s, RecallSettings) else s()

    def embedder(self) -> Any:
        """The query embedder, or None (then :attr:`embedder_error` says why)."""
        return self._embedder()

    @property
    def embedder_error(self) -> str:
        return self._embedder_error()

    @property
    def vectors(self) -> VectorSearch:
        """The vector search: the store's own when it searches vectors itself (``store.vectors.searcher()``:
        PostgreSQL with pgvector), else in-memory indexes over ``store.vectors`` (numpy: loaded on the
        first vector search)."""
        if self._vectors is None:
            own = getattr(self.store.vectors, "searcher", None)
            if own is not None:
                self._vectors = own()
            else:
                from ..recall.vectors import VectorIndexes

                self._vectors = VectorIndexes(self.store.vectors)
        return self._vectors

    def now(self) -> float:
        return self.clock()

    def warm(self) -> dict[str, Any]:
        """Count the common words and load the embedder's model and the vector indexes of its fields
        ahead of the first search (``{"doc_freqs": words counted, "vectors": rows loaded}``, or why
        nothing was; PostgreSQL holds no vectors in memory and counts words on demand)."""
        out: dict[str, Any] = {"doc_freqs": self.text.warm_doc_freqs()}
        recall_settings = self.settings  # a RecallSettings (built from declared keys), not the settings model
        if not recall_settings.embedding_enabled:
            return {**out, "vectors": "not loaded: embeddings are off"}
        emb = self.embedder()
        if emb is None:
            return {**out, "vectors": f"not loaded: {self.embedder_error}"}
        if hasattr(emb, "load"):
            emb.load()
        from .gate import VECTOR_FIELDS

        fields = list(dict.fromkeys(VECTOR_FIELDS.values()))
        return {**out, "vectors": self.vectors.load(emb.model_id, fields, int(emb.dim))}

    def shown(self, scope: Scope, ids: list[str], now: float) -> None:
        """Recall showed these turns to an agent (their access counts); never raises."""
        if self._on_shown is None or not ids:
            return
        try:
            self._on_shown(scope, ids, now)
        except Exception:  # access counts are a nicety; a busy database must not cost the agent its packet
            pass

    def forget(self) -> None:
        """Deleted turns must leave the cached corpora and word counts at once (not after a rebuild)."""
        self.corpora.forget()
        self.text.forget()
