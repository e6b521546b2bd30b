"""OpenCode: ``opencode.db`` (session/message/part) plus the legacy ``storage/`` JSON tree (FORMATS.md §4).

One unit per top-level session; sub-agent sessions (``parent_id`` set) are read with their
root and their messages are marked ``sidechain`` so they fold into the parent's turn.
Messages of the whole tree come in ``time_created`` order; a message's text is the
concatenation of its non-synthetic, non-ignored ``text`` parts, tool parts become tool calls
with their ``state`` input/output, ``file`` parts become placeholders (never ``data:`` bytes).
Compaction summaries (``summary: true`` assistant messages, ``compaction`` parts) are not
imported as conversation. Times are epoch milliseconds. A unit's fingerprint is (rows in
the tree, newest ``time_updated``). Legacy JSON sessions whose id is already in a database
are skipped (the database wins). ``session.revert`` is not honoured.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_dict,
    as_text,
    connect_ro,
    data_url_media_type,
    db_error_reason,
    decode_value,
    env_path,
    existing_dirs,
    glob_paths,
    image_placeholder,
    load_json_file,
    parse_ts,
    xdg_data_home,
)

AGENT = "opencode"


class OpenCodeSource:
    agent = AGENT
    format = "opencode"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        candidates = [env_path(env, "OPENCODE_DATA_DIR"), xdg_data_home(env) / "opencode",
                      env_path(env, "OPENCODE_CONFIG_DIR")]
        return [p for p in existing_dirs(c for c in candidates if c is not None)
                if (p / "storage").is_dir() or any(p.glob("opencode*.db"))]

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        stats = stats if stats is not None else ParseStats()
        units: list[Unit] = []
        db_sessions: set[str] = set()
        for db in sorted(root.glob("opencode*.db")):
            units.extend(_db_units(db, stats, db_sessions))
        storage = root / "storage"
        if storage.is_dir():
            units.extend(_legacy_units(storage, stats, db_sessions))
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        rows = _legacy_rows(unit, stats) if unit.meta.get("legacy") else _db_rows(unit, stats)
        directory = str(unit.meta.get("directory") or "")
        for msg_id, sid, created, data, parts in rows:
            for m in _messages(msg_id, unit.session_id, sid, created, data, parts, directory, stats):
                stats.messages += 1
                yield m


# ----------------------------------------------------------------------------- units

def _roots(parents: Mapping[str, str]) -> dict[str, str]:
    """session id → id of its top-level ancestor (cycles and missing parents stop the walk)."""
    out: dict[str, str] = {}
    for sid in parents:
        cur, seen = sid, {sid}
        while parents.get(cur) and parents[cur] in parents and parents[cur] not in seen:
            cur = parents[cur]
            seen.add(cur)
        out[sid] = cur
    return out


def _db_units(db: Path, stats: ParseStats, db_sessions: set[str]) -> list[Unit]:
    try:
        con = connect_ro(db)
        try:
            sessions = con.execute("SELECT id, parent_id, directory, title, time_updated FROM session").fetchall()
            msgs = dict((r[0], (r[1], r[2])) for r in con.execute(
                "SELECT session_id, COUNT(*), MAX(time_updated) FROM message GROUP BY session_id"))
            parts = dict((r[0], (r[1], r[2])) for r in con.execute(
                "SELECT session_id, COUNT(*), MAX(time_updated) FROM part GROUP BY session_id"))
        finally:
            con.close()
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), str(db))
        return []
    info = {str(r["id"]): r for r in sessions}
    roots = _roots({sid: str(r["parent_id"] or "") for sid, r in info.items()})
    trees: dict[str, list[str]] = {}
    for sid, root in roots.items():
        trees.setdefault(root, []).append(sid)
    units = []
    for root, members in trees.items():
        size = 0
        newest = float(info[root]["time_updated"] or 0)
        for sid in members:
            for table in (msgs, parts):
                count, latest = table.get(sid, (0, 0))
                size += int(count or 0)
                newest = max(newest, float(latest or 0))
        db_sessions.update(members)
        children = tuple(sorted(s for s in members if s != root))
        units.append(Unit(agent=AGENT, key=f"{AGENT}:{db}#{root}", path=db, size=size,
                          mtime=parse_ts(newest) or 0.0, session_id=root,
                          meta={"directory": str(info[root]["directory"] or ""), "children": children,
                                "title": str(info[root]["title"] or "")}))
    return units


def _legacy_units(storage: Path, stats: ParseStats, db_sessions: set[str]) -> list[Unit]:
    sessions: dict[str, dict[str, Any]] = {}
    files: dict[str, Path] = {}
    for f in glob_paths(storage / "session", "*/*.json", stats):
        data = load_json_file(f, stats)
        if not isinstance(data, dict) or not data.get("id"):
            continue
        sid = str(data["id"])
        if sid in db_sessions:
            stats.ignore("legacy session already in database")
            continue
        sessions[sid], files[sid] = data, f
    roots = _roots({sid: str(d.get("parentID") or "") for sid, d in sessions.items()})
    trees: dict[str, list[str]] = {}
    for sid, root in roots.items():
        trees.setdefault(root, []).append(sid)
    units = []
    for root, members in trees.items():
        size, newest = 0, 0.0
        for sid in members:
            for p in _legacy_files(storage, sid):
                try:
                    st = p.stat()
                except OSError:
                    continue
                size += st.st_size
                newest = max(newest, st.st_mtime)
        children = tuple(sorted(s for s in members if s != root))
        units.append(Unit(agent=AGENT, key=f"{AGENT}:{storage}#{root}", path=files[root], size=size,
                          mtime=newest, session_id=root,
                          meta={"legacy": True, "storage": str(storage), "children": children,
                                "directory": str(sessions[root].get("directory") or ""),
                                "title": str(sessions[root].get("title") or "")}))
    return units


def _legacy_files(storage: Path, sid: str) -> Iterator[Path]:
    for mf in sorted((storage / "message" / sid).glob("*.json")):
        yield mf
        yield from sorted((storage / "part" / mf.stem).glob("*.json"))


# ----------------------------------------------------------------------------- rows

_Row = tuple[str, str, float | None, dict[str, Any], list[dict[str, Any]]]


def _db_rows(unit: Unit, stats: ParseStats) -> Iterator[_Row]:
    members = [unit.session_id, *unit.meta.get("children", ())]
    marks = ",".join("?" * len(members))
    try:
        con = connect_ro(unit.path)
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), f"{unit.path}#{unit.session_id}")
        return
    try:
        rows = con.execute(f"SELECT id, session_id, time_created, data FROM message WHERE session_id IN ({marks}) "
                           "ORDER BY time_created, id", members)
        for r in rows:
            data = decode_value(r["data"])
            if not isinstance(data, dict):
                stats.error("malformed message json", f"{unit.path}#{r['id']}")
                continue
            parts = []
            for p in con.execute("SELECT id, time_created, data FROM part WHERE message_id = ? ORDER BY id",
                                 (r["id"],)):
                pdata = decode_value(p["data"])
                if isinstance(pdata, dict):
                    pdata.setdefault("id", str(p["id"]))
                    pdata.setdefault("_created", p["time_created"])
                    parts.append(pdata)
                else:
                    stats.error("malformed part json", f"{unit.path}#{p['id']}")
            yield str(r["id"]), str(r["session_id"]), parse_ts(r["time_created"]), data, parts
    except sqlite3.Error as e:
        stats.error(db_error_reason(e), f"{unit.path}#{unit.session_id}")
    finally:
        con.close()


def _legacy_rows(unit: Unit, stats: ParseStats) -> Iterable[_Row]:
    storage = Path(str(unit.meta.get("storage")))
    found: list[tuple[float, str, str, dict[str, Any]]] = []
    for sid in [unit.session_id, *unit.meta.get("children", ())]:
        for mf in sorted((storage / "message" / sid).glob("*.json")):
            data = load_json_file(mf, stats)
            if not isinstance(data, dict):
                continue
            created = parse_ts(as_dict(data.get("time")).get("created"))
            found.append((created or 0.0, str(data.get("id") or mf.stem), sid, data))
    found.sort(key=lambda x: (x[0], x[1]))
    for created, mid, sid, data in found:
        parts = [p for p in (load_json_file(f, stats) for f in sorted((storage / "part" / mid).glob("*.json")))
                 if isinstance(p, dict)]
        yield mid, sid, created or None, data, parts


# ----------------------------------------------------------------------------- messages

def _messages(msg_id: str, root: str, sid: str, created: float | None, data: dict[str, Any],
              parts: list[dict[str, Any]], directory: str, stats: ParseStats) -> list[Message]:
    """One OpenCode message as remem messages.

    A user message is one message. An assistant message is split at its parts' order into
    segments (a run of text parts, then a run of tool parts, …) so that a text written after
    the tools stays after them; the first segment keeps the message id, later ones take the
    id of their first part.
    """
    role = data.get("role")
    time = as_dict(data.get("time"))
    ts = parse_ts(time.get("created")) or created
    if ts is None:
        stats.error("missing timestamp", msg_id)
        return []
    if role not in ("user", "assistant"):
        stats.unknown_type(role, "role")
        return []
    if role == "assistant" and data.get("summary") is True:
        stats.ignore("compaction summary")
        return []
    path = as_dict(data.get("path"))

    def new(source_id: str, part: dict[str, Any] | None = None) -> Message:
        m = Message(source_id=source_id, session_id=root, role=str(role), ts=_part_ts(part) or ts,
                    sidechain=sid != root,
                    cwd=str(path.get("cwd") or directory))
        if sid != root:
            m.extra["subsession_id"] = sid
        return m

    if role == "user":
        return [_user(new(msg_id), data, parts)]
    out: list[Message] = []
    cur = new(msg_id)
    texts: list[str] = []
    for p in parts:
        ptype = p.get("type")
        if ptype == "text" and not (p.get("synthetic") or p.get("ignored")) and isinstance(p.get("text"), str):
            if cur.tool_calls:               # text after tools: start a new segment
                out.append(cur)
                cur = new(str(p.get("id") or f"{msg_id}:{len(out)}"), p)
            texts = cur.extra.setdefault("_texts", [])
            texts.append(p["text"])
        elif ptype == "tool":
            state = as_dict(p.get("state"))
            status = str(state.get("status") or "")
            cur.tool_calls.append(ToolCall(
                name=str(p.get("tool") or ""), input=as_text(state.get("input")),
                output=as_text(state.get("output") if status != "error" else state.get("error")),
                is_error=status == "error", call_id=str(p.get("callID") or p.get("id") or "")))
    out.append(cur)
    err = data.get("error")
    for m in out:
        m.text = "\n\n".join(t for t in m.extra.pop("_texts", []) if t.strip()).strip()
        m.model = str(data.get("modelID") or "")
    if isinstance(err, dict) and err:
        out[-1].status = "cancelled" if "abort" in str(err.get("name", "")).lower() else "failed"
        out[-1].extra["error"] = str(err.get("name") or "")
    return out


def _user(m: Message, data: dict[str, Any], parts: list[dict[str, Any]]) -> Message:
    texts: list[str] = []
    files: list[str] = []
    compaction = False
    for p in parts:
        ptype = p.get("type")
        if ptype == "text" and not (p.get("synthetic") or p.get("ignored")) and isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif ptype == "file":
            url = str(p.get("url") or "")
            mime = str(p.get("mime") or data_url_media_type(url))
            files.append(image_placeholder(mime) if mime.startswith("image/") else f"[file: {p.get('filename') or mime}]")
        elif ptype == "compaction":
            compaction = True
    text = "\n\n".join(t for t in texts if t.strip()).strip()
    m.model = _model_name(data.get("model"))
    if compaction:
        m.extra["kind"] = "compaction"
    elif text:
        m.real_user = True
    elif files:
        m.extra["kind"] = "attachment"
    m.text = "\n".join([text, *files]) if files else text
    return m


def _part_ts(part: dict[str, Any] | None) -> float | None:
    if not part:
        return None
    time = as_dict(part.get("time"))
    return parse_ts(time.get("start")) or parse_ts(part.get("_created"))


def _model_name(model: Any) -> str:
    if isinstance(model, dict):
        return str(model.get("modelID") or model.get("id") or "")
    return str(model or "")


SOURCE = OpenCodeSource()
