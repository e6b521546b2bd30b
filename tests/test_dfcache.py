"""Document frequencies (store/dfcache.py): counted once, kept while the corpus barely grows, counted
ahead at warm-up; and the counts recall sees are the index's own, on both engines."""

from __future__ import annotations

import time

from remem.core import Remem
from remem.model import TurnIn
from remem.store import dfcache
from remem.store.dfcache import DocFreqs


class Engine:
    """Counts as an engine would, and how often it was asked."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts
        self.asked: list[list[str]] = []

    def __call__(self, missing: list[str]) -> dict[str, int]:
        self.asked.append(list(missing))
        return {t: self.counts[t] for t in missing if self.counts.get(t)}


def test_a_count_is_kept_while_the_corpus_grows_little_and_read_again_after(monkeypatch):
    eng, df = Engine({"test": 9000, "mid": 40}), DocFreqs()
    now = [1000.0]
    monkeypatch.setattr(dfcache, "clock", lambda: now[0])
    assert df.get(["test", "mid", "nowhere"], eng, 10_000) == {"test": 9000, "mid": 40, "nowhere": 0}
    now[0] += 6 * 3600                      # hours later, 150 turns written (1.5 %): still good
    assert df.get(["test", "mid"], eng, 10_150) == {"test": 9000, "mid": 40}
    assert eng.asked == [["test", "mid", "nowhere"]]
    eng.counts["test"] = 9300               # past GROWTH: counted again
    assert df.get(["test"], eng, 10_000 + int(dfcache.GROWTH * 10_000) + 1) == {"test": 9300}
    assert eng.asked[-1] == ["test"]
    assert df.get(["nowhere"], eng, 10_000) == {"nowhere": 0} and eng.asked[-1] == ["nowhere"]  # 0 not kept


def test_a_small_corpus_counts_again_after_growth_min_turns_and_any_after_max_age(monkeypatch):
    eng, df = Engine({"deploy": 3}), DocFreqs()
    now = [0.0]
    monkeypatch.setattr(dfcache, "clock", lambda: now[0])
    df.get(["deploy"], eng, 20)
    df.get(["deploy"], eng, 20 + dfcache.GROWTH_MIN)       # a 20-turn home: 50 new turns are allowed
    assert len(eng.asked) == 1
    df.get(["deploy"], eng, 21 + dfcache.GROWTH_MIN)
    assert len(eng.asked) == 2
    now[0] += dfcache.MAX_AGE + 1                           # nothing written, but a day passed
    df.get(["deploy"], eng, 21 + dfcache.GROWTH_MIN)
    assert len(eng.asked) == 3


def test_preload_keeps_the_common_words_and_room_is_made_from_the_rare_ones(monkeypatch):
    eng, df = Engine({}), DocFreqs()
    kept = df.preload({"test": 9000, "run": 500, "rare": dfcache.PRELOAD_DOC - 1}, 10_000)
    assert kept == 2
    assert df.get(["test", "run"], eng, 10_000) == {"test": 9000, "run": 500} and eng.asked == []
    monkeypatch.setattr(dfcache, "MAX_TERMS", 5)
    eng.counts.update({f"w{i}": 1 for i in range(6)})
    df.get([f"w{i}" for i in range(6)], eng, 10_000)        # over the cap: the rare words go, not the common
    assert df.get(["test", "run"], eng, 10_000) == {"test": 9000, "run": 500}
    assert eng.asked == [[f"w{i}" for i in range(6)]]


def _turns(word: str, n: int, start: int = 0) -> list[TurnIn]:
    return [TurnIn(request=f"turn {start + i}: the {word} step failed again, see the log",
                   reply="fixed the config and reran it", owner="dev", agent="claude-code",
                   project="/home/dev/shop", session_id=f"s{(start + i) // 5}", started_at=1.7e9 + start + i)
            for i in range(n)]


def test_counts_follow_the_index_and_warm_up_counts_ahead(tmp_path):
    mem = Remem(tmp_path / "remem", env={"REMEM_EMBEDDING_ENABLED": "0"})
    mem.add_turns(_turns("kiwi", dfcache.PRELOAD_DOC + 6))
    mem.add_turns(_turns("mango", 3, 500))
    text = mem.recall.text
    warm = mem.warm()
    if mem.store.engine == "sqlite":
        assert warm["doc_freqs"] >= 1                      # "kiwi" and the words every turn holds
    else:
        assert warm["doc_freqs"] == 0                      # PostgreSQL counts on demand
    n, df = text.doc_freqs(["kiwi", "mango", "papaya"])
    assert df == {"kiwi": dfcache.PRELOAD_DOC + 6, "mango": 3, "papaya": 0} and n >= 73
    mem.add_turns(_turns("papaya", 2, 600))               # a word never counted is read at once
    assert text.doc_freqs(["papaya"])[1] == {"papaya": 2}
    mem.add_turns(_turns("mango", dfcache.GROWTH_MIN + 1, 700))   # the corpus grew: counted again
    if mem.store.engine != "sqlite":
        time.sleep(1.1)                                    # PostgreSQL reads the corpus size once a second
    assert text.doc_freqs(["mango"])[1] == {"mango": dfcache.GROWTH_MIN + 4}
    gone = [r["id"] for r in mem.search("papaya", owner="dev", k=10)]
    assert len(gone) == 2
    mem.forget(ids=gone, owner="dev")                      # forgetting turns drops their counts at once
    assert text.doc_freqs(["papaya"])[1] == {"papaya": 0}
    mem.close()
