"""Session neighbours (the turns just before and after a candidate, evidence for ranking): the
store's answer against the definition, on sessions with tied and missing start times, turns of
other agents and owners interleaved, a forgotten turn, and several candidates of one session."""

from __future__ import annotations

import random

import remem
from remem.model import TurnIn
from remem.scope import Scope


def _expected(all_rows: list[dict], row: dict, scope: Scope, window: int) -> list[str]:
    """The definition: the same session, owner and agent, in scope, not deleted; ordered by
    (start time or 0, id); the ``window`` turns before the row and the ``window`` after it."""
    same = [r for r in all_rows if r["session_id"] == row["session_id"] and r["owner"] == row["owner"]
            and r["agent"] == row["agent"] and r["owner"] in scope.owners and not r["deleted"]
            and (scope.agent is None or r["agent"] == scope.agent)
            and (scope.project is None or r["project"] == scope.project)]
    key = lambda r: (float(r["started_at"] or 0.0), r["id"])  # noqa: E731
    same.sort(key=key)
    at = key(row)
    before = [r["id"] for r in same if key(r) < at][-window:] if window else []
    after = [r["id"] for r in same if key(r) > at][:window]
    return before + after


def test_neighbours_follow_the_session_order_with_ties_gaps_and_forgotten_turns(tmp_path):
    rnd = random.Random(7)
    turns = []
    for s in range(5):
        for i in range(12):
            start = None if (s == 4 and i % 3 == 0) else 1.7e9 + s * 3600 + (i // 3) * 60  # ties, no time
            turns.append(TurnIn(request=f"step {i} of session {s}: " + "pytest -k retry " * rnd.randint(1, 40),
                                reply="done", agent="codex" if i % 5 else "claude-code",
                                owner="alice" if s != 3 else "bob", session_id=f"s{s}",
                                project="/w/p" if i % 4 else "/w/q", source_key=f"n{s}-{i}",
                                started_at=start, ended_at=(start or 1.7e9) + 5))
    mem = remem.open(tmp_path / "home")
    try:
        mem.add_turns(turns)
        gone = [r[0] for r in mem.store.conn.execute("SELECT id FROM turns WHERE request LIKE 'step 5 of%'")]
        assert len(mem.forget(ids=gone, owner=["alice", "bob"])) == len(gone)
        cols = "id, owner, agent, project, session_id, started_at, deleted"
        everything = [dict(zip(cols.split(", "), r, strict=True)) for r in mem.store.conn.execute(f"SELECT {cols} FROM turns")]
        checked = 0
        for scope in (Scope.of("alice"), Scope.of(["alice", "bob"]), Scope.of("alice", agent="codex"),
                      Scope.of("alice", project="/w/p")):
            ids = [r["id"] for r in everything]
            meta = mem.store.candidates.meta(scope, ids)
            rows = [meta[i] for i in ids if i in meta]
            for window in (1, 2):
                got = mem.store.candidates.neighbours(scope, rows, window)
                for r in rows:
                    assert got[r["id"]] == _expected(everything, r, scope, window), (scope, window, r["id"])
                    checked += bool(got[r["id"]])
        assert checked > 100
        assert gone and not any(g in v for g in gone for v in got.values())
    finally:
        mem.close()
