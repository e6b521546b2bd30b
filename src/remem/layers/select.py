"""Which learned memories a packet carries: the learned channel's relevance rules (pure).

Learned memories are few per project (tens to a few hundred) and each is a statement meant to be
followed, so a wrong one costs more than a missing one: an agent told "use npm" in a bun project is
worse off than one told nothing. The rules below therefore let a memory in only for a reason that can
be named, and every picked item says which:

* ``slot``      the prompt names the memory's slot: "run the tests" → the test command, "install" →
                the package manager, "build" → the build command (``SLOT_CUES``);
* ``signature`` the prompt carries the error signature a procedure (or a skill grown from one) was
                learned for;
* ``words``     the prompt shares informative words with the memory: at least two distinct words
                whose combined weight (``recall.coverage.reference_weight``, the one word weight of
                the packet gate, the search floor and this channel) clears ``MIN_WORDS_WEIGHT``,
                or one identifier-like word (a path, a dotted or snake_case name, a tool the memory
                is about) — common words ("please", "fix", "file") weigh nothing;
* ``cue``       a sequence skill whose uses' requests shared words (``skills.cue``) meets a prompt with
                two of them of that weight: the kind of task the recipe followed;
* ``core``      the project's core facts and ≤ 3 must-follow rules, once per session (the first
                prompt of a session, a sub-agent's task, or the session-start hook);
* ``reminder``  on a prompt that asks the agent to act ("go ahead", "implement …", "add …", 改/实现),
                the ≤ ``REMINDERS`` rules the user stated most (in ≥ ``MUST_SESSIONS`` sessions): the
                rules agents break while doing the work are those the user keeps repeating;
* ``context``   a rule tied to a concrete thing (a path, an identifier, a `code` term: its anchors, ≥ 4
                characters) that the session's last turns touched — an edited or read file, a command
                (``recent_context``): the agent is working where the rule applies, whatever the prompt
                says ("go ahead" after a plan);
* ``resume``    the working state of the newest session in the project, when the prompt asks to
                continue (``continue``, ``继续``, "where were we") or the entry is ``resume``, and
                at a session's opening (the session-start hook, else its first prompt) when that
                session ended open — an error still failing or next steps named — and only while it
                is fresh (``WORKING_STATE_DAYS``).

Candidates, superseded, archived, rejected and deleted memories never reach a packet (the caller
passes active ones only; ``pick`` checks again).

Among the memories a reason let in, retention (``layers/retention.py``: how recently it was said, run
or used, how often, how confident) is a soft factor of the order, never a filter: a memory fading
under ``FADING`` sinks by up to ``RETENTION_WEIGHT`` (less than the gap between two reasons) below
fresher peers; memories above it keep the order their relevance gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..ingest.signatures import error_signatures
from ..recall.coverage import reference_weight
from ..text.cjk import RUN

WORKING_STATE_DAYS = 7
MAX_ITEMS = 6            # learned items per packet, before the budget share
CORE_RULES = 3           # must-follow conventions shown with the core facts …
CORE_SUPPORT = 2         # … from rules said in this many sessions (at a session's start: any active rule)
MIN_WORDS_WEIGHT = 1.3   # two informative words (each weighs ≤ 1) must share the memory
RULE_KINDS = ("preference", "convention", "correction", "decision")
REMINDERS = 2            # must-follow rules re-shown on a prompt that asks the agent to act
MUST_SESSIONS = 3        # a rule stated in this many sessions is must-follow

RECENT_TURNS = 2         # the session's last turns whose files and commands ``context`` looks at
MIN_ANCHOR = 4           # an anchor shorter than this ("ui", "db") matches too much
RETENTION_WEIGHT = 0.2   # a fading memory sinks by up to this (less than the gap between two reasons)
FADING = 0.5             # ... once its retention is under this; fresher ones keep the relevance order
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+#/-]*[A-Za-z0-9+#]|[A-Za-z]")
_CJK_RUN = RUN
_IDENT = re.compile(r"[./_]|[a-z][A-Z]|\d")
_TOUCHED = re.compile(r"[\w.@/+-]+")     # the words of the paths and commands a session touched
# a question about the work ("does this replace the old system?") asks for an explanation, not a change:
# the rules of the files it touched are no reason to speak up
_QUESTION = re.compile(r"[?？]\s*$")

SLOT_CUES: dict[str, re.Pattern[str]] = {
    "cmd.test": re.compile(r"\b(tests?|testing|pytest|jest|vitest|spec|unit[- ]tests?)\b|测试|单测", re.I),
    "cmd.build": re.compile(r"\b(build|builds|compile|compiles|bundle)\b|编译|构建|打包", re.I),
    "cmd.run": re.compile(r"\b(run (it|the app|the server|locally)|start (it|the app|the server)|dev server|"
                          r"launch|serve)\b|运行|启动", re.I),
    # "format" alone is mostly about data ("the date format", "output format"): the code's format only
    "cmd.lint": re.compile(r"\b(lint|linting|linter|formatter|code style|(?:format|reformat)(?:ting)? (?:the |this |all "
                           r"|our |my )?(?:code|files?|project|solution|sources?))\b|格式化代码|代码风格|代码格式", re.I),
    # "package" alone is mostly what a project publishes ("the package metadata"): installing one only
    "pkg.manager": re.compile(r"\b(install|installs|installing|dependency|dependencies|package manager|add (a |the )?"
                              r"(lib|library|package|dep)|npm|yarn|pnpm|bun|pip|uv|poetry|nuget)\b|依赖|安装",
                              re.I),
    "tool.js_runtime": re.compile(r"\b(node|nodejs|bun|deno|npm|npx|bunx|script|scripts)\b", re.I),
    "tool.python_env": re.compile(r"\b(pip|uv|poetry|venv|virtualenv|conda|python)\b", re.I),
}
# the tool that fills a slot is cued by the work it does: writing or running tests → the test runner
SLOT_CUES["tool.test_runner"] = SLOT_CUES["cmd.test"]
SLOT_CUES["tool.linter"] = SLOT_CUES["cmd.lint"]
SLOT_CUES["tool.bundler"] = SLOT_CUES["cmd.build"]
_ACT = re.compile(r"^\W*(?:(?:yes|yep|ok|okay|great|cool|sure|perfect|good|nice|thanks|alright)\b[\W]*)*"
                  r"(?:let'?s |please |now |then |and )*"
                  r"(go ahead|do it|proceed|make (?:this|that|the|these|those) changes?|implement|add|remove|"
                  r"delete|create|update|refactor|extract|rewrite|write|fix|change|move|rename|replace|"
                  r"consolidate|simplify|clean up|build|apply|integrate|migrate|convert|split|merge)\b|"
                  r"^\W*(?:请|帮我|现在|然后)?(实现|添加|增加|修改|删除|重构|改成|改为|改一下|写一个|创建|修复|继续做)",
                  re.I)
_CONTINUE = re.compile(r"^\s*(continue|go on|keep going|resume|carry on|proceed)\b|where (were we|did we leave)|"
                       r"pick up where|继续|接着", re.I)
_STOP = frozenset("""a an the and or but if then else to of in on at for with from by as is are was were be been
being it its this that these those there here i me my we our you your they them he she his her do does did
done not no yes can could should would will shall may might must please pls just also so very really
about into over under again still only all any some more most other such what which who whom whose when
where why how than too up down out off now new old get got make made let use using used want need like
ok okay fix fixed fixing add added change changed update updated file files code thing things way work
working works try trying tried see look run running help sure good right wrong issue problem error errors
one two first last next time same well back""".split())


def terms(text: str) -> set[str]:
    """Lower-case words (≥ 3 letters, not stop words) and CJK bigrams of ``text``."""
    out = {w.lower().strip("./-") for w in _WORD.findall(text or "")}
    out = {w for w in out if len(w) >= 3 and w not in _STOP}
    for run in _CJK_RUN.findall(text or ""):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return out


def _specific(anchor: str) -> bool:
    """An anchor that names one thing (a path, a dotted / snake_case / camelCase name, a tool), not
    a project word such as "core" or "fiber" that every file of the project touches."""
    from .vocab import TOOLS

    return len(anchor) >= MIN_ANCHOR and (bool(_IDENT.search(anchor)) or anchor in TOOLS)


def _identifier(word: str) -> bool:
    return bool(_IDENT.search(word)) and len(word) >= 4


def _age_days(m: dict[str, Any], now: float) -> float:
    data = m.get("data") or {}
    seen = data.get("last_seen") or m.get("updated_at") or now
    return (now - float(seen)) / 86400.0


def _is_core(m: dict[str, Any]) -> bool:
    return m.get("kind") == "fact" and str(m.get("slot") or "").startswith(("cmd.", "pkg.", "tool."))


def _by_user(m: dict[str, Any]) -> bool:
    """Written by the user (the memory file, ``remem learned add``), not learned from turns."""
    return (m.get("data") or {}).get("origin") == "user"


def _support(m: dict[str, Any]) -> int:
    """Sessions that stated the memory (not those where a task only named its choice: "using mstest")."""
    s = m.get("sessions")
    n = len(s) if isinstance(s, list | set | tuple) else int(s or 0)
    return n - int((m.get("data") or {}).get("chosen_only") or 0)


def _ended_open(m: dict[str, Any]) -> bool:
    """A session's working state left something to do: an error still failing, or next steps named."""
    d = m.get("data") or {}
    return bool(d.get("open_error") or d.get("next"))


def pick(memories: Iterable[dict[str, Any]], prompt: str, *, entry: str = "turn_start",
         first_of_session: bool = False, now: float, limit: int = MAX_ITEMS,
         recent_context: str = "", new_session: bool | None = None,
         half_lives: Any = None, start_shown: bool = False) -> list[dict[str, Any]]:
    """The learned memories a packet for ``prompt`` should carry, best first, each with ``why``.

    ``memories`` are the active learned memories in the caller's scope (``store.learned.list``);
    ``entry`` is the recall entry point (turn_start, sub_agent, repair, resume, session_start);
    ``recent_context`` the paths and commands of this session's last ``RECENT_TURNS`` turns (see
    ``recent_context()``; empty: unknown); ``new_session`` whether this is the session's first prompt
    (None: unknown) — a "continue" in the middle of a session goes on with what the agent has in front
    of it, so the working state answers it only at a session's start. ``half_lives``
    (``retention.HalfLives``; None: the defaults) set how fast retention fades per kind.
    ``start_shown``: the session's start context was given (it carried a working state that ended
    open, so a "continue" right after does not repeat it).
    """
    from .retention import HalfLives

    half_lives = half_lives or HalfLives()
    active = [m for m in memories if m.get("status") == "active"]
    if not active:
        return []
    chosen: dict[str, dict[str, Any]] = {}

    def take(m: dict[str, Any], why: str, score: float) -> None:
        cur = chosen.get(m["id"])
        if cur is None or cur["score"] < score:
            chosen[m["id"]] = {**m, "why": why, "score": score}

    # working state: when asked to continue, or at a session's opening when the last one ended open;
    # only the newest fresh one
    asked = entry == "resume" or (_CONTINUE.search(prompt or "") and new_session is not False)
    if asked or entry == "session_start" or first_of_session:
        states = [m for m in active if m.get("kind") == "working_state" and not _is_team(m)  # one's own
                  and _age_days(m, now) <= WORKING_STATE_DAYS]
        if states:
            newest = max(states, key=lambda m: float((m.get("data") or {}).get("last_seen") or 0))
            opened = _ended_open(newest)
            # the session's start context carried it already: its first "continue" does not repeat it
            repeat = start_shown and opened and entry == "turn_start" and new_session is True
            if (asked or opened) and not repeat:
                take(newest, "resume", 3.0)
    rest = [m for m in active if m.get("kind") != "working_state"]

    # core facts and the strongest rules, once per session
    if first_of_session or entry in ("session_start", "sub_agent"):
        for m in rest:
            if _is_core(m):
                take(m, "core", 2.0 + float(m.get("confidence") or 0))
        # a session's start has room: any active rule may be among its ≤ CORE_RULES (one said once with
        # "always" / "remember", or written by the user in the memory file, first), a prompt's packet
        # keeps the slots for rules said in CORE_SUPPORT sessions
        start = entry == "session_start"
        least = 1 if start else CORE_SUPPORT
        rules = sorted((m for m in rest if m.get("kind") in RULE_KINDS
                        and (_support(m) >= least or start and _by_user(m))),
                       key=lambda m: (not _by_user(m), bool((m.get("data") or {}).get("routine")), -_support(m),
                                      -float(m.get("confidence") or 0)))
        for m in rules[:CORE_RULES]:
            take(m, "core", 1.5 + float(m.get("confidence") or 0))

    from .clean import user_voice

    raw = prompt or ""
    text = user_voice(raw)            # pasted logs, code and quotes are not what the user asks
    sigs = set(error_signatures(raw)) if raw else set()
    p_terms = terms(text)
    if _ACT.search(text):
        must = sorted((m for m in rest if m.get("kind") in RULE_KINDS and _support(m) >= MUST_SESSIONS),
                      key=lambda m: (-_support(m), -float(m.get("confidence") or 0)))
        for m in must[:REMINDERS]:
            take(m, "reminder", 1.2 + float(m.get("confidence") or 0))
    if recent_context and not _QUESTION.search(text):
        touched = {w.strip("./-") for w in _TOUCHED.findall(recent_context.lower().replace("\\", "/"))}
        names = {w.rsplit("/", 1)[-1] for w in touched}      # a file by its name: paths differ in their root
        for m in rest:
            anc = [a.strip("./-") for a in (str(x).lower() for x in (m.get("data") or {}).get("anchors") or ())
                   if _specific(a)]
            if m.get("kind") in RULE_KINDS and any(a in touched or a in names
                                                    or ("." in a and a.rsplit("/", 1)[-1] in names) for a in anc):
                take(m, "context", 1.05 + float(m.get("confidence") or 0))
    for m in rest:
        slot = str(m.get("slot") or "")
        cue = SLOT_CUES.get(slot)
        if cue is not None and cue.search(text):
            take(m, "slot", 2.5 + float(m.get("confidence") or 0))
            continue
        if m.get("kind") in ("procedure", "skill"):      # a skill comes in as the procedures it grew from
            data = m.get("data") or {}
            trig = set(data.get("signatures") or []) or set(error_signatures(m.get("text", "")))
            if m.get("kind") == "skill" and (data.get("trigger") or {}).get("signature"):
                trig.add(str(data["trigger"]["signature"]))
            if sigs & trig:
                take(m, "signature", 3.0 + float(m.get("confidence") or 0))
                continue
        if not p_terms:
            continue
        if m.get("kind") == "skill" and (m.get("data") or {}).get("cue"):
            said = p_terms & set((m.get("data") or {})["cue"])          # the kind of task it followed
            w = sum(reference_weight(x) for x in said)
            if len(said) >= 2 and w >= MIN_WORDS_WEIGHT:
                take(m, "cue", 1.0 + w / 4 + float(m.get("confidence") or 0))
                continue
        shared = p_terms & terms(m.get("text", ""))
        if not shared:
            continue
        ident = [w for w in shared if _identifier(w)]
        weight = sum(reference_weight(w) for w in shared)
        if ident or (len(shared) >= 2 and weight >= MIN_WORDS_WEIGHT):
            take(m, "words", 1.0 + weight / 4 + float(m.get("confidence") or 0))

    from . import retention

    for m in chosen.values():
        m["retention"] = round(retention.of(m, now, half_lives), 4)
        m["score"] -= RETENTION_WEIGHT * max(0.0, FADING - m["retention"]) / FADING
    # the same memory held twice (the home's own and a team's mirror of it, both learned from the same
    # turns) is shown once, at the better score: the home's own (the user curates and judges that one)
    best: dict[tuple[str, ...], dict[str, Any]] = {}
    for m in sorted(chosen.values(), key=lambda m: -m["score"]):
        same = sameness(m)
        cur = best.get(same)
        if cur is None:
            best[same] = m
        elif _is_team(cur) and not _is_team(m):
            best[same] = {**m, "score": cur["score"], "why": cur["why"]}
    out = sorted(best.values(), key=lambda m: -m["score"])
    if entry == "session_start":
        # nothing but the core (a session's start has no prompt): every core fact and its ≤ CORE_RULES
        # rules, not cut to a prompt's ``limit`` (five commands and a package manager left no rule)
        return out
    return out[:limit]


def _is_team(m: dict[str, Any]) -> bool:
    return str(m.get("owner") or "").startswith("team:")


def sameness(m: dict[str, Any]) -> tuple[str, ...]:
    """What makes two learned memories the same for a reader: kind and slot = value, else kind and text."""
    if m.get("slot") and m.get("value"):
        return (str(m.get("kind")), str(m["slot"]), str(m["value"]).lower())
    return (str(m.get("kind")), " ".join(re.findall(r"\w+", str(m.get("text") or "").lower())))


def recent_context(actions: Iterable[Any]) -> str:
    """The paths and commands of actions (``layers.types.Action``), one per line: ``pick``'s
    ``recent_context``."""
    return "\n".join(str(getattr(a, "command", "") or getattr(a, "path", "") or "") for a in actions
                     if getattr(a, "command", "") or getattr(a, "path", ""))


def render_line(m: dict[str, Any], now: float) -> str:
    """One learned item as the packet shows it: kind, support, the statement (escaping is the
    packet renderer's job)."""
    n = _support(m)
    support = f"said in {n} sessions" if n >= 2 else "said once"
    if m.get("kind") == "fact":
        support = f"seen in {n} sessions" if n >= 2 else "seen once"
    return f"{m.get('kind', 'memory')} · {support} · id {m.get('id', '')}: {m.get('text', '')}"


def dedupe_slots(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One memory per slot (the first, i.e. the best-scored)."""
    seen: set[str] = set()
    out = []
    for m in items:
        slot = str(m.get("slot") or "")
        if slot and slot in seen:
            continue
        seen.add(slot)
        out.append(m)
    return out
