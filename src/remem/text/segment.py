"""Text analysis: CJK-aware tokens for the text index (the query side is recall/query.py).

CJK text has no spaces, and SQLite 3.40's trigram tokenizer only matches ≥ 3 characters, so
every CJK run is indexed as its character bigrams (in order, so a phrase of bigrams matches any
substring) followed by jieba's search-mode words. jieba is imported lazily and only for text
that contains CJK: the hook's lexical fallback never pays for it.

jieba's dictionary takes ~0.6 s to load (a marshal of ~500,000 words and prefixes), more than half of
a cold ``remem search`` with a Chinese query. Queries segment a few characters, so a process that has
not loaded it looks up the words it needs in a copy of the dictionary (``query_tokenizer``: the same
frequencies, so the same words; a sorted file searched in place, ~1 ms to open), written by the first
process that loads it (:func:`dictionary`) into the user's cache folder.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import re
import struct
import sys
import threading
from array import array
from functools import lru_cache
from pathlib import Path
from typing import Any

from .cjk import CHAR as _HAS_CJK
from .cjk import LETTERS as _CJK
from .cjk import RUN as CJK_RUN

# words: letters/digits/underscore runs that are not CJK
WORD = re.compile(rf"[^\W{_CJK}]+", re.UNICODE)

# Segmenting is the costly part (jieba: ~2.5 µs per character, 5–17 ms for a long Chinese turn):
# the words of a turn's first 600 CJK characters (its request and the reply's opening) are
# indexed, the rest is bigrammed only. Queries match CJK as bigram phrases, so every character
# stays findable; the words count for how common a word is (coverage) and for 1-character prefixes.
MAX_SEGMENT_CHARS = 600


def has_cjk(text: str) -> bool:
    return bool(_HAS_CJK.search(text))


def bigrams(run: str) -> list[str]:
    if len(run) < 2:
        return [run] if run else []
    return [run[i : i + 2] for i in range(len(run) - 1)]


class _HidePkgResources:
    """A finder that makes ``import pkg_resources`` fail in one thread only (:func:`_jieba`'s)."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "pkg_resources" and threading.get_ident() == self.thread:
            raise ModuleNotFoundError("pkg_resources is hidden while jieba is imported", name=name)
        return None


@lru_cache(maxsize=1)
def _jieba():  # type: ignore[no-untyped-def]
    # jieba reads its files through pkg_resources when it can: importing that costs ~0.1 s, most of a
    # cold CLI's Chinese query past the dictionary. Hidden from this thread while jieba is imported,
    # jieba opens the same files from its own folder (as it does wherever setuptools is not installed).
    # Other threads import pkg_resources as ever, meanwhile and afterwards.
    hide = _HidePkgResources()
    sys.meta_path.insert(0, hide)
    try:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        return jieba
    except Exception:  # pragma: no cover - jieba is a dependency, but never fail a write on it
        return None
    finally:
        sys.meta_path.remove(hide)


log = logging.getLogger("remem.text")
COPY_MAGIC = b"remem-jieba-freq-1\n"
_HEAD = struct.Struct("<QI")   # the dictionary's total, its number of entries


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "remem"


def freq_cache_path(jb: Any) -> Path:
    """Where the copy of this jieba's dictionary lives (keyed by its version and size)."""
    size = (Path(jb.__file__).parent / "dict.txt").stat().st_size
    return _cache_dir() / f"jieba-{jb.__version__}-{size}.freq"


@lru_cache(maxsize=1)
def dictionary() -> Any:
    """jieba's tokenizer with its dictionary in memory (loaded on the first call; for indexing, where
    every character is looked up), None without jieba. The first load on a machine also writes the
    dictionary's copy that later processes' queries read (:func:`query_tokenizer`)."""
    jb = _jieba()
    if jb is None:
        return None
    jb.dt.check_initialized()
    try:
        save_freq_cache(jb.dt, freq_cache_path(jb))
    except (OSError, OverflowError, ValueError) as e:  # a read-only or full disk, a frequency past 2**32:
        # queries load the dictionary instead
        log.debug("jieba dictionary copy not written: %s", e)
    return jb.dt


def save_freq_cache(tok: Any, path: Path) -> None:
    """The tokenizer's frequencies (``FREQ``: its words and their prefixes) and total into ``path``,
    unless it is there: a header, the entries' offsets and frequencies (uint32), then the words in
    UTF-8, sorted by their bytes (:class:`FreqCopy` searches them in place). Written aside, then moved
    in: a reader never sees half of it."""
    if path.exists() or sys.byteorder != "little":   # (a big-endian machine loads the dictionary)
        return
    items = sorted((w.encode("utf-8"), int(f)) for w, f in tok.FREQ.items())
    offsets = array("I", [0])
    for w, _ in items:
        offsets.append(offsets[-1] + len(w))
    freqs = array("I", (f for _, f in items))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(COPY_MAGIC + _HEAD.pack(int(tok.total), len(items)))
            f.write(offsets.tobytes())
            f.write(freqs.tobytes())
            f.write(b"".join(w for w, _ in items))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class FreqCopy:
    """``FREQ`` of a jieba tokenizer read from its copy (:func:`save_freq_cache`), memory-mapped and
    binary-searched, each word looked up once (what ``cut`` asks: ``in``, ``[]``, ``get``). Raises
    ValueError for a file that is not a whole copy."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._views: list[memoryview] = []
        try:
            m, size = len(COPY_MAGIC), len(self._map)
            if size < m + _HEAD.size or self._map[:m] != COPY_MAGIC:
                raise ValueError(f"{path}: not a copy of jieba's dictionary")
            self.total, self._n = _HEAD.unpack_from(self._map, m)
            at = m + _HEAD.size
            self._words = at + 8 * self._n + 4
            if size < self._words:
                raise ValueError(f"{path}: incomplete")
            view = memoryview(self._map)
            self._off = view[at: at + 4 * (self._n + 1)].cast("I")
            self._freq = view[at + 4 * (self._n + 1): self._words].cast("I")
            self._views = [self._off, self._freq, view]
            if size != self._words + self._off[self._n]:
                raise ValueError(f"{path}: incomplete")
        except BaseException:
            self.close()
            raise
        self._lock = threading.Lock()
        self._seen: dict[str, int | None] = {}

    def close(self) -> None:
        for v in self._views:
            v.release()
        self._views = []
        self._map.close()

    def _find(self, key: bytes) -> int | None:
        lo, hi, off, base, words = 0, self._n, self._off, self._words, self._map
        while lo < hi:
            mid = (lo + hi) // 2
            w = words[base + off[mid]: base + off[mid + 1]]
            if w < key:
                lo = mid + 1
            elif w > key:
                hi = mid
            else:
                return int(self._freq[mid])
        return None

    def _get(self, w: str) -> int | None:
        got = self._seen.get(w, -1)
        if got != -1:
            return got
        with self._lock:
            found = self._find(w.encode("utf-8"))
            if len(self._seen) > 100_000:
                self._seen.clear()
            self._seen[w] = found
        return found

    def __contains__(self, w: object) -> bool:
        return isinstance(w, str) and self._get(w) is not None

    def __getitem__(self, w: str) -> int:
        got = self._get(w)
        if got is None:
            raise KeyError(w)
        return got

    def get(self, w: str, default: Any = None) -> Any:
        got = self._get(w)
        return default if got is None else got


@lru_cache(maxsize=1)
def _copied() -> Any:
    """A jieba tokenizer over the dictionary's copy, or None when there is none to read."""
    jb = _jieba()
    if jb is None:
        return None
    try:
        path = freq_cache_path(jb)
        if not path.exists():
            return None
        freq = FreqCopy(path)
    except (OSError, ValueError) as e:  # damaged: gone, so the dictionary's next load writes it anew
        log.debug("jieba dictionary copy not read: %s", e)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    tok = jb.Tokenizer()
    tok.FREQ, tok.total, tok.initialized = freq, freq.total, True
    return tok


def query_tokenizer() -> Any:
    """The tokenizer for a query's few CJK characters: the dictionary in memory when this process
    has it, else its copy, else the dictionary loaded (and copied) now; None without jieba."""
    jb = _jieba()
    if jb is None:
        return None
    if jb.dt.initialized:
        return jb.dt
    return _copied() or dictionary()


def cjk_index_text(text: str) -> str:
    """The value of the ``cjk`` FTS column: bigrams of every CJK run, then jieba words."""
    if not text or not has_cjk(text):
        return ""
    out: list[str] = []
    runs = CJK_RUN.findall(text)
    for run in runs:
        out.extend(bigrams(run))
        out.append("|")  # a non-token separator so phrases never span two runs
    tok = dictionary()
    if tok is not None:
        seg_src = "".join(r + "。" for r in runs)[:MAX_SEGMENT_CHARS]
        words = [w for w in tok.cut_for_search(seg_src) if len(w) >= 2 and has_cjk(w)]
        out.extend(words)
    return " ".join(out)
