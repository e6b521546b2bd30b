"""Entity rows: entities per owner, their mentions in turns, co-occurrence edges.

Writes happen inside the write pipeline's transaction; reads take a Scope (mentions are
joined to ``turns`` so agent and project filters apply too).
"""

from __future__ import annotations

import collections
import itertools
import sqlite3
from typing import TYPE_CHECKING

from ...scope import Scope
from .candidates import count_upto

if TYPE_CHECKING:
    from . import SqliteStore

MAX_COUNT = 2_001       # mention counts are only compared with the hub limit: stop counting past it
MAX_EDGE_ENTITIES = 12  # pairs grow quadratically: 12 entities → 66 edges per turn


def put_mentions(db: sqlite3.Connection, owner: str, turn_id: str, ents: list[tuple[str, str]],
                 *, replace: bool = False) -> int:
    """Record that ``turn_id`` mentions ``ents``; new co-occurrences strengthen edges."""
    if replace:
        db.execute("DELETE FROM entity_mentions WHERE turn_id = ?", (turn_id,))
    if not ents:
        return 0
    db.executemany("INSERT OR IGNORE INTO entities (owner, kind, name) VALUES (?,?,?)",
                   [(owner, k, n) for k, n in ents])
    got: dict[tuple[str, str], int] = {}
    by_kind: dict[str, list[str]] = {}
    for k, n in ents:
        by_kind.setdefault(k, []).append(n)
    for kind, names in by_kind.items():  # one indexed look-up per kind, not one per entity
        for i in range(0, len(names), 400):
            chunk = names[i : i + 400]
            for r in db.execute(f"SELECT name, id FROM entities WHERE owner = ? AND kind = ? AND name IN "
                                f"({','.join('?' * len(chunk))})", [owner, kind, *chunk]):
                got[(kind, r[0])] = int(r[1])
    ids = [got[e] for e in ents if e in got]
    have = set() if replace else {int(r[0]) for r in db.execute(
        "SELECT entity_id FROM entity_mentions WHERE turn_id = ?", (turn_id,))}
    new = [eid for eid in dict.fromkeys(ids) if eid not in have]
    db.executemany("INSERT OR IGNORE INTO entity_mentions (entity_id, turn_id, owner) VALUES (?,?,?)",
                   [(eid, turn_id, owner) for eid in new])
    pairs = [(owner, a, b) for a, b in itertools.combinations(sorted(new[:MAX_EDGE_ENTITIES]), 2)]
    db.executemany("INSERT INTO entity_edges (owner, src, dst, weight) VALUES (?,?,?,1) "
                   "ON CONFLICT(owner, src, dst) DO UPDATE SET weight = entity_edges.weight + 1", pairs)
    return len(new)


def put_mentions_many(db: sqlite3.Connection, items: list[tuple[str, str, list[tuple[str, str]], bool]]) -> int:
    """``put_mentions`` for many turns, (owner, turn_id, entities, replace) each, in a few statements:
    the same rows, ids and edge weights as one call per turn in this order."""
    if len({t for _, t, _, _ in items}) != len(items):  # a turn twice in one batch: keep the exact order
        return sum(put_mentions(db, o, t, e, replace=r) for o, t, e, r in items)
    for i in range(0, len(items), 400):
        gone = [t for _, t, _, r in items[i : i + 400] if r]
        if gone:
            db.execute(f"DELETE FROM entity_mentions WHERE turn_id IN ({','.join('?' * len(gone))})", gone)
    rows = [(o, k, n) for o, _, e, _ in items for k, n in e]
    if not rows:
        return 0
    db.executemany("INSERT OR IGNORE INTO entities (owner, kind, name) VALUES (?,?,?)", rows)
    want: dict[tuple[str, str], list[str]] = {}
    for o, k, n in dict.fromkeys(rows):
        want.setdefault((o, k), []).append(n)
    got: dict[tuple[str, str, str], int] = {}
    for (owner, kind), names in want.items():
        for i in range(0, len(names), 400):
            chunk = names[i : i + 400]
            for r in db.execute(f"SELECT name, id FROM entities WHERE owner = ? AND kind = ? AND name IN "
                                f"({','.join('?' * len(chunk))})", [owner, kind, *chunk]):
                got[(owner, kind, r[0])] = int(r[1])
    keep = [t for _, t, e, r in items if e and not r]
    have: set[tuple[str, int]] = set()
    for i in range(0, len(keep), 400):
        chunk = keep[i : i + 400]
        have.update((r[0], int(r[1])) for r in db.execute(
            f"SELECT turn_id, entity_id FROM entity_mentions WHERE turn_id IN ({','.join('?' * len(chunk))})", chunk))
    mentions: list[tuple[int, str, str]] = []
    pairs: list[tuple[str, int, int]] = []
    for owner, turn_id, ents, _ in items:
        ids = [got[(owner, k, n)] for k, n in ents if (owner, k, n) in got]
        new = [eid for eid in dict.fromkeys(ids) if (turn_id, eid) not in have]
        mentions += [(eid, turn_id, owner) for eid in new]
        pairs += [(owner, a, b) for a, b in itertools.combinations(sorted(new[:MAX_EDGE_ENTITIES]), 2)]
    db.executemany("INSERT OR IGNORE INTO entity_mentions (entity_id, turn_id, owner) VALUES (?,?,?)", mentions)
    # a pair seen by several turns of the batch: one row with its count (the same weights, fewer rows)
    db.executemany("INSERT INTO entity_edges (owner, src, dst, weight) VALUES (?,?,?,?) "
                   "ON CONFLICT(owner, src, dst) DO UPDATE SET weight = entity_edges.weight + excluded.weight",
                   [(o, a, b, n) for (o, a, b), n in collections.Counter(pairs).items()])
    return len(mentions)


def lookup(db: sqlite3.Connection, scope: Scope, ents: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
    """(id, kind, name, mention count) of the given entities among the scope's owners."""
    if not ents:
        return []
    marks = ",".join("?" * len(scope.owners))
    out = []
    for kind, name in ents:
        kinds = (kind,) if kind != "*" else ("name", "symbol", "path", "package", "command", "error", "url")
        km = ",".join("?" * len(kinds))
        for r in db.execute(
                f"SELECT e.id, e.kind, e.name, (SELECT count(*) FROM (SELECT 1 FROM entity_mentions m "
                f"WHERE m.entity_id = e.id LIMIT {MAX_COUNT})) "
                f"FROM entities e WHERE e.owner IN ({marks}) AND e.kind IN ({km}) AND e.name = ?",
                [*scope.owners, *kinds, name]):
            out.append((int(r[0]), r[1], r[2], int(r[3])))
    return out


def related(db: sqlite3.Connection, scope: Scope, ids: list[int], limit: int) -> list[tuple[int, float]]:
    """Entities that co-occur most with ``ids`` (bounded expansion), strongest first."""
    if not ids:
        return []
    om = ",".join("?" * len(scope.owners))
    im = ",".join("?" * len(ids))
    # edges are stored once (src < dst) under a (owner, src, dst) key; only the src side has an
    # index, so expansion follows edges from the query's entities to larger ids (bounded, cheap)
    sql = (f"SELECT dst, sum(weight) AS w FROM entity_edges WHERE owner IN ({om}) AND src IN ({im}) "
           f"AND dst NOT IN ({im}) GROUP BY dst ORDER BY w DESC LIMIT ?")
    return [(int(r[0]), float(r[1])) for r in db.execute(sql, [*scope.owners, *ids, *ids, limit])]


def turns_mentioning(db: sqlite3.Connection, scope: Scope, entity_id: int, limit: int) -> list[str]:
    """Up to ``limit`` turns in scope that mention the entity.

    Reads the mention index in key order and stops at ``limit``: the cost is bounded by the
    limit, not by how often the entity is mentioned (an entity in more turns than ``limit``
    yields a sample of them, which is all a common entity's low weight is worth).
    """
    where, params = scope.sql("t", by_key=True)
    # the scope from the (id, owner, project, agent, deleted) index, not from the wide turn row
    sql = (f"SELECT t.id FROM entity_mentions m CROSS JOIN turns t INDEXED BY turns_id_scope ON t.id = m.turn_id "
           f"WHERE m.entity_id = ? AND {where} AND t.deleted = 0 LIMIT ?")
    return [r[0] for r in db.execute(sql, [entity_id, *params, limit])]


def mention_counts(db: sqlite3.Connection, ids: list[int]) -> dict[int, int]:
    """Mentions per entity, counted up to MAX_COUNT (enough to compare with the hub limit)."""
    out = {}
    for eid in ids:
        r = db.execute(f"SELECT count(*) FROM (SELECT 1 FROM entity_mentions WHERE entity_id = ? "
                       f"LIMIT {MAX_COUNT})", (eid,)).fetchone()
        out[eid] = int(r[0])
    return out


EXACT_UP_TO = 5_000   # scopes up to this size are counted exactly
SESSIONS_TTL = 600.0  # … larger ones from the sessions' counts, re-read every ten minutes


class SqliteEntities:
    """``store.entities`` of the SQLite engine: lookups by entity (the writes are ``put_mentions*``,
    called inside the write pipeline's transaction)."""

    max_count = MAX_COUNT  # mention counts stop here

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    @property
    def _db(self) -> sqlite3.Connection:
        return self.store.conn

    def lookup(self, scope: Scope, ents: list[tuple[str, str]]) -> list[tuple[int, str, str, int]]:
        return lookup(self._db, scope, ents)

    def related(self, scope: Scope, ids: list[int], limit: int) -> list[tuple[int, float]]:
        return related(self._db, scope, ids, limit)

    def turns_mentioning(self, scope: Scope, entity_id: int, limit: int) -> list[str]:
        return turns_mentioning(self._db, scope, entity_id, limit)

    def mention_counts(self, ids: list[int]) -> dict[int, int]:
        return mention_counts(self._db, ids)

    def turn_count(self, scope: Scope) -> int:
        """Turns in scope, for IDF weights: exact up to EXACT_UP_TO (cached until the next write),
        above that the sessions' turn counts (one row per session, far cheaper than counting turns),
        cached for SESSIONS_TTL seconds whatever is written: a live turn start must not pay for a
        recount after every turn end, and a few new turns barely move an IDF."""
        db, cands = self._db, self.store.candidates
        direct = int(cands.until_write(("turn_count", scope), lambda: count_upto(db, scope, EXACT_UP_TO)))
        if direct < EXACT_UP_TO:
            return direct

        def sessions_sum() -> int:
            where, params = scope.sql()
            return int(db.execute(f"SELECT coalesce(sum(turn_count), 0) FROM sessions WHERE {where}",
                                  params).fetchone()[0])

        return max(int(cands.until_write(("session_turns", scope), sessions_sum, SESSIONS_TTL, any_write=False)),
                   EXACT_UP_TO)
