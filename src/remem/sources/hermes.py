"""Hermes Agent: ``$HERMES_HOME/state.db`` (sessions/messages) and legacy ``sessions/`` JSONL (FORMATS.md §5).

One unit per conversation. A child session (``parent_session_id``) that continues its parent
after context compression (its first message is a ``_compressed_summary`` carrier, or the
parent ended with ``end_reason='compression'``) is stitched into the parent's unit; a
delegated sub-agent child (``model_config._delegate_from``) is folded in as sidechain;
branch/reset children stay units of their own. Rows with ``active=0`` (rewound),
``_compressed_summary=1`` and ``display_kind='hidden'`` are skipped; background-review
harness prompts are not real user prompts. Tool calls are OpenAI-style ``tool_calls`` JSON
joined to ``role='tool'`` rows by ``tool_call_id``; a tool result whose JSON carries a
non-zero ``exit_code`` or an ``error`` is an error. Times are epoch seconds.

Legacy ``sessions/*.jsonl`` and ``sessions/*/*.jsonl`` transcripts (format not verified) are
read with the generic chat recogniser, except for sessions already in ``state.db``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_dict,
    as_text,
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
from .jsonl_chat import iter_chat_jsonl

AGENT = "hermes"
_HARNESS_PREFIXES = ("Review the conversation above and", "[CONTEXT COMPACTION]")


def harness_kind(text: str) -> str:
    """"harness" for Hermes' own scaffolding prompts, "" for a typed prompt."""
    return "harness" if text.lstrip().startswith(_HARNESS_PREFIXES) else ""


class HermesSource:
    agent = AGENT
    format = "hermes"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        candidates = [env_path(env, "HERMES_HOME"), home_dir(env) / ".hermes"]
        return existing_dirs(c for c in candidates if c is not None)

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        stats = stats if stats is not None else ParseStats()
        units: list[Unit] = []
        in_db: set[str] = set()
        db = root / "state.db"
        if db.is_file():
            units.extend(_db_units(db, stats, in_db))
        sessions = root / "sessions"
        for p in sorted({*glob_paths(sessions, "*.jsonl", stats), *glob_paths(sessions, "*/*.jsonl", stats)}):
            sid = p.stem if p.parent == sessions else p.parent.name
            if sid in in_db or p.stem in in_db:
                continue
            u = file_unit(AGENT, p, session_id=sid)
            if u is not None:
                units.append(u)
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        if unit.meta.get("db"):
            yield from _db_messages(unit, stats)
        else:
            for m in iter_chat_jsonl(unit.path, stats, session_id=unit.session_id, classify=harness_kind):
                for call_id, (out, err) in list(m.tool_results.items()):
                    text, json_err = _tool_output(out)
                    m.tool_results[call_id] = (text, err or json_err)
                yield m


# ----------------------------------------------------------------------------- units

def _fold_kind(row: Mapping[str, Any], parent: Mapping[str, Any] | None, first_is_summary: bool) -> str:
    """How a child session relates to its parent: "continuation", "delegate" or "" (own unit)."""
    if parent is None:
        return ""
    cfg = decode_value(row.get("model_config")) if row.get("model_config") else None
    if isinstance(cfg, dict):
        if cfg.get("_delegate_from"):
            return "delegate"
        if cfg.get("_branched_from") or cfg.get("_reset_from"):
            return ""
    if first_is_summary or parent.get("end_reason") == "compression":
        return "continuation"
    return ""


def _db_units(db: Path, stats: ParseStats, in_db: set[str]) -> list[Unit]:
    try:
        con = connect_ro(db)
        try:
            scols = table_columns(con, "sessions")
            mcols = table_columns(con, "messages")
            if not {"id", "started_at"} <= scols or not {"id", "session_id", "role"} <= mcols:
                stats.error("unexpected schema", str(db))
                return []
            want = [c for c in ("id", "parent_session_id", "model_config", "end_reason", "cwd", "started_at",
                                "ended_at", "last_activity_at", "model", "title") if c in scols]
            sessions = {str(r["id"]): dict(r) for r in con.execute(f"SELECT {', '.join(want)} FROM sessions")}
            stats_rows = con.execute("SELECT session_id, COUNT(*) AS n, MAX(timestamp) AS t, MIN(id) AS first "
                                     "FROM messages GROUP BY session_id").fetchall()
            counts = {str(r["session_id"]): (int(r["n"]), r["t"], r["first"]) for r in stats_rows}
            summary_first: set[str] = set()
            if "_compressed_summary" in mcols:
                firsts = [c[2] for c in counts.values()]
                for i in range(0, len(firsts), 500):
                    chunk = firsts[i:i + 500]
                    q = (f"SELECT session_id FROM messages WHERE _compressed_summary = 1 "
                         f"AND id IN ({','.join('?' * len(chunk))})")
                    summary_first.update(str(r[0]) for r in con.execute(q, chunk))
        finally:
            con.close()
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(db))
        return []
    owner: dict[str, tuple[str, str]] = {}    # session → (unit root, fold kind)

    def resolve(sid: str, depth: int = 0) -> tuple[str, str]:
        if sid in owner:
            return owner[sid]
        row = sessions[sid]
        parent_id = str(row.get("parent_session_id") or "")
        kind = _fold_kind(row, sessions.get(parent_id), sid in summary_first) if depth < 50 else ""
        if kind:
            root, parent_kind = resolve(parent_id, depth + 1)
            owner[sid] = (root, "delegate" if "delegate" in (kind, parent_kind) else kind)
        else:
            owner[sid] = (sid, "")
        return owner[sid]

    trees: dict[str, list[tuple[str, str]]] = {}
    for sid in sessions:
        root, kind = resolve(sid)
        trees.setdefault(root, []).append((sid, kind))
    units = []
    for root, members in trees.items():
        size, newest = 0, 0.0
        for sid, _ in members:
            n, t, _first = counts.get(sid, (0, None, None))
            size += n
            row = sessions[sid]
            newest = max(newest, parse_ts(t) or 0.0, parse_ts(row.get("last_activity_at")) or 0.0,
                         parse_ts(row.get("ended_at")) or 0.0, parse_ts(row.get("started_at")) or 0.0)
        in_db.update(s for s, _ in members)
        units.append(Unit(agent=AGENT, key=f"{AGENT}:{db}#{root}", path=db, size=size, mtime=newest,
                          session_id=root,
                          meta={"db": True, "members": tuple(members),
                                "cwd": {s: str(sessions[s].get("cwd") or "") for s, _ in members},
                                "model": str(sessions[root].get("model") or ""),
                                "title": str(sessions[root].get("title") or "")}))
    return units


# ----------------------------------------------------------------------------- messages

def _db_messages(unit: Unit, stats: ParseStats) -> Iterator[Message]:
    members: dict[str, str] = dict(unit.meta.get("members") or ((unit.session_id, ""),))
    cwds: Mapping[str, str] = unit.meta.get("cwd") or {}
    model = str(unit.meta.get("model") or "")
    try:
        con = connect_ro(unit.path)
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(unit.path))
        return
    try:
        mcols = table_columns(con, "messages")
        want = [c for c in ("id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name",
                            "timestamp", "finish_reason", "_compressed_summary", "active", "display_kind")
                if c in mcols]
        marks = ",".join("?" * len(members))
        rows = con.execute(f"SELECT {', '.join(want)} FROM messages WHERE session_id IN ({marks}) "
                           "ORDER BY timestamp, id", list(members))
        for r in rows:
            stats.lines += 1
            m = _message(dict(r), unit.session_id, members, cwds, model, stats)
            if m is not None:
                stats.messages += 1
                yield m
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(unit.path))
    finally:
        con.close()


def _message(r: dict[str, Any], root: str, members: Mapping[str, str], cwds: Mapping[str, str],
             model: str, stats: ParseStats) -> Message | None:
    where = f"hermes message {r.get('id')}"
    if r.get("active") == 0:
        stats.ignore("rewound")
        return None
    if r.get("_compressed_summary"):
        stats.ignore("compressed summary")
        return None
    if r.get("display_kind") == "hidden":
        stats.ignore("hidden")
        return None
    ts = parse_ts(r.get("timestamp"))
    if ts is None:
        stats.error("missing timestamp", where)
        return None
    role = str(r.get("role") or "")
    if role not in ("user", "assistant", "tool", "system"):
        stats.unknown_type(role, "role")
        return None
    sid = str(r.get("session_id") or root)
    content = r.get("content")
    text = content if isinstance(content, str) else as_text(content)
    m = Message(source_id=f"{sid}:{r.get('id')}", session_id=root, role=role, ts=ts,
                cwd=cwds.get(sid) or cwds.get(root, ""), sidechain=members.get(sid) == "delegate")
    if sid != root:
        m.extra["subsession_id"] = sid
    if role == "tool":
        out, is_error = _tool_output(text)
        m.tool_results[str(r.get("tool_call_id") or "")] = (out, is_error)
        return m
    if role == "assistant":
        m.model = model
        m.text = text.strip()
        calls = decode_value(r.get("tool_calls")) if r.get("tool_calls") else None
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                fn = as_dict(call.get("function")) or call
                m.tool_calls.append(ToolCall(name=str(fn.get("name") or ""), input=as_text(fn.get("arguments")),
                                             call_id=str(call.get("id") or "")))
        finish = str(r.get("finish_reason") or "")
        if finish == "error":
            m.status = "failed"
        elif finish in ("interrupted", "aborted", "cancelled"):
            m.status = "cancelled"
        return m
    m.text = text.strip()
    if role == "user":
        kind = harness_kind(m.text)
        if kind:
            m.extra["kind"] = kind
            m.extra["barrier"] = True
        m.real_user = not kind and bool(m.text)
    return m


def _tool_output(text: str) -> tuple[str, bool]:
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            code = obj.get("exit_code")
            err = bool(obj.get("error")) or (isinstance(code, int) and code != 0)
            if "output" in obj:
                return as_text(obj["output"]), err
            return text, err
    return text, False


SOURCE = HermesSource()
