"""Gemini CLI: ``~/.gemini/tmp/<project>/chats/session-*.json[l]`` (FORMATS.md §7).

One unit per session file. When a session exists both as legacy ``.json`` and current
``.jsonl`` (same stem) only the ``.jsonl`` is read. Sub-agent logs
``chats/<parentSessionId>/*.jsonl`` are parts of the parent's unit (the directory is matched
to the session file whose name ends with the first 8 characters of its id) and fold into its
turns as sidechain. A sub-agent log whose parent session file is gone is a unit of its own,
read as its own session.

``.json`` is one ``ConversationRecord`` rewritten in place. ``.jsonl`` is replayed: line 1
is metadata; a record with an ``id`` is upserted (last write wins, first position kept);
``{"$set": {…}}`` patches metadata and, when it carries ``messages``, replaces them all;
``{"$rewindTo": id}`` drops that message and every later one. Replay keeps the live
messages of one file in memory (Gemini files are rewritten/upserted, so they cannot be
streamed line by line). Only ``user`` and ``gemini`` records are conversation;
``info``/``error``/``warning`` are ignored, and so is the ``<session_context>`` user
message Gemini CLI 0.61 writes first (date, OS, folder listing), which is no prompt; another
record type is counted as unknown and skipped. A gemini record's tool calls are emitted just
before its text (the recorded text is the answer written after the tools ran).
The project is the path mapped to the directory name in ``~/.gemini/projects.json``,
else the directory name itself.
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from remem.model import Message, ToolCall

from .base import (
    ParseStats,
    Unit,
    as_text,
    content_text,
    env_path,
    existing_dirs,
    file_unit,
    first_json_line,
    glob_paths,
    home_dir,
    iter_jsonl,
    list_dir,
    load_json_file,
    parse_ts,
)

AGENT = "gemini"
#: user records the CLI writes itself (0.61: the session's date/OS/folder context as the first message)
_INJECTED_PREFIXES = ("<session_context>",)


class GeminiSource:
    agent = AGENT
    format = "gemini-chats"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        candidates = [env_path(env, "GEMINI_CLI_HOME"), home_dir(env) / ".gemini"]
        return [p for p in existing_dirs(c for c in candidates if c is not None) if (p / "tmp").is_dir()]

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        stats = stats if stats is not None else ParseStats()
        projects = project_paths(root, stats)
        units: list[Unit] = []
        for chats in glob_paths(root, "tmp/*/chats", stats):
            project = projects.get(chats.parent.name, chats.parent.name)
            entries = list_dir(chats, stats)
            files = [p for p in entries if fnmatch.fnmatchcase(p.name, "session-*.json*")
                     and p.suffix in (".json", ".jsonl")]
            stems_jsonl = {p.stem for p in files if p.suffix == ".jsonl"}
            subdirs = [d for d in entries if d.is_dir()]
            claimed: set[Path] = set()
            for p in files:
                if p.suffix == ".json" and p.stem in stems_jsonl:
                    continue
                mine = [d for d in subdirs if p.stem.endswith("-" + d.name[:8])]
                claimed.update(mine)
                parts = [f for d in mine for f in glob_paths(d, "*.jsonl", stats)]
                meta: dict[str, Any] = {"project": project}
                if parts:
                    # the logs' own units from when their parent was missing (see sync: their turns go)
                    meta["absorbs"] = tuple((f"{AGENT}:{f}", sid) for f in parts
                                            if (sid := subagent_session(f)) != f.parent.name)
                u = file_unit(AGENT, p, session_id="", parts=parts, meta=meta)
                if u is not None:
                    units.append(u)
            # sub-agent logs whose parent session file is gone: each is read on its own
            for d in subdirs:
                if d in claimed:
                    continue
                for f in glob_paths(d, "*.jsonl", stats):
                    u = file_unit(AGENT, f, session_id=subagent_session(f),
                                  meta={"project": project, "orphan": True})
                    if u is not None:
                        units.append(u)
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        project = str(unit.meta.get("project") or "")
        meta, records = _load(unit.path, stats)
        session = str(meta.get("sessionId") or unit.session_id or unit.path.stem)
        streams = [list(_messages(records, session, project, False, stats))]
        for part in unit.parts:
            _pmeta, precords = _load(part, stats)
            streams.append(list(_messages(precords, session, project, True, stats)))
        # each file keeps its order; sub-agent messages slot into the main stream by time
        for m in heapq.merge(*streams, key=lambda m: m.ts or 0.0):
            stats.messages += 1
            yield m


def subagent_session(path: Path) -> str:
    """A sub-agent log's own session id: ``sessionId`` of its first line, else the file stem."""
    first = first_json_line(path) or {}
    return str(first.get("sessionId") or path.stem)


def project_paths(root: Path, stats: ParseStats) -> dict[str, str]:
    """Directory name (slug) → project path from ``projects.json`` (either orientation)."""
    f = root / "projects.json"
    if not f.is_file():
        return {}
    data = load_json_file(f, stats)
    if isinstance(data, dict) and isinstance(data.get("projects"), dict):
        data = data["projects"]
    out: dict[str, str] = {}
    for k, v in data.items() if isinstance(data, dict) else []:
        if not isinstance(v, str):
            continue
        if v.startswith(("/", "~")) or (len(v) > 2 and v[1] == ":"):
            out[str(k)] = v
        else:
            out[v] = str(k)
    return out


# ----------------------------------------------------------------------------- replay

def _load(path: Path, stats: ParseStats) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metadata and live message records of one chat file (legacy JSON or JSONL replay)."""
    if path.suffix == ".json":
        data = load_json_file(path, stats)
        if not isinstance(data, dict):
            if data is not None:
                stats.error("not a conversation record", str(path))
            return {}, []
        msgs = data.get("messages")
        stats.lines += len(msgs) if isinstance(msgs, list) else 0
        return data, [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []
    meta: dict[str, Any] = {}
    live: dict[str, dict[str, Any]] = {}
    for offset, rec in iter_jsonl(path, stats):
        if "$rewindTo" in rec:
            target = str(rec["$rewindTo"])
            if target in live:
                keys = list(live)
                for k in keys[keys.index(target):]:
                    del live[k]
            else:
                stats.error("rewind to unknown id", f"{path}@{offset}")
            continue
        if "$set" in rec:
            patch = rec["$set"]
            if isinstance(patch, dict):
                if isinstance(patch.get("messages"), list):
                    live = {str(m.get("id") or f"@{offset}:{i}"): m
                            for i, m in enumerate(patch["messages"]) if isinstance(m, dict)}
                meta.update({k: v for k, v in patch.items() if k != "messages"})
            continue
        if rec.get("id") is not None and rec.get("type") is not None:
            live[str(rec["id"])] = rec
            continue
        if "sessionId" in rec or "projectHash" in rec:
            meta.update(rec)
            continue
        stats.unknown_type(rec.get("type"), "record")
    return meta, list(live.values())


def _messages(records: list[dict[str, Any]], session: str, project: str, side: bool,
              stats: ParseStats) -> Iterator[Message]:
    for rec in records:
        rtype = rec.get("type")
        mid = str(rec.get("id") or "")
        if rtype in ("info", "error", "warning"):
            stats.ignore(str(rtype))
            continue
        if rtype not in ("user", "gemini"):
            stats.unknown_type(rtype, "message type")
            continue
        ts = parse_ts(rec.get("timestamp"))
        if ts is None:
            stats.error("missing timestamp", mid)
            continue
        images: list[str] = []
        text = _text(rec.get("content"), images).strip()
        base: dict[str, Any] = {"session_id": session, "cwd": project, "sidechain": side}
        if rtype == "user":
            full = "\n".join([text, *images]) if images else text
            if text.startswith(_INJECTED_PREFIXES):      # the CLI's own set-up message, not a prompt
                yield Message(source_id=mid, role="user", text=full, ts=ts, real_user=False,
                              extra={"kind": "injected"}, **base)
                continue
            yield Message(source_id=mid, role="user", text=full, ts=ts, real_user=bool(text),
                          extra={} if text else {"kind": "attachment"}, **base)
            continue
        model = str(rec.get("model") or "")
        calls = [c for c in rec.get("toolCalls") or [] if isinstance(c, dict)]
        if calls:
            tm = Message(source_id=f"{mid}:tools", role="assistant", ts=parse_ts(calls[0].get("timestamp")) or ts,
                         model=model, **base)
            for c in calls:
                status = str(c.get("status") or "")
                tm.tool_calls.append(ToolCall(name=str(c.get("name") or ""), input=as_text(c.get("args")),
                                              output=_result(c.get("result")), is_error=status == "error",
                                              call_id=str(c.get("id") or "")))
                if status == "cancelled":
                    tm.status = "cancelled"
            yield tm
        yield Message(source_id=mid, role="assistant", text=text, ts=ts, model=model, **base)


def _text(content: Any, images: list[str]) -> str:
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif isinstance(p, dict) and isinstance(p.get("inlineData"), dict):
                images.append(f"[image: {p['inlineData'].get('mimeType') or ''}]".replace(": ]", "]"))
        return "\n\n".join(x for x in parts if x)
    return content_text(content)


def _result(result: Any) -> str:
    """Text of a tool call's ``result`` (Gemini ``functionResponse`` parts)."""
    if isinstance(result, list):
        outs = []
        for part in result:
            resp = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(resp, dict):
                r = resp.get("response")
                if isinstance(r, dict) and ("output" in r or "error" in r):
                    outs.append(as_text(r.get("output", r.get("error"))))
                else:
                    outs.append(as_text(r))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                outs.append(part["text"])
        return "\n".join(outs)
    return as_text(result) if result is not None else ""


SOURCE = GeminiSource()
