"""Word coverage: how much of a prompt's word weight a memory holds.

Pure functions of plain values (the store's document frequencies are passed in). The packet's word
gate, the search floor and the ranking's direct-hit guard all weigh words here, so a result's
``coverage`` and ``matched`` words mean the same thing everywhere.

A word's weight is the mean of two normalised IDFs, each in [0, 1]:

* the **store's**: a word in every memory weighs nothing, one the store never saw weighs 1;
* a **reference**'s: document frequencies of general technical prose (``wordfreq.txt``, built by
  scripts/build_wordfreq.py from the docstrings and comments of Python's standard library), a word
  the reference never saw weighs 1.

The store alone cannot judge a topical store: four memories about the staging kubeconfig make
"staging" and "kubeconfig" weigh ~0 there, so the unseen "kept" of "Where is the staging kubeconfig
kept?" outweighed them and the packet came out empty. The reference still knows they are rare; it
also knows "set", "file" or "error" are common wherever a developer writes, while the store's half
keeps what only this store knows (a project name in every memory is no reason to show one).
"""

from __future__ import annotations

import bisect
import math
import os
import re
from functools import lru_cache
from importlib import resources

from ..text.cjk import CHAR as CJK
from .query import Query

TOKEN = re.compile(r"[^\W_]+")  # what unicode61 keeps as one token: letters and digits
COVERAGE_TERMS = 8  # coverage counts the query's 8 weightiest words (most prompts have fewer)
# English suffixes stripped for prefix matching ("painting" → "paint"*)
_SUFFIXES = ("ingly", "edly", "ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            word = word[: -len(suf)]
            if suf in ("ies", "ied"):
                word += "y"
            break
    return word


@lru_cache(maxsize=1)
def reference() -> tuple[int, dict[str, int]]:
    """(documents, document frequency by word) of the shipped reference (wordfreq.txt)."""
    n, df = 1, {}
    text = resources.files(__package__).joinpath("wordfreq.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        word, _, count = line.partition("\t")
        if word == "# documents":
            n = int(count)
        elif count and not word.startswith("#"):
            df[word] = int(count)
    return n, df


def _idf(n: int, d: int) -> float:
    d = max(1, d)
    return math.log(1.0 + max(0.0, n - d + 0.5) / (d + 0.5))


def _norm_idf(n: int, d: int) -> float:
    """IDF over ``n`` documents of a word in ``d`` of them, over that of a word in one: in [0, 1]."""
    top = _idf(n, 1)
    return min(1.0, _idf(n, d) / top) if top > 0 else 1.0


def terms(q: Query) -> list[str]:
    """The terms coverage weighs: the query's words as the index splits them, and its CJK words."""
    words = [t.lower() for w in q.words for t in (TOKEN.findall(w) or [w]) if not CJK.match(t)]
    return list(dict.fromkeys([*words, *q.cjk_words]))


TOPIC = 0.75  # a word this rare in the reference (in ~15 of its 19k documents or fewer) names a topic
# the reference counts no numbers (scripts/build_wordfreq.py drops them), so "3" and "2" looked as rare as
# "kubeconfig": a turn holding "3", "2" and "test" passed the gate for "expected 3 retries, got 2 in
# test_retry_backoff". A number of one or two digits weighs as a common word ("test" is 0.45) and names no
# topic; longer ones (a port, a year, an error code) keep the weight of an unknown word.
SMALL_NUMBER = 0.3


def reference_weight(word: str) -> float:
    """The word's normalised IDF in the reference (a word it lacks is looked up by its stem; 1 if unknown)."""
    if len(word) <= 2 and word.isdigit():
        return SMALL_NUMBER
    rn, rdf = reference()
    return _norm_idf(rn, rdf.get(word) or rdf.get(stem(word)) or 0)


def topic_words(words: list[str]) -> set[str]:
    """The words that name a topic rather than say something about it: rare in the reference.
    ("staging", "kubeconfig", "redis" do; "kept", "set", "error" do not.)"""
    return {w for w in words if reference_weight(w) >= TOPIC}


def weights(words: list[str], n: int, df: dict[str, int]) -> dict[str, float]:
    """Each word's weight: the mean of its normalised IDF over the store (``n`` turns, document
    frequencies ``df``) and over the reference (a word it lacks is looked up by its stem)."""
    return {w: 0.5 * (_norm_idf(max(n, 1), df.get(w, 0)) + reference_weight(w)) for w in words}


# ASCII text tokenised as TOKEN does, in C: letters lower-cased, digits kept, everything else a space
_ASCII = bytes(c + 32 if 65 <= c <= 90 else c if (97 <= c <= 122 or 48 <= c <= 57) else 32 for c in range(256))
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def tokens(text: str) -> set[str]:
    """The lower-cased TOKEN tokens of ``text``. Text whose only non-ASCII characters are not letters
    or digits (dashes, arrows, quotes: most replies) is tokenised with a byte table and a split, ~3×
    the regex's speed on kilobytes of tool output (those characters separate tokens either way);
    other text (Chinese, accented words) by the regex."""
    if not text.isascii():
        if any(c.isalnum() for run in _NON_ASCII.findall(text) for c in run):
            return set(TOKEN.findall(text.lower()))
        text = _NON_ASCII.sub(" ", text)
    return set(text.encode("ascii").translate(_ASCII).decode("ascii").split())


def _forms(s: str) -> tuple[str, ...]:
    """Every word :func:`stem` can take to ``s`` (and a few it does not): ``s`` itself, ``s`` + a
    suffix, and for a stem in "y" the "ies" / "ied" forms."""
    out = [s, *(s + suf for suf in _SUFFIXES if suf not in ("ies", "ied"))]
    if s.endswith("y"):
        out += [s[:-1] + "ies", s[:-1] + "ied"]
    return tuple(out)


_RUN = re.compile(r"[^\W_]*")  # a TOKEN run from where it starts (empty when none starts there)


def _holds(low: str, anchor: str, accept: frozenset[str], i: int, end: int) -> bool:
    """Whether the lower-cased ``low`` has a token in ``accept`` (all of which start with ``anchor``)
    before ``end`` (one text of several joined ends there), from ``low.find(anchor)`` = ``i`` on: each
    place ``anchor`` starts a token is read to the token's end and looked up; the search goes on after
    that token (a token starts nowhere inside another, and no run crosses the NUL between texts)."""
    while i >= 0:
        j = _RUN.match(low, i).end()  # type: ignore[union-attr]  # the anchor is letters or digits: j > i
        if (i == 0 or not low[i - 1].isalnum()) and low[i:j] in accept:
            return True
        i = low.find(anchor, j, end)
    return False


class Matcher:
    """:func:`matched` for one query's terms, prepared once and applied to many texts.

    A word is held when a token of the text is the word or a form of its stem (:func:`_forms`, those
    :func:`stem` takes back to it): the same answer as stemming every token of every text. Those forms
    share their first characters (the stem, or the stem without its "y"), so the lower-cased text is
    searched for that ``anchor`` (C speed) and only the tokens starting with it are read, the first
    whole one ending the search, instead of splitting the whole text into tokens: ranking checks ~300
    candidates a query, 50 of them whole (kilobytes of tool output each), and tokenising those was
    12 ms of a 100k-turn turn_start. The search is the cheaper one on the ranking rows' short texts
    too, even for a one-character anchor ("0", "p"). A word whose forms share no first character
    ("y": "ies") is looked up in the text's token set."""

    __slots__ = ("words", "_cjk", "_accept", "_anchor")

    def __init__(self, words: list[str]) -> None:
        self.words = words
        self._cjk = {w for w in words if CJK.match(w)}
        self._accept: dict[str, frozenset[str]] = {}  # a word → the tokens that hold it
        self._anchor: dict[str, str] = {}             # a word → the start all of those share
        for w in words:
            if w not in self._cjk:
                s = stem(w)
                accept = frozenset({w, *(f for f in _forms(s) if stem(f) == s)})
                self._accept[w] = accept
                self._anchor[w] = os.path.commonprefix(sorted(accept))

    def _plain(self, w: str, text: str) -> bool:
        """A word without an anchor: a CJK word by containment, one whose forms share no first
        character by the text's tokens (rare: "y")."""
        return w in text if w in self._cjk else not tokens(text).isdisjoint(self._accept[w])

    def __call__(self, text: str) -> list[str]:
        low = text.lower()
        out = []
        for w in self.words:
            anchor = self._anchor.get(w)
            if not anchor:
                hit = self._plain(w, text)
            else:
                i = low.find(anchor)  # most words are in no text: no call for them
                hit = i >= 0 and _holds(low, anchor, self._accept[w], i, len(low))
            if hit:
                out.append(w)
        return out

    def many(self, texts: list[str]) -> list[list[str]]:
        """``[self(t) for t in texts]``, each word searched once in all the texts joined: a word in
        none of them (most of a long prompt's) is one search, not one a text, and one in some of them
        is read only in those (the texts of a ranking's candidates: ~200 a prompt)."""
        out: list[list[str]] = [[] for _ in texts]
        if not texts:
            return out
        lows = [t.lower() for t in texts]
        starts, at = [], 0
        for low in lows:
            starts.append(at)
            at += len(low) + 1
        big = "\0".join(lows)  # NUL ends a token run and starts none: each text's tokens stay its own
        for w in self.words:
            anchor = self._anchor.get(w)
            if not anchor:
                for n, text in enumerate(texts):
                    if self._plain(w, text):
                        out[n].append(w)
                continue
            accept, i = self._accept[w], big.find(anchor)
            while i >= 0:
                n = bisect.bisect_right(starts, i) - 1
                end = starts[n] + len(lows[n])
                if _holds(big, anchor, accept, i, end):
                    out[n].append(w)
                i = big.find(anchor, end + 1)
        return out


def matched(q: Query, text: str, words: list[str] | None = None) -> list[str]:
    """The query's terms (``words``, default :func:`terms`) ``text`` holds: the word or a word of
    the same stem; a CJK word by containment. (Many texts: :class:`Matcher`.)"""
    return Matcher(terms(q) if words is None else words)(text)


def coverage(q: Query, text: str, n: int, df: dict[str, int]) -> float:
    """Share of the query's word weight (:func:`weights`) that ``text`` holds (:func:`matched`).

    A long prompt (a pasted log, a page of instructions) is judged by its COVERAGE_TERMS weightiest
    words. 1.0 for a query without words (nothing to weigh)."""
    return share(q, matched(q, text), weights(terms(q), n, df))


def top_weight(w: dict[str, float], words: list[str]) -> float:
    """The weight of the COVERAGE_TERMS weightiest of ``words``: what a full coverage holds."""
    return sum(sorted((w.get(x, 1.0) for x in words), reverse=True)[:COVERAGE_TERMS])


def share(q: Query, hit: list[str], w: dict[str, float], words: list[str] | None = None,
          total: float | None = None) -> float:
    """Share of the weight of the query's terms (``words``, default :func:`terms`) that ``hit`` holds
    (``total``: their :func:`top_weight`, when the caller weighs many hits)."""
    words = terms(q) if words is None else words
    if not words:
        return 1.0
    total = top_weight(w, words) if total is None else total
    got = sum(sorted((w.get(x, 1.0) for x in hit), reverse=True)[:COVERAGE_TERMS])
    return min(1.0, got / total) if total else 1.0
