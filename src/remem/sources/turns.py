"""Turn assembly: normalized messages in, complete turns (one L1 memory each) out.

A pure function of its inputs. Rules (see FORMATS.md, "Generic turn rule"):

* Messages are grouped by ``session_id``; within a session the input order is kept.
* A turn opens with a non-empty *real* user message (``Message.real_user``). Every other
  message until the next real user message joins it: tool calls, tool results, system
  records, injected or meta user records.
* A user message marked ``extra["barrier"]`` (an agent's own harness prompt, e.g. Hermes'
  background review) closes the open turn; what follows it until the next real prompt
  belongs to no turn.
* Sidechain (sub-agent) messages fold into the parent's currently open turn: their tool
  calls join the trajectory and their ids join ``message_ids``; their texts never become
  the reply, and their activity does not keep the turn open (a sub-agent still working after
  the parent replied does not make the parent's turn incomplete; a later sync that reads more
  of it updates the turn). A session made only of sidechain messages (its parent transcript is
  gone) is assembled as if it were a main conversation.
* The reply is the **last** non-empty main-chain assistant text of the turn. Earlier
  assistant texts are kept in the trajectory, in order, as ``ToolCall(name="note")``
  entries whose ``output`` is the text (pass ``notes=False`` to drop them).
* Tool calls are paired with results by call id; each call's output is shortened on its
  own to ``max_tool_output`` characters (head + tail around a marker), inputs to four times
  that. A result whose call is not in the turn becomes a ``tool_result`` entry.
* A turn followed by the next real request is complete, whatever it holds: one whose reply
  never arrived or was lost (the agent was interrupted, or its reply line was cut) is emitted
  with an empty reply, so it is never reported as incomplete forever. The last turn of a
  session is emitted only when it has a reply and ends with it (no tool activity after the
  reply text); otherwise it is still running, is counted as incomplete, and a later sync that
  reads more of the session completes it under the same ``source_key``. A turn closed by a
  harness barrier without any reply is dropped as incomplete.
* ``/remem-resume`` is no memory: a resume request (typed, as Codex and Gemini record it, or
  Claude Code's slash-command wrapper ``<command-name>/remem-resume</command-name>``) closes the
  open turn like a barrier, and a bare pick (``1``–``5``, how the hook recognises one:
  :func:`remem.integrations.resume.is_pick`) that directly follows it in the same session is
  dropped too, with what answered it; both are counted in ``ignored``. A bare ``1`` anywhere
  else is an ordinary request.
* ``/remem-incognito`` (typed, or Claude Code's wrapper) makes the rest of its session private until
  ``/remem-incognito off``: the commands and every turn opened in between are dropped and counted in
  ``private`` (their sessions in ``private_sessions``), so a sync keeps out what the hook kept out
  even where no hook ran (:mod:`remem.privacy`).
* ``message_ids`` lists every source id of the turn's messages; a parser that merges several
  records into one message (Claude streaming split) lists them in ``extra["source_ids"]``.
* Status: ``cancelled`` when a message of the turn says so (interrupt, abort), else
  ``failed`` when a message says failed or the turn's last tool call is an error, else
  ``succeeded``. Sidechain statuses and sidechain tool errors do not count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from remem import privacy as _privacy
from remem.integrations import resume as _resume
from remem.model import Message, ToolCall, TurnIn

# Claude Code records a slash command as a wrapper, not as the typed text
_COMMAND_WRAPPER = re.compile(r"<command-name>\s*/?remem[-_]resume\s*</command-name>", re.I)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)


@dataclass(slots=True)
class AssembleResult:
    """Complete turns plus counts of what did not become a turn."""

    turns: list[TurnIn] = field(default_factory=list)
    incomplete: int = 0       # a real user message with no final reply (incl. a still-open last turn)
    skipped_empty: int = 0    # real user messages with no text
    messages: int = 0         # messages seen (before de-duplication)
    duplicates: int = 0       # messages dropped because their (session, source_id) was seen before
    ignored: int = 0          # /remem-resume requests and the picks that answered them: no memories
    private: int = 0          # /remem-incognito commands and the turns of the incognito stretch they open
    private_sessions: set[str] = field(default_factory=set)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters: head and tail kept around a marker."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n…[{omitted} chars omitted]…\n{text[len(text) - tail:] if tail else ''}"


@dataclass(slots=True)
class _Open:
    opener: Message
    request: str
    entries: list[ToolCall | str] = field(default_factory=list)   # tool calls and assistant texts, in order
    by_call: dict[str, ToolCall] = field(default_factory=dict)
    side_calls: set[int] = field(default_factory=set)               # id() of sub-agent tool calls
    ids: list[str] = field(default_factory=list)
    statuses: set[str] = field(default_factory=set)
    activity_after_text: bool = False
    has_text: bool = False
    model: str = ""
    fallback_model: str = ""
    cwd: str = ""
    first_ts: float | None = None
    last_ts: float | None = None


@dataclass(slots=True)
class _Session:
    seen_main: bool = False
    orphan: bool = False
    open: _Open | None = None
    ids: set[str] = field(default_factory=set)
    resume_listed: bool = False     # the last request was a /remem-resume list: a bare pick may follow
    incognito: bool = False         # inside a /remem-incognito stretch: nothing becomes a turn


def resume_request(m: Message) -> tuple[str, str] | None:
    """("query", words) or ("pick", "N") when ``m`` is a /remem-resume command, else None."""
    if m.real_user:
        return _resume.parse(m.text, {})
    if m.extra.get("kind") == "command" and _COMMAND_WRAPPER.search(m.text):
        args = _COMMAND_ARGS.search(m.text)
        return _resume.parse(f"/remem-resume {args.group(1) if args else ''}", {})
    return None


class TurnAssembler:
    """Incremental form of :func:`assemble_turns` for callers that write turns as they close.

    ``feed(message)`` one message at a time; closed turns accumulate in ``result.turns`` (a
    caller may take and clear them between feeds); ``finish()`` closes every session's last
    turn (emitting it only when complete) and returns the result with its counts.
    """

    def __init__(self, agent: str, owner: str = "default", max_tool_output: int = 2000,
                 notes: bool = True) -> None:
        self.agent = agent
        self.owner = owner
        self.max_out = max_tool_output
        self.max_in = max_tool_output * 4 if max_tool_output > 0 else 0
        self.notes = notes
        self.sessions: dict[str, _Session] = {}
        self.result = AssembleResult()

    # -- feeding

    def feed(self, m: Message) -> None:
        res = self.result
        res.messages += 1
        sess = self.sessions.setdefault(m.session_id, _Session())
        if m.source_id:
            if m.source_id in sess.ids:
                res.duplicates += 1
                return
            sess.ids.add(m.source_id)
        side = m.sidechain and not sess.orphan
        if side and not sess.seen_main and sess.open is None:
            sess.orphan = True      # no parent transcript (yet): assemble the sub-agent on its own
            side = False
        if not m.sidechain:
            sess.seen_main = True

        if not side and m.role == "user" and m.extra.get("barrier"):
            self._close(m.session_id, sess, final=False)     # harness prompt: its exchange is no turn
            return
        if not side and m.role == "user" and (m.real_user or m.extra.get("kind") == "command"):
            private = _privacy.parse_command(m.text)
            if private in ("on", "off", "status"):
                self._close(m.session_id, sess, final=False, successor=True)
                sess.incognito = private == "on" or (private == "status" and sess.incognito)
                self._private(m.session_id)
                return
            if sess.incognito and m.real_user and m.text.strip():
                self._private(m.session_id)    # the stretch's turns: never opened
                return
            action = resume_request(m)
            if action is not None or (m.real_user and sess.resume_listed and _is_pick(m.text)):
                self._close(m.session_id, sess, final=False, successor=True)
                sess.resume_listed = action is not None and action[0] == "query"
                res.ignored += 1
                return
            if m.real_user:
                sess.resume_listed = False
        if not side and m.role == "user" and m.real_user:
            request = m.text.strip()
            if not request:
                res.skipped_empty += 1
            else:
                self._close(m.session_id, sess, final=False, successor=True)
                sess.open = _Open(opener=m, request=request)
                self._absorb(sess.open, m, side=False)
                return
        if sess.open is not None:
            self._absorb(sess.open, m, side=side)

    def _private(self, session_id: str) -> None:
        self.result.private += 1
        self.result.private_sessions.add(session_id)

    def _absorb(self, t: _Open, m: Message, *, side: bool) -> None:
        t.ids.extend(m.extra.get("source_ids") or [m.source_id])
        if m.ts is not None:
            t.first_ts = m.ts if t.first_ts is None else min(t.first_ts, m.ts)
            t.last_ts = m.ts if t.last_ts is None else max(t.last_ts, m.ts)
        if not t.cwd and m.cwd:
            t.cwd = m.cwd
        if m is t.opener:
            t.fallback_model = m.model
            return
        if m.model and not side:
            if m.role == "assistant":
                t.model = m.model
            elif not t.fallback_model:
                t.fallback_model = m.model
        if m.status and not side:
            t.statuses.add(m.status)
        if (m.role == "user" and not m.real_user and m.extra.get("kind") == "attachment"
                and not t.entries and m.text):
            t.request = f"{t.request}\n{m.text}"
            return
        if m.role == "assistant" and not side and m.text.strip():
            t.entries.append(m.text.strip())
            t.has_text = True
            t.activity_after_text = False
        for call in m.tool_calls:
            tc = ToolCall(name=call.name, input=shorten(call.input, self.max_in),
                          output=shorten(call.output, self.max_out), is_error=call.is_error,
                          call_id=call.call_id)
            t.entries.append(tc)
            if side:
                t.side_calls.add(id(tc))
            if call.call_id:
                t.by_call[call.call_id] = tc
            t.activity_after_text = t.activity_after_text or not side
        for call_id, (output, is_error) in m.tool_results.items():
            found = t.by_call.get(call_id)
            if found is None:
                found = ToolCall(name="tool_result", call_id=call_id)
                t.entries.append(found)
                if call_id:
                    t.by_call[call_id] = found
            tc = found
            tc.output = shorten(output, self.max_out)
            tc.is_error = tc.is_error or is_error
            t.activity_after_text = t.activity_after_text or not side

    # -- closing

    def _close(self, session_id: str, sess: _Session, *, final: bool, successor: bool = False) -> None:
        t = sess.open
        sess.open = None
        if t is None:
            return
        if (not t.has_text and not successor) or (final and t.activity_after_text):
            self.result.incomplete += 1
            return
        self.result.turns.append(self._turn(session_id, t))

    def _turn(self, session_id: str, t: _Open) -> TurnIn:
        last_text = max((i for i, e in enumerate(t.entries) if isinstance(e, str)), default=-1)
        reply = t.entries[last_text] if last_text >= 0 else ""
        assert isinstance(reply, str)
        actions: list[ToolCall] = []
        for i, e in enumerate(t.entries):
            if isinstance(e, ToolCall):
                actions.append(e)
            elif i != last_text and self.notes:
                actions.append(ToolCall(name="note", output=shorten(e, self.max_out)))
        tools = [a for a in actions if a.name != "note" and id(a) not in t.side_calls]
        if "cancelled" in t.statuses:
            status = "cancelled"
        elif "failed" in t.statuses or (tools and tools[-1].is_error):
            status = "failed"
        else:
            status = "succeeded"
        opener = t.opener
        return TurnIn(
            request=t.request, reply=reply, actions=actions, owner=self.owner, agent=self.agent,
            project=opener.cwd or t.cwd, session_id=session_id,
            source_key=f"{self.agent}:{session_id}:{opener.source_id}", status=status,
            started_at=opener.ts if opener.ts is not None else t.first_ts,
            ended_at=t.last_ts, model=t.model or t.fallback_model, message_ids=list(t.ids),
        )

    def finish(self, *, complete: bool = False) -> AssembleResult:
        """Close every session's last turn. ``complete``: the history is a saved export (SpecStory,
        aider), as finished as it will be until the file changes, so a last turn without a reply or
        with tool work after it is emitted as if another request followed (a later read of a grown
        file updates it under the same ``source_key``)."""
        for session_id, sess in self.sessions.items():
            self._close(session_id, sess, final=not complete, successor=complete)
        return self.result


def _is_pick(text: str) -> bool:
    """A bare number the hook takes as a pick, within the size of a resume list."""
    return _resume.is_pick(text) and 1 <= int(re.sub(r"\D", "", text)) <= _resume.MAX_CANDIDATES


def assemble_turns(messages: Iterable[Message], *, agent: str, owner: str = "default",
                   max_tool_output: int = 2000, notes: bool = True) -> AssembleResult:
    """Group messages into complete turns; see the module docstring for the rules.

    ``messages`` may be a generator (it is consumed once, memory is bounded by the open
    turns). ``source_key`` = ``f"{agent}:{session_id}:{source_id of the opening message}"``.
    """
    asm = TurnAssembler(agent, owner, max_tool_output, notes)
    for m in messages:
        asm.feed(m)
    return asm.finish()


_Assembler = TurnAssembler   # the name the sync engine first imported
