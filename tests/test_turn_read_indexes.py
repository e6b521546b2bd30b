"""Reads recall makes on every prompt come from indexes, not from the wide turn rows: newest turns
first (the recency channel, named days, "yesterday") from the (owner, time) index one owner at a time,
the same turns a full sort would give; the entity channel's scope check from the (id, scope) index;
a candidate's session neighbours from the session order index, one read a session."""

from __future__ import annotations

import random
import time

import pytest

from conftest import ON_POSTGRES
from remem.model import TurnIn
from remem.recall import query
from remem.scope import Scope

NOW = time.mktime((2025, 6, 15, 12, 0, 0, 0, 0, -1))


@pytest.fixture
def many(mem):
    """90 turns of three owners in two projects: end, start or only the store's own time set."""
    rnd = random.Random(7)
    turns = []
    for i in range(90):
        at = NOW - rnd.uniform(0, 30) * 86400
        kind = i % 3
        turns.append(TurnIn(request=f"turn {i} about src/importer.py", owner=("ana", "bo", "cy")[i % 3 if i < 60 else 0],
                            agent=("codex", "claude-code")[i % 2], project=("app", "web")[(i // 2) % 2],
                            session_id=f"s{i % 7}", source_key=f"k{i}",
                            started_at=at if kind < 2 else None, ended_at=at + 30 if kind == 0 else None))
    mem.add_turns(turns)
    return mem


def expected(mem, scope: Scope, limit: int, since=None, until=None) -> list[tuple[str, float]]:
    rows = [dict(r) for r in mem.store.conn.execute(
        "SELECT id, rowid, owner, agent, project, ended_at, started_at, created_at FROM turns WHERE deleted = 0")]
    out = []
    for r in rows:
        if not scope.allows(r["owner"], r["agent"], r["project"]):
            continue
        t = next(v for v in (r["ended_at"], r["started_at"], r["created_at"]) if v is not None)
        if (since is None or t >= since) and (until is None or t < until):
            out.append((r["id"], float(t), r["rowid"]))
    return [(i, t) for i, t, _ in sorted(out, key=lambda h: (-h[1], -h[2]))[:limit]]


@pytest.mark.parametrize("owners,agent,project", [
    (("ana",), None, None), (("ana",), None, "app"), (("bo",), "codex", "web"),
    (("ana", "bo"), None, None), (("ana", "bo", "cy"), None, "app"), (("cy", "nobody"), "claude-code", None),
])
@pytest.mark.parametrize("window", [None, (NOW - 10 * 86400, NOW - 3 * 86400), (0.0, 1.0)])
def test_newest_first_is_what_a_full_sort_gives(many, owners, agent, project, window):
    scope = Scope(owners, agent, project)
    since, until = window or (None, None)
    for limit in (1, 5, 200):
        got = many.store.candidates.recent(scope, limit, since=since, until=until)
        assert got == expected(many, scope, limit, since, until)
    assert all(many.store.conn.execute("SELECT owner FROM turns WHERE id = ?", (t,)).fetchone()[0] in owners
               for t, _ in many.store.candidates.recent(scope, 200))


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite's query plan")
def test_newest_first_reads_the_time_index_not_every_turn(many):
    seen: list[str] = []
    many.store.conn.set_trace_callback(seen.append)
    try:
        many.store.candidates.recent(Scope(("ana", "bo"), None, "app"), 20)
        many.store.candidates.recent(Scope(("ana",)), 20, since=NOW - 86400, until=NOW)
    finally:
        many.store.conn.set_trace_callback(None)
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT") and "ORDER BY t DESC" in s]
    assert len(reads) == 3  # one per owner
    for sql in reads:
        plan = " ".join(r[3] for r in many.store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "turns_owner_ended" in plan and "TEMP B-TREE" not in plan, plan


def test_entity_mentions_are_scoped_from_the_id_index(many):
    scope = Scope(("ana",), None, "app")
    eid = many.store.conn.execute("SELECT id FROM entities WHERE owner = 'ana' LIMIT 1").fetchone()
    assert eid is not None
    seen: list[str] = []
    if not ON_POSTGRES:
        many.store.conn.set_trace_callback(seen.append)
    try:
        got = many.store.entities.turns_mentioning(scope, eid[0], 100)
    finally:
        if not ON_POSTGRES:
            many.store.conn.set_trace_callback(None)
    want = {r[0] for r in many.store.conn.execute(
        "SELECT t.id FROM entity_mentions m JOIN turns t ON t.id = m.turn_id WHERE m.entity_id = ? "
        "AND t.owner = 'ana' AND t.project = 'app' AND t.deleted = 0", eid)}
    assert want and set(got) == want
    if not ON_POSTGRES:
        (sql,) = [s for s in seen if "entity_mentions" in s]
        plan = " ".join(r[3] for r in many.store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "COVERING INDEX turns_id_scope" in plan, plan


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite's query plan")
@pytest.mark.parametrize("owners,project", [(("ana",), "app"), (("ana", "bo"), None)])
def test_session_neighbours_are_read_from_the_session_order_index(many, owners, project):
    scope = Scope(owners, None, project)
    ids = [r[0] for r in many.store.conn.execute("SELECT id FROM turns ORDER BY rowid")]
    rows = list(many.store.candidates.meta(scope, ids).values())
    seen: list[str] = []
    many.store.conn.set_trace_callback(seen.append)
    try:
        got = many.store.candidates.neighbours(scope, rows)
    finally:
        many.store.conn.set_trace_callback(None)
    assert rows and any(got.values())
    reads = [s for s in seen if "session_id" in s]
    assert len(reads) == len({(r["session_id"], r["owner"], r["agent"]) for r in rows})  # one read a session
    for sql in reads:
        plan = " ".join(r[3] for r in many.store.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "COVERING INDEX turns_session_order" in plan, plan


@pytest.mark.parametrize("text", ["UnicodeDecodeError: 'iso-8859-2' codec can't decode byte 0xff",
                                  "encodings.iso8859_16 and latin-8859-15", "version 1.2-3", "port 8080-9"])
def test_numbers_that_are_not_dates_name_no_time(text):
    assert query.time_ranges(text, NOW) == []


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite's FTS5 rowid window")
@pytest.mark.parametrize("owners,project", [(("ana",), None), (("ana", "bo"), "app"), (("bo",), "web")])
def test_a_time_range_narrows_the_word_search_to_its_rowids_with_the_same_hits(many, monkeypatch, owners, project):
    from remem.store.protocols import TextQuery, TextTerm
    from remem.store.sqlite import text as textmod

    scope, q = Scope(owners, None, project), TextQuery((TextTerm("importer"), TextTerm("src")))
    windows = [(NOW - 10 * 86400, NOW - 3 * 86400), (NOW - 86400, NOW), (NOW - 40 * 86400, NOW), (0.0, 1.0)]
    windowed = [many.store.text.search_words(scope, q, 200, since=a, until=b) for a, b in windows]
    monkeypatch.setattr(textmod, "WINDOW_SPAN", -1.0)   # no window: every match joined with its turn
    plain = [many.store.text.search_words(scope, q, 200, since=a, until=b) for a, b in windows]
    assert windowed == plain and any(windowed) and windowed[-1] == []
