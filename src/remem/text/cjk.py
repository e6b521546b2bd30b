"""The one CJK range (stdlib only): which characters are Chinese, Japanese or Korean script.

``LETTERS`` are the script characters (kana, CJK unified ideographs and extension A, compatibility
ideographs, hangul syllables): the text index bigrams their runs, the query parser and the word
coverage treat them as CJK terms, the hash embedder as CJK tokens. ``MARKS`` are CJK punctuation and
full-width forms: text-length estimates (packet tokens, embedding input) count them like letters.
Use these strings inside a character class: ``re.compile(f"[{LETTERS}]+")``.
"""

from __future__ import annotations

import re

LETTERS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
MARKS = "\u3000-\u303f\uff00-\uffef"
WIDE = LETTERS + MARKS  # every character a tokenizer counts as one token (or more)

_PATTERNS = {"RUN": f"[{LETTERS}]+", "CHAR": f"[{LETTERS}]"}   # a run of CJK letters; one of them


def __getattr__(name: str) -> re.Pattern[str]:
    """``RUN`` and ``CHAR``, compiled on first use (~4 ms for the two ranges: a hook process that only
    renders a packet never needs them)."""
    if name not in _PATTERNS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    pattern = globals()[name] = re.compile(_PATTERNS[name])
    return pattern
