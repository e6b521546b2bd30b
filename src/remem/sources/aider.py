"""aider: ``.aider.chat.history.md``, the chat log aider appends to in the folder it runs in
(docs/sync.md, "SpecStory and aider").

Like SpecStory it lives inside project folders: the sync engine hands :meth:`AiderSource.discover_in`
the project folders every agent's history named (and the ones the user added); a folder (or a
parent) holding the file is a root, the file one unit, each ``# aider chat started at …`` one session.

What aider writes (``aider/io.py``):

* ``# aider chat started at YYYY-MM-DD HH:MM:SS`` (local time of the machine that ran it) opens a
  session;
* ``#### text`` is the user's input, one ``#### `` line per input line (``<blank>`` for an empty
  one); input that starts with ``/`` is a command to aider (``/add``, ``/run``, ``/test``…), except
  ``/ask``, ``/code``, ``/architect`` and ``/context``, which carry a request to the model; the
  answer to a yes/no question aider asked is logged as input too;
* ``> text`` is aider's console output (files added, edits applied, commits, command output, lint
  and test results); lines right after it without a blank line in between belong to it (aider quotes
  only the first line of a multi-line message);
* everything else is the model's reply.

A request opens a turn; commands, console output and answers to aider's questions are its tool
calls (a command and the output after it are one call); ``Tokens: …`` cost lines are dropped. The
file only grows, so message ids are positions (session start + ordinal) and stay stable. Times: the
session start, each later message 1 ms after the one before (aider writes no other times).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path

from remem.model import Message, ToolCall

from .base import ParseStats, Unit, file_unit, roots_near

AGENT = "aider"
NAME = "aider"
FILE = ".aider.chat.history.md"
MAX_UP = 6

_START = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_PROMPT_COMMANDS = ("/ask", "/code", "/architect", "/context")
_QUESTION = re.compile(r"\((?:Y)es/\(N\)o.*\]:")


class AiderSource:
    agent = AGENT
    name = NAME
    format = "aider-md"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        return []   # found only inside project folders: see discover_in

    def discover_in(self, projects: list[Path], env: Mapping[str, str] | None = None) -> list[Path]:
        """Folders in (or above) the given project folders that hold ``.aider.chat.history.md``."""
        return roots_near(projects, lambda d: d if (d / FILE).is_file() else None,
                          given=lambda p: p.parent if p.name == FILE and p.is_file() else None, max_up=MAX_UP)

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        u = file_unit(AGENT, root / FILE, meta={"project": str(root)})
        return [u] if u is not None else []

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        try:
            data = unit.path.read_bytes()
        except OSError as e:
            stats.error(f"unreadable file: {e.strerror or e}", str(unit.path))
            return
        for m in parse(data, str(unit.meta.get("project") or unit.path.parent), stats):
            stats.messages += 1
            yield m


def _local(value: str) -> float | None:
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").timestamp()   # aider wrote local time
    except (ValueError, OverflowError):
        return None


def _blocks(lines: list[str]) -> Iterator[tuple[str, str]]:
    """("user" | "console" | "text", text) blocks of one session's lines."""
    kind = ""
    buf: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r")
        if line.startswith("#### ") or line == "####":
            if kind != "user":
                if buf:
                    yield kind, "\n".join(buf)
                kind, buf = "user", []
            buf.append(line[5:].rstrip())
        elif line.startswith(">"):
            if kind != "console":
                if buf:
                    yield kind, "\n".join(buf)
                kind, buf = "console", []
            buf.append(line[1:].strip())
        elif kind == "console" and line.strip():
            buf.append(line.rstrip())         # a multi-line console message: only its first line is quoted
        elif kind in ("user", "console"):
            if buf:
                yield kind, "\n".join(buf)
            kind, buf = ("text", [line]) if line.strip() else ("", [])
        else:
            kind = kind or "text"
            buf.append(line)
    if buf:
        yield kind, "\n".join(buf)


def parse(data: bytes, project: str, stats: ParseStats | None = None) -> list[Message]:
    """The messages of one chat history file, sessions in file order."""
    stats = stats if stats is not None else ParseStats()
    text = data.decode("utf-8", "replace")
    salt = hashlib.sha1(project.encode()).hexdigest()[:8]
    sessions: list[tuple[str, float | None, list[str]]] = []
    seen: dict[str, int] = {}
    for line in text.split("\n"):
        got = _START.match(line.rstrip("\r"))
        if got:
            stamp = got.group(1)
            n = seen.get(stamp, 0)
            seen[stamp] = n + 1
            sid = f"aider-{stamp.replace(' ', 'T').replace(':', '')}-{salt}" + (f"-{n}" if n else "")
            sessions.append((sid, _local(stamp), []))
        elif sessions:
            sessions[-1][2].append(line)
        elif line.strip():
            stats.ignore("text before the first session header")
    out: list[Message] = []
    for sid, start, lines in sessions:
        ts = start
        pending: ToolCall | None = None      # a command whose output may follow
        for i, (kind, body) in enumerate(_blocks(lines)):
            ts = None if ts is None else (ts + 0.001 if i else ts)
            mid = f"{sid}#{i}"
            if kind == "user":
                request = "" if body.strip() == "<blank>" else body.strip()
                cmd = request.split(None, 1)[0] if request.startswith("/") else ""
                if cmd and cmd not in _PROMPT_COMMANDS:
                    pending = ToolCall(name=cmd.lstrip("/"), input=request)
                    out.append(Message(source_id=mid, session_id=sid, role="assistant", ts=ts, cwd=project,
                                       tool_calls=[pending]))
                    continue
                if _QUESTION.search(request):
                    out.append(Message(source_id=mid, session_id=sid, role="assistant", ts=ts, cwd=project,
                                       tool_calls=[ToolCall(name="confirm", input=request)]))
                    pending = None
                    continue
                if cmd:
                    request = request[len(cmd):].strip()
                pending = None
                out.append(Message(source_id=mid, session_id=sid, role="user", text=request, ts=ts,
                                   real_user=True, cwd=project))
            elif kind == "console":
                kept = "\n".join(x for x in body.split("\n") if not x.startswith("Tokens: "))
                if not kept.strip():
                    continue
                if pending is not None and not pending.output:
                    pending.output = kept
                    continue
                is_error = bool(re.search(r"^(Error|Traceback|FAILED|.*\bfailed\b)", kept, re.M))
                out.append(Message(source_id=mid, session_id=sid, role="assistant", ts=ts, cwd=project,
                                   tool_calls=[ToolCall(name="aider", output=kept, is_error=is_error)]))
            else:
                reply = body.strip()
                if reply:
                    pending = None
                    out.append(Message(source_id=mid, session_id=sid, role="assistant", text=reply, ts=ts,
                                       cwd=project))
    return out


SOURCE = AiderSource()
