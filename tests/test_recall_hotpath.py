"""The recall hot path on real-shaped turns (issue 15): the per-candidate work of the word coverage
and the direct-hit guard, made cheaper without changing what recall finds or how it ranks.

The stores are real-shaped (``remem.bench.recall_speed.make_real_turns``: requests, tool calls with
file reads, pytest logs, diffs, tracebacks, ~15 % Chinese, replies); the prompts are the same
generator's."""

from __future__ import annotations

import random

import pytest

from remem.bench.recall_speed import REAL_OWNER, make_real_turns, real_queries
from remem.recall import coverage as cov
from remem.recall.direct import STRONG, guard
from remem.recall.query import build
from remem.recall.search import words_text
from remem.text.cjk import CHAR as CJK

pytestmark = pytest.mark.module_store  # its tests share the store a module fixture built


def matched_every_token(q, text, words):
    """coverage.matched as first written: every token of the text stemmed (the reference)."""
    toks = set(cov.TOKEN.findall(text.lower()))
    out = []
    stems = None
    for w in words:
        if CJK.match(w):
            if w in text:
                out.append(w)
        elif w in toks:
            out.append(w)
        else:
            if stems is None:
                stems = {cov.stem(t) for t in toks}
            if cov.stem(w) in stems:
                out.append(w)
    return out


def guard_every_settled(order, base, cover, direct, ratio=0.5):
    """direct.guard as first written: every settled direct hit checked as a ceiling (the reference)."""
    EPS = 1e-7
    score = dict(order)
    capped = {}
    todo = sorted((t for t in score if t in cover), key=lambda t: -cover[t])
    settled = []
    for t in todo:
        ceiling = min((score[d] for d in settled if cover[d] >= STRONG and cover[t] < ratio * cover[d]
                       and score[d] < score[t]), default=None)
        if ceiling is not None:
            new = max(base.get(t, score[t]), ceiling - EPS / (1.0 + score[t]))
            if new < score[t]:
                capped[t] = score[t]
                score[t] = new
        if t in direct:
            settled.append(t)
    return sorted(score.items(), key=lambda x: (-x[1], x[0])), capped


@pytest.fixture(scope="module")
def real_turns():
    return [t for chunk in make_real_turns(120, seed=5) for t in chunk]


def texts_of(turns):
    out = []
    for t in turns:
        row = {"request": t.request, "reply": t.reply,
               "actions": [{"name": a.name, "input": a.input, "output": a.output} for a in t.actions]}
        out.append(words_text(row))
    return out


def test_the_matcher_finds_what_stemming_every_token_finds(real_turns):
    """Same words matched, in the same order, for real-shaped prompts over real-shaped turn texts,
    and for the suffix forms the stem joins (painting / paints, retries / retried / retry)."""
    texts = texts_of(real_turns)
    texts += ["we keep painting the fence; she paints daily", "retries: 3, it retried, one retry",
              "the deployment was deployed by deployers", "修复了登录页面的错误 after 重试", "Caching CACHED caches",
              # token edges: inside other tokens, underscores, digits, letters outside ASCII, one letter
              "latest_test xtest testing123 Test-case 测试test café Ünïcode İstanbul p.y p0 0 10 y ies",
              "studies studied study; the y-axis; ÉCOLE école — py/js ts2 e2e"]
    prompts = real_queries(40, seed=9) + ["painted fences and retrying deploys", "caches 登录 错误 retried",
                                          "why did the cached deployment stop painting",
                                          "test the cafe 0 p y ies study école py e2e istanbul"]
    compared = hits = 0
    rnd = random.Random(3)
    for p in prompts:
        q = build(p)
        words = cov.terms(q)
        match = cov.Matcher(words)
        wants = []
        for text in texts:
            want = matched_every_token(q, text, words)
            assert match(text) == want, (p[:60], text[:60])
            assert cov.matched(q, text) == want
            wants.append(want)
            compared += 1
            hits += bool(want)
        # all the texts at once (a ranking's candidates), and a shuffled sample with an empty text
        assert match.many(texts) == wants, p[:60]
        pick = rnd.sample(range(len(texts)), 25)
        assert match.many(["", *(texts[i] for i in pick)]) == [[], *(wants[i] for i in pick)], p[:60]
    assert compared > 5000 and hits > 1000  # the comparison saw real matches, not only empty ones
    assert cov.Matcher(["x"]).many([]) == []


def test_the_guard_caps_as_checking_every_settled_hit_did():
    rng = random.Random(4)
    for case in range(400):
        n = rng.randint(1, 60)
        ids = [f"t{i}" for i in range(n)]
        order = sorted(((t, rng.random()) for t in ids), key=lambda x: (-x[1], x[0]))
        cover = {t: rng.choice([0.0, 0.1, 0.3, 0.5, 0.74, 0.75, 0.8, 1.0, rng.random()]) for t in ids
                 if rng.random() < 0.9}
        direct = {t for t in ids if rng.random() < 0.5}
        base = {t: s * rng.random() for t, s in order if rng.random() < 0.6}
        ratio = rng.choice([0.5, 0.3, 1.0])
        assert guard(order, base, cover, direct, ratio) == guard_every_settled(order, base, cover, direct, ratio), case


def test_search_stems_the_prompt_not_every_candidate_token(mem, real_turns):
    """A search over real-shaped turns stemmed every distinct token of every candidate's text (the
    direct-hit guard and the floor check hundreds of candidates a query); now it stems the prompt's
    words and the few tokens that can share their stem. The results are the same either way
    (the two tests above)."""
    mem.add_turns(real_turns)
    mem.config.override("embedding.enabled", False)
    prompts = real_queries(6, seed=9)
    found = 0
    for p in prompts:
        cov.stem.cache_clear()
        got = mem.search(p, owner=REAL_OWNER, k=10, explain=True)
        calls = cov.stem.cache_info().hits + cov.stem.cache_info().misses
        found += len(got)
        words = len(cov.terms(build(p)))
        checked = sum(1 for r in got if "words" in r["details"])
        assert checked == len(got)
        # every token of every checked candidate was thousands of calls; the prompt's words and the
        # forms of their stems (13-15 a word) are a bounded number per query
        assert calls <= 20 * (words + 3), (p[:60], calls, words)
    assert found >= 20


def test_tokens_are_the_regex_tokens(real_turns):
    """The byte-table tokeniser gives the TOKEN regex's tokens: ASCII, text whose only non-ASCII
    characters separate words (dashes, arrows, quotes), and the regex's own path for the rest."""
    texts = texts_of(real_turns) + [
        "a_b C9d __x__ Ünïcode ß 中文abc", "", "FOO.bar(BAZ_qux) 12ab-34 tab\tnew\nline\x0bvt\x1fus",
        "a—b → c…d “q” ok", "\u212a is the Kelvin sign", "Ⓐb ½x ²3 ٣4 İstanbul", "修复 failing_test — done ✓"]
    paths = {"ascii": 0, "separators": 0, "regex": 0}
    for text in texts:
        assert cov.tokens(text) == set(cov.TOKEN.findall(text.lower())), text[:60]
        if text.isascii():
            paths["ascii"] += 1
        elif any(c.isalnum() for c in text if not c.isascii()):
            paths["regex"] += 1
        else:
            paths["separators"] += 1
    assert min(paths.values()) >= 3, paths


def test_a_turn_start_reads_each_text_once(mem, real_turns, monkeypatch):
    """The packet's word gate reads the rows the ranking's guard already weighed whole: it takes their
    matched words from the ranking instead of searching kilobytes of tool output again."""
    mem.add_turns(real_turns)
    mem.config.override("embedding.enabled", False)
    seen: dict[str, int] = {}
    real, real_many = cov.Matcher.__call__, cov.Matcher.many

    def counting(self, text):
        seen[text] = seen.get(text, 0) + 1
        return real(self, text)

    def counting_many(self, texts):
        for text in texts:
            seen[text] = seen.get(text, 0) + 1
        return real_many(self, texts)

    monkeypatch.setattr(cov.Matcher, "__call__", counting)
    monkeypatch.setattr(cov.Matcher, "many", counting_many)
    shown = 0
    for p in real_queries(6, seed=9):
        seen.clear()
        packet = mem.turn_start(p, owner=REAL_OWNER)
        shown += len(packet["items"])
        twice = {t[:60]: n for t, n in seen.items() if n > 1 and len(t) > 400}
        assert not twice, twice
    assert shown >= 6
