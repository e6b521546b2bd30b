"""The project world model (L3 facts) and the per-session working state, from turns. Pure.

Commands: per category (test / build / run / lint) the command family with the most successful
runs, active when those runs span ≥ 2 sessions. Package manager from install commands, runner
prefixes and lock files. Languages from touched files, OS / shell from paths and prompts, ports,
the most-edited directories, and what the user states as fact ("the frontend uses Next.js 15").
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from ..text.cjk import LETTERS
from ..text.fences import FENCED
from .clean import sentences, user_voice
from .commands import category, family, outcome, segments, signatures
from .types import Evidence, Observation, Turn

_LOCKS = {"package-lock.json": "npm", "npm-shrinkwrap.json": "npm", "bun.lock": "bun", "bun.lockb": "bun",
          "pnpm-lock.yaml": "pnpm", "yarn.lock": "yarn", "uv.lock": "uv", "poetry.lock": "poetry",
          "pipfile.lock": "pipenv", "cargo.lock": "cargo", "go.sum": "go", "packages.lock.json": "dotnet"}
_PM_PREFIX = {"npm": "npm", "npx": "npm", "pnpm": "pnpm", "pnpx": "pnpm", "yarn": "yarn", "bun": "bun", "bunx": "bun",
              "uv": "uv", "poetry": "poetry", "pipenv": "pipenv", "pip": "pip", "pip3": "pip", "cargo": "cargo",
              "dotnet": "dotnet", "go": "go", "conda": "conda"}
_EXT_LANG = {"py": "Python", "ipynb": "Python", "ts": "TypeScript", "tsx": "TypeScript", "js": "JavaScript",
             "jsx": "JavaScript", "mjs": "JavaScript", "cs": "C#", "csproj": "C#", "go": "Go", "rs": "Rust",
             "java": "Java", "kt": "Kotlin", "rb": "Ruby", "php": "PHP", "sh": "Shell", "ps1": "PowerShell",
             "psm1": "PowerShell", "sql": "SQL", "swift": "Swift", "c": "C", "cpp": "C++", "vue": "Vue",
             "svelte": "Svelte"}
_PORT = re.compile(r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{4,5})\b")
_USER_FACT_EN = re.compile(
    r"\b(?:this|the|our|my) (?:project|app|application|repo|repository|frontend|backend|api|server|site|"
    r"database|db|library|codebase) (?:uses|is built (?:with|on)|runs on|is written in|is based on|is a)\b", re.I)
_USER_FACT_ZH = re.compile(r"(?:本项目|这个项目|该项目|项目|前端|后端|数据库)(?:的)?(?:前端|后端|数据库)?(?:使用|用的是|采用|基于|是)")
_USER_CMD = re.compile(r"\b(npm|pnpm|yarn|bun|uv|poetry|dotnet) (?:run|install|add|ci|test|build|sync)\b", re.I)
_CODE_SPAN = re.compile(r"`([^`\n]{3,80})`")
MIN_LANG_FILES = 5
WORKING_STATE_CHARS = 500
WORKING_STATE_DAYS = 7


def _ev(t: Turn, source: str = "inferred", explicit: bool = False) -> Evidence:
    return Evidence(turn_id=t.id, session=t.session, ts=t.ts, source=source, explicit=explicit)


def _os_of(text: str) -> str:
    if re.search(r"\b[A-Z]:\\(?:Users|dev|Projects|src)\\", text) or "PS C:\\" in text:
        return "windows"
    if "/Users/" in text:
        return "macos"
    if re.search(r"/home/\w+", text):
        return "linux"
    return ""


def world_observations(turns: list[Turn]) -> list[Observation]:
    """L3 fact observations of one project (turns in time order). One observation per slot, the
    best-supported value, with every turn that supports it as evidence."""
    if not turns:
        return []
    project = turns[0].project
    runs: dict[str, Counter[str]] = defaultdict(Counter)          # category -> family -> ok runs
    tries: dict[str, Counter[str]] = defaultdict(Counter)         # category -> family -> runs, failed ones too
    manifests: dict[str, set[str]] = defaultdict(set)             # package manager -> its lock / project files
    run_ev: dict[str, list[Evidence]] = defaultdict(list)
    pm: Counter[str] = Counter()
    pm_ev: dict[str, list[Evidence]] = defaultdict(list)
    langs: Counter[str] = Counter()
    lang_ev: dict[str, list[Evidence]] = defaultdict(list)
    dirs: Counter[str] = Counter()
    dir_ev: dict[str, list[Evidence]] = defaultdict(list)
    oses: Counter[str] = Counter()
    os_ev: dict[str, list[Evidence]] = defaultdict(list)
    ports: Counter[str] = Counter()
    port_ev: dict[str, list[Evidence]] = defaultdict(list)
    out: list[Observation] = []
    for t in turns:
        for a in t.actions:
            if a.tool == "shell" and a.command:
                res = outcome(a)
                for seg in segments(a.command):
                    fam = family(seg)
                    cat = category(fam)
                    head = fam.split(" ")[0]
                    if head in _PM_PREFIX and (cat or head in ("npm", "bun", "pnpm", "yarn", "uv", "dotnet")):
                        pm[_PM_PREFIX[head]] += 1
                        pm_ev[_PM_PREFIX[head]].append(_ev(t))
                    if cat in ("test", "build", "run", "lint") and " " in fam:
                        tries[cat][fam] += 1
                        if res == "ok":
                            runs[cat][fam] += 1
                            run_ev[f"{cat}\x1f{fam}"].append(_ev(t))
                o = _os_of(a.command + "\n" + a.output[:2000])
                if o:
                    oses[o] += 1
                    os_ev[o].append(_ev(t))
                for p in set(_PORT.findall(a.command + "\n" + a.output[:4000])):
                    ports[p] += 1
                    port_ev[p].append(_ev(t))
            if a.path:
                low = a.path.replace("\\", "/").lower()
                name = low.rsplit("/", 1)[-1]
                if name in _LOCKS:
                    pm[_LOCKS[name]] += 2
                    pm_ev[_LOCKS[name]].append(_ev(t))
                    manifests[_LOCKS[name]].add(low)
                ext = name.rsplit(".", 1)[-1] if "." in name else ""
                if ext in ("csproj", "sln", "fsproj") or name in ("directory.packages.props", "global.json"):
                    pm["dotnet"] += 1
                    pm_ev["dotnet"].append(_ev(t))
                    manifests["dotnet"].add(low)
                if ext in _EXT_LANG:
                    langs[_EXT_LANG[ext]] += 1
                    lang_ev[_EXT_LANG[ext]].append(_ev(t))
                if a.tool == "edit" and "/" in low:
                    d = "/".join(low.split("/")[:-1][-2:])
                    dirs[d] += 1
                    dir_ev[d].append(_ev(t))
                o = _os_of(a.path)
                if o:
                    oses[o] += 1
                    os_ev[o].append(_ev(t))
        for cm in _USER_CMD.finditer(t.request[:4000]):
            pm[_PM_PREFIX[cm.group(1).lower()]] += 1
            pm_ev[_PM_PREFIX[cm.group(1).lower()]].append(_ev(t, "user"))
        for s in sentences(user_voice(t.request)):
            if len(s) <= 240 and (_USER_FACT_EN.search(s) or _USER_FACT_ZH.search(s)) and "?" not in s \
                    and "？" not in s and not s.lower().startswith(("does", "is ", "why", "how", "what")):
                out.append(Observation(kind="fact", key="stated:" + hashlib.sha1(s.encode()).hexdigest()[:12], text=s,
                                       project=project, evidence=_ev(t, "user", True),
                                       slot="", value="", data={"stated": True}))

    def emit(slot: str, value: str, text: str, ev: list[Evidence], **data: object) -> None:
        for e in ev:
            out.append(Observation(kind="fact", key=slot, text=text, project=project, evidence=e,
                                   slot=slot, value=value, data=dict(data)))

    # the agent telling the user to run a command it ran successfully elsewhere ("restart with `npm start`")
    # is another session's evidence for that command, never a run of its own (it picks no winner)
    seen = {fam for fams in runs.values() for fam in fams}
    heads = {fam.split(" ")[0] for fam in seen}
    if seen:
        for t in turns:
            if "`" not in t.reply:
                continue
            for span in set(_CODE_SPAN.findall(t.reply[:20000])):
                if not any(h in span for h in heads):
                    continue
                for seg in segments(span):
                    fam = family(seg)
                    cat = category(fam)
                    key = f"{cat}\x1f{fam}"
                    if fam in seen and cat and t.session not in {e.session for e in run_ev[key]}:
                        run_ev[key].append(_ev(t))
    for cat, fams in runs.items():
        # the family with the most successful runs; ties go to the one seen in more sessions
        best = max(fams, key=lambda f: (len({e.session for e in run_ev[f"{cat}\x1f{f}"]}), fams[f], f))
        emit(f"cmd.{cat}", best, f"The {cat} command is `{best}`.", run_ev[f"{cat}\x1f{best}"],
             runs=fams[best], tries=tries[cat][best])
    if pm:
        best = max(pm, key=lambda k: (len({e.session for e in pm_ev[k]}), pm[k], k))
        emit("pkg.manager", best, f"The package manager is {best}.", pm_ev[best],
             manifests=len(manifests[best]), rivals=sorted(k for k in pm if k != best))
    for lang, n in langs.most_common(3):
        if n >= MIN_LANG_FILES:
            emit(f"stack.lang.{lang.lower()}", lang, f"The project is written in {lang}.", lang_ev[lang])
    if oses:
        best = oses.most_common(1)[0][0]
        emit("env.os", best, f"The developer works on {best}.", os_ev[best])
    for p, _n in ports.most_common(2):
        emit(f"env.port.{p}", p, f"A local service listens on port {p}.", port_ev[p])
    if dirs:
        top = [d for d, _ in dirs.most_common(3)]
        ev = [e for d in top for e in dir_ev[d]]
        emit("layout.hot_dirs", ",".join(top), "Most edited directories: " + ", ".join(top) + ".", ev)
    return out


# what opens a session without saying what it is for: "continue", "pick up where we left off",
# a greeting, a thanks; and a first line that is pasted material (a test name, a line of code)
_CONTINUATION = re.compile(r"\b(?:continue|continuing|keep going|go on|carry on|proceed|resume|pick(?:ing)? up|"
                           r"left off|where (?:we|you) (?:were|stopped))\b|继续|接着", re.I)
_ACK = re.compile(r"^\W*(?:ok(?:ay)?|yes|yep|no|sure|thanks?|thank you|great|cool|nice|perfect|excellent|"
                  r"awesome|good|done|hi|hello|hey|greetings|好的?|谢谢|是的?|嗯|可以)\b[\W]*$", re.I)
_GREETING = re.compile(r"^(?:hi|hello|hey|greetings)\b[,!.]?\s*", re.I)
_CJK_RUN = re.compile(f"[{LETTERS}]")
_CODE_LINE = re.compile(r"[;{}]\s*$|^(?:\w+\s+)?[\w.\[\]]+\s*=[^=]")   # "x = f()", "Key=value", "…;"
#: a continuation this short names no goal of its own ("continue working on this application")
CONTINUATION_WORDS = 8
GOAL_CHARS = 140
DONE_CHARS = 120


def goal_of(sentence: str) -> str:
    """``sentence`` as a session's goal, or "" when it says none: an acknowledgement, a short
    continuation, one pasted token or line of code. A leading greeting is dropped."""
    s = _GREETING.sub("", sentence).strip()
    if not s or _ACK.match(s):
        return ""
    cjk = bool(_CJK_RUN.search(s))
    if _CONTINUATION.search(s) and (len(s) <= 3 * CONTINUATION_WORDS if cjk else len(s.split()) <= CONTINUATION_WORDS):
        return ""
    if not cjk and (" " not in s or _CODE_LINE.search(s)):
        return ""
    return s


def first_goal(requests: Iterable[str], limit: int | None = None) -> tuple[str, int]:
    """The first sentence of a session's requests (in order; only the first ``limit`` when given) that
    states a goal (:func:`goal_of`), and its request's index; ("", -1) when none does."""
    for i, r in enumerate(itertools.islice(requests, limit)):
        for s in sentences(user_voice(r)):
            if g := goal_of(s):
                return g, i
    return "", -1


def _continues(session_turns: list[Turn]) -> bool:
    """The session opens by carrying on earlier work ("continue", "let's pick up where we left off")."""
    first = next((s for t in session_turns for s in sentences(user_voice(t.request))), "")
    return bool(first) and bool(_CONTINUATION.search(first)) and not goal_of(first)


# a reply's sentence that reports work done ("I've added …", "Fixed …", "the tests pass now", 已修复)
_DONE = re.compile(
    r"^(?:I(?:'ve| have)|We(?:'ve| have)|(?:Added|Fixed|Removed|Created|Updated|Implemented|Refactored|Renamed|Moved|"
    r"Replaced|Changed|Converted|Extracted|Wrote|Installed|Committed|Pushed|Resolved|Deleted|Cleaned|Merged|"
    r"Migrated)\b)|\b(?:(?:is|are) now|(?:has|have) been|now (?:pass(?:es)?|passing|works?|builds?|compiles?)|"
    r"successfully|(?:tests?|build) (?:pass(?:es)?|succeeds?))\b|已(?:经)?(?:修复|完成|添加|修改|更新|删除|实现)|"
    r"(?:修复|完成|添加|修改|更新|实现)了", re.I)
_NEXT = re.compile(r"(?:\bnext steps?\b|下一步|接下来|\bTODO\b)\**\s*[:：]", re.I)
_LIST_MARK = re.compile(r"^[\s\-*•#>]*(?:\d+[.)]\s*)?")


def _done(reply: str) -> str:
    """What the turn's reply says was done: its first sentence reporting work ("I've added …",
    "Fixed …", "the tests pass now"), not one that introduces a list, asks, or thinks aloud."""
    prose = FENCED.sub("\n", reply or "")
    for s in sentences(prose)[:8]:
        s = s.replace("**", "").strip()
        if not s.endswith((":", "：", "?", "？")) and _DONE.search(s) and goal_of(s):
            return s[:DONE_CHARS]
    return ""


def _next(reply: str) -> str:
    """The next steps the reply names ("Next steps:" / 下一步：), the heading's line or the list under it."""
    m = _NEXT.search(reply or "")
    if not m:
        return ""
    lines = [_LIST_MARK.sub("", ln).replace("**", "").strip() for ln in reply[m.end():m.end() + 600].split("\n")]
    return "; ".join(ln for ln in lines if len(ln) >= 5)[:160]


def working_state(session_turns: list[Turn], previous: tuple[str, str, str] | None = None) -> Observation | None:
    """Goal, what was done, next steps, the open error and files touched, in ≤ 500 characters.

    The goal is the user's first sentence that states one; a session that opens with "continue"
    carries ``previous`` (the project's previous session's goal, and the turn and session it was
    said in) on. ``data["goal_turn"]`` names the turn the goal quotes, which the memory cites."""
    if not session_turns:
        return None
    source: list[str] | None
    if previous and previous[0] and _continues(session_turns):
        goal, source = previous[0], [previous[1], previous[2]]
    else:
        goal, i = first_goal(t.request for t in session_turns)
        source = [session_turns[i].id, session_turns[i].session] if i >= 0 else None
    files: list[str] = []
    open_error = ""
    for t in session_turns:
        for a in t.actions:
            if a.tool == "edit" and a.path and a.path not in files:
                files.append(a.path)
            if a.tool == "shell" and a.command:
                res = outcome(a)
                if res == "failed":
                    sig = signatures(a)
                    open_error = sig[0] if sig else open_error
                elif res == "ok":
                    open_error = ""
    last = session_turns[-1]
    # the newest reply that names next steps, and the newest that reports work done
    nxt = next((n for t in reversed(session_turns) if (n := _next(t.reply))), "")
    done = next((d for t in reversed(session_turns) if (d := _done(t.reply))), "")
    if nxt and done and (nxt in done or done in nxt):
        done = ""
    parts = [f"Goal: {goal[:GOAL_CHARS]}"] if goal else []
    if done:
        parts.append(f"Done: {done}")
    if files:
        parts.append("Touched: " + ", ".join(f.replace("\\", "/").rsplit("/", 1)[-1] for f in files[-5:]))
    if nxt:
        parts.append(f"Next: {nxt}")
    if open_error:
        parts.append(f"Open error: {open_error[:120]}")
    while len(" | ".join(parts)) > WORKING_STATE_CHARS and len(parts) > 1:
        # the least needed part goes first: what was done, then the files
        drop = next((p for p in parts if p.startswith("Done: ")), None) or \
            next((p for p in parts if p.startswith("Touched: ")), None) or parts[-1]
        parts.remove(drop)
    text = " | ".join(parts)[:WORKING_STATE_CHARS]
    if not text:
        return None
    ts = last.ts
    return Observation(kind="working_state", key=f"ws:{last.session}", text=text, project=last.project,
                       evidence=_ev(last), data={"files": files[-10:], "open_error": open_error, "next": nxt,
                                                 "goal": goal[:GOAL_CHARS], "goal_turn": source, "done": done,
                                                 "expires_at": ts + WORKING_STATE_DAYS * 86400 if ts else None})
