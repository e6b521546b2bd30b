"""Fine-tuning data from the stored turns: ``remem export --dataset sharegpt|alpaca|openai``.

Which turns: those whose status is one of ``statuses`` (``succeeded`` by default), whose reply
has at least ``min_chars`` characters and whose session holds at least ``min_turns`` turns in scope
(a one-off question teaches little). What of a turn: the user's request and the assistant's final
reply (tool calls stay out; remem's own recalled context is cut from the request). Every text
passes the ingest redactor again and then ``ingest.pii.scrub``: secrets, e-mails, phone numbers,
IDs, card numbers, street addresses and home-directory paths become typed placeholders.

Each record is one exchange in the format's public shape:

- ShareGPT: ``{"conversations": [{"from": "human", "value": …}, {"from": "gpt", "value": …}]}``
  (``{"from": "system"}`` first when a system prompt is given);
- Alpaca: ``{"instruction": …, "input": "", "output": …}`` (``system`` as a field when given);
- OpenAI chat fine-tuning: ``{"messages": [{"role": "user", "content": …},
  {"role": "assistant", "content": …}]}``, one JSON object per line.

ShareGPT and Alpaca are written as one JSON array (as their published files are), or as JSON lines
when the file name ends in ``.jsonl``; OpenAI always as JSON lines.

Deduplicated by content hash (SHA-256 of the scrubbed record), within one export and across exports:
a state file beside the output (``FILE.remem-state.json``: format, owner, the hashes and turn ids
written) makes a later export into the same file add only what it does not hold yet. No table, no
migration: the state belongs to the file (delete both to start over; a missing output file ignores
its state).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .ingest.normalize import InputError
from .ingest.pii import scrub
from .ingest.redact import redact_text
from .scope import Scope

if TYPE_CHECKING:
    from .core import Remem

FORMATS = ("sharegpt", "alpaca", "openai")
STATE_SUFFIX = ".remem-state.json"
STATE_VERSION = 1
PAGE = 1000
MIN_CHARS = 40                   # characters of the reply
MIN_TURNS = 2                    # turns of its session in scope

_RECALLED = re.compile(r"<(remem_memory_context|system-reminder)\b[^>]*>.*?</\1\s*>", re.S | re.I)
_REQUEST_WRAP = re.compile(r"</?current_user_request\s*>", re.I)
_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


@dataclass(slots=True)
class Options:
    """What makes a turn worth training on (the CLI's flags, with these defaults)."""

    statuses: tuple[str, ...] = ("succeeded",)
    min_chars: int = MIN_CHARS
    min_request_chars: int = 4   # characters of the request
    min_turns: int = MIN_TURNS
    system: str = ""             # a system prompt for every record ("" = none)


@dataclass(slots=True)
class Report:
    format: str
    written: int = 0
    seen_before: int = 0         # written by an earlier export into this destination
    duplicate: int = 0           # the same content as another turn of this export
    filtered: dict[str, int] = field(default_factory=dict)   # status, short, small_session, empty
    placeholders: dict[str, int] = field(default_factory=dict)
    out: str = ""
    state: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "written": self.written, "seen_before": self.seen_before,
                "duplicate": self.duplicate, "filtered": dict(self.filtered),
                "placeholders": dict(self.placeholders), "out": self.out, "state": self.state}


def parse_since(value: str | None, now: float | None = None) -> float | None:
    """``--since``: epoch seconds, an ISO date or time (UTC unless it says otherwise), or an age
    such as ``7d``, ``12h``, ``2w``."""
    if value is None or not str(value).strip():
        return None
    s = str(value).strip()
    now = time.time() if now is None else now
    m = _RELATIVE.fullmatch(s)
    if m:
        return now - float(m[1]) * _UNIT[m[2]]
    try:
        return float(s)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith("Z") else s)
    except ValueError:
        raise InputError(f"--since {s!r}: give a date (2026-01-31), a time (2026-01-31T12:00), epoch "
                         f"seconds or an age (7d, 12h, 2w)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


# -- pure: which turns, what text, which record -----------------------------------------------

def clean_request(text: str) -> str:
    """The user's request without the context remem (or the agent) wrapped around it."""
    return _REQUEST_WRAP.sub("", _RECALLED.sub("", text or "")).strip()


def why_not(turn: dict[str, Any], session_turns: int, opts: Options) -> str:
    """Why a turn is left out ("" = it is kept)."""
    if (turn.get("status") or "") not in opts.statuses:
        return "status"
    request = clean_request(turn.get("request") or "")
    reply = (turn.get("reply") or "").strip()
    if not request or not reply:
        return "empty"
    if len(reply) < opts.min_chars or len(request) < opts.min_request_chars:
        return "short"
    if session_turns < opts.min_turns:
        return "small_session"
    return ""


def private(text: str, counts: Counter[str], home: str | None = None) -> str:
    """Secrets (again: older rows, other redactor versions) and personal data as placeholders."""
    got = scrub(redact_text(text), home=home)
    counts.update(got.kinds)
    return got.text


def record(fmt: str, request: str, reply: str, system: str = "") -> dict[str, Any]:
    """One exchange in the format's public shape."""
    if fmt == "sharegpt":
        conv = [{"from": "system", "value": system}] if system else []
        return {"conversations": conv + [{"from": "human", "value": request}, {"from": "gpt", "value": reply}]}
    if fmt == "alpaca":
        rec = {"instruction": request, "input": "", "output": reply}
        return rec | ({"system": system} if system else {})
    if fmt == "openai":
        msgs = [{"role": "system", "content": system}] if system else []
        return {"messages": msgs + [{"role": "user", "content": request}, {"role": "assistant", "content": reply}]}
    raise InputError(f"unknown dataset format {fmt!r}: one of {', '.join(FORMATS)}")


def content_hash(rec: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(rec, ensure_ascii=False, sort_keys=True).encode()).hexdigest()


def select(turns: Iterable[dict[str, Any]], sessions: dict[str, int], fmt: str, opts: Options, *,
           seen: set[str], seen_turns: set[str], report: Report,
           home: str | None = None) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(turn id, content hash, record) of every turn to write, in the order given."""
    counts: Counter[str] = Counter()
    system = private(opts.system, Counter(), home) if opts.system else ""
    for t in turns:
        why = why_not(t, sessions.get(_session(t), 1), opts)
        if why:
            report.filtered[why] = report.filtered.get(why, 0) + 1
            continue
        if t["id"] in seen_turns:
            report.seen_before += 1
            continue
        req = private(clean_request(t.get("request") or ""), counts, home)
        rep = private((t.get("reply") or "").strip(), counts, home)
        rec = record(fmt, req, rep, system)
        h = content_hash(rec)
        if h in seen:
            report.duplicate += 1
            continue
        seen.add(h)
        seen_turns.add(t["id"])
        yield t["id"], h, rec
    for k, v in counts.items():
        report.placeholders[k] = report.placeholders.get(k, 0) + v


def _session(t: dict[str, Any]) -> str:
    return f"{t.get('agent') or ''}/{t.get('session_id') or 'turn:' + t['id']}"


# -- the state beside the output ----------------------------------------------------------------

def state_path(out: Path) -> Path:
    return out.with_name(out.name + STATE_SUFFIX)


def load_state(out: Path, fmt: str, owners: list[str]) -> dict[str, Any]:
    """What earlier exports wrote into ``out`` (empty when the file or its state is missing)."""
    sp = state_path(out)
    fresh = {"v": STATE_VERSION, "format": fmt, "owners": owners, "hashes": [], "turns": [], "runs": []}
    if not out.exists():
        return fresh
    if not sp.exists():
        raise InputError(f"{out} exists and no export state is beside it: name a new file (remem never "
                         f"overwrites a file it did not write)")
    try:
        st = json.loads(sp.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{sp}: not a remem export state ({e}); delete it to export everything again") from None
    if not isinstance(st, dict) or st.get("v") != STATE_VERSION or not isinstance(st.get("hashes"), list):
        raise InputError(f"{sp}: not a remem export state; delete it to export everything again")
    if st.get("format") != fmt:
        raise InputError(f"{out} holds {st.get('format')} records; export {fmt} into another file")
    if sorted(st.get("owners") or []) != sorted(owners):
        raise InputError(f"{out} was exported for {', '.join(st.get('owners') or [])}; "
                         f"export {', '.join(owners)} into another file")
    return st


def _atomic_write(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _as_lines(fmt: str, out: Path | None) -> bool:
    return fmt == "openai" or (out is not None and out.suffix.lower() == ".jsonl")


def _existing_array(out: Path) -> list[Any]:
    if not out.exists() or out.stat().st_size == 0:
        return []
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except ValueError as e:
        raise InputError(f"{out} is not a JSON array ({e}); name a new file or end it in .jsonl") from None
    if not isinstance(data, list):
        raise InputError(f"{out} is not a JSON array; name a new file or end it in .jsonl")
    return data


# -- over the store -----------------------------------------------------------------------------

def _pages(mem: Remem, scope: Scope, since: float | None) -> Iterator[dict[str, Any]]:
    offset = 0
    while True:
        rows = mem.store.turns.page(scope, since=since, limit=PAGE, offset=offset, order="asc")
        if not rows:
            return
        yield from rows
        offset += len(rows)


def session_sizes(mem: Remem, scope: Scope) -> dict[str, int]:
    """Turns per session in scope (the whole session, also before ``--since``)."""
    sizes: Counter[str] = Counter()
    for t in _pages(mem, scope, None):
        sizes[_session(t)] += 1
    return dict(sizes)


def export(mem: Remem, scope: Scope, fmt: str, *, out: str | os.PathLike[str] | None = None,
           stream: IO[str] | None = None, since: float | None = None, opts: Options | None = None,
           home: str | None = None) -> Report:
    """Write the dataset to ``out`` (incrementally, with its state file) or to ``stream`` (all of it)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown dataset format {fmt!r}: one of {', '.join(FORMATS)}")
    opts = opts or Options()
    if opts.min_turns < 1 or opts.min_chars < 0:
        raise InputError("--min-turns must be at least 1 and --min-chars at least 0")
    path = Path(out) if out is not None else None
    owners = sorted(scope.owners)
    state = load_state(path, fmt, owners) if path is not None else {"hashes": [], "turns": [], "runs": []}
    report = Report(format=fmt, out=str(path) if path else "-", state=str(state_path(path)) if path else "")
    seen, seen_turns = set(state["hashes"]), set(state["turns"])
    picked = list(select(_pages(mem, scope, since), session_sizes(mem, scope), fmt, opts, seen=seen,
                         seen_turns=seen_turns, report=report, home=home))
    report.written = len(picked)
    lines = _as_lines(fmt, path)
    if path is None:
        target = stream
        assert target is not None
        if lines:
            for _, _, rec in picked:
                target.write(json.dumps(rec, ensure_ascii=False) + "\n")
        else:
            json.dump([rec for _, _, rec in picked], target, ensure_ascii=False, indent=1)
            target.write("\n")
        return report
    path.parent.mkdir(parents=True, exist_ok=True)
    if lines:
        with open(path, "a", encoding="utf-8") as f:
            for _, _, rec in picked:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    else:
        records = _existing_array(path) + [rec for _, _, rec in picked]

        def write_array(f: IO[str]) -> None:
            json.dump(records, f, ensure_ascii=False, indent=1)
            f.write("\n")

        _atomic_write(path, write_array)
    state["hashes"] = state["hashes"] + [h for _, h, _ in picked]
    state["turns"] = state["turns"] + [i for i, _, _ in picked]
    state["runs"] = (state.get("runs") or [])[-49:] + [{"at": time.time(), "written": report.written,
                                                        "since": since, "project": scope.project}]
    _atomic_write(state_path(path), lambda f: json.dump(state, f))
    return report
