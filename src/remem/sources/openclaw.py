"""OpenClaw: ``~/.openclaw/agents/<agentId>/sessions/<sessionId>.jsonl`` (FORMATS.md §6).

Transcript lines are Pi-style entries (``type: "session"`` metadata, then ``type: "message"``
with ``message.role`` user|assistant|toolResult and ``text``/``thinking``/``toolCall``
blocks); they are read by the generic chat recogniser in :mod:`.jsonl_chat`. Deleted
sessions (``*.deleted.<ts>``) and ``sessions.json`` are skipped.

Newer builds keep transcripts in ``~/.openclaw/state/openclaw.sqlite``. Checked against the
schema in the published ``openclaw`` 2026.9.6 package: ``transcript_events(session_id, seq,
event_json, created_at, event_zstd, event_utf8_bytes, navigation_json)``, where a row holds its
event either as JSON text or, moved to cold storage, as a zstd frame in ``event_zstd``
(``event_json`` NULL). Other column names among common candidates are still accepted (older
builds); anything else is counted as ``unexpected schema``. One unit per session; a session
present in the database is not read again from JSONL.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.model import Message

from .base import (
    ParseStats,
    Unit,
    connect_ro,
    db_error_reason,
    decode_value,
    env_path,
    existing_dirs,
    file_unit,
    glob_paths,
    home_dir,
    parse_ts,
    table_columns,
)
from .jsonl_chat import ChatLineParser, iter_chat_jsonl

AGENT = "openclaw"
_SESSION_COLS = ("session_id", "sessionId", "session", "transcript_id")
_JSON_COLS = ("event_json", "entry_json", "json", "data", "payload", "entry", "event", "line", "content", "body")
_ORDER_COLS = ("seq", "sequence", "idx", "line_no", "position", "offset")
_TIME_COLS = ("updated_at", "created_at", "timestamp", "ts", "time")


class OpenClawSource:
    agent = AGENT
    format = "openclaw"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        candidates = [env_path(env, "OPENCLAW_STATE_DIR"), env_path(env, "OPENCLAW_HOME"),
                      home_dir(env) / ".openclaw"]
        return existing_dirs(c for c in candidates if c is not None)

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        stats = stats if stats is not None else ParseStats()
        units: list[Unit] = []
        db = root / "state" / "openclaw.sqlite"
        in_db: set[str] = set()
        if db.is_file():
            units.extend(_db_units(db, stats))
            in_db = {u.session_id for u in units}
        for p in glob_paths(root, "agents/*/sessions/*.jsonl", stats):
            if ".deleted." in p.name or p.stem in in_db:
                continue
            u = file_unit(AGENT, p, session_id=p.stem, meta={"agent_id": p.parent.parent.name})
            if u is not None:
                units.append(u)
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        if unit.meta.get("db"):
            yield from _db_messages(unit, stats)
        else:
            yield from iter_chat_jsonl(unit.path, stats, session_id=unit.session_id)


# ----------------------------------------------------------------------------- SQLite (defensive)

def _schema(con: sqlite3.Connection) -> dict[str, str] | None:
    """Column roles of ``transcript_events`` (session, json, order, time), or None if unusable."""
    cols = table_columns(con, "transcript_events")
    if not cols:
        return None
    pick = {
        "session": next((c for c in _SESSION_COLS if c in cols), ""),
        "json": next((c for c in _JSON_COLS if c in cols), ""),
        "order": next((c for c in _ORDER_COLS if c in cols), "rowid"),
        "time": next((c for c in _TIME_COLS if c in cols), ""),
        "from": "transcript_events",
    }
    if not pick["session"] and "file_id" in cols:   # events point at a transcript file row
        fcols = table_columns(con, "transcript_files")
        fsession = next((c for c in _SESSION_COLS if c in fcols), "")
        if "id" in fcols and fsession:
            pick["from"] = ("transcript_events JOIN transcript_files "
                            "ON transcript_files.id = transcript_events.file_id")
            pick["session"] = f"transcript_files.{fsession}"
            pick["order"] = f"transcript_events.{pick['order']}"
    if not (pick["session"] and pick["json"]):
        return None
    if "event_zstd" in cols:
        pick["zstd"] = "event_zstd" if pick["from"] == "transcript_events" else "transcript_events.event_zstd"
    return pick


MAX_EVENT_BYTES = 4 * 1024 * 1024  # OpenClaw's own limit for one event (CHECK in its schema)


def _unzstd(blob: bytes) -> str | None:
    """One cold-storage event: a zstd frame of UTF-8 JSON (None when it cannot be read)."""
    try:
        import zstandard

        data = zstandard.ZstdDecompressor().decompress(bytes(blob), max_output_size=MAX_EVENT_BYTES)
        return data.decode("utf-8", errors="replace")
    except Exception:  # missing module, corrupt frame, over the limit: counted by the caller
        return None


def _db_units(db: Path, stats: ParseStats) -> list[Unit]:
    try:
        con = connect_ro(db)
        try:
            s = _schema(con)
            if s is None:
                stats.error("unexpected schema", str(db))
                return []
            newest = f"MAX({s['time']})" if s["time"] else "NULL"
            rows = con.execute(f"SELECT {s['session']} AS sid, COUNT(*) AS n, {newest} AS t "
                               f"FROM {s['from']} GROUP BY {s['session']}").fetchall()
        finally:
            con.close()
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(db))
        return []
    fallback = db.stat().st_mtime
    return [Unit(agent=AGENT, key=f"{AGENT}:{db}#{r['sid']}", path=db, size=int(r["n"]),
                 mtime=parse_ts(r["t"]) or fallback, session_id=str(r["sid"]), meta={"db": True})
            for r in rows if r["sid"] is not None]


def _db_messages(unit: Unit, stats: ParseStats) -> Iterator[Message]:
    try:
        con = connect_ro(unit.path)
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(unit.path))
        return
    parser = ChatLineParser(unit.session_id)
    try:
        s = _schema(con)
        if s is None:
            stats.error("unexpected schema", str(unit.path))
            return
        packed = s.get("zstd") or "NULL"
        rows = con.execute(f"SELECT {s['order']} AS o, {s['json']} AS j, {packed} AS z FROM {s['from']} "
                           f"WHERE {s['session']} = ? ORDER BY {s['order']}", (unit.session_id,))
        for r in rows:
            stats.lines += 1
            raw = r["j"]
            if raw is None and r["z"] is not None:
                raw = _unzstd(r["z"])
                if raw is None:
                    stats.error("compressed event could not be read (zstd)", f"{unit.path}#{unit.session_id}:{r['o']}")
                    continue
            rec: Any = decode_value(raw)
            where = f"{unit.path}#{unit.session_id}:{r['o']}"
            if not isinstance(rec, dict):
                stats.error("malformed json", where)
                continue
            m = parser.parse(int(r["o"] or 0), rec, stats, where)
            if m is not None:
                m.session_id = m.session_id or unit.session_id
                stats.messages += 1
                yield m
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(unit.path))
    finally:
        con.close()


SOURCE = OpenClawSource()
