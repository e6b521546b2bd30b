"""Text analysis: CJK-aware tokens for indexing and safe FTS5 expressions for querying.

CJK text has no spaces, and SQLite 3.40's trigram tokenizer only matches ≥ 3 characters, so
every CJK run is indexed as its character bigrams (in order, so a phrase of bigrams matches any
substring) followed by jieba's search-mode words. jieba is imported lazily and only for text
that contains CJK: the hook's lexical fallback never pays for it.
"""

from __future__ import annotations

import re
from functools import lru_cache

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_RUN = re.compile(f"[{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")
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


@lru_cache(maxsize=1)
def _jieba():  # type: ignore[no-untyped-def]
    try:
        import logging

        import jieba

        jieba.setLogLevel(logging.WARNING)
        return jieba
    except Exception:  # pragma: no cover - jieba is a dependency, but never fail a write on it
        return None


def cjk_index_text(text: str) -> str:
    """The value of the ``cjk`` FTS column: bigrams of every CJK run, then jieba words."""
    if not text or not has_cjk(text):
        return ""
    out: list[str] = []
    runs = CJK_RUN.findall(text)
    for run in runs:
        out.extend(bigrams(run))
        out.append("|")  # a non-token separator so phrases never span two runs
    jb = _jieba()
    if jb is not None:
        seg_src = "".join(r + "。" for r in runs)[:MAX_SEGMENT_CHARS]
        words = [w for w in jb.cut_for_search(seg_src) if len(w) >= 2 and has_cjk(w)]
        out.extend(words)
    return " ".join(out)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def query_terms(text: str, *, max_terms: int = 32) -> tuple[list[str], list[str]]:
    """Split a query into (words, cjk_runs). Never raises; user text is only ever quoted."""
    words = [w.lower() for w in WORD.findall(text or "")]
    words = list(dict.fromkeys(w for w in words if w.strip("_")))[:max_terms]
    runs = list(dict.fromkeys(CJK_RUN.findall(text or "")))[:max_terms]
    return words, runs


def fts_expr(text: str, *, stop: frozenset[str] = frozenset()) -> str:
    """A safe FTS5 MATCH expression: every word quoted, CJK runs as bigram phrases on ``cjk``.

    Terms are OR-ed so bm25 ranks partial matches; an empty string means "nothing to match".
    """
    words, runs = query_terms(text)
    parts = [_quote(w) for w in words if w not in stop]
    if not parts:
        parts = [_quote(w) for w in words]
    for run in runs:
        grams = bigrams(run)
        if len(run) == 1:
            parts.append(f"cjk : {_quote(run)}*")
        else:
            parts.append("cjk : " + _quote(" ".join(grams)))
            if len(grams) > 2:
                # also reward documents holding parts of a long CJK query
                parts.extend("cjk : " + _quote(g) for g in grams)
    return " OR ".join(dict.fromkeys(parts))


def substring_terms(text: str, *, min_len: int = 3) -> list[str]:
    """Terms for the trigram channel: identifiers and words of ≥ 3 characters, as typed."""
    raw = re.findall(r"[^\s\"'`()\[\]{}<>,;]+", text or "")
    out = []
    for t in raw:
        t = t.strip(".:!?")
        if len(t) >= min_len:
            out.append(t)
    return list(dict.fromkeys(out))[:16]


def trigram_expr(terms: list[str]) -> str:
    return " OR ".join(_quote(t) for t in terms if len(t) >= 3)
