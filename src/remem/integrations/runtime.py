"""The hook runtime: one agent hook call in, the agent's protocol answer out.

``run(agent, event, stdin)`` normalises the payload (events.py), does the work for its kind —
recall and open the turn at turn start, record tools, complete and store the turn at turn end —
through the daemon or the SQLite fallback (backend.py), and answers in the agent's protocol
(protocol.py). It is fail-open: any error is logged to ``REMEM_HOME/logs/hooks.log`` and the
call returns nothing to print, so the agent carries on untouched. A hard deadline (SIGALRM)
bounds the whole call even if SQLite stays locked.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .. import hook_settings, privacy
from ..agent_text import safe_tree
from ..agents import canonical_agent
from ..ingest.redact import redact_value
from ..model import ToolCall, TurnIn
from . import log, protocol, render, resume, state, transcript
from .backend import Backend, hook_timeout
from .events import Event, normalize

MAX_QUERY_CHARS = 8_000    # of a prompt that recall searches for (head and tail of a huge paste)
REPAIR_ERROR_HEAD, REPAIR_ERROR_TAIL = 1_500, 2_500   # of a failed call's output the repair recall reads
DIGEST_ITEMS = 5           # turns listed in the session-start project digest
SESSION_CONTEXT_AGENTS = ("claude-code", "codex")   # Gemini prepends it to the prompt: skip there
# agents whose /remem-resume is a command outside the prompt path (it does not know the session):
# their candidate list is kept agent-wide, and a bare 1-5 at the next prompt of any session picks
SHARED_RESUME_AGENTS = ("hermes", "openclaw")
SHARED = "*"
HANDOFF = "*ended*"   # the /remem-resume list of a session that ended inside its pick window



TRANSCRIPT_WAIT = 1.5  # seconds: Claude Code queues transcript writes; Stop may come before the flush


def _caught_up(path: str, offset: int, delta: transcript.Delta, reply: str) -> transcript.Delta:
    """Re-read the transcript until it holds the reply the payload reports (its tool lines come
    before it), for at most TRANSCRIPT_WAIT seconds; then use what is there."""
    want = " ".join(reply.split())[:200]
    deadline = time.monotonic() + TRANSCRIPT_WAIT
    while want not in " ".join((delta.reply or "").split()) and time.monotonic() < deadline:
        time.sleep(0.05)
        delta = transcript.read_delta(path, offset)
    return delta

class Deadline(Exception):
    """The whole hook call ran out of time."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`Deadline` after ``seconds`` (main thread on POSIX; else no limit)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def _fire(signum: int, frame: Any) -> None:
        raise Deadline(f"hook exceeded its {seconds:g}s budget")

    try:
        old = signal.signal(signal.SIGALRM, _fire)
    except ValueError:      # not the main thread
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(agent: str, event: str, data: bytes, *, home: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None) -> str:
    """Handle one hook call; returns what to print on stdout ("" for nothing). Never raises."""
    t0 = time.perf_counter()
    env = dict(os.environ) if env is None else env
    home_path = hook_home(home, env)
    ev: Event | None = None
    handler: Handler | None = None
    try:
        agent = canonical_agent(agent)
        payload = _parse(data, home_path, agent, event)
        ev = normalize(agent, event, payload)
        if ev.kind == "ignore":
            return ""
        handler = Handler(home_path, env, ev)
        budget = budget_seconds(env, home_path)
        with deadline(budget):
            out = handler.handle()
        log.write(home_path, "info", f"{agent} {event} kind={ev.kind} via={handler.via} "
                  f"ms={1000 * (time.perf_counter() - t0):.0f} out={len(out)} budget={budget:g}s")
        return out
    except BaseException as e:  # noqa: BLE001 - fail open, whatever happened
        if isinstance(e, KeyboardInterrupt):
            return ""
        log.write(home_path, "error", f"{agent} {event}: {type(e).__name__}: {e}", exc=e)
        return _fallback_answer(ev)
    finally:
        if handler is not None:
            with contextlib.suppress(Exception):
                handler.close()


def no_input(agent: str, event: str, seconds: float, *, home: str | os.PathLike[str] | None = None) -> str:
    """The agent kept stdin open without sending a whole JSON payload: log it, let it go on."""
    try:
        home_path = hook_home(home, os.environ)
        log.write(home_path, "warn", f"{agent} {event}: no complete input on stdin within {seconds:g}s; "
                  "did nothing")
        ev = normalize(canonical_agent(agent), event, {})
    except Exception:  # noqa: BLE001 - fail open
        return ""
    return _fallback_answer(ev)


def hook_home(home: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    """The data home of a hook call: ``--home``, else ``REMEM_HOME``, else ``~/.remem``."""
    return Path(home).expanduser() if home is not None else Path(env.get("REMEM_HOME") or Path.home() / ".remem")


def request_timeout(home: Path, env: Mapping[str, str]) -> float:
    """Seconds per daemon request: ``REMEM_HOOK_TIMEOUT``, else ``hooks.timeout`` (from the JSON
    mirror of the settings, ``hook_settings``), else 8 (always 0.05–45). The same value ``Backend``
    uses for its requests."""
    return hook_timeout(hook_settings.load(home, env))


def out_of_time(agent: str, event: str, seconds: float, *, home: str | os.PathLike[str] | None = None) -> str:
    """The call outlived its budget inside C code (SIGALRM waits for it: a SQLite busy wait, a
    blocking read): log it; the hook entry prints this answer and exits."""
    try:
        log.write(hook_home(home, os.environ), "error", f"{agent} {event}: Deadline: hook exceeded its "
                  f"{seconds:g}s budget (stuck outside Python: database locked?); exited, did nothing more")
        ev = normalize(canonical_agent(agent), event, {})
    except Exception:  # noqa: BLE001 - fail open
        return ""
    return _fallback_answer(ev)


def budget_seconds(env: Mapping[str, str], home: Path | None = None) -> float:
    """The whole call's hard limit: two daemon timeouts plus slack, always under the agents' 60 s."""
    per_request = request_timeout(hook_home(home, env), env)
    return max(1.0, min(55.0, 2 * per_request + 10.0))


def _parse(data: bytes, home: Path, agent: str, event: str) -> Any:
    if not data or not data.strip():
        return {}
    try:
        return json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        log.write(home, "warn", f"{agent} {event}: stdin is not JSON ({len(data)} bytes); ignored")
        return {}


def _fallback_answer(ev: Event | None) -> str:
    # Cursor's prompt hook expects an answer even when remem failed: let the prompt through
    if ev is not None and ev.agent == "cursor" and ev.kind == "turn_start":
        return json.dumps({"continue": True})
    return ""


def _int(value: Any, default: int, most: int) -> int:
    try:
        return max(1, min(most, int(value)))
    except (TypeError, ValueError):
        return default


def recall_query(prompt: str, limit: int = MAX_QUERY_CHARS) -> str:
    """What recall searches for: the prompt, or the head and tail of a huge paste (the question is
    usually at one end; searching 20 MB of log would cost seconds per megabyte)."""
    if len(prompt) <= limit:
        return prompt
    return prompt[: limit * 3 // 4] + "\n…\n" + prompt[-(limit // 4):]


def turn_key(ev: Event, prompt: str, started: float) -> str:
    if ev.turn_id:
        return ev.turn_id
    return hashlib.sha256(f"{prompt}\0{started:.3f}".encode("utf-8", "replace")).hexdigest()[:16]


class Handler:
    """One hook call. The backend (config, daemon client, database) is opened only when needed:
    a tool event that just records a step touches nothing but the session's state file (after the
    privacy check has read the privacy files, the settings mirror and looked for ``.remem-ignore``)."""

    def __init__(self, home: Path, env: dict[str, str], ev: Event) -> None:
        self.home = home
        self.env = env
        self.ev = ev
        self._backend: Backend | None = None

    @property
    def b(self) -> Backend:
        if self._backend is None:
            self._backend = Backend(self.home, env=self.env)
        return self._backend

    @property
    def owner(self) -> str:
        return self.b.owner_for(self.ev.agent)

    @property
    def via(self) -> str:
        return (self._backend.via if self._backend else "") or "-"

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()

    def handle(self) -> str:
        kept = self._privacy()
        if kept is not None:
            return kept
        fn = getattr(self, f"on_{self.ev.kind}", None)
        return fn() if fn else ""

    # -- privacy (privacy.py): incognito and ignored projects ----------------------------
    def _privacy(self) -> str | None:
        """The call does nothing — no capture, no recall, no state — and answers quietly (or the
        ``/remem-incognito`` command's note) when the session is incognito (``REMEM_INCOGNITO``, the
        command), the home's switch is on, or the project is ignored. None: carry on."""
        ev, now, sid = self.ev, time.time(), self.ev.session_id
        spans = privacy.load(self.home, sid)          # the home switch and this session only
        if spans.broken:    # which sessions are incognito is unknown: keep everything out, say why
            return self._kept_out(f"{spans.broken} (nothing captured or recalled until it is fixed)")
        cmd = privacy.parse_command(ev.prompt) if ev.kind == "turn_start" and ev.prompt else None
        if privacy.env_incognito(self.env):
            if sid and spans.open_span(sid) is None:
                with privacy.edit(self.home, sid) as st:
                    st.session_on(sid, ev.agent, now, "env")
            return self._kept_out("incognito (REMEM_INCOGNITO)", "env" if cmd else "")
        span = spans.open_span(sid) if sid else None
        if span is not None and span[2:3] == ["env"]:   # the variable is gone: its span ends here
            with privacy.edit(self.home, sid) as st:
                st.session_off(sid, now, by="env")
            span = None
        if cmd is not None:
            return self._incognito_command(cmd, span is not None, now)
        if span is not None:
            return self._kept_out("incognito session")
        if spans.home_paused:
            return self._kept_out("incognito switch of this home")
        why = privacy.Policy(spans, self._ignore_list()).project_reason(ev.cwd) if ev.cwd else None
        if why:
            return self._kept_out(f"ignored project ({why})")
        return None

    def _ignore_list(self) -> list[str]:
        try:
            got = self.b.settings.get("capture.ignore_projects")
        except Exception:  # noqa: BLE001 - an older mirror without the key: the .remem-ignore files only
            return []
        return [str(p) for p in got] if isinstance(got, list) else []

    def _incognito_command(self, cmd: str, on: bool, now: float) -> str:
        ev = self.ev
        if not ev.session_id:
            return self.answer(render.incognito_note("no_session"), show_user=True)
        if cmd == "on":
            with privacy.edit(self.home, ev.session_id) as st:
                note = "on" if st.session_on(ev.session_id, ev.agent, now, "command") else "on_already"
        elif cmd == "off":
            with privacy.edit(self.home, ev.session_id) as st:
                note = "off" if st.session_off(ev.session_id, now) else "off_already"
        else:
            note = "on_already" if on else "off_already"
        self._drop_open_turn(skip_this=True)    # the command is never stored (nor its turn end)
        self._note(f"/remem-incognito {cmd}: {note}")
        return self.answer(render.incognito_note(note), show_user=True)

    def _kept_out(self, why: str, note: str = "") -> str:
        self._drop_open_turn()
        self._note(f"kept out: {why}")
        ev = self.ev
        if note:
            return self.answer(render.incognito_note(note), show_user=True)
        if ev.kind == "op":
            quiet: dict[str, dict[str, Any]] = {"search": {"results": []}, "get": {"memory": None},
                                                "resume": {"context": ""}}
            return self.answer("", **quiet.get(ev.op, {"error": "remem keeps nothing here (incognito or an "
                                                                 "ignored project)"}))
        return _fallback_answer(ev)

    def _drop_open_turn(self, *, skip_this: bool = False) -> None:
        """Forget the session's open turn and trajectory (what is in it may be private); with
        ``skip_this`` mark the turn now starting as one the turn end must not store."""
        if not skip_this and not state.state_path(self.home, self.ev.agent, self.ev.session_id).exists():
            return
        with self.state() as st:
            for k in ("pending", "tools", "fails", "repaired", "reply", "repair", "repair_next"):
                st.pop(k, None)
            if skip_this:
                st["pending"] = {"skip": True, "started_at": time.time()}

    def state(self) -> contextlib.AbstractContextManager[dict[str, Any]]:
        return state.session_state(self.home, self.ev.agent, self.ev.session_id)

    def answer(self, text: str, **extra: Any) -> str:
        return protocol.answer(self.ev, text, extra=extra or None)

    # -- session -------------------------------------------------------------------------
    def on_session_start(self) -> str:
        with self.state() as st:
            self._close_open_turn(st, "cancelled")
        if os.getpid() % 20 == 0:
            state.prune(self.home)
        if self.ev.agent not in SESSION_CONTEXT_AGENTS or not self.ev.cwd:
            return ""
        parts = []
        if self.b.settings.get("hooks.session_digest"):
            items = [t for t in self.b.recent(self.ev.cwd, limit=DIGEST_ITEMS + 1, as_agent=self.ev.agent)
                     if t.get("session_id") != self.ev.session_id][:DIGEST_ITEMS]
            parts.append(render.session_digest(items, self.ev.cwd))
        parts.append(self._core_facts())
        return self.answer("\n".join(p for p in parts if p))

    def _core_facts(self) -> str:
        """The project's core facts (commands, package manager, ≤ 3 must-follow rules) for the
        session's start context, once per session: the session's state remembers that they were
        given, so its first prompt's packet leaves them out (``core_shown``). A failure here leaves
        the state unmarked: the first prompt then carries them as agents without a session start do."""
        try:
            text = str(self.b.session_start(agent=self.ev.agent, project=self.ev.cwd).get("text") or "")
        except Exception as e:  # noqa: BLE001 - the digest still helps; the first prompt carries them
            log.write(self.home, "warn", f"{self.ev.agent} session-start core facts failed: {type(e).__name__}: {e}")
            return ""
        with self.state() as st:
            st["core_shown"] = True
        return text

    def on_session_end(self) -> str:
        now = time.time()
        with self.state() as st:
            self._close_open_turn(st, "cancelled")
            listed = st.get("resume") if resume.still_open(st, now) else None
            st.clear()
        if listed:
            # the list outlives the session for its pick window, agent-wide for this project:
            # `claude -p '/remem-resume x'` then `claude -p '1' --continue` (whatever session id)
            with state.session_state(self.home, self.ev.agent, HANDOFF) as h:
                h["resume"] = {**listed, "cwd": self.ev.cwd}
        with contextlib.suppress(OSError):
            state.state_path(self.home, self.ev.agent, self.ev.session_id).unlink()
        return ""

    def on_compact(self) -> str:
        return ""

    # -- turn ----------------------------------------------------------------------------
    def on_turn_start(self) -> str:
        ev = self.ev
        if not ev.prompt:
            return self.answer("")
        now = time.time()
        with self.state() as st:
            self._close_open_turn(st, "cancelled")
            action = resume.parse(ev.prompt, st, now)
            if action is None and ev.agent in SHARED_RESUME_AGENTS:
                action = self._shared_pick(st, now, SHARED)
            if action is None and not st.get("last") and not st.get("resume"):
                action = self._shared_pick(st, now, HANDOFF)   # a list an ended session left here
            if action is not None:
                st["pending"] = {"skip": True, "started_at": now}
                text = resume.handle(self.b, action, st, ev.cwd, now, as_agent=ev.agent)
                # Cursor cannot add context: show the list to the user; a pick goes through the skill
                return self.answer(text, show_user=True)
            st.pop("resume", None)
            size, most = len(ev.prompt.encode("utf-8", "replace")), int(self.b.settings.get("ingest.max_turn_bytes"))
            if size > most:
                # the pipeline skips such a turn whole (never truncated): do not carry it through
                # the state file and the daemon only to have it dropped there
                st["pending"] = {"skip": True, "started_at": now, "oversize": size}
                self._note(f"request of {size:,} bytes is over ingest.max_turn_bytes ({most:,}): "
                           "recalled for, not stored (skipped_oversize)")
            else:
                st["pending"] = {"prompt": ev.prompt, "started_at": now, "key": turn_key(ev, ev.prompt, now),
                                 "offset": transcript.size_of(ev.transcript_path),
                                 "transcript_path": ev.transcript_path, "cwd": ev.cwd, "model": ev.model}
            st["tools"] = []
            st.pop("reply", None)
            pending = dict(st["pending"])
            core_shown = bool(st.get("core_shown"))
            due = st.pop("repair_next", None)
        # a repair packet the last turn's tools called for and no tool hook could deliver comes first
        fix = self._repair(due, list(due.get("attempts") or [])) if isinstance(due, dict) else ""
        packet = self.b.recall(recall_query(ev.prompt), agent=ev.agent, project=ev.cwd, session_id=ev.session_id,
                               core_shown=core_shown)
        if not pending.get("skip"):
            # store the request now, so a turn the agent never finishes is not lost; never wait for a
            # database another writer (an import, a sync) holds: the daemon queues it (the turn's end
            # writes the whole turn again)
            self.b.capture([self._turn(pending, reply="", tools=[], status="cancelled", open_=True)], wait=False)
        text = "\n".join(t for t in (fix, str(packet.get("text") or "")) if t.strip())
        return self.answer(render.with_request(text, ev.prompt))

    def on_response(self) -> str:
        if self.ev.reply:
            with self.state() as st:
                st["reply"] = self.ev.reply
        return ""

    def on_tool_before(self) -> str:
        return ""

    def on_tool_after(self) -> str:
        tool = self.ev.tool
        if tool is None:
            return ""
        with self.state() as st:
            state.add_tool(st, tool.to_dict())
            due = self._count_failure(st, tool) if tool.is_error else None
            if due is not None and not protocol.tool_context(self.ev.agent):
                st["repair_next"] = {**due, "attempts": list(st.get("tools") or [])}   # the next turn start
                return ""
            attempts = list(st.get("tools") or []) if due is not None else []
        if due is None:
            return ""
        return self.answer(self._repair(due, attempts))

    def _count_failure(self, st: dict[str, Any], tool: ToolCall) -> dict[str, Any] | None:
        """Count a failed call against its error family (command family, error signature key) in
        the session's state; the repair packet's request when one is due (``layers/repair.py``:
        the 2nd, 4th, 8th … failure of one family, at most ``SESSION_CAP`` a session)."""
        from ..ingest.signatures import error_signatures
        from ..layers import repair as trigger

        command = trigger.command_of(tool.input)
        fam = trigger.command_family(tool.name, command)
        key = trigger.error_key(tool.output, render.first_line(tool.output or tool.input, 120))
        rep = st.setdefault("repair", {})
        if not trigger.note_failure(rep, fam, key):
            return None
        out = tool.output or ""
        error = out if len(out) <= REPAIR_ERROR_HEAD + REPAIR_ERROR_TAIL else \
            out[:REPAIR_ERROR_HEAD] + "\n…\n" + out[-REPAIR_ERROR_TAIL:]
        sigs = error_signatures(out[-6000:], limit=1)
        return {"tool": tool.name, "command": command, "family": fam, "key": key, "error": error or tool.input,
                "shown": sigs[0] if sigs else render.first_line(out or tool.input, 160),
                "count": int(rep["counts"].get(trigger.family_key(fam, key), 0))}

    def _repair(self, due: dict[str, Any], attempts: list[dict[str, Any]]) -> str:
        """The repair packet for ``due`` (the recall engine's repair entry), with a line saying why it
        comes; a plain search when that fails. ``attempts``: the open turn's calls (redacted here:
        they come from the hook's state as the agent sent them)."""
        fam, key, n = str(due.get("family") or ""), str(due.get("key") or ""), int(due.get("count") or 2)
        error = str(due.get("error") or "")
        try:
            packet = self.b.repair(error, tool=str(due.get("tool") or ""), command=str(due.get("command") or ""),
                                   agent=self.ev.agent, project=self.ev.cwd, session=self.ev.session_id,
                                   attempts=redact_value(attempts))
        except Exception as e:  # noqa: BLE001 - the plain search below still helps
            log.write(self.home, "warn", f"{self.ev.agent} repair recall failed: {type(e).__name__}: {e}")
            packet = None
        if packet is not None:
            if not packet.strip():
                return ""
            self._note(f"repair packet: {fam} failed {n} times ({key})")
            return (f"`{render.escape(fam)}` failed {n} times in this session with the same error "
                    f"({render.escape(render.first_line(str(due.get('shown') or key), 160))}). From remem long-term memory: what fixed it "
                    "before, what was tried and did not fix it, past episodes:\n" + packet)
        query = f"{fam} {key}".strip()
        items = [it for it in self.b.search(query, k=4, as_agent=self.ev.agent)
                 if it.get("session_id") != self.ev.session_id][:3]
        return render.repair_note(fam, key or error, items)

    def on_turn_end(self) -> str:
        ev = self.ev
        with self.state() as st:
            pending = st.pop("pending", None)
            if pending is None and ev.raw.get("stop_hook_active") and st.get("last"):
                pending = dict(st["last"])          # Claude continued after another Stop hook: same turn
            if pending is not None and pending.get("skip"):
                st.pop("tools", None)
                return ""
            pending = pending or {}
            prompt = ev.prompt or pending.get("prompt", "")
            if not prompt:
                self._note("turn end without a prompt (no turn start seen); nothing stored")
                return ""
            path = ev.transcript_path or pending.get("transcript_path", "")
            delta = transcript.read_delta(path, int(pending.get("offset", 0))) if path else transcript.Delta()
            if path and ev.reply and ev.agent == "claude-code":
                delta = _caught_up(path, int(pending.get("offset", 0)), delta, ev.reply)
            hooked = [ToolCall.from_dict(t) for t in st.get("tools") or []]
            tools = ev.tools or delta.tools or hooked
            if not hooked:      # no tool hook counted these calls: count them now, repair at the next turn
                self._count_turn_failures(st, tools)
            reply = ev.reply or st.get("reply") or delta.reply
            status = ev.status or delta.status or "succeeded"
            started = float(pending.get("started_at") or time.time())
            pending.setdefault("key", turn_key(ev, prompt, started))
            pending.setdefault("started_at", started)
            pending["prompt"] = prompt
            pending.setdefault("cwd", ev.cwd)
            pending["model"] = ev.model or pending.get("model") or delta.model
            st["last"] = {k: pending[k] for k in ("prompt", "started_at", "key", "cwd", "model") if k in pending}
            st["last"]["offset"] = pending.get("offset", 0)
            if path:
                st["offset"] = delta.offset
            for k in ("tools", "fails", "repaired", "reply"):
                st.pop(k, None)
        self.b.capture([self._turn(pending, reply=reply, tools=tools, status=status)])
        return ""

    def _count_turn_failures(self, st: dict[str, Any], tools: list[ToolCall]) -> None:
        """The failed calls of a turn no tool hook reported (OpenClaw, Hermes, a transcript): count
        them; a repair packet they call for waits for the next turn start."""
        for i, t in enumerate(tools):
            if t.is_error:
                due = self._count_failure(st, t)
                if due is not None:
                    st["repair_next"] = {**due, "attempts": [x.to_dict() for x in tools[: i + 1]][-state.MAX_TOOLS:]}

    # -- plugin operations (OpenCode / OpenClaw / Hermes tools) ---------------------------
    def on_op(self) -> str:
        a = self.ev.args
        op = self.ev.op
        if op == "search":
            items = self.b.search(str(a.get("query") or ""), k=_int(a.get("k"), 5, 50),
                                  project=str(a.get("project") or "") or None, as_agent=self.ev.agent)
            return self.answer("", results=safe_tree(items))
        if op == "get":
            return self.answer("", memory=safe_tree(self.b.get(str(a.get("id") or ""), as_agent=self.ev.agent)))
        if op == "add":
            res = self.b.add(str(a.get("text") or ""), agent=self.ev.agent, project=self.ev.cwd,
                             session=self.ev.session_id)
            return self.answer("", result=res)
        if op == "resume":
            sid = self.ev.session_id if self.ev.agent not in SHARED_RESUME_AGENTS else SHARED
            with state.session_state(self.home, self.ev.agent, sid) as st:
                action = resume.parse(f"/remem-resume {a.get('query') or ''}", st)
                text = resume.handle(self.b, action or ("query", ""), st, self.ev.cwd, as_agent=self.ev.agent)
            return self.answer("", context=text)
        return self.answer("", error=f"unknown operation {op!r}")

    # -- helpers ---------------------------------------------------------------------------
    def _turn(self, pending: dict[str, Any], *, reply: str, tools: list[ToolCall], status: str,
              open_: bool = False) -> TurnIn:
        ev = self.ev
        started = float(pending.get("started_at") or time.time())
        return TurnIn(
            request=str(pending.get("prompt", "")), reply=reply, actions=tools, owner=self.owner,
            agent=ev.agent, project=str(pending.get("cwd") or ev.cwd), session_id=ev.session_id,
            source_key=f"{ev.agent}:{ev.session_id}:{pending.get('key')}", status=status,
            started_at=started, ended_at=None if open_ else time.time(), model=str(pending.get("model") or ""),
            tags=["live", "open"] if open_ else ["live"])

    def _close_open_turn(self, st: dict[str, Any], status: str) -> None:
        """A turn whose end never arrived (agent killed, Stop hook skipped): store what we have."""
        pending = st.pop("pending", None)
        if not pending or pending.get("skip") or not pending.get("prompt"):
            return
        path = pending.get("transcript_path", "")
        delta = transcript.read_delta(path, int(pending.get("offset", 0))) if path else transcript.Delta()
        hooked = [ToolCall.from_dict(t) for t in st.pop("tools", None) or []]
        turn = self._turn(pending, reply=st.pop("reply", "") or delta.reply, tools=delta.tools or hooked,
                          status=delta.status or status)
        self.b.capture([turn])

    def _shared_pick(self, st: dict[str, Any], now: float, where: str) -> tuple[str, str] | None:
        """A bare 1-5 answering a list left agent-wide: by a /remem-resume command outside the
        prompt path (``SHARED``), or by a session that ended in this project (``HANDOFF``)."""
        if not resume.is_pick(self.ev.prompt):
            return None
        with state.session_state(self.home, self.ev.agent, where) as shared:
            listed = shared.get("resume") or {}
            if where == HANDOFF and listed.get("cwd") != self.ev.cwd:
                return None
            action = resume.parse(self.ev.prompt, shared, now)
            if action is not None:
                st["resume"] = shared.pop("resume")
        return action

    def _note(self, message: str) -> None:
        log.write(self.home, "info", f"{self.ev.agent} {self.ev.name}: {message}")
