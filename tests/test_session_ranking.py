"""Session ranking: the unnamed vector lists for chat transcripts and the list for a named day."""

from __future__ import annotations

import time

import pytest

from remem.model import TurnIn
from remem.recall.config import DEFAULT
from remem.recall.search import named_days, search_sessions, without_names


def day(y: int, m: int, d: int) -> float:
    return time.mktime((y, m, d, 0, 0, 0, 0, 0, -1))


# ----------------------------------------------------------------------------- pure parts

@pytest.mark.parametrize("text,days", [
    ("What did Maria start on 3 June, 2023?", [day(2023, 6, 3)]),
    ("the week before August 3, 2023", [day(2023, 8, 3)]),
    ("a book finished on 8th December, 2023", [day(2023, 12, 8)]),
    ("between Sept 1st 2022 and 2022-09-05", [day(2022, 9, 1), day(2022, 9, 5)]),
    ("on 16 November 2023 and on November 16, 2023", [day(2023, 11, 16)]),
    ("in June 2023", []),          # a month is not a day
    ("on 31 June, 2023", []),      # no such day
    ("you may want 3 of them", []),
])
def test_named_days(text, days):
    assert named_days(text) == days


@pytest.mark.parametrize("text,names,out", [
    ("What did Caroline research?", {"Caroline"}, "What did research?"),
    ("What is Caroline's identity?", {"Caroline"}, "What is identity?"),
    ("When did Caroline and Melanie go to a pride festival?", {"Caroline", "Melanie"},
     "When did and go to a pride festival?"),
    ("What does john smith do? John likes jazz", {"John Smith"}, "What does do? likes jazz"),
    ("Did Carolinea call?", {"Caroline"}, "Did Carolinea call?"),  # whole words only
    ("What did Caroline research?", set(), "What did Caroline research?"),
])
def test_without_names(text, names, out):
    assert without_names(text, names) == out


# ------------------------------------------------------------------------- through a store

def chat(mem, sessions: dict[str, list[str]], start: dict[str, float] | None = None) -> None:
    turns = []
    for sid, lines in sessions.items():
        t0 = (start or {}).get(sid)
        for i, line in enumerate(lines):
            turns.append(TurnIn(request=line, owner="default", agent="chat", project="p", session_id=sid,
                                source_key=f"chat:{sid}:{i}", started_at=t0 + i if t0 else None,
                                ended_at=t0 + i if t0 else None))
    mem.add_turns(turns)
    mem.embed_pending()


def order(mem, query: str, **cfg: object) -> list[str]:
    return [s["session_id"] for s in search_sessions(mem.recall, query, mem.scope(project="p"), k=10,
                                                     config=DEFAULT.with_(**cfg))]


def scores(mem, query: str, **cfg: object) -> dict[str, float]:
    return {s["session_id"]: s["score"] for s in search_sessions(mem.recall, query, mem.scope(project="p"), k=10,
                                                                 config=DEFAULT.with_(**cfg))}


def test_speaker_names_do_not_pull_in_empty_turns(mem):
    # every turn of a transcript starts with a name: with the name in the query, the nearest
    # turns are the ones that say little else
    noise = {f"n{i}": ["Caroline: Caroline here, hello Melanie!", "Melanie: Hi Caroline, hello!",
                       f"Caroline: Caroline again, bye Melanie {i}"] for i in range(4)}
    chat(mem, {**noise, "gold": ["Melanie: How was your weekend?", "Caroline: I baked sourdough bread",
                                 "Melanie: The baking went well then"]})
    query = "What did Caroline bake?"
    assert order(mem, query, unnamed_vectors=False)[0] != "gold"
    assert order(mem, query)[0] == "gold"


def test_a_named_day_finds_its_session(mem):
    start = {f"s{i}": day(2023, 4, 25 + 10 * i) + 13 * 3600 for i in range(5)}
    sessions = {sid: ["Nate: I watched a movie with my turtles", "Joanna: Which movie did you watch?",
                      f"Nate: A film about the sea {sid}"] for sid in start}
    sessions["s2"] = ["Nate: Long day at the tournament", "Joanna: Did you win?", "Nate: Second, then a movie"]
    chat(mem, sessions, start)
    query = "What movie did Nate watch on 15 May, 2023?"  # s2 is the session of 15 May (10 days apart)
    # the day lifts its own session to the top and leaves the others' scores alone (without it, s2 and
    # s0 are near-tied: which of the identical turns of s0/s1/s3/s4 ranks first moves their RRF scores)
    without = scores(mem, query, session_date_days=0.0)
    with_day = scores(mem, query)
    assert order(mem, query)[0] == "s2"
    assert with_day["s2"] > without["s2"] + 0.05
    assert {s: round(v, 6) for s, v in with_day.items() if s != "s2"} == \
        {s: round(v, 6) for s, v in without.items() if s != "s2"}
    assert order(mem, "What movie did Nate watch?")[0] != "s2"


def test_plain_presets_keep_plain_sessions():
    from remem.recall.config import preset

    for name in ("bm25", "vector", "bm25-reference", "only:bm25,vector"):
        cfg = preset(name)
        assert not cfg.unnamed_vectors and cfg.session_date_days == 0


def test_transcript_speakers_are_names_that_open_turns_not_coding_openers():
    from remem.recall.okapi import ScopeCorpus

    def corpus(requests):
        return ScopeCorpus([(f"t{i}", "s", r, "", "", None) for i, r in enumerate(requests)])

    two = corpus([f"{n}: line {i}" for i in range(10) for n in ("Caroline", "Melanie")])
    assert two.speakers == {"Caroline", "Melanie"}
    names = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus"]  # a group chat: each voice under 20 %
    assert corpus([f"{names[i % 7]}: hi {i}" for i in range(70)]).speakers == set(names)
    coding = corpus(["Error: build fails on main", "Fix: the flaky test"] + [f"refactor module {i}" for i in range(30)])
    assert coding.speakers == set()
    assert corpus(["Note: once", "plain"]).speakers == set()  # one turn is no speaker
