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

RUN = re.compile(f"[{LETTERS}]+")
CHAR = re.compile(f"[{LETTERS}]")
