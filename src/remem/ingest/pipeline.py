"""The one write pipeline: normalize → redact → size cap → dedup → persist + entities → enqueue index jobs.

Every writer (CLI, importers, hooks, REST, MCP) calls ``prepare`` + ``persist`` through
``Remem.add_turns``; nothing else inserts turns.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agents import canonical_agent
from ..model import STATUSES, ToolCall, TurnIn
from ..store.rows import TurnRow
from ..text.entities import extract, turn_text
from ..text.segment import cjk_index_text
from .deferred import index_rows
from .normalize import InputError, clean_text, norm_request, sha, strip_injected
from .redact import redact
from .signatures import error_signatures
from .workers import MIN_TURNS as MIN_POOL_TURNS

if TYPE_CHECKING:
    from ..store.protocols import WriteStore
    from .workers import PreparePool

MAX_TURN_BYTES = 2 * 1024 * 1024
INLINE_TRIGRAM = 32  # small writes (CLI, hooks) get the trigram index at once; imports defer it (entities never)
# What of a tool call is searched (word, trigram and entity indexes): the call and the head and
# tail of its output. The whole shortened call stays in actions_json for reading. A file read or a
# test log is mostly lines that name nothing the user will ask for; its command, the file path,
# the first lines and the final error are what recall matches on, and the rest costs the indexes
# most of their write time (issue 15: ~70 % of a real turn's text is tool output).
INDEX_INPUT_CHARS = 1000
INDEX_OUTPUT_CHARS = 600
# a plausible turn time: no coding agent wrote history before 2000, and a clock a day ahead is skew;
# anything else (1e24, -1e308, "yesterday", NaN) would be stored and break every later read of its owner
MIN_TS = 946_684_800.0
FUTURE_SLACK = 86_400.0
PRESERVED = ("created_at", "updated_at", "access_count", "last_access", "archived")  # import keeps these


@dataclass(slots=True)
class WriteResult:
    id: str | None
    status: str      # added | updated | duplicate | skipped_oversize | skipped_empty | skipped_forgotten
    redactions: int = 0
    time_fixed: bool = False  # a time outside the plausible range was replaced

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status}


@dataclass
class BatchResult:
    results: list[WriteResult] = field(default_factory=list)

    @property
    def counts(self) -> Counter[str]:
        """Results by status, plus ``times_fixed`` when a turn's time had to be replaced."""
        c = Counter(r.status for r in self.results)
        fixed = sum(r.time_fixed for r in self.results)
        if fixed:
            c["times_fixed"] = fixed
        return c


def turn_id(owner: str, source_key: str) -> str:
    """A turn's id: derived from its owner and source key, so a re-import or a re-sent push is the same row."""
    return "t_" + sha(owner, source_key)[:20]


def plausible_ts(value: Any, now: float) -> float | None:
    """``value`` as epoch seconds when it is a finite time between 2000 and a day from now, else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        ts = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if not math.isfinite(ts) or ts < MIN_TS or ts > now + FUTURE_SLACK:
        return None
    return ts


def turn_times(started: Any, ended: Any, now: float, fallback: float | None = None
               ) -> tuple[float | None, float | None, bool]:
    """(started_at, ended_at, fixed) for a turn (pure). A time that is given but implausible is
    replaced by the turn's other time, else by ``fallback`` (the file's or the import's time), else
    ``now``; a turn with no time at all keeps none. ``fixed`` says whether anything was replaced."""
    s, e = plausible_ts(started, now), plausible_ts(ended, now)
    bad_s, bad_e = started is not None and s is None, ended is not None and e is None
    if not (bad_s or bad_e):
        return s, e, False
    spare = plausible_ts(fallback, now) or now
    if bad_s:
        s = e if e is not None else spare
    if bad_e:
        e = s
    return s, e, True


def render_actions(actions: list[ToolCall], *, input_chars: int = 0, output_chars: int = 0) -> str:
    """The searchable text of a tool trajectory: one line block per call, each part shortened to
    its head and tail when a limit is given (0: whole)."""
    lines = []
    for a in actions:
        head = f"{a.name}: {shorten(a.input, input_chars) if input_chars else a.input}".strip()
        lines.append(head + (" [error]" if a.is_error else ""))
        if a.output:
            lines.append("→ " + (shorten(a.output, output_chars) if output_chars else a.output))
    return "\n".join(lines)


def shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = max(1, limit // 2 - 20)
    return f"{text[:half]}\n… [{len(text) - 2 * half} chars omitted] …\n{text[-half:]}"


def prepare(turn: TurnIn, *, max_bytes: int = MAX_TURN_BYTES, max_tool_output: int = 2000,
            live: bool = False, now: float | None = None,
            fallback_ts: float | None = None) -> tuple[TurnRow | None, WriteResult | None]:
    """Pure part of the pipeline. Returns a row to persist, or a terminal result (skipped)."""
    raw_size = (len(turn.request.encode("utf-8", "replace")) + len(turn.reply.encode("utf-8", "replace"))
                + sum(len(a.input) + len(a.output) + len(a.name) for a in turn.actions))
    if raw_size > max_bytes:
        return None, WriteResult(None, "skipped_oversize")
    request = strip_injected(clean_text(turn.request))
    reply = clean_text(turn.reply)
    if not request and not reply:
        return None, WriteResult(None, "skipped_empty")
    agent = canonical_agent(turn.agent or "unknown")
    owner = (turn.owner or "default").strip()
    if not owner:
        raise InputError("owner is empty")
    status = turn.status if turn.status in STATUSES else "succeeded"
    n_redacted = 0
    r = redact(request)
    request, n_redacted = r.text, n_redacted + r.count
    r = redact(reply)
    reply, n_redacted = r.text, n_redacted + r.count
    actions: list[ToolCall] = []
    for a in turn.actions:
        ri, ro = redact(clean_text(a.input)), redact(clean_text(a.output))
        n_redacted += ri.count + ro.count
        actions.append(ToolCall(name=clean_text(a.name)[:200], input=shorten(ri.text, max_tool_output),
                                output=shorten(ro.text, max_tool_output), is_error=a.is_error,
                                call_id=a.call_id))
    summary = redact(clean_text(turn.summary)).text
    actions_text = render_actions(actions, input_chars=INDEX_INPUT_CHARS, output_chars=INDEX_OUTPUT_CHARS)
    actions_json = json.dumps([a.to_dict() for a in actions], ensure_ascii=False)
    content_hash = sha(request, reply, actions_json, status)
    project = clean_text(turn.project)
    session_id = clean_text(turn.session_id)
    source_key = turn.source_key or "h:" + sha(agent, project, session_id, request, reply)[:32]
    if live and not source_key.startswith("live:"):
        source_key = "live:" + source_key
    started_at, ended_at, time_fixed = turn_times(turn.started_at, turn.ended_at or turn.started_at,
                                                  now or time.time(), fallback_ts)
    sigs = error_signatures("\n".join(a.output for a in actions if a.is_error) or
                            (reply if status == "failed" else ""))
    size = len(request.encode()) + len(reply.encode()) + len(actions_json.encode())
    row = TurnRow(
        id=turn_id(owner, source_key), source_key=source_key, owner=owner, agent=agent,
        project=project, session_id=session_id, source_name=turn.source_name, kind=turn.kind or "turn",
        request=request, reply=reply, actions=actions_text, actions_json=actions_json, status=status,
        started_at=started_at, ended_at=ended_at, model=turn.model,
        size=size, content_hash=content_hash, request_hash=sha(norm_request(request))[:24],
        summary=summary, tags=json.dumps(sorted(set(turn.tags)), ensure_ascii=False),
        error_sigs=json.dumps(sigs, ensure_ascii=False),
        importance=min(1.0, max(0.0, float(turn.importance))),
        cjk=cjk_index_text("\n".join((request, reply, summary))),
        message_ids=[str(m) for m in turn.message_ids], live=live,
    )
    row.time_fixed = time_fixed
    return row, None


def learn_key(owner: str) -> str:
    """The dedup key of an owner's learn job: at most one waits per owner. (Here, not in layers/: a write
    must not import the learning layer, ~90 ms, to queue its job.)"""
    return f"learn:{owner}"


def persist(store: WriteStore, turns: list[TurnIn], *, max_bytes: int = MAX_TURN_BYTES,
            max_tool_output: int = 2000, live: bool = False, audit: bool = True,
            defer_index: bool = False, revive: bool = False,
            preserve: Sequence[Mapping[str, Any] | None] | None = None,
            fallback_ts: float | Sequence[float | None] | None = None,
            learn_after: float | None = 30.0, wait: bool = True, pool: PreparePool | None = None) -> BatchResult:
    """Write ``turns`` in one transaction (all or nothing) and queue embedding for new content.

    What the user forgot stays out (``store.tombstones``): a turn it covers is
    ``skipped_forgotten``, whoever writes it. ``revive`` (an explicit add by the user) writes it
    anyway and lifts the turn's own tombstone. ``preserve`` (import) is one mapping per turn of
    stored fields to keep for a new row (``PRESERVED``: created_at, access counts, …).
    ``fallback_ts`` replaces an implausible time when the turn has no good one of its own (one
    value for all, or one per turn: a sync writes several files' turns in one transaction).
    ``wait=False``: raise ``Locked`` at once, nothing written, when another writer holds the lock.
    ``pool`` (an import's worker processes): a large write's turns are prepared there while the rows
    already prepared are written (``workers.PreparePool``); the same rows as without it.
    """
    now = time.time()
    fallbacks = (list(fallback_ts) if isinstance(fallback_ts, Sequence) else [fallback_ts] * len(turns))
    kw: dict[str, Any] = {"max_bytes": max_bytes, "max_tool_output": max_tool_output, "live": live, "now": now}
    prepared: Iterable[tuple[TurnRow | None, WriteResult | None, list[tuple[str, str]] | None]]
    if pool is not None and len(turns) >= MIN_POOL_TURNS:
        prepared = pool.prepare(turns, kw, fallbacks)    # lazily, inside the transaction
    else:
        prepared = [(*prepare(t, fallback_ts=fb, **kw), None) for t, fb in zip(turns, fallbacks, strict=True)]
    out = BatchResult()
    with store.transaction(wait=wait):
        changed = False
        touched: list[str] = []
        check = store.tombstones.any()
        mentions: list[tuple[str, str, list[tuple[str, str]], bool]] = []
        for i, (row, res, ents) in enumerate(prepared):
            if row is None:
                assert res is not None
                out.results.append(res)
                continue
            if check and store.tombstones.keeps_out(row):
                if not revive:
                    out.results.append(WriteResult(None, "skipped_forgotten", time_fixed=row.time_fixed))
                    continue
                store.tombstones.lift_turn(row)
            tid, status = store.turns.write(row, now)
            out.results.append(WriteResult(tid, status, time_fixed=row.time_fixed))
            if status in ("added", "updated"):
                changed = True
                touched.append(tid)
                # entity rows are part of what recall needs at once (imports too); trigram can wait
                if ents is None:
                    ents = extract(turn_text(row.request, row.reply, row.actions))
                mentions.append((row.owner, tid, ents, status == "updated"))
            keep = preserve[i] if preserve is not None and i < len(preserve) else None
            if keep and status == "added":
                _restore(store, tid, keep, now)
        store.turns.put_entities(mentions)
        if changed:
            if len(touched) <= INLINE_TRIGRAM and not defer_index:
                index_rows(store, ids=touched)
            else:
                store.jobs.enqueue("index", dedup_key="index:trigram", now=now)
            store.jobs.enqueue("embed", dedup_key="embed:pending", now=now)
            if learn_after is not None:   # learned memories follow, one job per owner (None: learning off)
                for owner in sorted({m[0] for m in mentions}):
                    store.jobs.enqueue("learn", {"owner": owner}, dedup_key=learn_key(owner),
                                       run_after=now + learn_after, now=now)
        c = out.counts
        if audit and (changed or c["skipped_forgotten"] or c["times_fixed"]):
            store.audit.record("write", owner=turns[0].owner if turns else "", ts=now,
                               detail={k: c[k] for k in ("added", "updated", "skipped_forgotten", "times_fixed")
                                       if c[k] or k in ("added", "updated")})
    return out


def _restore(store: WriteStore, tid: str, keep: Mapping[str, Any], now: float) -> None:
    """Give a newly added row the stored fields of the record it came from (an export)."""
    created, updated = plausible_ts(keep.get("created_at"), now), plausible_ts(keep.get("updated_at"), now)
    last = plausible_ts(keep.get("last_access"), now)
    try:
        count = max(0, int(keep.get("access_count") or 0))
    except (TypeError, ValueError, OverflowError):
        count = 0
    store.turns.restore(tid, created_at=created, updated_at=updated, access_count=min(count, 2**62),
                        last_access=last, archived=bool(keep.get("archived")))


def import_record(rec: Any, owner: str | None, default_owner: str) -> tuple[TurnIn, dict[str, Any]]:
    """One export line as a pipeline write plus the stored fields it keeps. Raises ValueError or
    TypeError when it is not a turn record."""
    if not isinstance(rec, dict) or rec.get("type", "turn") != "turn":
        raise ValueError("not a turn record")

    def text(key: str) -> str:
        v = rec.get(key)
        if v is None:
            return ""
        if not isinstance(v, str | int | float):
            raise TypeError(f"{key} is not text")
        return str(v)

    actions = rec.get("actions") or []
    tags = rec.get("tags") or []
    if not isinstance(actions, list) or not isinstance(tags, list):
        raise TypeError("actions and tags must be lists")
    importance = float(rec.get("importance", 0.5))
    if importance != importance:  # NaN
        raise ValueError("importance is not a number")
    turn = TurnIn(
        request=text("request"), reply=text("reply"),
        actions=[ToolCall.from_dict(a) for a in actions if isinstance(a, dict)],
        owner=owner or text("owner").strip() or default_owner,
        agent=text("agent") or "unknown", project=text("project"), session_id=text("session_id"),
        source_key=text("source_key"), source_name=text("source_name"), status=text("status") or "succeeded",
        started_at=rec.get("started_at"), ended_at=rec.get("ended_at"), model=text("model"),
        importance=importance, tags=[str(t) for t in tags if isinstance(t, str | int | float)],
        summary=text("summary"), kind=text("kind") or "turn")
    return turn, {k: rec.get(k) for k in PRESERVED}
