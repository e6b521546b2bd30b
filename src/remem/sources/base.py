"""The source contract: what every agent parser provides, the registry, and shared helpers.

A *source* knows where one agent keeps its history (``discover``), how to cut it into
*units* the sync engine can fingerprint (``list_units``: one file, or one session inside a
database), and how to stream a unit as normalized :class:`~remem.model.Message` records
(``read``). Parsers never raise on bad input: they count it in a :class:`ParseStats` and
move on. Everything here is pure or does plain file I/O; nothing touches remem's store.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from remem.agents import canonical_agent
from remem.model import Message
from remem.plugins import Registry

#: seconds a read-only SQLite open waits on a writer's lock before the unit is counted as locked
SQLITE_TIMEOUT = 1.0
#: how many example error locations a ParseStats keeps (counts are always complete)
MAX_SAMPLES = 20
#: error reasons that may clear up by themselves (the agent holds a lock, a file is mid-rewrite)
TRANSIENT_REASONS = frozenset({"database locked", "cannot open database", "unreadable file", "read error",
                               "corrupt database", "database error", "unreadable directory"})
#: how many later ``{"`` starts of a malformed line are tried to find a record glued to a cut one
MAX_GLUE_TRIES = 32


# ----------------------------------------------------------------------------- value types

@dataclass(frozen=True, slots=True)
class Unit:
    """One thing the sync engine can skip or re-read as a whole: a file or a DB session.

    ``key`` is stable across runs (used for per-unit checkpoints). ``size``/``mtime`` are a
    cheap fingerprint: when both are unchanged the unit need not be re-read. For a DB
    session ``size`` is a row count and ``mtime`` the newest update time of its rows.
    ``parts`` lists extra files read as part of this unit (e.g. sub-agent transcripts),
    already folded into ``size`` (sum) and ``mtime`` (max). ``meta["absorbs"]``, when set, lists
    ``(unit key, session id)`` of sessions this unit folds in that may once have been units of
    their own; the sync engine removes their separate turns (see ``sync``).
    """

    agent: str
    key: str
    path: Path
    size: int
    mtime: float
    session_id: str = ""
    parts: tuple[Path, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def fingerprint(self) -> tuple[int, float]:
        return (self.size, self.mtime)


@dataclass(slots=True)
class ParseStats:
    """What a read found besides messages: counts of bad input by reason, never exceptions.

    ``errors`` are problems (malformed or too deeply nested JSON, non-UTF-8, missing
    timestamp, unreadable file, directory or database); ``ignored`` are records that are
    understood but carry nothing to import (summaries, token counts, snapshots); ``unknown``
    are records of a type (or role) this parser does not know: skipped and reported, never a
    failure, since nothing a parser understands was lost. ``partial_tail`` is set when the
    last line of a file had no newline and did not parse: it is still being written and is
    skipped silently. ``offset`` is the byte offset after the last complete line read.
    """

    lines: int = 0
    messages: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)
    partial_tail: bool = False
    offset: int = 0
    samples: list[str] = field(default_factory=list)

    def error(self, reason: str, where: str = "") -> None:
        self.errors[reason] += 1
        if len(self.samples) < MAX_SAMPLES:
            self.samples.append(f"{where}: {reason}" if where else reason)

    def ignore(self, reason: str) -> None:
        self.ignored[reason] += 1

    def unknown_type(self, kind: Any, what: str = "record type") -> None:
        """A record of a type (``what``: record type, role, message type…) the parser does not know."""
        self.unknown[f"unknown {what}: {str(kind)[:40] if kind not in (None, '') else 'none'}"] += 1

    @property
    def bad(self) -> int:
        return sum(self.errors.values())

    @property
    def transient(self) -> bool:
        """True when a re-read may find more: a half-written tail or an error that can clear up.

        Malformed lines, unknown record types and missing timestamps are permanent: reading
        the same bytes again finds the same problems.
        """
        return self.partial_tail or any(r.split(":", 1)[0] in TRANSIENT_REASONS for r in self.errors)

    def merge(self, other: ParseStats) -> None:
        self.lines += other.lines
        self.messages += other.messages
        self.errors.update(other.errors)
        self.ignored.update(other.ignored)
        self.unknown.update(other.unknown)
        self.partial_tail = self.partial_tail or other.partial_tail
        self.samples.extend(other.samples[: max(0, MAX_SAMPLES - len(self.samples))])


# ----------------------------------------------------------------------------- the protocol

@runtime_checkable
class Source(Protocol):
    """One agent's history format. Implementations are cheap, stateless objects."""

    agent: str    # canonical agent id (remem.agents)
    format: str   # short format name, e.g. "claude-jsonl", "opencode-db"

    def discover(self, env: Mapping[str, str]) -> list[Path]:
        """Existing history roots for this agent, derived only from ``env`` (HOME, XDG_*, …)."""
        ...

    def list_units(self, root: Path, stats: ParseStats | None = None) -> list[Unit]:
        """The units under one root, sorted by key. Unreadable parts are counted, not raised."""
        ...

    def read(self, unit: Unit, stats: ParseStats | None = None) -> Iterator[Message]:
        """Stream a unit's messages in conversation order (bounded memory for JSONL)."""
        ...


SourceSpec = Source

#: every known source by canonical agent id: the plugins' (``register_sources``, the built-ins listed
#: in ``remem.sources.BUILTIN``) and those added with ``register_source``
SOURCES: MutableMapping[str, Source] = Registry("sources")


def register_source(source: Source, *, replace: bool = False) -> Source:
    """Add a source to :data:`SOURCES` under its canonical agent id (or its ``name``) and return it.

    Raises ValueError when the id is taken and ``replace`` is false, or when the object does
    not look like a source.
    """
    if not isinstance(source, Source):
        raise ValueError(f"not a source: {source!r}")
    # a second format of one agent's history (SpecStory's Cursor exports) registers under its own name
    agent = canonical_agent(getattr(source, "name", "") or source.agent)
    if agent in SOURCES and not replace:
        raise ValueError(f"a source for {agent!r} is already registered")
    SOURCES[agent] = source
    return source


def get_source(agent: str) -> Source:
    """The registered source for any accepted spelling of an agent id (KeyError if none)."""
    return SOURCES[canonical_agent(agent)]


def scan(source: Source, env: Mapping[str, str], stats: ParseStats | None = None) -> list[Unit]:
    """All units of one source: discover its roots in ``env`` and list each root's units."""
    units: list[Unit] = []
    for root in source.discover(env):
        units.extend(source.list_units(root, stats))
    return units


def read_all(unit: Unit, source: Source | None = None) -> tuple[list[Message], ParseStats]:
    """Convenience for tests and small units: every message of a unit plus its stats."""
    stats = ParseStats()
    src = source or get_source(unit.agent)
    return list(src.read(unit, stats)), stats


# ----------------------------------------------------------------------------- paths

def home_dir(env: Mapping[str, str]) -> Path:
    """HOME from the given environment (USERPROFILE on Windows); never os.environ."""
    return Path(env.get("HOME") or env.get("USERPROFILE") or "~")


def env_path(env: Mapping[str, str], name: str) -> Path | None:
    """An environment variable as a path with ``~`` expanded against ``env``'s HOME."""
    value = (env.get(name) or "").strip()
    if not value:
        return None
    if value == "~" or value.startswith("~/"):
        return home_dir(env) / value[2:]
    return Path(value)


def xdg_config_home(env: Mapping[str, str]) -> Path:
    return env_path(env, "XDG_CONFIG_HOME") or home_dir(env) / ".config"


def xdg_data_home(env: Mapping[str, str]) -> Path:
    return env_path(env, "XDG_DATA_HOME") or home_dir(env) / ".local" / "share"


def existing_dirs(paths: Iterable[Path]) -> list[Path]:
    """The given paths that are directories, in order, without duplicates."""
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        key = os.path.normpath(str(p))
        if key in seen:
            continue
        seen.add(key)
        if p.is_dir():
            out.append(p)
    return out


def _entries(d: Path, stats: ParseStats | None) -> list[os.DirEntry[str]]:
    """``os.scandir`` of a directory, sorted by name; a failure other than "not there" is counted."""
    try:
        with os.scandir(d) as it:
            return sorted(it, key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as e:
        if stats is not None:
            stats.error(f"unreadable directory: {e.strerror or e}", str(d))
        return []


def _is_dir(e: os.DirEntry[str], *, follow: bool = True) -> bool:
    try:
        return e.is_dir(follow_symlinks=follow)
    except OSError:
        return False


def roots_near(projects: Iterable[Path], look: Callable[[Path], Path | None], *,
               given: Callable[[Path], Path | None] | None = None, max_up: int = 6) -> list[Path]:
    """The roots of a format kept inside project folders (SpecStory, aider): for each project folder
    ``given(p)`` when it names a root itself, else ``look(d)`` on it and up to ``max_up`` of its
    parents, the first hit winning; unique, sorted."""
    out: dict[str, Path] = {}
    for p in projects:
        hit = given(p) if given else None
        if hit is None:
            for d in [p, *list(p.parents)[:max_up]]:
                if d.parent == d:
                    break
                if (hit := look(d)) is not None:
                    break
        if hit is not None:
            out.setdefault(str(hit), hit)
    return [out[k] for k in sorted(out)]


def list_dir(d: Path, stats: ParseStats | None) -> list[Path]:
    """The entries of a directory, sorted by name; an unreadable one is counted, never skipped silently.

    A directory that does not exist (or vanished) is simply empty; any other failure to list it
    (permissions, I/O error, a symlink loop) is an ``unreadable directory`` error in ``stats``.
    """
    return [Path(e.path) for e in _entries(d, stats)]


def glob_paths(root: Path, pattern: str, stats: ParseStats | None) -> list[Path]:
    """``root.glob(pattern)`` (``/``-separated; ``**`` is any depth, symlinked directories not
    followed), sorted, reporting every directory it could not list, which ``Path.glob`` skips
    silently: one unreadable folder must not make a history vanish without a word."""
    level = [root]
    parts = pattern.split("/")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        nxt: list[Path] = []
        if part == "**":
            stack = list(level)
            while stack:
                d = stack.pop()
                nxt.append(d)
                stack.extend(Path(e.path) for e in _entries(d, stats) if _is_dir(e, follow=False))
        else:
            for d in level:
                if not any(c in part for c in "*?["):
                    cand = d / part
                    if cand.exists() and (last or cand.is_dir()):
                        nxt.append(cand)
                    continue
                for e in _entries(d, stats):
                    if fnmatch.fnmatchcase(e.name, part) and (last or _is_dir(e)):
                        nxt.append(Path(e.path))
        level = nxt
    return sorted(set(level))


def walk_files(root: Path, suffix: str, stats: ParseStats | None) -> list[Path]:
    """Every file at any depth under ``root`` whose name ends with ``suffix``, sorted (see glob_paths)."""
    out: list[Path] = []
    stack = [root]
    while stack:
        for e in _entries(stack.pop(), stats):
            if _is_dir(e, follow=False):
                stack.append(Path(e.path))
            elif e.name.endswith(suffix) and e.is_file():
                out.append(Path(e.path))
    return sorted(out)


def file_unit(agent: str, path: Path, *, session_id: str = "", parts: Iterable[Path] = (),
              meta: Mapping[str, Any] | None = None) -> Unit | None:
    """A unit for a file (plus extra part files); None when the main file vanished."""
    try:
        st = path.stat()
    except OSError:
        return None
    size, mtime = st.st_size, st.st_mtime
    kept: list[Path] = []
    for part in parts:
        try:
            pst = part.stat()
        except OSError:
            continue
        size += pst.st_size
        mtime = max(mtime, pst.st_mtime)
        kept.append(part)
    return Unit(agent=agent, key=f"{agent}:{path}", path=path, size=size, mtime=mtime,
                session_id=session_id, parts=tuple(kept), meta=dict(meta or {}))


# ----------------------------------------------------------------------------- JSONL reading

def parse_json_line(text: str) -> tuple[Any, str]:
    """One JSONL line as a value, or ``(None, reason)``; never raises.

    ``reason`` is ``"malformed json"`` or ``"json nested too deeply"`` (a line thousands of
    levels deep makes the parser recurse; it is one bad line, not a failed file). A line whose
    start is cut and glued to the next record (an agent killed mid-write, the next write
    appended after the cut bytes without a newline) yields that next record: the first later
    ``{"`` from which the rest of the line parses as a whole object.
    """
    try:
        return json.loads(text), ""
    except RecursionError:
        return None, "json nested too deeply"
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    start = 0
    for _ in range(MAX_GLUE_TRIES):
        start = text.find('{"', start + 1)
        if start < 0:
            break
        try:
            obj, end = decoder.raw_decode(text, start)
        except RecursionError:
            break
        except ValueError:
            continue
        if end == len(text) and isinstance(obj, dict):
            return obj, "cut line"
    return None, "malformed json"


def iter_jsonl(path: Path, stats: ParseStats, *, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Stream ``(byte_offset, object)`` for each JSON object line of a file: every JSONL source
    reads through this one function.

    Reads line by line in binary (memory bounded by the longest line). Blank lines are
    skipped. Non-UTF-8 lines, malformed or too deeply nested JSON and non-object values are
    counted in ``stats`` and skipped; the rest of the file is read. A cut line glued to the
    next record counts as one bad line and yields that record (see :func:`parse_json_line`).
    A last line without ``\\n`` is used when it parses as a whole object (a finished file that
    lacks the final newline) and otherwise ignored silently as still being written
    (``stats.partial_tail``). ``stats.offset`` ends after the last complete line.
    """
    stats.offset = start
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed in finally; a generator holds it open
    except OSError as e:
        stats.error(f"unreadable file: {e.strerror or e}", str(path))
        return
    try:
        if start:
            f.seek(start)
        offset = start
        for raw in f:
            here = offset
            offset += len(raw)
            complete = raw.endswith(b"\n")
            if complete:
                stats.offset = offset
            line = raw.strip()
            if not line:
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                if complete:
                    stats.lines += 1
                    stats.error("non-utf8 bytes", f"{path}@{here}")
                else:
                    stats.partial_tail = True
                continue
            obj, problem = parse_json_line(text)
            if problem == "malformed json" and not complete:
                stats.partial_tail = True
                continue
            stats.lines += 1
            if problem:
                stats.error(problem, f"{path}@{here}")
                if obj is None:
                    continue
            if not isinstance(obj, dict):
                stats.error("not a json object", f"{path}@{here}")
                continue
            yield here, obj
    except OSError as e:
        stats.error(f"read error: {e.strerror or e}", str(path))
    finally:
        f.close()


def first_json_line(path: Path) -> dict[str, Any] | None:
    """The first line of a JSONL file as an object, or None (reads at most 1 MiB)."""
    try:
        with open(path, "rb") as f:
            raw = f.readline(1 << 20)
        obj = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def load_json_file(path: Path, stats: ParseStats) -> Any:
    """A whole JSON file (small files only: legacy per-session JSON), or None counted as an error."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except OSError as e:
        stats.error(f"unreadable file: {e.strerror or e}", str(path))
    except UnicodeDecodeError:
        stats.error("non-utf8 bytes", str(path))
    except ValueError:
        stats.error("malformed json", str(path))
    except RecursionError:
        stats.error("json nested too deeply", str(path))
    return None


# ----------------------------------------------------------------------------- SQLite reading

def connect_ro(path: Path, *, timeout: float | None = None) -> sqlite3.Connection:
    """Open a SQLite file read-only through a ``file:…?mode=ro`` URI (the agent may hold it)."""
    uri = path.resolve().as_uri() + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=SQLITE_TIMEOUT if timeout is None else timeout,
                          check_same_thread=False)
    con.row_factory = sqlite3.Row
    return con


def db_error_reason(e: BaseException) -> str:
    """A short, stable reason for a SQLite failure (locked, not a database, missing table…)."""
    msg = str(e).lower()
    if "locked" in msg or "busy" in msg:
        return "database locked"
    if "not a database" in msg or "malformed" in msg or "disk image" in msg:
        return "corrupt database"
    if "no such table" in msg or "no such column" in msg:
        return "unexpected schema"
    if "unable to open" in msg:
        return "cannot open database"
    return "database error"


def table_columns(con: sqlite3.Connection, table: str) -> set[str]:
    """Column names of a table (empty when it does not exist; a locked database raises)."""
    return {str(r[1]) for r in con.execute(f"PRAGMA table_info({table})")}


def decode_value(value: Any) -> Any:
    """A JSON value stored as TEXT or BLOB (Cursor, OpenCode), or None when it is not JSON."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


# ----------------------------------------------------------------------------- field helpers

def parse_ts(value: Any) -> float | None:
    """Epoch seconds from an ISO-8601 string or a number in s/ms/µs; None when unusable.

    Naive ISO strings are taken as UTC (agents that write them do not record the zone).
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        v = float(value)
        if v <= 0:
            return None
        if v > 1e14:      # microseconds
            return v / 1e6
        if v > 1e11:      # milliseconds
            return v / 1e3
        return v
    if isinstance(value, str):
        s = value.strip()
        if not s:
            return None
        try:
            return parse_ts(float(s))
        except ValueError:
            pass
        try:
            dt = datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return dt.timestamp()
    return None


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty dict (for chained ``.get``)."""
    return value if isinstance(value, dict) else {}


def as_text(value: Any) -> str:
    """A tool input/output of any JSON shape as text (strings stay as they are)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return str(value)


def image_placeholder(media_type: str = "") -> str:
    """What an inline image (base64 / data: URL) becomes: its bytes are never kept."""
    return f"[image: {media_type}]" if media_type else "[image]"


def data_url_media_type(url: str) -> str:
    """``image/png`` from ``data:image/png;base64,…`` (empty when not a data URL)."""
    if not url.startswith("data:"):
        return ""
    return url[5:].split(";", 1)[0].split(",", 1)[0]


def content_text(content: Any, *, images: list[str] | None = None) -> str:
    """Plain text of a chat ``content`` value: a string, or a list of typed blocks.

    Text-like blocks (``text``, ``input_text``, ``output_text``) are joined with blank lines;
    image blocks add a placeholder to ``images`` when given; other blocks are ignored.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in (None, "text", "input_text", "output_text") and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif btype in ("image", "input_image", "image_url") and images is not None:
            src = as_dict(block.get("source"))
            url = block.get("image_url") or block.get("url") or ""
            if isinstance(url, dict):
                url = url.get("url", "")
            media = str(src.get("media_type") or data_url_media_type(str(url)) or "")
            images.append(image_placeholder(media))
    return "\n\n".join(p for p in parts if p)
