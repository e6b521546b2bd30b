"""The exact BM25 corpus builds less up front (posting lists on demand, the turn index on first
use, tokens by str.translate) and scores exactly as the straightforward construction does."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from remem.bench.cli_speed import real_turns
from remem.recall import okapi

WORD = re.compile(r"[a-z0-9]+")


@pytest.mark.parametrize("text", [
    "", "KeyError: 'currency' in tests/test_checkout.py::test_total[EUR] FAILED",
    "İstanbul ǅemal ﬁle Straße \u212a Kelvin 3.14e-5 a_b-c", "中文KeyError混合 用 uv 还是 pip？",
    "\ud800 lone surrogate \udfff", "tab\tnew\nline\r\x00nul", "ÀÉÎÕÜ àéîõü 123abc ABC",
])
def test_tokenize_is_the_regex(text):
    assert okapi.tokenize(text) == WORD.findall(text.lower())


def reference(docs, query, k1=1.5, b=0.75, eps=0.25):
    """BM25Okapi built the plain way: every posting list up front."""
    n = len(docs)
    lens = [len(d) for d in docs]
    avgdl = sum(lens) / n
    postings: dict[str, list[tuple[int, int]]] = {}
    for i, d in enumerate(docs):
        for w, f in Counter(d).items():
            postings.setdefault(w, []).append((i, f))
    idf = {w: math.log(n - len(p) + 0.5) - math.log(len(p) + 0.5) for w, p in postings.items()}
    mean = sum(idf.values()) / len(idf)
    idf = {w: v if v >= 0 else eps * mean for w, v in idf.items()}
    out: dict[int, float] = {}
    for q in query:
        for i, f in postings.get(q, []):
            out[i] = out.get(i, 0.0) + idf[q] * f * (k1 + 1) / (f + k1 * (1 - b + b * lens[i] / avgdl))
    return out


def test_scores_are_exactly_the_plain_construction():
    turns = real_turns(400, seed=3)
    docs = [okapi.tokenize(t.request + "\n" + t.reply + "\n" + "\n".join(a.output for a in t.actions))
            for t in turns]
    index = okapi.Okapi(docs)
    for q in ["keyerror test", "the def return self", "json config encoding default", "nothing-here-xyz",
              "test test keyerror", "0 1 2"]:
        words = okapi.tokenize(q)
        assert index.scores(words) == reference(docs, words)   # same floats, not just close


def test_the_turn_index_is_built_on_first_use_and_ranks_as_before():
    rows = [(f"t{i}", f"s{i // 4}", t.request, t.reply, "", float(i)) for i, t in enumerate(real_turns(120))]
    corp = okapi.ScopeCorpus(rows)
    assert corp._turns is None                     # the default ranking never asks for it
    words = okapi.tokenize("KeyError test config")
    docs = [okapi.tokenize("\n".join(x for x in r[2:5] if x)) for r in rows]
    want = sorted(reference(docs, words).items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert corp.top_turns(words, 10) == [(rows[i][0], s) for i, s in want]
