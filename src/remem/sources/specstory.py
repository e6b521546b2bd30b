"""SpecStory exports: ``.specstory/history/*.md``, the Cursor chats the SpecStory extension saves
inside project folders (docs/sync.md, "SpecStory and aider").

Not a discovered location of its own: the sync engine hands :meth:`SpecStorySource.discover_in`
the project folders every agent's history named (and the ones the user added), and each of those
(or a parent) holding ``.specstory/history`` is a root. One file is one unit and one session
(the session id is the file name without ``.md``: two exports of one chat stay two sessions).

Two formats, both read the same way:

* older: ``_**User**_`` / ``_**Assistant**_`` headers, a ``# Title (YYYY-MM-DD HH:MM:SS)`` line in
  local time (the zone is learnt from the file name, which starts with the UTC start
  ``YYYY-MM-DD_HH-MM``); tool work as ``<details><summary>…</summary>…</details>`` blocks, bare
  `````diff`` edit blocks, ``Read file: …`` lines and ``Tool use: **name**`` paragraphs;
* v2: ``<!-- cursor Session <uuid> (YYYY-MM-DD HH:MMZ) -->``, ``_**User (YYYY-MM-DD HH:MMZ)**_``
  (sometimes without the time) and ``_**Agent (model M, mode Agent)**_`` or ``_**Assistant (M)**_``
  headers; tool work as ``<tool-use data-tool-type=… data-tool-name=…>`` blocks.

Turn numbering follows the split the SpecStory benchmark uses: a file is split on ``\\n`` only,
every line starting with ``_**User`` is the next user message (turn *k* is the *k*-th such line,
code fences are not tracked, empty requests count), its text runs to the next header with
surrounding whitespace, a trailing ``---`` and ``\\r`` removed. Assistant sections are cut into
blocks at SpecStory's ``---`` separators; ``<think>`` blocks are dropped, tool blocks become tool
calls, adjacent text blocks join into one text. What answers an empty request joins the turn before
it (as for every source) without its status: a "Cancelled" there does not cancel that turn.

Times: a user header's own time when it has one, else the session start; each later message is
at least 1 ms after the one before, so the order survives. Message ids are the session and a hash
of the user header and request (plus a count when one repeats), so an export re-saved with a different window
of a long chat keeps the turns it had. The v2 session line names the Cursor composer; the unit
carries it as ``meta["twin"]`` so a chat remem already imported from Cursor's own database is not
stored twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from remem.model import Message, ToolCall

from .base import ParseStats, Unit, file_unit, list_dir, roots_near

AGENT = "cursor"
NAME = "specstory"
HISTORY = Path(".specstory") / "history"
MAX_UP = 6                  # a project path's parents looked at for a .specstory folder

_USER = "_**User"
_AI = ("_**Assistant", "_**Agent")
_FILE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})_(\d{2})-(\d{2})Z?(?:[-_]|\.md$|$)")
_SESSION = re.compile(r"^<!--\s*cursor Session\s+([0-9a-fA-F-]{8,})\s*(?:\(([^)]*)\))?\s*-->")
_TITLE = re.compile(r"^#\s+(.*?)\s*\((\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?Z?)\)\s*$")
_HEADER_TIME = re.compile(r"\((\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?Z?)\)")
_MODEL = re.compile(r"\(model\s+([^,)]+)|\(([^)]+)\)")
_TOOL_USE = re.compile(r'data-tool-name="([^"]*)"')
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.S)
_TOOL_USE_LINE = re.compile(r"^Tool use: \*\*([^*]+)\*\*\s*(?:•\s*(.*))?$")
_TAGS = re.compile(r"</?(?:details|summary|tool-use)[^>]*>")
_SUMMARY_NAMES = (("Searched codebase", "codebase_search"), ("Grep search", "grep_search"), ("Grep for", "grep"),
                  ("Listed directory", "list_dir"), ("Listed current directory", "list_dir"),
                  ("Edit file", "edit_file"), ("Read lints", "read_lints"), ("Searched web", "web_search"),
                  ("Searched files", "file_search"), ("Read file", "read_file"))


class SpecStorySource:
    agent = AGENT
    name = NAME
    format = "specstory-md"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        return []   # found only inside project folders: see discover_in

    def discover_in(self, projects: list[Path], env: Mapping[str, str] | None = None) -> list[Path]:
        """``.specstory/history`` folders in (or above) the given project folders, or given directly."""
        return roots_near(projects, lambda d: d / HISTORY if (d / HISTORY).is_dir() else None,
                          given=lambda p: p if p.name == "history" and p.parent.name == ".specstory"
                          and p.is_dir() else None, max_up=MAX_UP)

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        units = []
        for f in list_dir(root, stats):
            if f.suffix != ".md" or not f.is_file():
                continue
            u = file_unit(AGENT, f, session_id=f.stem, meta=_unit_meta(f, root))
            if u is not None:
                units.append(Unit(agent=AGENT, key=f"{NAME}:{f}", path=u.path, size=u.size, mtime=u.mtime,
                                  session_id=u.session_id, meta=u.meta))
        return sorted(units, key=lambda u: u.key)

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        stats = stats if stats is not None else ParseStats()
        try:
            data = unit.path.read_bytes()
        except OSError as e:
            stats.error(f"unreadable file: {e.strerror or e}", str(unit.path))
            return
        project = str(unit.meta.get("project") or "")
        for m in parse(data, unit.path.name, stats, project=project):
            stats.messages += 1
            yield m


def _unit_meta(f: Path, root: Path) -> dict[str, object]:
    project = root.parent.parent if root.name == "history" and root.parent.name == ".specstory" else root
    meta: dict[str, object] = {"project": str(project)}
    try:
        with open(f, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return meta
    for line in head.split("\n")[:12]:
        got = _SESSION.match(line.strip())
        if got:
            meta["twin"] = ("cursor", got.group(1).lower())
            break
    return meta


# ----------------------------------------------------------------------------- parsing


@dataclass(slots=True)
class _Section:
    user: bool
    header: str
    lines: list[str] = field(default_factory=list)


def split_sections(text: str) -> tuple[list[str], list[_Section]]:
    """(preamble lines, sections): a section per ``_**User`` / ``_**Assistant`` / ``_**Agent`` line."""
    pre: list[str] = []
    sections: list[_Section] = []
    for line in text.split("\n"):
        if line.startswith(_USER):
            sections.append(_Section(True, line.rstrip("\r")))
        elif line.startswith(_AI):
            sections.append(_Section(False, line.rstrip("\r")))
        elif sections:
            sections[-1].lines.append(line.rstrip("\r"))
        else:
            pre.append(line.rstrip("\r"))
    return pre, sections


def user_text(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    if text.endswith("---"):
        text = text[:-3].rstrip()
    return text


def _utc(value: str) -> datetime | None:
    s = value.strip().replace("T", " ").rstrip("Z")
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            continue
    return None


def session_start(name: str, pre: list[str]) -> float | None:
    """The session's start (epoch s): the v2 session line (UTC), else the title's local time made
    UTC with the zone the file name's UTC start implies, else the file name's UTC minute."""
    from_name = None
    got = _FILE_TIME.match(name)
    if got:
        y, mo, d, h, mi = map(int, got.groups())
        from_name = datetime(y, mo, d, h, mi)
    session_time = title_time = None
    for line in pre:
        s = line.strip()
        m = _SESSION.match(s)
        if m and m.group(2):
            session_time = _utc(m.group(2))
        t = _TITLE.match(s)
        if t and title_time is None:
            title_time = _utc(t.group(2))
            if t.group(2).endswith("Z"):
                session_time = session_time or title_time
    if session_time is not None:
        return session_time.replace(tzinfo=UTC).timestamp()
    if title_time is not None and from_name is not None:
        # the zone offset, to the quarter hour, between the local title and the UTC file name
        quarter = round((title_time - from_name).total_seconds() / 900)
        if abs(quarter) <= 14 * 4:
            return (title_time - timedelta(seconds=quarter * 900)).replace(tzinfo=UTC).timestamp()
    if from_name is not None:
        return from_name.replace(tzinfo=UTC).timestamp()
    if title_time is not None:
        return title_time.replace(tzinfo=UTC).timestamp()
    return None


def _header_time(header: str) -> float | None:
    got = _HEADER_TIME.search(header)
    if not got:
        return None
    dt = _utc(got.group(1))
    return dt.replace(tzinfo=UTC).timestamp() if dt else None


def _model(header: str) -> str:
    got = _MODEL.search(header)
    if not got:
        return ""
    model = (got.group(1) or got.group(2) or "").strip()
    return "" if model in ("default", "") or re.match(r"\d{4}-\d{2}-\d{2}", model) else model


def parse(data: bytes, name: str, stats: ParseStats | None = None, *, project: str = "") -> list[Message]:
    """The messages of one export file, in file order (see the module docstring)."""
    stats = stats if stats is not None else ParseStats()
    text = data.decode("utf-8", "replace")
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        stats.error("non-utf8 bytes", name)
    pre, sections = split_sections(text)
    session = name[:-3] if name.endswith(".md") else name
    start = session_start(name, pre)
    out: list[Message] = []
    last: float | None = None
    seen: dict[str, int] = {}
    user_id = ""
    turn = 0
    request = "x"
    for sec in sections:
        if sec.user:
            turn += 1
            request = user_text(sec.lines)
            digest = hashlib.sha1(f"{sec.header}\n{request}".encode()).hexdigest()[:16]
            n = seen.get(digest, 0)
            seen[digest] = n + 1
            user_id = f"{session}:u:{digest}" + (f"#{n}" if n else "")   # unique within the source
            base = _header_time(sec.header) or start
            last = _after(base, last)
            out.append(Message(source_id=user_id, session_id=session, role="user", text=request, ts=last,
                               real_user=True, cwd=project, extra={"turn": turn}))
            continue
        model = _model(sec.header)
        for j, (text_part, calls, status) in enumerate(assistant_blocks(sec.lines)):
            last = _after(last if last is not None else start, last)
            out.append(Message(source_id=f"{user_id or session + ':pre'}/a{len(out)}:{j}", session_id=session,
                               role="assistant", text=text_part, ts=last, cwd=project, model=model,
                               tool_calls=calls, status=status if request else "", extra={"turn": turn}))
    return out


def _after(base: float | None, last: float | None) -> float | None:
    if base is None:
        return None if last is None else last + 0.001
    return base if last is None or base > last else last + 0.001


# ----------------------------------------------------------------------------- assistant blocks


def _blocks(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(kind, lines) of an assistant section: "tool-use", "think", "details" or "text"."""
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        s = line.strip()
        if not s or s == "---":
            i += 1
            continue
        if line.startswith("<tool-use"):
            kind, end = "tool-use", "</tool-use>"
        elif line.startswith("<think>"):
            kind, end = "think", "</think>"
        elif line.startswith("<details"):
            kind, end = "details", "</details>"
        else:
            kind, end = "text", ""
        j = i
        body = []
        while j < n:
            cur = lines[j]
            if kind == "text":
                if cur.strip() == "---" and j > i:
                    break
                body.append(cur)
                j += 1
                continue
            body.append(cur)
            j += 1
            if end in cur and (kind == "think" or cur.lstrip().startswith(end)):
                break
        yield kind, body
        i = j


def assistant_blocks(lines: list[str]) -> list[tuple[str, list[ToolCall], str]]:
    """An assistant section as messages: (text, tool calls, status); adjacent texts joined."""
    out: list[tuple[str, list[ToolCall], str]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            out.append(("\n\n---\n\n".join(texts), [], ""))
            texts.clear()

    for kind, body in _blocks(lines):
        if kind == "think":
            continue
        call: ToolCall | None = None
        status = ""
        if kind == "tool-use":
            call = _tool_use(body)
        elif kind == "details":
            call = _details(body)
            if call is None:
                continue      # a thought process in the older format
        else:
            block = "\n".join(body).strip()
            call, status = _text_tool(block)
            if call is None and not status:
                texts.append(block)
                continue
        flush()
        out.append(("", [call] if call else [], status))
    flush()
    return out


def _strip_tags(text: str) -> str:
    return _TAGS.sub("", text).strip()


def _tool_use(body: list[str]) -> ToolCall:
    head = body[0] if body else ""
    got = _TOOL_USE.search(head)
    name = got.group(1) if got else "tool"
    raw = "\n".join(body[1:])
    summary = _SUMMARY.search(raw)
    described = ""
    if summary:
        s = summary.group(1).strip()
        m = _TOOL_USE_LINE.match(s)
        described = (m.group(2) or "").strip() if m else s
        raw = raw[summary.end():]
    rest = _strip_tags(raw)
    params, result = "", rest
    if "Parameters:" in rest and "Result:" in rest:
        a, b = rest.split("Result:", 1)
        params, result = a.replace("Parameters:", "", 1).strip(), b.strip()
    is_error = bool(re.search(r"^Status: \**(error|failed)", result, re.M | re.I))
    result = re.sub(r"\n?Status: \*\*\w+\*\*\s*$", "", result).strip()
    return ToolCall(name=name, input="\n".join(p for p in (described, params) if p), output=result, is_error=is_error)


def _details(body: list[str]) -> ToolCall | None:
    raw = "\n".join(body)
    summary = _SUMMARY.search(raw)
    title = re.sub(r"\s+", " ", summary.group(1)).strip() if summary else ""
    if title.startswith("Thought Process"):
        return None
    name = next((n for prefix, n in _SUMMARY_NAMES if title.startswith(prefix)), "tool")
    rest = _strip_tags(raw[summary.end():] if summary else raw)
    return ToolCall(name=name, input=title, output=rest)


_SHELL_FENCE = re.compile(r"^```(?:bash|sh|shell|zsh|console|powershell|pwsh|cmd)\s*$", re.I)


def _terminal_run(block: str) -> ToolCall:
    """A command the agent ran in the older format: a shell fence right after a separator, then
    (usually) a plain fence with what the terminal printed."""
    lines = block.split("\n")
    j = 1
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    command = "\n".join(lines[1:j]).strip()
    rest = lines[j + 1:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    output = ""
    if rest and rest[0].strip() == "```":
        k = 1
        while k < len(rest) and not rest[k].startswith("```"):
            k += 1
        output = "\n".join(rest[1:k]).strip()
    return ToolCall(name="run_terminal_cmd", input=json.dumps({"command": command}, ensure_ascii=False),
                    output=output)


def _text_tool(block: str) -> tuple[ToolCall | None, str]:
    """The older format's tool work written as plain paragraphs, or a cancellation."""
    first, _, rest = block.partition("\n")
    first = first.strip()
    got = _TOOL_USE_LINE.match(first)
    if got:
        name = got.group(1).strip()
        summary = _SUMMARY.search(rest)
        title = re.sub(r"\s+", " ", summary.group(1)).strip() if summary else ""
        body = _strip_tags(rest[summary.end():] if summary else rest)
        if body.startswith("Read file:"):
            title, body = body[len("Read file:"):].strip(), ""
        return ToolCall(name=name, input=(got.group(2) or title).strip(), output=body), ""
    if first.startswith("Read file:") and not rest.strip():
        return ToolCall(name="read_file", input=first[len("Read file:"):].strip()), ""
    if first.startswith("```diff"):
        return ToolCall(name="edit_file", output=block), ""
    if _SHELL_FENCE.match(first):
        return _terminal_run(block), ""
    if block == "Cancelled":
        return None, "cancelled"
    return None, ""


SOURCE = SpecStorySource()
