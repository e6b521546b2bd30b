"""Text analysis: CJK-aware tokens for the text index (the query side is recall/query.py).

CJK text has no spaces, and SQLite 3.40's trigram tokenizer only matches ≥ 3 characters, so
every CJK run is indexed as its character bigrams (in order, so a phrase of bigrams matches any
substring) followed by jieba's search-mode words. jieba is imported lazily and only for text
that contains CJK: the hook's lexical fallback never pays for it.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
