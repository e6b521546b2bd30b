"""Cursor: the ``cursorDiskKV`` table of ``<User>/globalStorage/state.vscdb`` (FORMATS.md §3).

One unit per composer (conversation): ``composerData:<id>`` gives the bubble order
(``fullConversationHeadersOnly``; old versions inline ``conversation``) and
``bubbleId:<id>:<bubbleId>`` the bubbles (type 1 user, 2 assistant). A unit's fingerprint
is (number of bubbles, ``lastUpdatedAt``) so a composer is re-read only when it changed.
The project comes from the workspace that lists the composer
(``workspaceStorage/*/state.vscdb`` → ``composer.composerData``; ``workspace.json`` folder).

The databases are opened read-only through ``file:…?mode=ro`` URIs since Cursor keeps them
open; a locked or corrupt database is counted in the stats and yields nothing. Values may
be JSON stored as TEXT or BLOB. Bubbles without ``createdAt`` take the previous bubble's
time (or the composer's ``createdAt``); Cursor often omits per-bubble times, so this is not
counted as an error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_dict,
    as_text,
    connect_ro,
    db_error_reason,
    decode_value,
    existing_dirs,
    home_dir,
    list_dir,
    load_json_file,
    parse_ts,
    xdg_config_home,
)

AGENT = "cursor"


class CursorSource:
    agent = AGENT
    format = "cursor-vscdb"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        home = home_dir(env)
        candidates = [xdg_config_home(env) / "Cursor" / "User",
                      home / ".config" / "Cursor" / "User",
                      home / "Library" / "Application Support" / "Cursor" / "User"]
        appdata = (env.get("APPDATA") or "").strip()
        if appdata:
            candidates.append(Path(appdata) / "Cursor" / "User")
        return [p for p in existing_dirs(candidates) if (p / "globalStorage" / "state.vscdb").is_file()]

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        stats = stats if stats is not None else ParseStats()
        db = root / "globalStorage" / "state.vscdb"
        if not db.is_file():
            return []
        projects = workspace_projects(root, stats)
        units: list[Unit] = []
        try:
            con = connect_ro(db)
            try:
                rows = con.execute(
                    "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%'").fetchall()
            finally:
                con.close()
        except sqlite3.Error as e:
            stats.error(db_error_reason(e), str(db))
            return []
        for row in rows:
            cid = str(row["key"]).split(":", 1)[1]
            data = decode_value(row["value"])
            if not isinstance(data, dict):
                stats.error("malformed composer json", f"{db}#{cid}")
                continue
            order = _bubble_order(data)
            mtime = parse_ts(data.get("lastUpdatedAt")) or parse_ts(data.get("createdAt")) or 0.0
            units.append(Unit(
                agent=AGENT, key=f"{AGENT}:{db}#{cid}", path=db, size=len(order), mtime=mtime,
                session_id=cid, meta={"project": projects.get(cid, ""), "title": str(data.get("name") or "")},
            ))
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        cid = unit.session_id
        try:
            con = connect_ro(unit.path)
            try:
                row = con.execute("SELECT value FROM cursorDiskKV WHERE key = ?",
                                  (f"composerData:{cid}",)).fetchone()
                data = decode_value(row["value"]) if row is not None else None
                bubbles: dict[str, Any] = {}
                if isinstance(data, dict) and data.get("fullConversationHeadersOnly"):
                    for r in con.execute("SELECT key, value FROM cursorDiskKV WHERE key >= ? AND key < ?",
                                         (f"bubbleId:{cid}:", f"bubbleId:{cid};")):
                        bubbles[str(r["key"]).rsplit(":", 1)[1]] = r["value"]
            finally:
                con.close()
        except sqlite3.Error as e:
            stats.error(db_error_reason(e), f"{unit.path}#{cid}")
            return
        if not isinstance(data, dict):
            stats.error("missing composer" if data is None else "malformed composer json", f"{unit.path}#{cid}")
            return
        for m in _messages(cid, data, bubbles, str(unit.meta.get("project") or ""), stats):
            stats.messages += 1
            yield m


def _bubble_order(data: dict[str, Any]) -> list[Any]:
    headers = data.get("fullConversationHeadersOnly")
    if isinstance(headers, list) and headers:
        return headers
    conv = data.get("conversation")
    return conv if isinstance(conv, list) else []


def _messages(cid: str, data: dict[str, Any], raw_bubbles: dict[str, Any], project: str,
              stats: ParseStats) -> Iterator[Message]:
    model = ""
    cfg = data.get("modelConfig")
    if isinstance(cfg, dict):
        model = str(cfg.get("modelName") or "")
    last_ts = parse_ts(data.get("createdAt"))
    inline = not data.get("fullConversationHeadersOnly")
    for index, header in enumerate(_bubble_order(data)):
        if not isinstance(header, dict):
            stats.error("malformed bubble header", cid)
            continue
        bid = str(header.get("bubbleId") or "")
        bubble = header if inline else decode_value(raw_bubbles.get(bid))
        if not isinstance(bubble, dict):
            stats.error("missing bubble" if bid not in raw_bubbles else "malformed bubble json", f"{cid}:{bid}")
            continue
        ts = parse_ts(bubble.get("createdAt")) or parse_ts(as_dict(bubble.get("timingInfo")).get("clientStartTime"))
        ts = ts or last_ts
        last_ts = ts
        btype = bubble.get("type", header.get("type"))
        text = str(bubble.get("text") or "").strip()
        m = Message(source_id=bid or f"{cid}#{index}", session_id=cid, role="user", ts=ts, cwd=project)
        if btype == 1:
            m.text, m.real_user = text, bool(text)
        elif btype == 2:
            m.role, m.text = "assistant", text
            info = bubble.get("modelInfo")
            m.model = str(info.get("modelName") or "") if isinstance(info, dict) else ""
            m.model = m.model or model
            tool = bubble.get("toolFormerData")
            if isinstance(tool, dict) and (tool.get("name") or tool.get("toolCallId")):
                status = str(tool.get("status") or "")
                m.tool_calls.append(ToolCall(
                    name=str(tool.get("name") or ""), input=as_text(tool.get("rawArgs") or tool.get("params")),
                    output=as_text(tool.get("result")), is_error=status in ("error", "failed"),
                    call_id=str(tool.get("toolCallId") or "")))
                if status in ("cancelled", "aborted"):
                    m.status = "cancelled"
        else:
            stats.unknown_type(btype, "bubble type")
            continue
        yield m


def workspace_projects(root: Path, stats: ParseStats) -> dict[str, str]:
    """composerId → project folder, from every ``workspaceStorage/<hash>`` that lists it."""
    out: dict[str, str] = {}
    ws_root = root / "workspaceStorage"
    if not ws_root.is_dir():
        return out
    for ws in list_dir(ws_root, stats):
        db, meta = ws / "state.vscdb", ws / "workspace.json"
        if not (db.is_file() and meta.is_file()):
            continue
        info = load_json_file(meta, stats)
        folder = ""
        if isinstance(info, dict):
            folder = _uri_path(str(info.get("folder") or info.get("workspace") or ""))
        if not folder:
            continue
        try:
            con = connect_ro(db)
            try:
                row = con.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()
            finally:
                con.close()
        except sqlite3.Error as e:
            stats.error(db_error_reason(e), str(db))
            continue
        data = decode_value(row["value"]) if row is not None else None
        for c in (data.get("allComposers") or []) if isinstance(data, dict) else []:
            if isinstance(c, dict) and c.get("composerId"):
                out.setdefault(str(c["composerId"]), folder)
    return out


def _uri_path(uri: str) -> str:
    if uri.startswith("file://"):
        return unquote(urlparse(uri).path)
    return uri


SOURCE = CursorSource()
